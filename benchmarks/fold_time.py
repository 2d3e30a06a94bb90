#!/usr/bin/env python3
"""How long the fold takes for 1,000 and 10,000 notes, next to its floor. Prints; asserts nothing.

    python3 benchmarks/fold_time.py [--quick]

(``--quick``: 1,000 notes, once, for a smoke run.)

Two mixes: every note a ledger record (the worst case), and one note in ten a record (an issue
with discussion). "first" is a fold of notes this process has not read before (what it remembers
per note body is emptied first; the schema validators, built once per process, are built
before); "again" folds the same notes again, as a verb does after it writes. Times are this
process's CPU time: the fold is single-threaded and CPU-bound, and CPU time is what other work
on a shared machine disturbs least.

The floor is what any reader of these notes must do, written the obvious way: for every note,
the marker regex; for every record, json.loads, then the digest's canonical re-encode (the
record without its digest, with the kind and the folded human text, through one
``json.JSONEncoder(sort_keys=True, separators=(",", ":"))``) and its sha256. The fold and its
floor run alternately, several times; the figures are the fastest of each (the least disturbed
by whatever else the machine runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.standalone import records  # noqa: E402
from pairgate.standalone.config import load_config  # noqa: E402
from pairgate.standalone.fold import fold  # noqa: E402
from pairgate.standalone.ledger import Note  # noqa: E402
from tests.kit.names import ISSUE  # noqa: E402
from tests.kit.trail import Trail  # noqa: E402

CONFIG = load_config({"PAIRGATE_CONFIG": str(ROOT / "tests" / "fixtures" / "pairgate-config.json")})
MARKER = re.compile(r"^<!-- mochi-task:(\S+) (.*) -->[ \t]*$", re.MULTILINE)
CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# One session for every record, as the benchmark has always written them: the figures compare
# the fold across changes, so its notes change only where the record format does.
SESSION = "session-1"


def notes(count: int, every: int) -> list[Note]:
    """``count`` notes, one in ``every`` a ledger record (a claim, then handoffs each accepted),
    the others comments by a maintainer."""
    trail = Trail(CONFIG)
    trail.claim("acme-lead", session=SESSION)
    held_by, other, offer = "acme-lead", "acme-review", None
    while len(trail.notes) < count:
        if len(trail.notes) % every:
            trail.note("A comment in the discussion, as people write them.", author=13)
        elif offer is None:
            offer = trail.handoff(held_by, other, role="review", session=SESSION)
        else:
            trail.accept(other, offer, held_by, session=SESSION)
            held_by, other, offer = other, held_by, None
    return trail.notes[:count]


def floor(batch: list[Note]) -> list[str]:
    """The floor: every marker found, decoded, re-encoded canonically and hashed."""
    digests = []
    for note in batch:
        found = MARKER.search(note.body)
        if found is None:
            continue
        record = json.loads(found.group(2))
        record.pop("digest", None)
        human = note.body[: found.start()] + note.body[found.end() :]
        text = CANONICAL.encode(
            {"kind": found.group(1), "record": record, "text": " ".join(human.split())}
        )
        digests.append(hashlib.sha256(text.encode("ascii")).hexdigest())
    return digests


def _ms(func: Callable[[], Any], before: Callable[[], None] | None = None) -> float:
    if before:
        before()
    start = time.process_time()
    result = func()
    elapsed = time.process_time() - start
    del result  # freed after the clock stops, for every contestant alike
    return elapsed * 1000


def measure(count: int, every: int, runs: int = 9) -> dict[str, float]:
    """The fastest of ``runs`` of the floor, a first fold and a second fold, alternately."""
    batch = notes(count, every)
    fold(batch[:20], config=CONFIG, issue=ISSUE)  # the validators, built once per process
    times: dict[str, list[float]] = {"floor": [], "first": [], "again": []}
    for _ in range(runs):
        times["floor"].append(_ms(lambda: floor(batch)))
        times["first"].append(
            _ms(lambda: fold(batch, config=CONFIG, issue=ISSUE), records.forget_reads)
        )
        times["again"].append(_ms(lambda: fold(batch, config=CONFIG, issue=ISSUE)))
    return {name: min(values) for name, values in times.items()} | {
        "records": sum(records.MARKER_OPEN in n.body for n in batch)
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 notes, once (a smoke run)")
    args = parser.parse_args(argv)
    print(
        f"{'notes':>7} {'records':>8} {'floor ms':>9} {'first ms':>9} {'x':>5} {'again ms':>9} {'x':>5}"
    )
    for count in (1_000,) if args.quick else (1_000, 10_000):
        for every in (1, 10):
            m = measure(count, every, 1 if args.quick else 9)
            print(
                f"{count:>7} {m['records']:>8} {m['floor']:>9.1f} {m['first']:>9.1f} "
                f"{m['first'] / m['floor']:>5.2f} {m['again']:>9.1f} {m['again'] / m['floor']:>5.2f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
