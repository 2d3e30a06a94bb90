"""The watcher's store: one SQLite file per tracker, WAL, written in short IMMEDIATE
transactions (SQLite's one writer at a time; readers never wait). The only code that speaks SQL.

It holds the last snapshot of each merge request and issue, every event (written before any
delivery, so a crash loses nothing and may deliver twice), the batches, every delivery attempt,
each acknowledgement, and the poll's status. Times are epoch seconds of the injected clock.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pairgate.standalone.errors import PairgateError, Refusal, UsageError, state_home
from pairgate.watch.batches import Plan
from pairgate.watch.records import (
    LIVE,
    Batch,
    Event,
    IssueSnap,
    MrSnap,
    snap_from_doc,
    to_doc,
)

SCHEMA = "1"
BUSY_MS = 10_000  # how long a writer waits for another (an ack while a poll commits)

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS subjects (
    subject TEXT PRIMARY KEY, head TEXT, state TEXT, updated_at TEXT, notes_count INTEGER,
    doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, subject TEXT NOT NULL, kind TEXT NOT NULL, sha TEXT,
    at TEXT, observed_at REAL NOT NULL, detail TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'open');
CREATE INDEX IF NOT EXISTS events_state ON events (state);
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT, recipient TEXT, subject TEXT NOT NULL,
    rule TEXT NOT NULL, created_at REAL NOT NULL, state TEXT NOT NULL, final INTEGER NOT NULL,
    replaces TEXT NOT NULL DEFAULT '[]', moved_to INTEGER, acked_at REAL, ack_by TEXT,
    ack_note TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_attempt_at REAL,
    last_attempt_ok INTEGER, last_ok_at REAL, first_ok_at REAL);
CREATE INDEX IF NOT EXISTS batches_state ON batches (state, recipient);
CREATE TABLE IF NOT EXISTS batch_events (
    batch_id INTEGER NOT NULL, event_id INTEGER NOT NULL, PRIMARY KEY (batch_id, event_id));
CREATE INDEX IF NOT EXISTS batch_events_event ON batch_events (event_id);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, batch_id INTEGER NOT NULL, at REAL NOT NULL,
    channel TEXT NOT NULL, kind TEXT NOT NULL, ok INTEGER NOT NULL, detail TEXT);
CREATE INDEX IF NOT EXISTS attempts_batch ON attempts (batch_id);
CREATE TABLE IF NOT EXISTS stop_blocks (session TEXT PRIMARY KEY, count INTEGER NOT NULL,
    at REAL NOT NULL);
"""
_LIVE_SQL = ", ".join(f"'{s}'" for s in LIVE)


class StoreError(PairgateError):
    """The store cannot be used: unreadable, another tracker's, or of another schema."""


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


def _batch(row: sqlite3.Row, event_ids: tuple[int, ...]) -> Batch:
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
    )


def _event(row: sqlite3.Row) -> Event:
    return Event(
        subject=row["subject"],
        kind=row["kind"],
        sha=row["sha"],
        at=row["at"],
        detail=json.loads(row["detail"]),
        id=row["id"],
        observed_at=row["observed_at"],
    )


class Store:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._db = conn
        self.path = path

    @classmethod
    def open(cls, path: Path, *, tracker: str) -> Store:
        """Open (creating it and its directory when absent) the store of ``tracker``."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_DDL)
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"pairgate: cannot use the watch store {path}: {exc}") from None
        store = cls(conn, path)
        if not rows:
            with store.writing():
                store.set_meta("tracker", tracker)
                store.set_meta("schema", SCHEMA)
        elif rows.get("tracker") != tracker:
            conn.close()
            raise StoreError(
                f"pairgate: the watch store {path} belongs to the tracker {rows.get('tracker')!r}, "
                f"not {tracker!r}: each tracker has its own store. Leave --store out to use "
                f"this tracker's default store, or name another file."
            )
        elif rows.get("schema") != SCHEMA:
            conn.close()
            raise StoreError(
                f"pairgate: the watch store {path} has schema {rows.get('schema')!r}; this "
                f"pairgate reads schema {SCHEMA}. Use a pairgate of that version, or another file."
            )
        return store

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction, taken up front (IMMEDIATE) so two writers queue rather than
        fail half way."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"pairgate: the watch store {self.path} is busy: {exc}") from None
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _q(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._db.execute(sql, tuple(args)).fetchall()

    # -- meta ---------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0]["value"]) if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta_json(self, key: str, default: Any) -> Any:
        raw = self.meta(key)
        return default if raw is None else json.loads(raw)

    # -- snapshots ----------------------------------------------------------------------------

    def subjects(self, keys: Iterable[str] | None = None) -> dict[str, MrSnap | IssueSnap]:
        if keys is None:
            rows = self._q("SELECT subject, doc FROM subjects")
        else:
            wanted = sorted(set(keys))
            rows = []
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows += self._q(
                    f"SELECT subject, doc FROM subjects WHERE subject IN ({marks})", chunk
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

    def save_subjects(self, snaps: Mapping[str, MrSnap | IssueSnap]) -> None:
        for subject, snap in snaps.items():
            mr = snap if isinstance(snap, MrSnap) else None
            self._db.execute(
                "INSERT OR REPLACE INTO subjects VALUES (?, ?, ?, ?, ?, ?)",
                (
                    subject,
                    mr.sha if mr else None,
                    snap.state,
                    snap.updated_at,
                    mr.user_notes_count if mr else None,
                    json.dumps(to_doc(snap), separators=(",", ":")),
                ),
            )

    # -- events -------------------------------------------------------------------------------

    def add_events(self, events: Sequence[Event], now: float) -> list[Event]:
        stored = []
        for e in events:
            cursor = self._db.execute(
                "INSERT INTO events (subject, kind, sha, at, observed_at, detail) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (e.subject, e.kind, e.sha, e.at, now, json.dumps(dict(e.detail))),
            )
            stored.append(
                Event(e.subject, e.kind, e.sha, e.at, e.detail, int(cursor.lastrowid or 0), now)
            )
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
        wanted = sorted(set(ids))
        out: dict[int, Event] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._q(f"SELECT * FROM events WHERE id IN ({marks})", chunk):
                out[row["id"]] = _event(row)
        return out

    # -- batches ------------------------------------------------------------------------------

    def _batches(self, where: str, args: Sequence[Any]) -> list[Batch]:
        rows = self._q(f"SELECT * FROM batches WHERE {where} ORDER BY id", args)
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        members: dict[int, list[int]] = {i: [] for i in ids}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for m in self._q(
                f"SELECT batch_id, event_id FROM batch_events WHERE batch_id IN ({marks}) "
                "ORDER BY event_id",
                chunk,
            ):
                members[m["batch_id"]].append(m["event_id"])
        return [_batch(r, tuple(members[r["id"]])) for r in rows]

    def live_batches(self, agent: str | None = None) -> list[Batch]:
        if agent is None:
            return self._batches(f"state IN ({_LIVE_SQL})", ())
        return self._batches(f"state IN ({_LIVE_SQL}) AND recipient = ?", (agent,))

    def batch(self, batch_id: int) -> Batch | None:
        found = self._batches("id = ?", (batch_id,))
        return found[0] if found else None

    def last_recipients(self) -> dict[str, str]:
        rows = self._q(
            "SELECT subject, recipient FROM batches WHERE recipient IS NOT NULL ORDER BY id"
        )
        return {r["subject"]: r["recipient"] for r in rows}

    def apply(self, plan: Plan, now: float) -> list[int]:
        """Carry out a plan (inside ``writing``); the new batches' ids, in the plan's order."""
        created = []
        for new in plan.new:
            cursor = self._db.execute(
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
            batch_id = int(cursor.lastrowid or 0)
            created.append(batch_id)
            self._db.executemany(
                "INSERT INTO batch_events VALUES (?, ?)", [(batch_id, e) for e in new.event_ids]
            )
            if new.final:  # delivered by this notice alone; never batched again
                self._set_events(new.event_ids, "ended")
        for old, index in plan.moved.items():
            target = None if index is None else created[index]
            self._db.execute(
                "UPDATE batches SET state = 'moved', moved_to = ? WHERE id = ?", (target, old)
            )
        for old in plan.ended_batches:
            self._db.execute("UPDATE batches SET state = 'ended' WHERE id = ?", (old,))
            ids = [
                r["event_id"]
                for r in self._q("SELECT event_id FROM batch_events WHERE batch_id = ?", (old,))
            ]
            self._set_events(ids, "ended")
        self._set_events(plan.ended_events, "ended")
        return created

    def _set_events(self, ids: Iterable[int], state: str) -> None:
        self._db.executemany(
            "UPDATE events SET state = ? WHERE id = ? AND state = 'open'", [(state, i) for i in ids]
        )

    def record_attempt(
        self, batch_id: int, *, channel: str, kind: str, ok: bool, detail: str, now: float
    ) -> None:
        """One delivery attempt, whatever came of it. A final notice is attempted once: after
        this it is final-sent, whether or not the transport took it."""
        self._db.execute(
            "INSERT INTO attempts (batch_id, at, channel, kind, ok, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (batch_id, now, channel, kind, int(ok), detail),
        )
        self._db.execute(
            "UPDATE batches SET attempts = attempts + 1, last_attempt_at = ?, last_attempt_ok = ?,"
            " last_ok_at = CASE WHEN ? THEN ? ELSE last_ok_at END,"
            " first_ok_at = CASE WHEN ? AND first_ok_at IS NULL THEN ? ELSE first_ok_at END,"
            " state = CASE WHEN state = 'final' THEN 'final-sent' ELSE state END WHERE id = ?",
            (now, int(ok), int(ok), now, int(ok), now, batch_id),
        )

    def attempts(self, batch_id: int) -> list[dict[str, Any]]:
        rows = self._q("SELECT * FROM attempts WHERE batch_id = ? ORDER BY id", (batch_id,))
        return [dict(r) for r in rows]

    def ack(self, batch_id: int, *, agent: str, note: str | None, now: float, cli: str) -> Batch:
        """Record ``agent``'s acknowledgement of a batch. Only its recorded recipient may: any
        other name is refused (exit 1). A pending batch's events are then handled; a moved one
        keeps its copy pending for whoever has it now."""
        batch = self.batch(batch_id)
        if batch is None:
            raise UsageError(
                f"pairgate: there is no batch b{batch_id} in the watch store {self.path}"
            )
        if batch.recipient != agent:
            raise Refusal(
                f"{cli} inbox ack: refused: batch b{batch_id} was delivered to "
                f"{batch.recipient or 'nobody'}, not {agent}; only its recipient acknowledges it.\n"
                f"Your own pending batches: {cli} inbox --agent {agent}"
            )
        if batch.acked_at is None:
            self._db.execute(
                "UPDATE batches SET acked_at = ?, ack_by = ?, ack_note = ?, "
                "state = CASE WHEN state = 'pending' THEN 'acked' ELSE state END WHERE id = ?",
                (now, agent, note, batch_id),
            )
            if batch.state == "pending":
                self._db.executemany(
                    "UPDATE events SET state = 'done' WHERE id = ? AND state = 'open'",
                    [(e,) for e in batch.event_ids],
                )
        found = self.batch(batch_id)
        assert found is not None
        return found

    # -- status and the Stop hook's count ------------------------------------------------------

    def counts(self) -> dict[str, int]:
        row = self._q(
            "SELECT (SELECT COUNT(*) FROM events) AS events, (SELECT COUNT(*) FROM batches) AS "
            "batches, (SELECT COUNT(*) FROM subjects WHERE subject LIKE 'mr:%' AND state = "
            "'opened') AS mrs, (SELECT COUNT(*) FROM subjects WHERE subject LIKE 'issue:%') AS issues"
        )[0]
        return {k: int(row[k]) for k in ("events", "batches", "mrs", "issues")}

    def stop_count(self, session: str) -> int:
        rows = self._q("SELECT count FROM stop_blocks WHERE session = ?", (session,))
        return int(rows[0]["count"]) if rows else 0

    def set_stop_count(self, session: str, count: int, now: float) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO stop_blocks VALUES (?, ?, ?)", (session, count, now)
        )
