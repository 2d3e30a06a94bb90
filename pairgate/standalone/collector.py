"""The cyclic garbage collector, held off while folds run.

A fold builds tens of thousands of containers that outlive it (each record's dicts, its Event,
the ledger's tuples), none of them in a cycle. Yet the collector counts every container made:
every 700 it scans the young ones, and now and then the whole heap. Those passes free nothing a
fold made; timed by gc.callbacks they cost a first fold of 10,000 records 35 to 130 ms. So the
collector is off while any fold runs, in any thread, and back on (if it was on when the first
began) when the last one ends: cycles other code made meanwhile are found then. Reference
counting, which frees nearly everything, is untouched. (Holding it over the board's whole read
as well showed no gain in benchmarks/board.py, so only the folds hold it.)
"""

from __future__ import annotations

import gc
import threading

__all__ = ["hold_collector", "release_collector"]

_holders_lock = threading.Lock()
_holders = [0, False]  # folds under way; whether the collector was on when the first began


def hold_collector() -> None:
    """The collector off for one more fold; each call is paired with release_collector."""
    with _holders_lock:
        if _holders[0] == 0:
            _holders[1] = gc.isenabled()
            gc.disable()
        _holders[0] += 1


def release_collector() -> None:
    """One fold done: the collector back on with the last, if it was on before the first."""
    with _holders_lock:
        _holders[0] -= 1
        if _holders[0] == 0 and _holders[1]:
            gc.enable()
