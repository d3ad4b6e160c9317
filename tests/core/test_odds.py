"""When a judgement still running is a better bet to win than to lose."""

from __future__ import annotations

from gitreduce.core.odds import Odds


def learned(records: list[tuple[float, bool]]) -> Odds:
    odds = Odds()
    for seconds, won in records:
        odds.record(seconds, won)
    return odds


def test_a_judgement_running_longer_than_the_losers_ran_is_favoured_to_win():
    """Losers end within 30 ms, winners take 120 ms: past 30 ms, only winners ran as long."""
    odds = learned([(0.02, False), (0.03, False)] * 20 + [(0.12, True)] * 5)
    assert not odds.favour_success(0.01)
    assert not odds.favour_success(0.03)
    assert odds.favour_success(0.031)
    assert odds.favour_success(0.11)
    assert abs(odds.when_success_favoured(0.0) - 0.03) < 1e-3
    assert odds.when_success_favoured(0.05) == 0.05


def test_no_bet_without_enough_winners_or_past_the_longest_winner():
    assert not learned([(0.02, False)] * 20 + [(0.12, True)] * 3).favour_success(0.05)
    assert learned([(0.02, False)] * 20 + [(0.12, True)] * 3).when_success_favoured(0) is None
    odds = learned([(0.02, False)] * 20 + [(0.12, True)] * 5)
    assert odds.when_success_favoured(0.13) is None  # longer than any winner ran


def test_losers_as_long_as_the_winners_outweigh_them():
    """Slow losers (a timeout, a big early input) as many as the winners: no bet."""
    odds = learned([(0.2, False)] * 6 + [(0.12, True)] * 5)
    assert odds.when_success_favoured(0.0) is None
    odds = learned([(0.2, False)] * 4 + [(0.12, True)] * 5)
    assert odds.favour_success(0.0)


def test_only_the_recent_judgements_count():
    """Old winners fall out of the window as the inputs shrink and tests change."""
    odds = learned([(0.12, True)] * 10 + [(0.02, False)] * 300)
    assert odds.when_success_favoured(0.0) is None
    odds.record(0.12, True)
    assert odds.when_success_favoured(0.0) is None  # one recent winner is not enough


def test_a_margin_asks_for_that_many_more_winners_than_losers():
    """What stops a running test for a bet asks for stronger odds: past 50 ms, six winners
    against two slow losers favour a win by a plain majority, not by three to one, which
    only holds past the slow losers (80 ms)."""
    odds = learned([(0.02, False)] * 20 + [(0.08, False)] * 2 + [(0.12, True)] * 6)
    assert odds.favour_success(0.05)
    assert not odds.favour_success(0.05, margin=3)
    assert odds.favour_success(0.081, margin=3)
    assert abs(odds.when_success_favoured(0.05, margin=3) - 0.08) < 1e-3
