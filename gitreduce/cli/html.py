"""`--html FILE`: one self-contained page for a bug report or a review.

The page holds the run's summary, the reduced seed and variant side by side
with the differing tokens marked inside their lines (a token-level diff, as in
the PPR paper's Figure 1), the change as a unified diff to copy, and an SVG
plot of the sizes over time. Everything is inline (CSS and SVG; no script, no
font, no image to fetch) and a Content-Security-Policy forbids any request, so
the file renders the same offline, attached to an issue or opened from a mail.
"""

from __future__ import annotations

import difflib
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diff_match_patch import diff_match_patch

from gitreduce.cli.history import History
from gitreduce.core.errors import UserError

# Identifiers and numbers are one token, every other visible character its own:
# close enough to a lexer for marking differences, and language independent.
_TOKEN = re.compile(r"\w+|[^\w\s]")

Span = tuple[int, int]


def token_spans(text: str) -> list[Span]:
    """Character spans of the tokens of `text` (white space is not a token)."""
    return [match.span() for match in _TOKEN.finditer(text)]


def _token_chars(tokens: Iterable[str], table: dict[str, str]) -> str:
    """Each distinct token as one character, so diff-match-patch diffs token sequences."""
    chars = []
    for token in tokens:
        char = table.get(token)
        if char is None:
            code = len(table) + 1
            if code >= 0xD800:  # skip the surrogates: not valid characters on their own
                code += 0x800
            char = table[token] = chr(code)
        chars.append(char)
    return "".join(chars)


def token_diff(seed: str, variant: str, timeout: float = 2.0) -> tuple[list[Span], list[Span]]:
    """Character spans of the seed's deleted tokens and the variant's inserted tokens.

    diff-match-patch over token sequences, without its "semantic" cleanup:
    that would mark a shared token between two changes as changed too, and a
    reduced pair's point is exactly which few tokens differ.
    """
    seed_spans, variant_spans = token_spans(seed), token_spans(variant)
    table: dict[str, str] = {}
    seed_chars = _token_chars((seed[a:b] for a, b in seed_spans), table)
    variant_chars = _token_chars((variant[a:b] for a, b in variant_spans), table)
    dmp = diff_match_patch()
    dmp.Diff_Timeout = timeout
    diffs = dmp.diff_main(seed_chars, variant_chars, False)
    deleted: list[Span] = []
    inserted: list[Span] = []
    at_seed = at_variant = 0
    for operation, chars in diffs:
        count = len(chars)
        if operation == dmp.DIFF_DELETE:
            deleted.extend(seed_spans[at_seed : at_seed + count])
            at_seed += count
        elif operation == dmp.DIFF_INSERT:
            inserted.extend(variant_spans[at_variant : at_variant + count])
            at_variant += count
        else:
            at_seed += count
            at_variant += count
    return _merge(seed, deleted), _merge(variant, inserted)


def _merge(text: str, spans: Sequence[Span]) -> list[Span]:
    """Adjacent marked tokens as one span, also across blanks within a line."""
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and text[merged[-1][1] : start].strip(" \t") == "":
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


# -- aligned lines (shared with the terminal view in report.py) -----------------------------


@dataclass(frozen=True)
class Line:
    """One line of a program: its 1-based number, text, and marked spans within it."""

    number: int
    text: str
    marks: tuple[Span, ...]


@dataclass(frozen=True)
class Row:
    """One row of the side-by-side view: a seed line, a variant line, or both.

    `replaced` when the line diff calls the row a change; the token diff may
    still mark tokens in a row it calls equal (tokens move across lines), so
    `changed` looks at both.
    """

    seed: Line | None
    variant: Line | None
    replaced: bool

    @property
    def changed(self) -> bool:
        return self.replaced or any(
            line is not None and line.marks for line in (self.seed, self.variant)
        )

    def side_changed(self, line: Line | None) -> bool:
        """Whether one side's line is itself part of the change (for its own tint)."""
        return line is not None and (self.replaced or bool(line.marks))


def marked_lines(text: str, marks: Sequence[Span]) -> list[Line]:
    """The lines of `text` (as `str.splitlines` cuts them) with `marks` made line-relative.

    Marks never cross a line: tokens hold no white space and `_merge` joins spans
    only across blanks within a line.
    """
    lines: list[Line] = []
    offset, at = 0, 0
    for number, (whole, line) in enumerate(
        zip(text.splitlines(keepends=True), text.splitlines(), strict=True), start=1
    ):
        end_of_line = offset + len(line)
        while at < len(marks) and marks[at][1] <= offset:
            at += 1
        inside: list[Span] = []
        for start, end in marks[at:]:
            if start >= end_of_line:
                break
            start, end = max(start, offset) - offset, min(end, end_of_line) - offset
            if start < end:
                inside.append((start, end))
        lines.append(Line(number, line, tuple(inside)))
        offset += len(whole)
    return lines


def marked_pair(seed: str, variant: str) -> tuple[list[Line], list[Line]]:
    """Seed lines with their deleted tokens marked, variant lines with their inserted ones."""
    deleted, inserted = token_diff(seed, variant)
    return marked_lines(seed, deleted), marked_lines(variant, inserted)


def aligned_rows(seed: str, variant: str) -> list[Row]:
    """Every line of both programs, paired where the line diff matches them."""
    return align(*marked_pair(seed, variant))


def align(seed_lines: Sequence[Line], variant_lines: Sequence[Line]) -> list[Row]:
    """`aligned_rows` on lines already marked (the terminal marks once for either view).

    The one alignment both the HTML table and the terminal's side-by-side view
    draw, so the two always agree on what changed.
    """
    matcher = difflib.SequenceMatcher(
        None, [line.text for line in seed_lines], [line.text for line in variant_lines], False
    )
    rows: list[Row] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        for k in range(max(a1 - a0, b1 - b0)):
            left = seed_lines[a0 + k] if a0 + k < a1 else None
            right = variant_lines[b0 + k] if b0 + k < b1 else None
            rows.append(Row(left, right, tag != "equal"))
    return rows


# -- side by side ---------------------------------------------------------------------------


def _render_line(line: Line, kind: str) -> str:
    """The line as HTML with its marked parts in highlight spans."""
    pieces, at = [], 0
    for start, end in line.marks:
        pieces.append(html.escape(line.text[at:start]))
        pieces.append(f'<span class="hl {kind}">{html.escape(line.text[start:end])}</span>')
        at = end
    pieces.append(html.escape(line.text[at:]))
    return "".join(pieces)


def _cell(number: int | None, content: str, classes: str) -> str:
    if number is None:
        return '<td class="ln"></td><td class="code empty"></td>'
    return f'<td class="ln">{number}</td><td class="code {classes}">{content or " "}</td>'


def _side_cell(row: Row, line: Line | None, kind: str) -> str:
    if line is None:
        return _cell(None, "", "")
    return _cell(line.number, _render_line(line, kind), "changed" if row.side_changed(line) else "")


def side_by_side(seed: str, variant: str) -> str:
    """A table: seed lines left, variant lines right, aligned, differing tokens highlighted."""
    rows = [
        f'<tr class="{"chg" if row.changed else "same"}">'
        f"{_side_cell(row, row.seed, 'del')}{_side_cell(row, row.variant, 'ins')}</tr>"
        for row in aligned_rows(seed, variant)
    ]
    return (
        '<table class="diff side-by-side">'
        '<colgroup><col class="ln"><col class="code"><col class="ln"><col class="code"></colgroup>'
        '<thead><tr><th colspan="2">seed (passes)</th><th colspan="2">variant (fails)</th></tr>'
        "</thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def single_listing(text: str) -> str:
    """The one reduced program with line numbers."""
    rows = [
        f'<tr class="same">{_cell(line.number, html.escape(line.text), "")}</tr>'
        for line in marked_lines(text, [])
    ]
    return (
        '<table class="diff single"><colgroup><col class="ln"><col class="code"></colgroup>'
        '<thead><tr><th colspan="2">reduced program</th></tr></thead>'
        "<tbody>" + "".join(rows) + "</tbody></table>"
    )


def unified(seed: str, variant: str, name: str) -> str:
    lines = difflib.unified_diff(
        seed.splitlines(), variant.splitlines(), f"a/{name}", f"b/{name}", lineterm=""
    )
    return "\n".join(lines)


# -- summary ----------------------------------------------------------------------------------


def _share(before: Any, after: Any) -> str:
    if isinstance(before, int) and isinstance(after, int) and before > 0:
        return f" ({100.0 * after / before:.1f}%)"
    return ""


def _value(value: Any) -> str:
    if value is None:
        return '<span class="none">—</span>'
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{html.escape(str(k))}: {_value(v)}" for k, v in value.items()) or "—"
    if isinstance(value, list | tuple):
        if not value:
            return '<span class="none">—</span>'
        return "<br>".join(_value(item) for item in value)
    if isinstance(value, float):
        return f"{value:g}"
    return html.escape(str(value))


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, HTML value) rows in the dict's order; before/after pairs as `a → b (x%)`."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key, value in summary.items():
        if key in seen:
            continue
        label = key.replace("_", " ")
        if key.endswith("_before") and key[: -len("before")] + "after" in summary:
            after_key = key[: -len("before")] + "after"
            seen.add(after_key)
            after = summary[after_key]
            label = key[: -len("_before")].replace("_", " ")
            rows.append((label, f"{_value(value)} → {_value(after)}{_share(value, after)}"))
            continue
        if (
            key.endswith("_tokens")
            and isinstance(value, list | tuple)
            and len(value) == 2
            and all(isinstance(item, int) for item in value)
        ):
            before, after = value
            rows.append((label, f"{before} → {after}{_share(before, after)}"))
            continue
        rows.append((label, _value(value)))
    return rows


# -- plot -------------------------------------------------------------------------------------


def _nice_step(span: float, count: int = 5) -> float:
    raw = max(span, 1e-9) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


SERIES = (("seed", "seed"), ("variant", "variant"), ("diff", "difference"))


def size_plot(samples: Sequence[Mapping[str, Any]], single: bool = False) -> str:
    """An inline SVG of seed, variant and difference sizes (tokens) over time (seconds).

    Sizes move in steps (only accepted candidates change them), so each series
    is drawn as a step line, held to the end of the run. The y axis turns
    logarithmic when the sizes span more than a factor of 20, so a difference
    of a few tokens stays visible next to programs of thousands.
    """
    width, height = 760, 300
    left, right, top, bottom = 64, 130, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    series = [
        (key, "program" if single else label)
        for key, label in SERIES
        if not single or key == "variant"
    ]
    values = [
        sample[key]
        for sample in samples
        for key, _ in series
        if isinstance(sample.get(key), int | float)
    ]
    if not samples or not values:
        return '<p class="none">No size history was recorded.</p>'
    end = max(float(samples[-1]["seconds"]), 1e-3)
    high = max(max(values), 1)
    low = max(min(values), 1)
    logarithmic = high / low > 20
    if logarithmic:
        top_exp = math.ceil(math.log10(high)) or 1
        y_ticks: list[float] = [10.0**e for e in range(top_exp + 1)]
        y_max = 10.0**top_exp
    else:
        step = _nice_step(high)
        y_max = math.ceil(high / step) * step
        y_ticks = [step * i for i in range(round(y_max / step) + 1)]

    def y_of(value: float) -> float:
        if logarithmic:
            return top + plot_h * (1 - math.log10(max(value, 1)) / top_exp)
        return top + plot_h * (1 - value / y_max)

    def x_of(seconds: float) -> float:
        return left + plot_w * (seconds / end)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        'aria-label="sizes in tokens over time">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>',
    ]
    for tick in y_ticks:
        y = y_of(tick)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{tick:g}</text>'
        )
    step = _nice_step(end)
    tick = 0.0
    while tick <= end * 1.0001:
        x = x_of(tick)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" class="grid"/>'
        )
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 16}" class="tick" '
            f'text-anchor="middle">{tick:g}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" class="axis" '
        'text-anchor="middle">seconds</text>'
    )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">'
        f"tokens{' (log scale)' if logarithmic else ''}</text>"
    )
    for index, (key, label) in enumerate(series):
        points: list[tuple[float, float]] = []
        last: float | None = None
        for sample in samples:
            value = sample.get(key)
            if not isinstance(value, int | float):
                continue
            x = x_of(float(sample["seconds"]))
            if last is not None:
                points.append((x, y_of(last)))
            points.append((x, y_of(value)))
            last = value
        if last is None:
            continue
        points.append((x_of(end), y_of(last)))
        encoded = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(
            f'<polyline class="series {key}" points="{encoded}">'
            f"<title>{html.escape(label)}: {last:g} tokens at the end</title></polyline>"
        )
        legend_y = top + 14 + 20 * index
        parts.append(
            f'<line x1="{left + plot_w + 14}" x2="{left + plot_w + 38}" y1="{legend_y - 4}" '
            f'y2="{legend_y - 4}" class="series {key}"/>'
            f'<text x="{left + plot_w + 44}" y="{legend_y}" class="legend">'
            f"{html.escape(label)} {last:g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# -- the page ---------------------------------------------------------------------------------

CSS = """
:root { color-scheme: light; --del: #ffb3b3; --ins: #a6f0a6; --chg-del: #fff0f0;
  --chg-ins: #effff0; --muted: #6a737d; --line: #d0d7de; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px;
  color: #1f2328; max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.sub { color: var(--muted); margin: 0 0 16px; }
table.summary { border-collapse: collapse; }
table.summary th { text-align: left; font-weight: 600; padding: 3px 16px 3px 0;
  vertical-align: top; white-space: nowrap; }
table.summary td { padding: 3px 0; font-variant-numeric: tabular-nums; word-break: break-all; }
table.diff { border-collapse: collapse; width: 100%; table-layout: fixed;
  font: 12.5px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  border: 1px solid var(--line); }
table.diff col.ln { width: 3.5em; }
table.diff th { background: #f6f8fa; text-align: left; padding: 4px 8px;
  font-family: system-ui, sans-serif; border-bottom: 1px solid var(--line); }
td.ln { color: var(--muted); text-align: right; padding: 0 8px; user-select: none;
  border-right: 1px solid var(--line); vertical-align: top; }
td.code { white-space: pre-wrap; word-break: break-all; padding: 0 8px; vertical-align: top; }
td.code.empty { background: #f6f8fa; }
table.side-by-side td.ln:nth-child(3) { border-left: 1px solid var(--line); }
tr.chg td.code.changed:nth-child(2) { background: var(--chg-del); }
tr.chg td.code.changed:nth-child(4) { background: var(--chg-ins); }
span.hl { border-radius: 3px; padding: 0 1px; }
span.hl.del { background: var(--del); text-decoration: line-through;
  text-decoration-color: #b31d28; }
span.hl.ins { background: var(--ins); font-weight: 600; }
pre.unified { background: #f6f8fa; padding: 8px 12px; border: 1px solid var(--line);
  overflow-x: auto; font: 12.5px/1.5 ui-monospace, monospace; }
svg.plot { max-width: 100%; height: auto; }
svg .frame { fill: #fff; stroke: var(--line); } svg .grid { stroke: #eef1f4; }
svg .tick { font: 11px system-ui, sans-serif; fill: var(--muted); }
svg .axis, svg .legend { font: 12px system-ui, sans-serif; fill: #1f2328; }
svg .series { fill: none; stroke-width: 2; }
svg .series.seed { stroke: #0969da; } svg .series.variant { stroke: #cf222e; }
svg .series.diff { stroke: #8250df; stroke-dasharray: 5 3; }
.none { color: var(--muted); }
.warning { color: #9a6700; }
"""


def _decode(content: bytes) -> str:
    return content.decode("utf-8", errors="replace")


def _samples(history: History | Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    if history is None:
        return []
    if isinstance(history, History):
        return list(history.as_list())
    return list(history)


def render_html(
    summary: Mapping[str, Any],
    seed: bytes | None,
    variant: bytes,
    history: History | Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The report as one HTML string (see `write_html`)."""
    single = seed is None
    name = str(summary.get("name") or Path(str(summary.get("input") or "program")).name)
    variant_text = _decode(variant)
    if single:
        title = f"git reduce: {name} reduced"
        subtitle = "The smallest program found that still fails the test the same way."
        listing = single_listing(variant_text)
        change = ""
    else:
        seed_text = _decode(seed or b"")
        diff_tokens = summary.get("diff_tokens")
        size = ""
        if isinstance(diff_tokens, list) and diff_tokens:
            size = f" ({diff_tokens[-1]} token{'' if diff_tokens[-1] == 1 else 's'})"
        title = f"git reduce: failure-inducing change in {name}{size}"
        subtitle = (
            "The reduced seed passes the test and the reduced variant fails it; the "
            "highlighted tokens are all that differs."
        )
        listing = side_by_side(seed_text, variant_text)
        change = (
            "<h2>The change as a patch</h2>"
            f'<pre class="unified">{html.escape(unified(seed_text, variant_text, name))}</pre>'
        )
    if summary.get("interrupted"):
        subtitle += " The run was interrupted: this is the best result found until then."
    rows = "".join(
        f"<tr><th>{html.escape(label)}</th><td>{value}</td></tr>"
        for label, value in summary_rows(summary)
    )
    warnings = "".join(
        f'<p class="warning">warning: {html.escape(str(warning))}</p>'
        for warning in summary.get("warnings") or []
    )
    parts = [
        "<!DOCTYPE html>\n",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" ',
        "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="git reduce">',
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
        f'<h1>{html.escape(title)}</h1><p class="sub">{html.escape(subtitle)}</p>',
        f'<section id="result"><h2>{"Result" if single else "Seed and variant"}</h2>',
        f"{listing}</section>",
    ]
    if change:
        parts.append(f'<section id="change">{change}</section>')
    parts += [
        f'<section id="sizes"><h2>Sizes over time</h2>{size_plot(_samples(history), single)}',
        "</section>",
        f'<section id="summary"><h2>Summary</h2>{warnings}',
        f'<table class="summary"><tbody>{rows}</tbody></table></section>',
        "</body></html>\n",
    ]
    return "".join(parts)


def write_html(
    path: Path | str,
    summary_dict: Mapping[str, Any],
    seed: bytes | None,
    variant: bytes,
    history: History | Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Write the self-contained report to `path`; `seed` None for a single-file reduction.

    `summary_dict` is what `--json` prints (`Summary.as_dict()` or
    `PairSummary.as_dict()`, extra keys welcome); `history` a `History` or its
    `as_list()`.
    """
    path = Path(path)
    try:
        path.write_text(render_html(summary_dict, seed, variant, history), encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from error
    return path
