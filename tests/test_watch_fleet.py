"""A fleet: two and four watchers on one PostgreSQL store, every one of them sent every webhook,
an agent acknowledging as batches come; a watcher killed in the middle of a push, its lease
taken over. Each asserts that no event is lost, none is stored twice, no batch is pushed twice,
and nothing is pushed after its ACK."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pairgate.watch.store import Store
from tests.kit.names import APP, LEAD, project_path
from tests.kit.watchfleet import Watcher, pushes, register, until, watchers
from tests.kit.world import Round

pytestmark = pytest.mark.slow


@pytest.fixture
def world(sandbox: Any, tmp_path: Path, postgres_url: str) -> Round:
    w = Round(sandbox, watch_dir=tmp_path, store_url=postgres_url)
    w.claim()
    w.poll()
    return w


def ack_pending(store: Store) -> None:
    for batch in store.live_batches(LEAD):
        if batch.state == "pending" and batch.attempts:
            with store.writing():
                store.ack(batch.id, agent=LEAD, note=None, now=time.time(), cli="pairgate")


def check_the_store(store: Store, notes: list[int], pushed: list[dict[str, Any]]) -> None:
    rows = store._db.q("SELECT id, detail FROM events WHERE kind = 'comment-added'")
    seen = Counter(json.loads(r["detail"])["note_id"] for r in rows)
    assert sorted(seen) == sorted(notes), "an event was lost"
    assert all(n == 1 for n in seen.values()), f"stored twice: {seen}"
    members = Counter(
        r["event_id"]
        for r in store._db.q(
            "SELECT be.event_id FROM batch_events be JOIN batches b ON b.id = be.batch_id "
            "WHERE b.state IN ('pending', 'acked')"
        )
    )
    assert all(n == 1 for n in members.values()), "an event is in two live batches"
    labels = Counter(p["batch"] for p in pushed)
    assert all(n == 1 for n in labels.values()), f"pushed twice: {labels}"
    for row in store._db.q("SELECT id, acked_at FROM batches WHERE acked_at IS NOT NULL"):
        late = [a for a in store.attempts(row["id"]) if a["at"] > row["acked_at"]]
        assert late == [], f"b{row['id']} delivered after its ACK"


@pytest.mark.parametrize("count", [2, 4])
def test_watchers_sharing_a_store_lose_nothing_and_deliver_nothing_after_an_ack(
    world: Round, tmp_path: Path, count: int
) -> None:
    mrs = [world.mr]
    for n in range(2):
        world.sb.commit(f"more-{n}", {f"m{n}.txt": "x"})
        made = world.sb.create_mr(f"more-{n}", description=f"Part of acme/tracker#{world.issue}")
        mrs.append(int(made["iid"]))
    box = tmp_path / "pushed"
    store = world.store()
    notes: list[int] = []
    with watchers(world, tmp_path, count, "--interval", "2", push_to=box) as fleet:
        for watcher in fleet:
            register(world, watcher.url)  # every watcher is sent every hook
        for i in range(12):
            path = f"{project_path(APP)}/merge_requests/{mrs[i % len(mrs)]}/notes"
            note = world.sb.api("POST", path, as_user="review_bot", json={"body": f"c{i}"})
            notes.append(note["id"])
            ack_pending(store)

        def all_stored() -> bool:
            rows = store._db.q("SELECT COUNT(*) AS n FROM events WHERE kind = 'comment-added'")
            return int(rows[0]["n"]) >= len(notes)

        until(all_stored, 20, step=0.1)

        def all_handled() -> bool:
            ack_pending(store)
            return all(b.state != "pending" for b in store.live_batches())

        until(all_handled, 20, step=0.1)
        time.sleep(1)  # a watcher that would push after an ACK has had its chance
    pushed = pushes(box)
    check_the_store(store, notes, pushed)
    acked = {f"b{r['id']}" for r in store._db.q("SELECT id FROM batches WHERE state = 'acked'")}
    assert acked and acked <= {p["batch"] for p in pushed}


def test_a_watcher_killed_mid_batch_is_taken_over_when_its_lease_runs_out(
    world: Round, tmp_path: Path
) -> None:
    note = world.comment("handle me")
    world.poll()  # stored and batched, never pushed
    started = tmp_path / "push-started"
    stuck = f"sh -c 'touch {started}; sleep 60'"
    dead = Watcher(world, tmp_path / "a", "--no-poll", "--lease", "1", "--deliver-command", stuck)
    until(started.exists, 15)
    dead.kill()  # mid-batch: it claimed the batch and never recorded the push
    store = world.store()
    (claimed,) = store.live_batches()
    assert claimed.attempts == 0
    box = tmp_path / "pushed"
    alive = Watcher(world, tmp_path / "b", "--no-poll", "--lease", "1", push_to=box)
    try:
        (taken,) = until(lambda: pushes(box), 15, step=0.05)
        assert taken["events"][0]["detail"]["note_id"] == note["id"]
        with store.writing():
            store.ack(claimed.id, agent=LEAD, note="done", now=time.time(), cli="pairgate")
        time.sleep(1.5)  # more than a lease: the watcher has looked again
    finally:
        assert alive.stop() == 0
    check_the_store(store, [note["id"]], pushes(box))
    (attempt,) = store.attempts(claimed.id)
    assert (attempt["channel"], attempt["kind"], attempt["ok"]) == ("push", "new", 1)
