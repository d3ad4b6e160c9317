"""The recording random source: what it draws is what `random.Random(seed)` draws."""

from __future__ import annotations

import random

from generator_support import record


def test_recording_does_not_change_the_stream() -> None:
    def entry(rng: random.Random) -> str:
        items = list(range(10))
        rng.shuffle(items)
        values = [
            rng.random(),
            rng.randint(1, 6),
            rng.randrange(0, 100, 7),
            rng.choice("xyz"),
            rng.choices("ab", k=3),
            rng.sample(range(50), 4),
            rng.uniform(2, 3),
            rng.gauss(0, 1),
            rng.getrandbits(12),
            rng.randbytes(3),
            items,
        ]
        return repr(values)

    for seed in (1, 2, 3):
        assert record(entry, seed).output == entry(random.Random(seed)).encode()
