"""The watch store on both of its databases (``store_url``: a SQLite file, then a PostgreSQL
schema): batches, attempts, ACKs by the recipient, moves, reminders, final notices, survival of
a restart, leases, the webhook queue, snapshot versions and migrations. The same test, the same
assertions, on each."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from pairgate.standalone.errors import Refusal, UsageError
from pairgate.watch import schema
from pairgate.watch.batches import NewBatch, Plan, plan
from pairgate.watch.records import Event, Route
from pairgate.watch.store import Store, StoreError

TRACKER = "acme/tracker"
MR = "mr:acme/app!3"
A = "a" * 40


def open_store(url: str) -> Store:
    return Store.open(url, tracker=TRACKER)


@pytest.fixture
def store(store_url: str) -> Store:
    return open_store(store_url)


def comment(i: int, subject: str = MR) -> Event:
    return Event(subject, "comment-added", A, None, {"note_id": i, "body": f"c{i}"})


def batch_of(store: Store, events: list[Event], to: str | None = "lead", now: float = 0.0) -> int:
    with store.writing():
        stored = store.add_events(events, now)
        (made,) = store.apply(
            Plan(new=(NewBatch(to, events[0].subject, "r", tuple(e.id for e in stored)),)), now
        )
    return made


def test_a_batch_keeps_its_events_and_its_recipient(store: Store) -> None:
    made = batch_of(store, [comment(1), comment(2)])
    (live,) = store.live_batches()
    assert (live.id, live.recipient, live.state, len(live.event_ids)) == (
        made,
        "lead",
        "pending",
        2,
    )
    assert [e.detail["body"] for e in store.events(live.event_ids).values()] == ["c1", "c2"]
    assert store.live_batches("review") == [] and store.open_events() == []


def test_attempts_are_recorded_and_only_the_recipient_acks(store: Store) -> None:
    made = batch_of(store, [comment(1)])
    with store.writing():
        store.record_attempt(made, channel="push", kind="new", ok=False, detail="exit 1", now=5.0)
        store.record_attempt(made, channel="push", kind="retry", ok=True, detail="ok", now=9.0)
    found = store.batch(made)
    assert found is not None
    assert (found.attempts, found.last_attempt_ok, found.first_ok_at) == (2, True, 9.0)
    assert [(a["kind"], a["ok"]) for a in store.attempts(made)] == [("new", 0), ("retry", 1)]
    with store.writing(), pytest.raises(Refusal, match="was delivered to lead, not review"):
        store.ack(made, agent="review", note=None, now=10.0, cli="pairgate")
    with store.writing():
        done = store.ack(made, agent="lead", note="fixed", now=11.0, cli="pairgate", session="s1")
    assert (done.state, done.ack_note, done.ack_session, done.acked_at) == (
        "acked",
        "fixed",
        "s1",
        11.0,
    )
    assert store.live_batches() == []
    with store.writing(), pytest.raises(UsageError, match="there is no batch b99"):
        store.ack(99, agent="lead", note=None, now=1.0, cli="pairgate")


def test_a_move_reissues_and_a_late_ack_clears_nothing(store: Store) -> None:
    old = batch_of(store, [comment(1)])
    with store.writing():
        moves = plan([], store.live_batches(), {MR: Route("review", "r2")}, {})
        (new,) = store.apply(moves, 1.0)
    (live,) = store.live_batches()
    assert (live.id, live.recipient, live.replaces) == (new, "review", (old,))
    with store.writing():
        late = store.ack(old, agent="lead", note=None, now=2.0, cli="pairgate")
    assert (late.state, late.moved_to) == ("moved", new)
    assert [b.id for b in store.live_batches("review")] == [new]


def test_a_final_notice_is_claimed_once(store: Store) -> None:
    waiting = batch_of(store, [comment(1)])
    with store.writing():
        (merged,) = store.add_events([Event(MR, "merged", A, None, {})], 1.0)
        notice = plan([merged], store.live_batches(), {MR: Route("lead", "r")}, {})
        (final,) = store.apply(notice, 1.0)
    assert store.batch(waiting).state == "ended"  # type: ignore[union-attr]
    (claimed,) = store.claim_due("w1", now=2.0, remind_after=60, lease=30)
    assert (claimed[0].id, claimed[1]) == (final, "final")
    with store.writing():
        store.record_attempt(final, channel="push", kind="final", ok=False, detail="x", now=2.0)
    assert store.claim_due("w1", now=999.0, remind_after=60, lease=30) == []
    assert store.batch(final).state == "final-sent"  # type: ignore[union-attr]


def test_reminders_come_due_and_stop_at_the_ack(store: Store) -> None:
    made = batch_of(store, [comment(1)])
    (first,) = store.claim_due("w1", now=0.0, remind_after=60, lease=30)
    assert first[1] == "new"
    with store.writing():
        store.record_attempt(made, channel="push", kind="new", ok=True, detail="ok", now=0.0)
    assert store.claim_due("w1", now=59.0, remind_after=60, lease=30) == []
    (again,) = store.claim_due("w1", now=60.0, remind_after=60, lease=30)
    assert again[1] == "reminder"
    with store.writing():
        store.ack(made, agent="lead", note=None, now=61.0, cli="pairgate")
    assert store.claim_due("w2", now=10_000.0, remind_after=60, lease=30) == []


def test_a_lease_holds_a_batch_until_it_runs_out(store: Store) -> None:
    """A watcher killed mid-batch: it claimed and never recorded. Nobody else takes the batch
    while the lease runs; then the next watcher does."""
    made = batch_of(store, [comment(1)])
    assert [b.id for b, _ in store.claim_due("dead", now=0.0, remind_after=60, lease=30)] == [made]
    assert store.claim_due("alive", now=29.0, remind_after=60, lease=30) == []
    taken = store.claim_due("alive", now=30.0, remind_after=60, lease=30)
    assert [(b.id, why) for b, why in taken] == [(made, "new")]
    assert store.claim_due("alive", now=31.0, remind_after=60, lease=30, skip=[made]) == []


def test_a_store_survives_a_restart(store_url: str) -> None:
    first = open_store(store_url)
    made = batch_of(first, [comment(1)])
    with first.writing():
        first.set_meta("marks", '{"mrs": "x"}')
        first.record_attempt(made, channel="push", kind="new", ok=True, detail="ok", now=3.0)
    first.close()
    again = open_store(store_url)
    (live,) = again.live_batches()
    assert (live.id, live.attempts, again.meta("marks")) == (made, 1, '{"mrs": "x"}')
    again.close()


def test_a_store_of_another_tracker_is_refused(store_url: str) -> None:
    open_store(store_url).close()
    with pytest.raises(StoreError, match="belongs to the tracker 'acme/tracker', not 'acme/else'"):
        Store.open(store_url, tracker="acme/else")


def test_a_store_of_a_later_schema_is_refused(store_url: str) -> None:
    store = open_store(store_url)
    with store.writing():
        store._db.x("INSERT INTO schema_version VALUES (?, ?)", (schema.LATEST + 1, 0))
    store.close()
    with pytest.raises(StoreError, match=f"has schema {schema.LATEST + 1}; this pairgate reads"):
        open_store(store_url)


def test_versions_count_each_snapshot(store: Store) -> None:
    from pairgate.watch.records import IssueSnap

    snap = IssueSnap(5, "t", "opened", "2026-01-01", (), Route("lead", "r"))
    assert store.versions() == {}
    with store.writing():
        store.save_subjects({"issue:acme/tracker#5": snap})
    with store.writing():
        store.save_subjects({"issue:acme/tracker#5": snap})
    assert store.versions(["issue:acme/tracker#5", "issue:x#1"]) == {"issue:acme/tracker#5": 2}


def test_a_redelivered_hook_is_stored_once_and_claimed_by_one(store: Store) -> None:
    assert store.add_hook(key="k1", event="Note Hook", body='{"object_kind": "note"}', now=1.0)
    assert not store.add_hook(key="k1", event="Note Hook", body="{}", now=2.0)
    assert store.meta("hooks_redelivered") == "1" and store.meta("last_hook_at") == "2.0"
    (hook,) = store.claim_hooks("w1", now=3.0, lease=30)
    assert (hook.key, hook.body) == ("k1", {"object_kind": "note"})
    assert store.claim_hooks("w2", now=4.0, lease=30) == []
    store.release_hooks([hook.id], error="GitLab said 503")
    (again,) = store.claim_hooks("w2", now=5.0, lease=30)
    with store.writing():
        store.finish_hooks([(again.id, "1 merge request read")], now=6.0)
    assert store.claim_hooks("w3", now=10_000.0, lease=30) == []
    (done,) = store.hooks("done")
    assert done.result == "1 merge request read"


def test_a_refused_hook_is_counted_with_its_reason(store: Store) -> None:
    store.refuse_hook(reason="no X-Gitlab-Token", remote="127.0.0.1", now=1.0)
    store.refuse_hook(reason="wrong X-Gitlab-Token", remote="127.0.0.2", now=2.0)
    assert store.meta("hooks_refused") == "2"
    assert store.meta_json("last_hook_refused", {}) == {
        "at": 2.0,
        "reason": "wrong X-Gitlab-Token",
        "from": "127.0.0.2",
    }


def test_watchers_take_turns_polling(store: Store) -> None:
    assert store.claim_poll("a", now=0.0, interval=900)
    assert not store.claim_poll("b", now=100.0, interval=900)
    assert store.claim_poll("a", now=100.0, interval=900)  # its own turn
    assert store.claim_poll("b", now=1000.0, interval=900)  # a's turn ran out (a died)


def test_concurrent_claims_never_share_a_batch(store_url: str) -> None:
    """Four connections claim at once, each one batch at a time, until none is left: every
    batch is claimed exactly once."""
    setup = open_store(store_url)
    made = [batch_of(setup, [comment(i)]) for i in range(40)]
    setup.close()
    got: dict[str, list[int]] = {}
    start = threading.Barrier(4)

    def claimer(name: str) -> None:
        mine = open_store(store_url)
        start.wait()
        got[name] = []
        while claimed := mine.claim_due(name, now=0.0, remind_after=60, lease=300, limit=3):
            got[name] += [b.id for b, _ in claimed]
        mine.close()

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = sorted(i for ids in got.values() for i in ids)
    assert everything == made


def test_a_sqlite_store_from_before_migrations_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    for sql in schema.statements("sqlite", schema.MIGRATIONS[0]):
        conn.execute(sql)
    conn.execute("INSERT INTO meta VALUES ('tracker', 'acme/tracker'), ('schema', '1')")
    conn.execute(
        "INSERT INTO batches (recipient, subject, rule, created_at, state, final) "
        "VALUES ('lead', 'mr:acme/app!3', 'r', 0, 'pending', 0)"
    )
    conn.commit()
    conn.close()
    store = open_store(str(path))
    (live,) = store.live_batches()
    assert (live.recipient, live.ack_session) == ("lead", None)
    versions = [r["version"] for r in store._db.q("SELECT version FROM schema_version")]
    assert versions == list(range(1, schema.LATEST + 1))


def test_an_unreachable_postgres_store_says_so(tmp_path: Path) -> None:
    url = f"postgresql://nobody:secret@/x?host={tmp_path}&port=1"
    with pytest.raises(StoreError) as failed:
        Store.open(url, tracker=TRACKER)
    assert failed.value.message.startswith(
        f"pairgate: cannot use the watch store postgresql://nobody@/x?host={tmp_path}"
    )
    assert "secret" not in failed.value.message
