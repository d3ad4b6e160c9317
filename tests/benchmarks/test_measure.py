"""Measuring tool runs: counting wrappers, busy time, process groups, JSON reports."""

import subprocess
import time

from bench.measure import (
    busy_seconds,
    parse_json_output,
    read_timing_log,
    run_group,
    write_timing_wrapper,
)


def test_busy_seconds_is_the_union_of_the_spans_within_the_window():
    spans = [(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (9.0, 12.0), (5.0, 5.0)]
    assert busy_seconds(spans, 0.0, 10.0) == 3.0 + 1.0 + 1.0
    assert busy_seconds([], 0.0, 10.0) == 0.0


def test_the_timing_wrapper_logs_one_span_per_test_run(tmp_path):
    target = tmp_path / "test.sh"
    target.write_text('#!/bin/sh\nexit "$1"\n')
    target.chmod(0o755)
    wrapper, log = tmp_path / "counting.sh", tmp_path / "runs.log"
    write_timing_wrapper(wrapper, log, target)
    codes = [subprocess.run([str(wrapper), code]).returncode for code in ("0", "1", "125")]
    assert codes == [0, 1, 125]
    spans = read_timing_log(log)
    assert len(spans) == 3 and all(start <= end for start, end in spans)
    assert [line.split()[2] for line in log.read_text().splitlines()] == ["0", "1", "125"]


def test_timing_log_reads_decimal_commas_and_skips_junk(tmp_path):
    log = tmp_path / "runs.log"
    log.write_text("1,5 2,5 0\nnot a span\n3.0\n4.0 6.0 1\n")
    assert read_timing_log(log) == [(1.5, 2.5), (4.0, 6.0)]
    assert read_timing_log(tmp_path / "absent.log") == []


def test_json_report_is_the_whole_output_or_its_last_object():
    assert parse_json_output('{"tests_run": 3}') == {"tests_run": 3}
    assert parse_json_output('progress\n{"a": 1}\nmore\n{\n  "b": 2\n}\n') == {"b": 2}
    assert parse_json_output("[1, 2]") is None
    assert parse_json_output("no json here") is None


def dead(pid: int, within: float = 5.0) -> bool:
    """Gone or a zombie (an orphan's reaper may be slow), within a few seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        status = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True)
        if status.stdout.strip()[:1] in (b"", b"Z"):
            return True
        time.sleep(0.05)
    return False


def test_run_group_kills_the_whole_group_on_timeout(tmp_path):
    pidfile = tmp_path / "pid"
    command = ["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"]
    start = time.monotonic()
    code, wall, _, _, timed_out = run_group(command, tmp_path, tmp_path / "log", timeout=0.3)
    assert (code, timed_out) == (None, True)
    assert wall < 10 and time.monotonic() - start < 20
    assert dead(int(pidfile.read_text()))
    assert (tmp_path / "log").read_text().startswith(f"$ (cd {tmp_path} && sh -c ")


def test_run_group_reports_the_exit_status_and_keeps_stdout_apart(tmp_path):
    out = tmp_path / "stdout.json"
    command = ["sh", "-c", 'echo "{}"; echo noise >&2; exit 3']
    code, _, _, _, timed_out = run_group(command, tmp_path, tmp_path / "log", 10, stdout=out)
    assert (code, timed_out, out.read_text()) == (3, False, "{}\n")
    assert (tmp_path / "log").read_text().endswith("noise\n")
