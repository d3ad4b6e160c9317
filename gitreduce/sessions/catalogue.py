"""The passes a run may switch off: every schedule's passes by name, and the passes one
pass runs inside another by label (`min-commonality/tree`).

Job: one list that `--list-passes`, `--skip-pass` and the API's `skip_passes` agree
on, built from the schedules themselves so a new pass is known the moment it is
scheduled.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitreduce.core.errors import UserError

# PPR's pass that runs the single-program schedule on the seed; its passes are labelled
# under it (`min-commonality/tree`): that label switches one off there only, the plain
# name (`tree`) everywhere.
NESTING_PASS = "min-commonality"


def pass_schedules() -> list[tuple[str, list[tuple[str, str]]]]:
    """The pass schedules, each as (what it is, [(pass name, summary), ...] in running order).

    These are the names `skip_passes` takes and the labels `pass_profile()` reports.
    The schedules load here, not with the module: a single-program run that switches no
    pass off never asks, and so starts without the pairwise and file-set passes.
    """
    from gitreduce.pair import ppr
    from gitreduce.passes import across, schedule
    from gitreduce.sessions.setpair_search import SET_ROUND

    single = (*schedule.ROUND, *schedule.LATE, *schedule.FINAL)
    return [
        (
            "single program (each round; late passes at the rounds' fixpoint; once at the end)",
            [(declared.name, declared.summary) for declared in single],
        ),
        (
            "pairwise (PPR, each round)",
            [(declared.name, declared.summary) for declared in ppr.ROUND],
        ),
        (
            "pairs of file sets (each round; file-ppr runs PPR on a file, file-one-side the "
            "single-program passes, file-commonality PPR's commonality passes)",
            [(declared.name, declared.summary) for declared in SET_ROUND],
        ),
        (
            "file sets (each file's single-program schedule with the others fixed; at the "
            "rounds' fixpoint, these over the whole set)",
            [(declared.name, declared.summary) for declared in across.ACROSS],
        ),
    ]


def known_passes() -> list[str]:
    """Every name `skip_passes` accepts: each pass of the schedules, then the
    single-program passes under PPR's `min-commonality` (`min-commonality/tree`, ...),
    then the passes the file-set pair's passes nest (`file-ppr/min-tdiff`, ...)."""
    from gitreduce.pair import ppr
    from gitreduce.passes import schedule

    names = [name for _, passes in pass_schedules() for name, _ in passes]
    single = [declared.name for declared in (*schedule.ROUND, *schedule.LATE, *schedule.FINAL)]
    pairwise = [declared.name for declared in ppr.ROUND]
    under_ppr = [*pairwise, *(f"{NESTING_PASS}/{name}" for name in single)]
    nested = {
        "file-ppr": under_ppr,
        "file-one-side": single,
        "file-commonality": [
            name for name in under_ppr if name.startswith(("coarse-", NESTING_PASS))
        ],
    }
    return (
        names
        + [f"{NESTING_PASS}/{name}" for name in single]
        + [f"{outer}/{name}" for outer, inner in nested.items() for name in inner]
    )


def chosen_passes(names: Iterable[str], rename: bool) -> tuple[str, ...]:
    """The passes to switch off, once every name is known to be one (a string is one
    name); `rename` among them when switched off."""
    chosen = (names,) if isinstance(names, str) else tuple(names)
    if chosen:
        known = known_passes()
        for name in chosen:
            if name not in known:
                raise UserError(f"unknown pass {name!r}; known: {', '.join(known)}")
    return chosen if rename else (*chosen, "rename")
