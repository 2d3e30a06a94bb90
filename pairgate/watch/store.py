"""The watcher's store: one table set per tracker, in a SQLite file (one machine, the default)
or a PostgreSQL database a fleet of watchers shares (``backends``). The only code that speaks
SQL, one text for both databases, so both keep exactly the same meaning.

It holds the last snapshot of each merge request and issue, every event (written before any
delivery, so a crash loses nothing and may deliver twice), the batches, every delivery attempt,
each acknowledgement (with the acknowledging session), the webhooks received (``store_hooks``),
and the poll's status. Times are epoch seconds of the injected clock.

Every write runs in one short transaction (``writing``), one writer at a time. Deliveries are
claimed (``claim_due``) under a lease: one watcher holds a batch while it pushes it, and a dead
watcher's lease runs out so another takes the batch over. Only pending and final batches are
ever claimed, so nothing is claimed after its ACK.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pairgate.standalone.errors import Refusal, UsageError, state_home
from pairgate.watch import schema
from pairgate.watch.backends import (
    Database,
    Postgres,
    Row,
    SQLite,
    StoreError,
    is_postgres,
    shown,
)
from pairgate.watch.batches import Plan, due
from pairgate.watch.records import (
    LIVE,
    Batch,
    Event,
    IssueSnap,
    MrSnap,
    snap_from_doc,
    to_doc,
)
from pairgate.watch.store_hooks import HookQueue

__all__ = ["Store", "StoreError", "default_path", "is_postgres", "locate"]

_LIVE_SQL = ", ".join(f"'{s}'" for s in LIVE)
_CHUNK = 500  # ids per IN (...) list


def default_path(env: Mapping[str, str], tracker: str) -> Path:
    """<state home>/pairgate/<tracker, URL-encoded>.sqlite3: $XDG_STATE_HOME, else
    ~/.local/state (``state_home``)."""
    state = state_home(env)
    if state is None:
        raise UsageError(
            "pairgate: no place for the watch store: set XDG_STATE_HOME or HOME, or pass "
            "--store PATH"
        )
    return state / "pairgate" / f"{quote(tracker, safe='')}.sqlite3"


def locate(given: str | None, env: Mapping[str, str], variable: str, tracker: str) -> str | Path:
    """Where the store is: ``--store`` (a path or a postgresql:// URL), else the variable
    ``<env_prefix>_WATCH_STORE`` (the same), else the tracker's default SQLite file."""
    chosen = given or env.get(variable, "").strip() or None
    if chosen is None:
        return default_path(env, tracker)
    return chosen if is_postgres(chosen) else Path(chosen)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _marks(items: Sequence[Any]) -> str:
    return ",".join("?" * len(items))


def _batch(row: Row, event_ids: tuple[int, ...]) -> Batch:
    return Batch(
        id=row["id"],
        recipient=row["recipient"],
        subject=row["subject"],
        rule=row["rule"],
        created_at=row["created_at"],
        state=row["state"],
        event_ids=event_ids,
        final=bool(row["final"]),
        replaces=tuple(json.loads(row["replaces"])),
        moved_to=row["moved_to"],
        acked_at=row["acked_at"],
        ack_by=row["ack_by"],
        ack_note=row["ack_note"],
        attempts=row["attempts"],
        last_attempt_at=row["last_attempt_at"],
        last_attempt_ok=None if row["last_attempt_ok"] is None else bool(row["last_attempt_ok"]),
        last_ok_at=row["last_ok_at"],
        first_ok_at=row["first_ok_at"],
        ack_session=row["ack_session"],
    )


def _event(row: Row) -> Event:
    return Event(
        subject=row["subject"],
        kind=row["kind"],
        sha=row["sha"],
        at=row["at"],
        detail=json.loads(row["detail"]),
        id=row["id"],
        observed_at=row["observed_at"],
    )


class Store(HookQueue):
    def __init__(self, db: Database, where: str) -> None:
        self._db = db
        self.where = where  # as messages name it (a PostgreSQL URL without its password)

    @property
    def kind(self) -> str:
        return self._db.kind

    @classmethod
    def open(cls, where: str | Path, *, tracker: str, now: float = 0.0) -> Store:
        """Open the store of ``tracker`` at ``where`` (a path or a postgresql:// URL), creating
        its tables (and a SQLite file's directory) when absent and taking the migrations it
        lacks. Refused: a store of another tracker, or of a later schema."""
        db: Database = (
            Postgres(str(where), tracker=tracker) if is_postgres(where) else SQLite(Path(where))
        )
        store = cls(db, shown(where))
        try:
            store._migrate(tracker, now)
        except BaseException:
            db.close()
            raise
        return store

    def _migrate(self, tracker: str, now: float) -> None:
        try:
            with self._db.migrating():
                version = self._version()
                if version > schema.LATEST:
                    raise StoreError(
                        f"pairgate: the watch store {self.where} has schema {version}; this "
                        f"pairgate reads schemas up to {schema.LATEST}. Use a pairgate of that "
                        f"version, or another store."
                    )
                if "schema_version" not in self._db.tables():
                    for sql in schema.statements(self.kind, schema.VERSION_TABLE):
                        self._db.x(sql)
                    if version:  # a store from before migrations: migration 1 is its schema
                        self._db.x("INSERT INTO schema_version VALUES (?, ?)", (version, now))
                for number in range(version + 1, schema.LATEST + 1):
                    for sql in schema.statements(self.kind, schema.MIGRATIONS[number - 1]):
                        self._db.x(sql)
                    self._db.x("INSERT INTO schema_version VALUES (?, ?)", (number, now))
                owner = self.meta("tracker")
                if owner is None:
                    self.set_meta("tracker", tracker)
        except StoreError:
            raise
        except Exception as exc:  # a file that is not a database, a role without rights
            raise StoreError(f"pairgate: cannot use the watch store {self.where}: {exc}") from None
        if owner is not None and owner != tracker:
            raise StoreError(
                f"pairgate: the watch store {self.where} belongs to the tracker {owner!r}, "
                f"not {tracker!r}: each tracker has its own store. Leave --store out to use "
                f"this tracker's default store, or name another store."
            )

    def _version(self) -> int:
        tables = self._db.tables()
        if "schema_version" in tables:
            rows = self._db.q("SELECT MAX(version) AS v FROM schema_version")
            return int(rows[0]["v"] or 0)
        if "meta" not in tables:
            return 0
        rows = self._db.q("SELECT value FROM meta WHERE key = 'schema'")
        legacy = rows[0]["value"] if rows else None
        if legacy != "1":
            raise StoreError(
                f"pairgate: the watch store {self.where} has schema {legacy!r}; this pairgate "
                f"reads schemas up to {schema.LATEST}. Use a pairgate of that version, or "
                f"another store."
            )
        return 1

    def close(self) -> None:
        self._db.close()

    def fileno(self) -> int | None:
        """A socket that turns readable when the database ends the connection (PostgreSQL);
        None for a SQLite file."""
        return self._db.fileno()

    def ping(self) -> None:
        """One trivial query: raises ``StoreError`` when the store can no longer be used."""
        self._db.q("SELECT 1 AS one")

    def writing(self) -> Any:
        """One write transaction; the store's writers run one at a time."""
        return self._db.writing()

    def _q(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        return self._db.q(sql, args)

    # -- meta ---------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0]["value"]) if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self._db.x("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self._db.x(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def meta_json(self, key: str, default: Any) -> Any:
        raw = self.meta(key)
        return default if raw is None else json.loads(raw)

    def claim_poll(self, owner: str, *, now: float, interval: float) -> bool:
        """May ``owner`` poll now? Watchers sharing a store take turns: the one that polls holds
        the turn for ``interval`` seconds, and the others skip their polls until it runs out
        (a dead watcher's turn runs out too)."""
        with self.writing():
            turn = self.meta_json("poll_turn", {})
            if turn.get("owner") not in (None, owner) and float(turn.get("until", 0)) > now:
                return False
            self.set_meta("poll_turn", json.dumps({"owner": owner, "until": now + interval}))
            return True

    # -- snapshots ----------------------------------------------------------------------------

    def subjects(self, keys: Iterable[str] | None = None) -> dict[str, MrSnap | IssueSnap]:
        if keys is None:
            rows = self._q("SELECT subject, doc FROM subjects")
        else:
            rows = []
            for chunk in _chunks(sorted(set(keys))):
                rows += self._q(
                    f"SELECT subject, doc FROM subjects WHERE subject IN ({_marks(chunk)})", chunk
                )
        return {r["subject"]: snap_from_doc(r["subject"], json.loads(r["doc"])) for r in rows}

    def heads(self) -> dict[str, tuple[str | None, str | None]]:
        """Each merge request's head and state as last read (no document parsing)."""
        rows = self._q("SELECT subject, head, state FROM subjects WHERE subject LIKE 'mr:%'")
        return {r["subject"]: (r["head"], r["state"]) for r in rows}

    def known(self) -> dict[str, tuple[str | None, int | None, str | None]]:
        """Each subject's (updated_at, user notes count, state) as last read: what a poll
        compares a listing with."""
        rows = self._q("SELECT subject, updated_at, notes_count, state FROM subjects")
        return {r["subject"]: (r["updated_at"], r["notes_count"], r["state"]) for r in rows}

    def versions(self, keys: Iterable[str] | None = None) -> dict[str, int]:
        """Each subject's snapshot version: taken before a read, it tells at the commit whether
        another watcher committed a snapshot of that subject meanwhile (absent: 0)."""
        if keys is None:
            rows = self._q("SELECT subject, version FROM subjects")
        else:
            rows = []
            for chunk in _chunks(sorted(set(keys))):
                rows += self._q(
                    f"SELECT subject, version FROM subjects WHERE subject IN ({_marks(chunk)})",
                    chunk,
                )
        return {r["subject"]: int(r["version"]) for r in rows}

    def save_subjects(self, snaps: Mapping[str, MrSnap | IssueSnap]) -> None:
        rows = []
        for subject, snap in snaps.items():
            mr = snap if isinstance(snap, MrSnap) else None
            rows.append(
                (
                    subject,
                    mr.sha if mr else None,
                    snap.state,
                    snap.updated_at,
                    mr.user_notes_count if mr else None,
                    json.dumps(to_doc(snap), separators=(",", ":")),
                )
            )
        self._db.many(
            "INSERT INTO subjects (subject, head, state, updated_at, notes_count, doc, version) "
            "VALUES (?, ?, ?, ?, ?, ?, 1) ON CONFLICT (subject) DO UPDATE SET "
            "head = excluded.head, state = excluded.state, updated_at = excluded.updated_at, "
            "notes_count = excluded.notes_count, doc = excluded.doc, "
            "version = subjects.version + 1",
            rows,
        )

    # -- events -------------------------------------------------------------------------------

    def add_events(self, events: Sequence[Event], now: float) -> list[Event]:
        stored = []
        for e in events:
            event_id = self._db.insert(
                "INSERT INTO events (subject, kind, sha, at, observed_at, detail) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (e.subject, e.kind, e.sha, e.at, now, json.dumps(dict(e.detail))),
            )
            stored.append(Event(e.subject, e.kind, e.sha, e.at, e.detail, event_id, now))
        return stored

    def open_events(self) -> list[Event]:
        """Events neither handled nor ended that no live batch carries."""
        rows = self._q(
            "SELECT * FROM events WHERE state = 'open' AND id NOT IN (SELECT be.event_id FROM "
            f"batch_events be JOIN batches b ON b.id = be.batch_id WHERE b.state IN ({_LIVE_SQL}))"
            " ORDER BY id"
        )
        return [_event(r) for r in rows]

    def events(self, ids: Iterable[int]) -> dict[int, Event]:
        out: dict[int, Event] = {}
        for chunk in _chunks(sorted(set(ids))):
            for row in self._q(f"SELECT * FROM events WHERE id IN ({_marks(chunk)})", chunk):
                out[row["id"]] = _event(row)
        return out

    # -- batches ------------------------------------------------------------------------------

    def _hydrate(self, rows: Sequence[Row]) -> list[Batch]:
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        members: dict[int, list[int]] = {i: [] for i in ids}
        for chunk in _chunks(ids):
            for m in self._q(
                f"SELECT batch_id, event_id FROM batch_events WHERE batch_id IN ({_marks(chunk)}) "
                "ORDER BY event_id",
                chunk,
            ):
                members[m["batch_id"]].append(m["event_id"])
        return [_batch(r, tuple(members[r["id"]])) for r in rows]

    def _batches(self, where: str, args: Sequence[Any]) -> list[Batch]:
        return self._hydrate(self._q(f"SELECT * FROM batches WHERE {where} ORDER BY id", args))

    def live_batches(self, agent: str | None = None) -> list[Batch]:
        if agent is None:
            return self._batches(f"state IN ({_LIVE_SQL})", ())
        return self._batches(f"state IN ({_LIVE_SQL}) AND recipient = ?", (agent,))

    def batch(self, batch_id: int) -> Batch | None:
        found = self._batches("id = ?", (batch_id,))
        return found[0] if found else None

    def last_recipients(self, subjects: Iterable[str] | None = None) -> dict[str, str]:
        """Who last had a batch of each subject (of ``subjects`` only, when given)."""
        if subjects is None:
            rows = self._q(
                "SELECT subject, recipient FROM batches WHERE recipient IS NOT NULL ORDER BY id"
            )
        else:
            rows = []
            for chunk in _chunks(sorted(set(subjects))):
                rows += self._q(
                    "SELECT subject, recipient FROM batches WHERE recipient IS NOT NULL AND "
                    f"subject IN ({_marks(chunk)}) ORDER BY id",
                    chunk,
                )
        return {r["subject"]: r["recipient"] for r in rows}

    def apply(self, plan: Plan, now: float) -> list[int]:
        """Carry out a plan (inside ``writing``); the new batches' ids, in the plan's order."""
        created = []
        for new in plan.new:
            batch_id = self._db.insert(
                "INSERT INTO batches (recipient, subject, rule, created_at, state, final, "
                "replaces) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    new.recipient,
                    new.subject,
                    new.rule,
                    now,
                    # a last notice with nobody to send it to is over before it starts
                    ("final" if new.recipient else "ended") if new.final else "pending",
                    int(new.final),
                    json.dumps(list(new.replaces)),
                ),
            )
            created.append(batch_id)
            self._db.many(
                "INSERT INTO batch_events VALUES (?, ?)", [(batch_id, e) for e in new.event_ids]
            )
            if new.final:  # delivered by this notice alone; never batched again
                self._set_events(new.event_ids, "ended")
        for old, index in plan.moved.items():
            target = None if index is None else created[index]
            self._db.x(
                "UPDATE batches SET state = 'moved', moved_to = ? WHERE id = ?", (target, old)
            )
        for old in plan.ended_batches:
            self._db.x("UPDATE batches SET state = 'ended' WHERE id = ?", (old,))
            ids = [
                r["event_id"]
                for r in self._q("SELECT event_id FROM batch_events WHERE batch_id = ?", (old,))
            ]
            self._set_events(ids, "ended")
        self._set_events(plan.ended_events, "ended")
        return created

    def _set_events(self, ids: Iterable[int], state: str) -> None:
        self._db.many(
            "UPDATE events SET state = ? WHERE id = ? AND state = 'open'", [(state, i) for i in ids]
        )

    def claim_due(
        self,
        owner: str,
        *,
        now: float,
        remind_after: float,
        lease: float,
        limit: int = 1,
        skip: Iterable[int] = (),
    ) -> list[tuple[Batch, str]]:
        """Lease up to ``limit`` batches due a delivery (``batches.due`` decides), none in
        ``skip``, none another watcher holds under a live lease; with why each is due. The lease
        ends when the attempt is recorded, or at ``now + lease``, after which another watcher
        may take the batch over."""
        skipped = sorted(set(skip))
        # ``due`` in SQL, to pick candidates; ``due`` itself has the last word.
        where = (
            f"state IN ({_LIVE_SQL}) AND recipient IS NOT NULL "
            "AND (lease_until IS NULL OR lease_until <= ?) "
            "AND ((state = 'final' AND attempts = 0) OR (state = 'pending' AND "
            "(last_ok_at IS NULL OR last_attempt_ok = 0 OR last_ok_at <= ?)))"
        )
        args: list[Any] = [now, now - remind_after]
        if skipped:
            where += f" AND id NOT IN ({_marks(skipped)})"
            args += skipped
        with self._db.claiming():
            rows = self._q(
                f"SELECT * FROM batches WHERE {where} ORDER BY id LIMIT ?{self._db.skip_locked}",
                [*args, limit],
            )
            found = [
                (b, why)
                for b in self._hydrate(rows)
                if (why := due(b, now=now, remind_after=remind_after))
            ]
            if found:
                ids = [b.id for b, _ in found]
                self._db.x(
                    f"UPDATE batches SET lease_owner = ?, lease_until = ? WHERE id IN ({_marks(ids)})",
                    [owner, now + lease, *ids],
                )
        return found

    def record_attempt(
        self, batch_id: int, *, channel: str, kind: str, ok: bool, detail: str, now: float
    ) -> None:
        """One delivery attempt, whatever came of it; it ends the batch's lease. A final notice
        is attempted once: after this it is final-sent, whether or not the transport took it."""
        self._db.x(
            "INSERT INTO attempts (batch_id, at, channel, kind, ok, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (batch_id, now, channel, kind, int(ok), detail),
        )
        self._db.x(
            "UPDATE batches SET attempts = attempts + 1, last_attempt_at = ?, last_attempt_ok = ?,"
            " last_ok_at = CASE WHEN ? THEN ? ELSE last_ok_at END,"
            " first_ok_at = CASE WHEN ? AND first_ok_at IS NULL THEN ? ELSE first_ok_at END,"
            " state = CASE WHEN state = 'final' THEN 'final-sent' ELSE state END,"
            " lease_owner = NULL, lease_until = NULL WHERE id = ?",
            (now, int(ok), ok, now, ok, now, batch_id),
        )

    def attempts(self, batch_id: int) -> list[dict[str, Any]]:
        rows = self._q("SELECT * FROM attempts WHERE batch_id = ? ORDER BY id", (batch_id,))
        return [dict(r) for r in rows]

    def ack(
        self,
        batch_id: int,
        *,
        agent: str,
        note: str | None,
        now: float,
        cli: str,
        session: str | None = None,
    ) -> Batch:
        """Record ``agent``'s acknowledgement of a batch (and the session it came from, when
        known). Only its recorded recipient may: any other name is refused (exit 1). A pending
        batch's events are then handled; a moved one keeps its copy pending for whoever has it
        now."""
        batch = self.batch(batch_id)
        if batch is None:
            raise UsageError(
                f"pairgate: there is no batch b{batch_id} in the watch store {self.where}"
            )
        if batch.recipient != agent:
            raise Refusal(
                f"{cli} inbox ack: refused: batch b{batch_id} was delivered to "
                f"{batch.recipient or 'nobody'}, not {agent}; only its recipient acknowledges it.\n"
                f"Your own pending batches: {cli} inbox --agent {agent}"
            )
        if batch.acked_at is None:
            self._db.x(
                "UPDATE batches SET acked_at = ?, ack_by = ?, ack_note = ?, ack_session = ?, "
                "state = CASE WHEN state = 'pending' THEN 'acked' ELSE state END WHERE id = ?",
                (now, agent, note, session, batch_id),
            )
            if batch.state == "pending":
                self._db.many(
                    "UPDATE events SET state = 'done' WHERE id = ? AND state = 'open'",
                    [(e,) for e in batch.event_ids],
                )
        found = self.batch(batch_id)
        assert found is not None
        return found

    def names_of_session(self, session: str) -> list[tuple[str, str]]:
        """Each name ``session`` wrote as, with where: the ledger records of the issues the
        store watches, and the batches acknowledged from it; (name, where)."""
        found = [
            (agent, f"{subject.removeprefix('issue:')} (note {note})")
            for subject, snap in self.subjects().items()
            if isinstance(snap, IssueSnap)
            for agent, written, note in snap.sessions
            if written == session
        ]
        rows = self._q(
            "SELECT id, ack_by FROM batches WHERE ack_session = ? ORDER BY id", (session,)
        )
        found += [(str(r["ack_by"]), f"the acknowledgement of b{r['id']}") for r in rows]
        return found

    # -- status and the Stop hook's count ------------------------------------------------------

    def counts(self) -> dict[str, int]:
        row = self._q(
            "SELECT (SELECT COUNT(*) FROM events) AS events, (SELECT COUNT(*) FROM batches) AS "
            "batches, (SELECT COUNT(*) FROM subjects WHERE subject LIKE 'mr:%' AND state = "
            "'opened') AS mrs, (SELECT COUNT(*) FROM subjects WHERE subject LIKE 'issue:%') AS "
            "issues, (SELECT COUNT(*) FROM hooks) AS hooks, "
            "(SELECT COUNT(*) FROM hooks WHERE state = 'new') AS hooks_waiting"
        )[0]
        keys = ("events", "batches", "mrs", "issues", "hooks", "hooks_waiting")
        return {k: int(row[k]) for k in keys}

    def stop_count(self, session: str) -> int:
        rows = self._q("SELECT count FROM stop_blocks WHERE session = ?", (session,))
        return int(rows[0]["count"]) if rows else 0

    def set_stop_count(self, session: str, count: int, now: float) -> None:
        self._db.x(
            "INSERT INTO stop_blocks (session, count, at) VALUES (?, ?, ?) ON CONFLICT (session) "
            "DO UPDATE SET count = excluded.count, at = excluded.at",
            (session, count, now),
        )
