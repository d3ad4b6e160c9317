"""`git reduce triage --html FILE`: one index page over every bucket of a triage.

One row per bucket: its failure signature, how many findings share it, the
representative's reduced change side by side with the differing tokens
marked (as in a single report, see `cli.html`; the diff of every file that
differs for a finding of several files), and links to every
finding's own report (written by its reduction beside the index). Inline CSS
only and the same Content-Security-Policy as the single reports: the page
makes no request.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from gitreduce.cli.html import CSS, side_by_side
from gitreduce.core.errors import UserError
from gitreduce.sessions.triage_state import FindingResult, TriageState

_INDEX_CSS = """
table.buckets { border-collapse: collapse; width: 100%; }
table.buckets > tbody > tr > td, table.buckets > thead > tr > th {
  border-top: 1px solid #ccc; padding: .4em; vertical-align: top; text-align: left; }
td.sig { font-family: monospace; min-width: 14em; max-width: 24em; overflow-wrap: anywhere; }
ul.findings { margin: 0; padding-left: 1.2em; }
"""


def write_index(path: Path, state: TriageState) -> Path:
    try:
        path.write_text(render_index(state, path.parent), encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from error
    return path


def render_index(state: TriageState, base: Path) -> str:
    buckets = state.buckets()
    rows = []
    for bucket in buckets:
        best = bucket.representative
        change = _change(best)
        links = "".join(f"<li>{_finding_link(finding, base)}</li>" for finding in bucket.findings)
        rows.append(
            f"<tr><td>{bucket.number}</td>"
            f'<td class="sig">{html.escape(bucket.signature or "(no signature)")}</td>'
            f"<td>{len(bucket.findings)}</td>"
            f"<td><p>representative: {_finding_link(best, base)}</p>{change}</td>"
            f'<td><ul class="findings">{links}</ul></td></tr>'
        )
    others = [f for f in state.findings if f.bucket is None]
    other_items = "".join(
        f"<li>{_finding_link(f, base)}: {html.escape(f.status)}"
        f"{': ' + html.escape(f.reason) if f.reason else ''}</li>"
        for f in others
    )
    title = (
        f"git reduce triage: {len(state.findings)} findings, {len(buckets)} "
        f"bucket{'' if len(buckets) == 1 else 's'}"
    )
    parts = [
        "<!DOCTYPE html>\n",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" ',
        "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="generator" content="git reduce">',
        f"<title>{html.escape(title)}</title><style>{CSS}{_INDEX_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">{state.tests_run} tests in {state.elapsed:.1f} s '
        f"({html.escape(state.executor)}, {state.workers} at once)"
        f"{'; interrupted' if state.interrupted else ''}.</p>",
        '<table class="buckets"><thead><tr><th>bucket</th><th>signature</th>'
        "<th>findings</th><th>smallest reduced change</th><th>all findings</th></tr></thead>",
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]
    if other_items:
        parts.append(f"<h2>Not in a bucket</h2><ul>{other_items}</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _change(finding: FindingResult) -> str:
    """The reduced change: the two versions side by side, or a multi-file diff."""
    if finding.reduced is not None:
        return side_by_side(*finding.reduced)
    if finding.diff:
        return f'<pre class="diff">{html.escape(finding.diff)}</pre>'
    return "<p>(not reduced yet)</p>"


def _finding_link(finding: FindingResult, base: Path) -> str:
    label = html.escape(f"{finding.label} {finding.where}".strip())
    if finding.diff_tokens:
        label += f" ({finding.diff_tokens[1]} tokens)"
    if finding.report is None or not Path(finding.report).is_file():
        return label
    href = os.path.relpath(finding.report, base)
    return f'<a href="{html.escape(href, quote=True)}">{label}</a>'
