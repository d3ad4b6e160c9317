"""The oracle against real shells and processes: exit mapping, scratch dirs, kills."""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import script

from gitreduce.core import fileset, tickets
from gitreduce.core.engine import Engine
from gitreduce.core.errors import UserError
from gitreduce.core.keys import blob_id
from gitreduce.core.outcome import Outcome, Verdict
from gitreduce.oracle.runner import Oracle, OracleClosed
from gitreduce.oracle.spec import TestSpec

# Exits with the status written in the candidate, or kills its own shell.
EXIT_AS_TOLD = 'code=$(cat {}); [ "$code" = kill ] && kill -9 $$; exit "$code"'


def alive(pid: int) -> bool:
    """Zombies count as dead: an orphan's reaper may be slow (or absent in containers)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


def wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_for_file(path: Path, within: float = 5.0) -> str:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    return path.read_text().strip()


@pytest.fixture(scope="module")
def bisect_oracle():
    with Oracle(TestSpec(EXIT_AS_TOLD, "variant.txt", timeout=10), jobs=1) as oracle:
        yield oracle


@pytest.fixture(scope="module")
def interesting_oracle():
    spec = TestSpec(EXIT_AS_TOLD, "variant.txt", polarity="interesting", timeout=10)
    with Oracle(spec, jobs=1) as oracle:
        yield oracle


# --- exit status mapping ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("told", "verdict", "code"),
    [
        (b"0", Verdict.GOOD, 0),
        (b"1", Verdict.BAD, 1),
        (b"42", Verdict.BAD, 42),
        (b"124", Verdict.BAD, 124),
        (b"125", Verdict.SKIP, 125),
        (b"126", Verdict.BAD, 126),
        (b"127", Verdict.BAD, 127),
        (b"128", Verdict.BROKEN, 128),
        (b"255", Verdict.BROKEN, 255),
        (b"kill", Verdict.BROKEN, -9),
    ],
)
def test_bisect_polarity_maps_exit_status(bisect_oracle, told, verdict, code):
    outcome = bisect_oracle.run(told)
    assert (outcome.verdict, outcome.exit_code) == (verdict, code)
    assert outcome.seconds >= 0
    assert (outcome.signature is not None) == (verdict is Verdict.BAD)


@pytest.mark.parametrize(
    ("told", "verdict"),
    [
        (b"0", Verdict.BAD),
        (b"1", Verdict.SKIP),
        (b"125", Verdict.SKIP),
        (b"200", Verdict.SKIP),
        (b"kill", Verdict.SKIP),
    ],
)
def test_interesting_polarity_maps_exit_status(interesting_oracle, told, verdict):
    outcome = interesting_oracle.run(told)
    assert outcome.verdict is verdict
    assert outcome.signature == ("interesting" if verdict is Verdict.BAD else None)


@pytest.mark.parametrize("polarity", ["bisect", "interesting"])
def test_timeout_in_both_polarities(polarity):
    spec = TestSpec("sleep 5", "x.c", polarity=polarity, timeout=0.2)
    with Oracle(spec, jobs=1) as oracle:
        start = time.monotonic()
        outcome = oracle.run(b"")
    assert outcome == Outcome(Verdict.TIMEOUT, None, outcome.seconds)
    assert 0.2 <= outcome.seconds < 2
    assert time.monotonic() - start < 2


def test_bad_signature_comes_from_output():
    command = (
        "echo 'note: fine'; echo \"$(basename {}):3:4: error: boom at 0xdeadbeef\" >&2; exit 3"
    )
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"").signature == "exit 3: error: boom at 0x<hex>"


def test_long_output_keeps_its_head_and_tail():
    command = "echo 'error: first'; yes noise | head -c 300000; echo; echo 'panic: last'; exit 1"
    with Oracle(TestSpec(command, "v.c", timeout=10), jobs=1) as oracle:
        outcome, output = oracle.run_with_output(b"")
    assert outcome.signature == "exit 1: panic: last"
    assert output.startswith("error: first\n") and len(output) < 100_000


def test_bad_signature_without_error_line_is_the_exit_status():
    with Oracle(TestSpec("echo hello; exit 4", "v.c", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"").signature == "exit 4"


def test_signature_mentions_candidate_path_relatively():
    """Slots differ in their absolute paths; signatures must not."""
    command = 'echo "ERROR: AddressSanitizer: bad read in $GITREDUCE_FILE"; exit 1'
    spec = TestSpec(command, "src/v.c", timeout=10)
    with Oracle(spec, jobs=2) as oracle, ThreadPoolExecutor(2) as pool:
        signatures = {o.signature for o in pool.map(oracle.run, [b""] * 4)}
    assert signatures == {"exit 1: ERROR: AddressSanitizer: bad read in src/v.c"}


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"in (\w+), at", "tree_vec_extract"),
        (r"^internal compiler error: in \w+", "internal compiler error: in tree_vec_extract"),
        (r"segfault", None),
    ],
)
def test_signature_regex(regex, expected):
    command = (
        "echo 'v.c:1:2: warning: meh'; "
        "echo 'internal compiler error: in tree_vec_extract, at x.cc:186'; exit 1"
    )
    spec = TestSpec(command, "v.c", timeout=10, signature_regex=regex)
    with Oracle(spec, jobs=1) as oracle:
        outcome = oracle.run(b"")
    assert (outcome.verdict, outcome.signature) == (Verdict.BAD, expected)


def test_invalid_signature_regex_is_a_user_error():
    with pytest.raises(UserError, match="invalid signature pattern"):
        Oracle(TestSpec("true", "v.c", signature_regex="(unclosed"), jobs=1)


# --- where and how the test runs -------------------------------------------------------


def test_candidate_placement_placeholder_env_and_cwd(tmp_path):
    rel = "sub dir/deeper/my file.c"
    command = (
        'test "$(cat {})" = hello'
        ' && test "$(cat "{}")" = hello'
        ' && test "$GITREDUCE_FILE" = {}'
        f' && test "$(pwd -P)/{rel}" = "$GITREDUCE_FILE"'
        f' && test "$(cat "{rel}")" = hello'
        ' && test "$EXTRA" = "a b"'
    )
    scratch = tmp_path / "scratch with space"
    scratch.mkdir()
    spec = TestSpec(command, rel, timeout=10, env={"EXTRA": "a b"})
    with Oracle(spec, jobs=2, scratch_root=scratch) as oracle:
        assert oracle.run(b"hello").verdict is Verdict.GOOD
        assert oracle.run(b"bye").verdict is Verdict.BAD
    assert list(scratch.iterdir()) == []


def test_leftovers_of_a_run_are_removed_before_the_next():
    command = (
        "if test -e junk.txt || test -e junkdir; then exit 1; fi; "
        "mkdir -p junkdir/ro && touch junk.txt junkdir/ro/f && chmod a-w junkdir/ro"
    )
    with Oracle(TestSpec(command, "src/v.c", timeout=10), jobs=1) as oracle:
        assert [oracle.run(b"x").verdict for _ in range(3)] == [Verdict.GOOD] * 3


def test_a_killed_tests_temporary_files_go_with_its_slot_not_into_the_users_tmp(tmp_path):
    """A test killed at its timeout never runs its EXIT trap: what it made with mktemp
    (or a compiler's temporary files) must not stay behind in the user's temp dir."""
    users_tmp = tmp_path / "tmp"
    users_tmp.mkdir()
    made = tmp_path / "made"
    command = (
        f'if [ "$(cat {{}})" = slow ]; then d=$(mktemp -d); trap \'rm -rf "$d"\' EXIT; '
        f'touch "$d/out.o"; echo "$d" > {made}; sleep 30; fi; '
        'test -z "$(ls -A "$TMPDIR")"'
    )
    spec = TestSpec(command, "v.c", timeout=0.5, env={"TMPDIR": str(users_tmp)})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with Oracle(spec, jobs=1, scratch_root=scratch) as oracle:
        assert oracle.run(b"slow").verdict is Verdict.TIMEOUT
        left = Path(made.read_text().strip())
        assert not left.is_relative_to(users_tmp) and left.exists()
        # the next run starts with an empty $TMPDIR, and the killed run's files are gone
        assert oracle.run(b"quick").verdict is Verdict.GOOD
        assert not left.exists()
    assert list(users_tmp.iterdir()) == []


@pytest.mark.parametrize(
    "vandalism",
    ['rm -rf "$TMPDIR"', 'rm -rf "$TMPDIR"; touch "$TMPDIR"', 'chmod 0 "$TMPDIR"'],
)
def test_a_test_that_spoils_its_tmpdir_gets_a_fresh_one_and_a_link_is_never_followed(
    tmp_path, vandalism
):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "precious").write_text("mine")
    decoy = tmp_path / "users tmp"  # what $TMPDIR would be if the oracle set none
    decoy.mkdir()
    (decoy / "theirs").write_text("theirs")
    fresh = 'test -d "$TMPDIR" && test -w "$TMPDIR" && test -z "$(ls -A "$TMPDIR")" || exit 1'
    spoiling = f"{fresh}; {vandalism}; exit 0"
    linking = f'{fresh}; rm -rf "$TMPDIR"; ln -s {kept} "$TMPDIR"; exit 0'
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {"TMPDIR": str(decoy)}
    for command, runs in ((spoiling, 3), (linking, 2)):
        with Oracle(
            TestSpec(command, "v.c", timeout=10, env=env), jobs=1, scratch_root=scratch
        ) as o:
            assert [o.run(b"x").verdict for _ in range(runs)] == [Verdict.GOOD] * runs
    assert (kept / "precious").read_text() == "mine"
    assert (decoy / "theirs").read_text() == "theirs"
    assert list(scratch.iterdir()) == []


def test_parallel_runs_get_their_own_candidates():
    spec = TestSpec('sleep 0.05; exit "$(cat {})"', "v.txt", timeout=10)
    codes = [0, 1, 2, 125, 3, 0, 4, 5]
    with Oracle(spec, jobs=4) as oracle, ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(oracle.run, [str(c).encode() for c in codes]))
    assert [o.exit_code for o in outcomes] == codes


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    spec = TestSpec(f"sleep 30 & echo $! > {pidfile}; wait", "v.c", timeout=0.3)
    with Oracle(spec, jobs=1) as oracle:
        assert oracle.run(b"").verdict is Verdict.TIMEOUT
    assert wait_dead(int(pidfile.read_text()))


# A test script's line as users write them: coreutils' `timeout`, run by the test's shell,
# runs its command in a process group of its own inside the test's session; the command
# writes its pid, then sleeps
TIMED_SLEEP = "cd . && timeout 60 sh -c 'echo $$ > {pidfile}; exec sleep 30'"


def test_a_command_in_a_group_of_its_own_dies_with_its_test_at_the_timeout(tmp_path):
    """The test's group alone was killed: the command `timeout` ran went on to its end,
    a processor taken from the next test."""
    pidfile = tmp_path / "pid"
    spec = TestSpec(TIMED_SLEEP.format(pidfile=pidfile), "v.c", timeout=1)
    with Oracle(spec, jobs=1) as oracle:
        assert oracle.run(b"").verdict is Verdict.TIMEOUT
    assert wait_dead(int(pidfile.read_text()))


def test_a_command_in_a_group_of_its_own_dies_with_an_abandoned_test(tmp_path):
    """A speculation given up (a winner before it) kills its test: the command `timeout` ran
    goes too, instead of running on beside the tests that matter."""
    pidfile = tmp_path / "pid"
    spec = TestSpec(TIMED_SLEEP.format(pidfile=pidfile), "v.c", timeout=60)
    ticket = tickets.Ticket()
    with Oracle(spec, jobs=1) as oracle, ThreadPoolExecutor(1) as pool:

        def run() -> Outcome:
            with tickets.holding(ticket):
                return oracle.run(b"")

        running = pool.submit(run)
        pid = int(wait_for_file(pidfile))
        ticket.abandon()
        with pytest.raises(tickets.Abandoned):
            running.result(timeout=10)
    assert wait_dead(pid)


def test_background_children_do_not_outlive_a_finished_run(tmp_path):
    pidfile = tmp_path / "pid"
    spec = TestSpec(f"sleep 30 & echo $! > {pidfile}; exit 0", "v.c", timeout=10)
    with Oracle(spec, jobs=1) as oracle:
        outcome = oracle.run(b"")
    assert outcome.verdict is Verdict.GOOD and outcome.seconds < 5
    assert wait_dead(int(pidfile.read_text()))


def test_close_during_runs_returns_promptly_and_cleans_up(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = TestSpec(f'sleep 30 & echo $! > "{tmp_path}/pid.$$"; wait', "v.c", timeout=60)
    oracle = Oracle(spec, jobs=2, scratch_root=scratch)
    results: list[object] = []

    def worker() -> None:
        try:
            results.append(oracle.run(b""))
        except OracleClosed as closed:
            results.append(closed)

    threads = [threading.Thread(target=worker) for _ in range(3)]  # one waits for a slot
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while len(list(tmp_path.glob("pid.*"))) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pids = [int(wait_for_file(p)) for p in tmp_path.glob("pid.*")]

    start = time.monotonic()
    oracle.close()
    oracle.close()  # idempotent
    for thread in threads:
        thread.join(timeout=5)
    assert time.monotonic() - start < 3
    assert not any(thread.is_alive() for thread in threads)
    assert len(results) == 3 and all(isinstance(r, OracleClosed) for r in results)
    assert all(wait_dead(pid) for pid in pids)
    assert list(scratch.iterdir()) == []
    with pytest.raises(OracleClosed):
        oracle.run(b"")


def test_stop_from_another_thread_ends_a_run_in_the_main_thread(tmp_path):
    """What an interrupt does: the watcher thread stops the oracle the main thread waits on."""
    pidfile = tmp_path / "pid"
    spec = TestSpec(f"sleep 30 & echo $! > {pidfile}; wait", "v.c", timeout=60)
    with Oracle(spec, jobs=1, scratch_root=tmp_path) as oracle:
        timer = threading.Timer(0.3, oracle.stop)
        timer.start()
        start = time.monotonic()
        with pytest.raises(OracleClosed):
            oracle.run(b"")
        assert time.monotonic() - start < 3
        timer.join()
    assert wait_dead(int(pidfile.read_text()))
    assert [p.name for p in tmp_path.iterdir()] == ["pid"]


def test_relative_test_script_is_resolved_against_the_invoking_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    script(tmp_path / "tests" / "check.sh", 'if grep -q bug "$1"; then exit 1; fi\n')
    (tmp_path / "check.py").write_text("import sys\nsys.exit(open(sys.argv[1]).read() != 'x')\n")
    with Oracle(TestSpec("./tests/check.sh {}", "v.c", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"a bug").verdict is Verdict.BAD
        assert oracle.run(b"fine").verdict is Verdict.GOOD
    with Oracle(TestSpec("python3 -B check.py {}", "v.c", timeout=10), jobs=1) as oracle:
        assert oracle.run(b"x").verdict is Verdict.GOOD


def test_oracle_rejects_escaping_relative_paths():
    with pytest.raises(ValueError):
        Oracle(TestSpec("true", "../v.c"), jobs=1)


def test_a_file_set_is_written_at_its_paths_and_the_placeholder_names_its_directory():
    spec = TestSpec(
        'test -d {} && test "$GITREDUCE_FILE" = "$(pwd)" || exit 9; '
        "test -e lib/part.txt || exit 4; sh main.sh",
        "proj",
        file_set=True,
    )
    full = {"main.sh": b"exit 3", "lib/part.txt": b""}
    with Oracle(spec, jobs=1) as oracle:
        assert oracle.run(fileset.pack(full)).exit_code == 3
        assert oracle.run(fileset.pack(full | {"main.sh": b"exit 0"})).exit_code == 0
        assert oracle.run(fileset.pack({"main.sh": b"exit 0"})).exit_code == 4  # none left over


def test_a_speculative_test_past_the_winner_is_killed_and_its_slot_freed(tmp_path):
    """Two jobs: the first candidate fails the test at once, the second would sleep for
    half a minute; the engine abandons the second, and the oracle kills its whole group."""
    pids = tmp_path / "pids"
    command = (
        'case "$(cat {})" in bad) sleep 1; exit 1;; '
        f'slow) sleep 30 & echo "$$ $!" > {pids}; wait;; esac; exit 0'
    )
    with Oracle(TestSpec(command, "v.c", timeout=60), jobs=2) as oracle:
        engine = Engine(oracle.run, lambda outcome: outcome.verdict is Verdict.BAD, jobs=2)
        try:
            started = time.monotonic()
            found = engine.first_success([b"bad", b"slow"], smaller_than=100, label="t")
            assert found == (0, b"bad")
            shell, sleeper = (int(pid) for pid in wait_for_file(pids).split())
            assert wait_dead(shell) and wait_dead(sleeper)
            assert time.monotonic() - started < 20
            assert engine.cache.get(blob_id(b"slow")) is None
            assert engine.stats.tests_run == 1
            # both slots are free again: two quick tests run side by side
            assert engine.first_success([b"a", b"b"], smaller_than=100, label="t") is None
            assert engine.stats.tests_run == 3
        finally:
            engine.close()


def test_set_jobs_gives_the_oracle_more_slots(tmp_path):
    with Oracle(TestSpec("sleep 0.5; exit 0", "v.c", timeout=10), jobs=1) as oracle:
        oracle.set_jobs(3)
        started = time.monotonic()
        with ThreadPoolExecutor(3) as pool:
            outcomes = list(pool.map(oracle.run, [b"a", b"b", b"c"]))
        assert [outcome.verdict for outcome in outcomes] == [Verdict.GOOD] * 3
        assert time.monotonic() - started < 1.4  # side by side, not one after another


def test_a_judgement_given_up_while_waiting_for_a_slot_leaves_at_once_and_runs_nothing(
    tmp_path,
):
    """One slot, held by a long test: a second run waits for it; once its ticket is
    abandoned it raises `Abandoned` at once, without waiting for the slot or starting
    its test."""
    ran = tmp_path / "ran"
    command = f'cat {{}} >> {ran}; echo >> {ran}; [ "$(cat {{}})" = long ] && sleep 30; exit 0'
    with Oracle(TestSpec(command, "v.c", timeout=60), jobs=1) as oracle:
        pool = ThreadPoolExecutor(max_workers=2)
        try:
            pool.submit(oracle.run, b"long")
            assert wait_for_file(ran) == "long"
            ticket = tickets.Ticket()

            def waiting() -> Outcome:
                with tickets.holding(ticket):
                    return oracle.run(b"second")

            second = pool.submit(waiting)
            time.sleep(0.2)
            assert not second.done()
            started = time.monotonic()
            ticket.abandon()
            with pytest.raises(tickets.Abandoned):
                second.result(timeout=10)
            assert time.monotonic() - started < 5
        finally:
            oracle.stop()
            pool.shutdown()
    assert ran.read_text().split() == ["long"]


def print_cpus_together(gate: Path, count: int) -> TestSpec:
    """A test that prints the processors its processes may run on ("0-1", "3") once
    `count` runs are under way at once (each leaves a file in `gate`; at most 10 s)."""
    gate.mkdir(exist_ok=True)
    wait = (
        f"touch {gate}/$$; n=0; while [ $(ls {gate} | wc -l) -lt {count} ] && "
        "[ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done"
    )
    return TestSpec(f"{wait}; grep Cpus_allowed_list /proc/self/status | cut -f2", "v.txt")


def cpu_list(text: str) -> set[int]:
    """The processors a `Cpus_allowed_list` value names ("0-2,5" is {0, 1, 2, 5})."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def allowed_in_runs(oracle: Oracle, count: int) -> list[set[int]]:
    """What `count` runs at once were allowed; each thread that started one must have got
    its own affinity back."""
    mine = os.sched_getaffinity(0)

    def run(_: int) -> set[int]:
        output = oracle.run_with_output(b"")[1]
        assert os.sched_getaffinity(0) == mine
        return cpu_list(output)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no thread affinity here")
def test_with_a_slot_per_processor_tests_at_once_each_run_on_a_processor_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    mine = os.sched_getaffinity(0)
    count = len(mine)
    with Oracle(print_cpus_together(tmp_path / "pinned", count), jobs=count) as oracle:
        placed = allowed_in_runs(oracle, count)
        assert all(len(cpus) == 1 for cpus in placed), placed
        assert set().union(*placed) == mine  # one each
    more = print_cpus_together(tmp_path / "more", count + 1)
    with Oracle(more, jobs=count) as oracle:
        oracle.set_jobs(count + 1)  # more slots than processors: none pinned
        assert allowed_in_runs(oracle, count + 1) == [mine] * (count + 1)
    monkeypatch.setenv("GITREDUCE_PIN", "0")
    with Oracle(print_cpus_together(tmp_path / "off", count), jobs=count) as oracle:
        assert allowed_in_runs(oracle, count) == [mine] * count


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs thread affinity and two processors",
)
def test_two_oracles_of_one_process_put_their_lone_tests_on_different_processors(
    tmp_path: Path,
):
    """A triage's reductions run side by side in one process: one test each at a time
    must not both go to the first processor."""
    mine = os.sched_getaffinity(0)
    spec = print_cpus_together(tmp_path / "gate", 2)
    with (
        Oracle(spec, jobs=len(mine)) as first,
        Oracle(spec, jobs=len(mine)) as second,
        ThreadPoolExecutor(2) as pool,
    ):
        runs = list(pool.map(lambda oracle: oracle.run_with_output(b"")[1], [first, second]))
    one, other = (cpu_list(output) for output in runs)
    assert len(one) == len(other) == 1 and one != other


def test_a_name_the_shell_would_expand_is_never_put_inside_a_quoted_word(tmp_path, monkeypatch):
    """The candidate's name may be a file's name in a stranger's commit. `{}` as a word of
    its own is quoted, so the name arrives as one argument; inside a quoted word the
    quoting does not hold (before: `sh -c "... {}"` ran the name's `$(...)`), so such a
    name is refused there before any test, and a plain name still goes anywhere."""
    monkeypatch.chdir(tmp_path)
    hostile = "$(touch PWNED).c"
    shown = tmp_path / "argument"
    alone = TestSpec(command=f"printf %s {{}} > {shown}", relative_path=hostile)
    with Oracle(alone, 1) as oracle:
        assert oracle.run(b"int x;\n").verdict is Verdict.GOOD
    assert shown.read_text().endswith("/$(touch PWNED).c")
    for command in ('sh -c "true {}"', "sh -c 'true {}'", 'cc -o "{}.o"', "true \\{}"):
        spec = TestSpec(command=command, relative_path=hostile)
        with pytest.raises(UserError, match="cannot be put inside a quoted word"):
            Oracle(spec, 1).close()
    assert not (tmp_path / "PWNED").exists()
    plain = TestSpec(command=f'sh -c "printf %s {{}} > {shown}"', relative_path="dir/a-1.c")
    with Oracle(plain, 1) as oracle:
        assert oracle.run(b"int x;\n").verdict is Verdict.GOOD
    assert shown.read_text().endswith("/dir/a-1.c")
