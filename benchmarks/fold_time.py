#!/usr/bin/env python3
"""How long the fold takes for 1,000 and 10,000 notes. Prints; asserts nothing.

Two mixes: every note a ledger record (the worst case), and one note in ten a record (an issue
with discussion). "cold" is the first fold in a fresh process; "warm" folds the same notes
again, as a verb does after it writes (schema verdicts are cached per marker text).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from ledgerkit import ISSUE, Trail  # noqa: E402

from pairgate.standalone.config import load_config  # noqa: E402
from pairgate.standalone.fold import fold  # noqa: E402
from pairgate.standalone.ledger import Note  # noqa: E402
from pairgate.standalone.records import _PROBLEMS, MARKER_OPEN  # noqa: E402

CONFIG = load_config({"PAIRGATE_CONFIG": str(ROOT / "tests" / "fixtures" / "pairgate-config.json")})


# One session for every record, as the benchmark has always written them: the figures compare
# the fold across changes, so its notes change only where the record format does.
SESSION = "session-1"


def notes(count: int, every: int) -> list[Note]:
    trail = Trail(CONFIG)
    trail.claim("acme-lead", session=SESSION)
    held_by, other = "acme-lead", "acme-review"
    while len(trail.notes) < count:
        if len(trail.notes) % every:
            trail.note("A comment in the discussion, as people write them.", author=13)
            continue
        offer = trail.handoff(held_by, other, role="review", session=SESSION)
        trail.accept(other, offer, held_by, session=SESSION)
        held_by, other = other, held_by
    return trail.notes[:count]


def timed(batch: list[Note]) -> float:
    start = time.perf_counter()
    fold(batch, config=CONFIG, issue=ISSUE)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    print(f"{'notes':>7} {'records':>8} {'cold ms':>9} {'warm ms (median of 5)':>22}")
    for count in (1_000, 10_000):
        for every in (1, 10):
            batch = notes(count, every)
            _PROBLEMS.clear()
            cold = timed(batch)
            warm = statistics.median(timed(batch) for _ in range(5))
            records = sum(MARKER_OPEN in n.body for n in batch)
            print(f"{count:>7} {records:>8} {cold:>9.1f} {warm:>22.1f}")


if __name__ == "__main__":
    main()
