"""The collector is off while folds run, and as it was once the last one ends."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from pairgate.standalone.collector import hold_collector, release_collector
from pairgate.standalone.config import Config
from pairgate.standalone.fold import fold
from tests.kit.names import LEAD, REVIEW
from tests.kit.trail import Trail


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


class Probe(str):
    """A note body that notes whether the collector was on each time the fold looks into it."""

    seen: list[bool]

    def __contains__(self, part: object) -> bool:
        self.seen.append(gc.isenabled())
        return str.__contains__(self, part)  # type: ignore[operator]


def test_the_collector_is_off_while_a_fold_runs_and_on_after(config: Config) -> None:
    trail = Trail(config)
    trail.claim(LEAD)
    trail.handoff(LEAD, REVIEW)
    seen: list[bool] = []
    notes = []
    for note in trail.notes:
        body = Probe(note.body)
        body.seen = seen
        notes.append(note._replace(body=body))
    ledger = fold(notes, config=config, issue=trail.issue)
    assert ledger.holder == LEAD and ledger.offer is not None
    assert seen and not any(seen)
    assert gc.isenabled()


def test_a_fold_that_fails_leaves_the_collector_on(config: Config) -> None:
    trail = Trail(config)
    trail.claim(LEAD)
    trail.claim(REVIEW)
    broken = [trail.notes[0], trail.notes[1]._replace(id=None)]  # ids that do not sort
    with pytest.raises(TypeError):
        fold(broken, config=config, issue=trail.issue)  # type: ignore[arg-type]
    assert gc.isenabled()


def test_holds_nest_and_the_last_release_restores_it() -> None:
    hold_collector()
    hold_collector()
    assert not gc.isenabled()
    release_collector()
    assert not gc.isenabled()
    release_collector()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    hold_collector()
    release_collector()
    assert not gc.isenabled()


def test_holders_in_many_threads_leave_it_on() -> None:
    start = threading.Barrier(8)

    def hold_often() -> None:
        start.wait()
        for _ in range(500):
            hold_collector()
            assert not gc.isenabled()
            release_collector()

    threads = [threading.Thread(target=hold_often) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()
