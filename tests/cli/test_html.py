"""The HTML report: token-level highlights, the size plot, the history it plots, and
rendering in a real browser (headless Chromium) after a real reduction with gcc."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gitreduce.cli.history import History, chain
from gitreduce.cli.html import (
    render_html,
    side_by_side,
    size_plot,
    summary_rows,
    token_diff,
    write_html,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sequence-point"
GIT_REDUCE = Path(sys.executable).parent / "git-reduce"


class Elements(HTMLParser):
    """Start tags with their attributes, and the text inside each highlight span."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.highlights: dict[str, list[str]] = {"del": [], "ins": []}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        self.tags.append((tag, attributes))
        classes = attributes.get("class", "").split()
        kind = next((k for k in ("del", "ins") if "hl" in classes and k in classes), None)
        if tag == "span":
            self._open.append(kind)
            if kind:
                self.highlights[kind].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if self._open and self._open[-1]:
            self.highlights[self._open[-1]][-1] += data

    def having(self, tag: str, css_class: str | None = None) -> list[dict[str, str]]:
        return [
            attributes
            for name, attributes in self.tags
            if name == tag
            and (css_class is None or css_class in attributes.get("class", "").split())
        ]


def parse(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    return elements


SEED = "int f(int a, int b) {\n    return a + b;\n}\n\nint g;\n"
VARIANT = "int f(int a, int b) {\n    return a - b * 2;\n}\n\nint g;\nint h;\n"
PAIR_SUMMARY = {
    "name": "f.c",
    "language": "c",
    "algorithm": "ppr",
    "seed_tokens": [262, 13],
    "variant_tokens": [263, 14],
    "diff_tokens": [5, 1],
    "tests_run": 107,
    "tests_by_pass": {"min-tdiff": 7, "min-commonality": 100},
    "wall_seconds": 1.46,
    "interrupted": False,
    "warnings": ["a <warning>"],
    "branch": None,
    "commits": [],
}


# -- token diff and side by side ------------------------------------------------------


def test_token_diff_marks_the_differing_tokens() -> None:
    deleted, inserted = token_diff(SEED, VARIANT)
    assert [SEED[a:b] for a, b in deleted] == ["+"]
    # Adjacent changed tokens merge into one span, also across blanks within a line.
    assert [VARIANT[a:b] for a, b in inserted] == ["-", "* 2", "int h;"]


def test_token_diff_of_identical_texts_marks_nothing() -> None:
    assert token_diff(SEED, SEED) == ([], [])


def test_side_by_side_aligns_lines_and_highlights_inside_them() -> None:
    elements = parse(side_by_side(SEED, VARIANT))
    assert elements.highlights == {"del": ["+"], "ins": ["-", "* 2", "int h;"]}
    rows = elements.having("tr", "chg")
    assert len(rows) == 2  # the changed line, and the added line
    assert len(elements.having("td", "empty")) == 1  # the seed has no line 6


def test_code_is_escaped() -> None:
    page = side_by_side("if (a < b) x = 1;\n", "if (a < b && c > d) x = 1;\n")
    assert "<b" not in page.replace("<br>", "")
    elements = parse(page)
    assert elements.highlights["ins"] == ["&& c > d"]


# -- summary and plot -----------------------------------------------------------------


def test_summary_rows_read_like_the_terminal() -> None:
    rows = dict(summary_rows(PAIR_SUMMARY))
    assert rows["seed tokens"] == "262 → 13 (5.0%)"
    assert rows["diff tokens"] == "5 → 1 (20.0%)"
    assert rows["tests by pass"] == "min-tdiff: 7, min-commonality: 100"
    assert rows["interrupted"] == "no"
    assert rows["warnings"] == "a &lt;warning&gt;"
    single = dict(
        summary_rows({"input": "x.c", "tokens_before": 200, "tokens_after": 20, "bytes_before": 9})
    )
    assert single["tokens"] == "200 → 20 (10.0%)"
    assert single["bytes before"] == "9"


def test_size_plot_draws_three_step_lines_on_a_log_axis() -> None:
    samples = [
        {"seconds": 0.0, "seed": 3000, "variant": 3010, "diff": 40},
        {"seconds": 1.5, "seed": 800, "variant": 805, "diff": 9},
        {"seconds": 4.0, "seed": 12, "variant": 13, "diff": 1},
    ]
    elements = parse(size_plot(samples))
    lines = {attrs["class"]: attrs["points"] for attrs in elements.having("polyline")}
    assert set(lines) == {"series seed", "series variant", "series diff"}
    # Two samples after the first add a horizontal and a vertical point each; plus the end.
    assert len(lines["series seed"].split()) == 1 + 2 * 2 + 1
    assert "log scale" in size_plot(samples)
    linear = size_plot([{"seconds": 0, "seed": 10, "variant": 11, "diff": 1}] * 2)
    assert "log scale" not in linear


def test_size_plot_without_history() -> None:
    assert "No size history" in size_plot([])


def test_single_file_page_shows_just_the_result() -> None:
    page = render_html(
        {"input": "dir/x.c", "tokens_before": 263, "tokens_after": 14},
        None,
        b"int tally() {\n    count = count++;\n}\n",
        [
            {"seconds": 0.0, "seed": None, "variant": 263, "diff": None},
            {"seconds": 0.5, "seed": None, "variant": 14, "diff": None},
        ],
    )
    elements = parse(page)
    assert elements.having("table", "single")
    assert not elements.having("table", "side-by-side")
    assert elements.highlights == {"del": [], "ins": []}
    assert [attrs["class"] for attrs in elements.having("polyline")] == ["series variant"]
    assert "x.c reduced" in page


def test_the_page_is_self_contained() -> None:
    page = render_html(PAIR_SUMMARY, SEED.encode(), VARIANT.encode(), [])
    elements = parse(page)
    for _, attributes in elements.tags:
        for name in ("src", "href"):
            assert name not in attributes
    assert not elements.having("script") and not elements.having("link")
    csp = [m for m in elements.having("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp[0]["content"]
    assert "(1 token)" in page


# -- history --------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_history_throttles_but_keeps_the_latest_state() -> None:
    clock = Clock()
    history = History(interval=0.1, clock=clock)
    for step in range(50):  # 50 updates within 0.05 s
        clock.now += 0.001
        history.add(100 - step, 101 - step, 1)
    samples = history.samples()
    assert len(samples) == 2
    assert samples[0].seed == 100 and samples[-1].seed == 51
    assert history.as_list()[-1] == {"seconds": 0.05, "seed": 51, "variant": 52, "diff": 1}


def test_history_stays_bounded() -> None:
    clock = Clock()
    history = History(interval=0.1, max_samples=100, clock=clock)
    for step in range(10_000):
        clock.now += 0.1
        history.add(10_000 - step, 10_001 - step, 1)
    samples = history.samples()
    assert len(samples) <= 101
    assert samples[0].seed == 10_000 and samples[-1].seed == 1
    assert all(a.seconds < b.seconds for a, b in itertools.pairwise(samples))


def test_history_measures_currents_and_chains() -> None:
    class State:
        def seed_tokens(self) -> int:
            return 5

        def variant_tokens(self) -> int:
            return 6

        def diff_tokens(self) -> int:
            return 1

    class PairCurrent:
        state = State()

    class Parsed:
        tokens = 42

    class Current:
        parsed = Parsed()
        text = b""

    pair, single, seen = History(), History(), []
    chain(pair, None, seen.append)(PairCurrent())
    single(Current())
    assert pair.as_list()[0]["seed"] == 5 and pair.as_list()[0]["diff"] == 1
    measured = single.as_list()[0]
    assert measured.pop("seconds") < 60  # since the history began, however slow the machine
    assert measured == {"seed": None, "variant": 42, "diff": None}
    assert len(seen) == 1


# -- in a browser, after a real reduction ---------------------------------------------


def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows) of an 8-bit non-interlaced RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat = 8, b""
    width = height = channels = 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def has_color(rows: list[bytes], channels: int, rgb: tuple[int, int, int]) -> bool:
    pixel = bytes(rgb)
    for row in rows:
        start = row.find(pixel)
        while start != -1:
            if start % channels == 0:
                return True
            start = row.find(pixel, start + 1)
    return False


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium(*args: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    profile = tempfile.mkdtemp(dir=home)
    return subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        timeout=120,
        check=True,
        env=os.environ | {"HOME": str(home)},
    )


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`git-reduce --seed --variant --html` run for real: gcc as the test, the CLI's History."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    work = tmp_path_factory.mktemp("report")
    shutil.copy(FIXTURE / "test.sh", work / "test.sh")
    variant = (FIXTURE / "variant.c").read_bytes()
    seed = variant.replace(b"count = count++ + step;", b"count = count + step;")
    (work / "seed.c").write_bytes(seed)
    (work / "variant.c").write_bytes(variant)
    for name in ("cache", "tmp"):
        (work / name).mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env |= {
        "XDG_CACHE_HOME": str(work / "cache"),
        "TMPDIR": str(work / "tmp"),
        "GIT_CEILING_DIRECTORIES": str(work.parent),
    }
    done = subprocess.run(
        [
            str(GIT_REDUCE),
            *("--seed", "seed.c", "--variant", "variant.c", "--test", "./test.sh {}"),
            *("--jobs", "2", "--html", "report.html", "--json", "--quiet"),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["diff_tokens"][1] == 1 and record["variant_tokens"][1] < 30
    assert record["html"] == "report.html"
    return work / "report.html"


def test_report_of_a_real_run_renders_in_headless_chromium(real_report: Path) -> None:
    home = real_report.parent
    dom = chromium("--dump-dom", real_report.as_uri(), home=home).stdout.decode()
    elements = parse(dom)
    assert elements.having("table", "side-by-side")
    assert "".join(elements.highlights["ins"]) == "++"  # count = count; → count = count++;
    polylines = [attrs["class"] for attrs in elements.having("polyline")]
    assert polylines == ["series seed", "series variant", "series diff"]
    assert len(elements.having("svg", "plot")) == 1
    assert elements.having("table", "summary")
    assert "263 → " in dom  # the variant's size before, in the summary table

    shot = home / "report.png"
    chromium("--window-size=1000,900", f"--screenshot={shot}", real_report.as_uri(), home=home)
    _, height, channels, rows = png_pixels(shot.read_bytes())
    assert height == 900
    assert has_color(rows, channels, (0xA6, 0xF0, 0xA6)), "no inserted-token highlight drawn"
    assert has_color(rows, channels, (0xEF, 0xFF, 0xF0)), "no changed-line background drawn"
    assert has_color(rows, channels, (0xCF, 0x22, 0x2E)), "no variant line in the plot"


def test_an_unwritable_path_is_a_user_error(tmp_path: Path) -> None:
    from gitreduce.core.errors import UserError

    with pytest.raises(UserError, match="cannot write"):
        write_html(tmp_path / "missing" / "r.html", {}, None, b"x\n")
