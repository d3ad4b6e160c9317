"""Sizes over time: what the HTML report plots and `--json` may carry.

A `History` is a progress callback (or one of several, see `chain`): it takes a
sample of the current sizes at most `interval` seconds apart, so it never costs
the reduction more than a clock read per accepted candidate. The newest state
it skipped is kept aside and measured only when needed, so the last point of
the plot is always the final size.

Samples are `(seconds, seed, variant, diff)` in tokens, seconds counted from
the History's creation. A single-file reduction has no seed and no difference:
its program's size is the `variant` figure and the other two are None.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol


class Sample(NamedTuple):
    seconds: float
    seed: int | None
    variant: int
    diff: int | None


class _PairStateLike(Protocol):
    def seed_tokens(self) -> int: ...
    def variant_tokens(self) -> int: ...
    def diff_tokens(self) -> int: ...


Measure = Callable[[], tuple[int | None, int, int | None]]


def _measure(current: Any) -> Measure:
    """A deferred measurement of the sizes `current` has now.

    A pair's state (`PairCurrent.state`) is immutable, and so is a single file's
    parse (`Current.parsed`) or text: holding them is enough to measure later.
    """
    state = getattr(current, "state", None)
    if state is not None:
        pair: _PairStateLike = state

        def pair_sizes() -> tuple[int | None, int, int | None]:
            return pair.seed_tokens(), pair.variant_tokens(), pair.diff_tokens()

        return pair_sizes
    parsed = getattr(current, "parsed", None)
    if parsed is not None:
        tokens = parsed.tokens
        return lambda: (None, tokens, None)
    text: bytes = current.text

    def plain_sizes() -> tuple[int | None, int, int | None]:
        from gitreduce.lang.syntax import plain_tokens

        return None, len(plain_tokens(text)), None

    return plain_sizes


class History:
    """Samples of seed, variant and difference sizes, at most one per `interval` seconds.

    Use it as the progress callback (`History()(current)` with a `Current` or a
    `PairCurrent`), or call `add` with the figures. At most `max_samples` are
    kept: when full, every other sample is dropped and the interval doubles, so
    an hour-long run still gives an even plot of bounded size.
    """

    def __init__(
        self,
        interval: float = 0.1,
        *,
        max_samples: int = 2000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._started = clock()
        self._interval = interval
        self._max = max(4, max_samples)
        self._samples: list[Sample] = []
        self._pending: tuple[float, Measure] | None = None

    def __call__(self, current: Any) -> None:
        self._offer(self._clock() - self._started, _measure(current))

    def add(self, seed: int | None, variant: int, diff: int | None = None) -> None:
        """Record the sizes now (same throttling as the callback)."""
        self._offer(self._clock() - self._started, lambda: (seed, variant, diff))

    def _offer(self, seconds: float, measure: Measure) -> None:
        if self._samples and seconds - self._samples[-1].seconds < self._interval:
            self._pending = (seconds, measure)
            return
        self._pending = None
        self._samples.append(Sample(round(seconds, 3), *measure()))
        if len(self._samples) > self._max:
            # Keep the first and every other one after it; the last survives as pending.
            last = self._samples[-1]
            self._samples = self._samples[:-1:2]
            self._pending = (last.seconds, lambda: (last.seed, last.variant, last.diff))
            self._interval *= 2

    def samples(self) -> list[Sample]:
        """All samples, the newest skipped state measured and included."""
        if self._pending is not None:
            seconds, measure = self._pending
            self._pending = None
            self._samples.append(Sample(round(seconds, 3), *measure()))
        return list(self._samples)

    def as_list(self) -> list[dict[str, float | int | None]]:
        """JSON-ready: `[{"seconds": s, "seed": n, "variant": n, "diff": n}, ...]`."""
        return [sample._asdict() for sample in self.samples()]

    def __len__(self) -> int:
        return len(self._samples) + (self._pending is not None)


def chain(*callbacks: Callable[[Any], None] | None) -> Callable[[Any], None]:
    """One progress callback that calls each of `callbacks` (None entries are ignored)."""
    present = [callback for callback in callbacks if callback is not None]

    def call_all(current: Any) -> None:
        for callback in present:
            callback(current)

    return call_all
