"""The webhooks a watcher received, in the store: stored before any work (so the answer to GitLab
never waits on GitLab), de-duplicated by their idempotency key (a redelivery is a no-op, on any
machine of the fleet), then claimed under a lease by whichever watcher turns them into
observations (``refresh``). Kept KEEP seconds after they are done, longer than GitLab lets
anyone resend one, so a late resend is still recognised.

Part of ``Store`` (its SQL, on the same connection); the refused requests are only counted, with
the last one's reason, so a flood of bad requests cannot fill the store.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pairgate.watch.backends import Database, Row

KEEP = 8 * 24 * 3600.0  # GitLab keeps a hook's deliveries for resending 7 days


@dataclass(frozen=True)
class Hook:
    id: int
    key: str
    event: str  # the X-Gitlab-Event header
    received_at: float
    body: dict[str, Any]
    state: str  # new, done
    result: str | None = None


def _hook(row: Row) -> Hook:
    return Hook(
        row["id"],
        row["key"],
        row["event"],
        row["received_at"],
        json.loads(row["body"]),
        row["state"],
        row["result"],
    )


def _put(db: Database, key: str, value: str) -> None:
    db.x(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _get(db: Database, key: str) -> str | None:
    rows = db.q("SELECT value FROM meta WHERE key = ?", (key,))
    return str(rows[0]["value"]) if rows else None


class HookQueue:
    _db: Database

    def add_hook(self, *, key: str, event: str, body: str, now: float) -> bool:
        """Store one received hook; False when its key was stored before (a redelivery). Its
        own short transaction, which never waits for the store's writers (the key's
        uniqueness is the guard): the answer to GitLab must not wait on a poll's commit."""
        with self._db.claiming():
            added = self._db.x(
                "INSERT INTO hooks (key, event, received_at, body) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key) DO NOTHING",
                (key, event, now, body),
            )
            _put(self._db, "last_hook_at", str(now))
            if not added:
                count = int(_get(self._db, "hooks_redelivered") or 0)
                _put(self._db, "hooks_redelivered", str(count + 1))
        return bool(added)

    def refuse_hook(self, *, reason: str, remote: str, now: float) -> None:
        """Count a request refused with 401, and keep the last one's reason and sender."""
        with self._db.claiming():
            count = int(_get(self._db, "hooks_refused") or 0)
            _put(self._db, "hooks_refused", str(count + 1))
            _put(self._db, "last_hook_refused", json.dumps({"at": now, "reason": reason,
                                                             "from": remote}))  # fmt: skip

    def claim_hooks(self, owner: str, *, now: float, lease: float, limit: int = 200) -> list[Hook]:
        """Lease up to ``limit`` hooks nobody has turned into observations yet, oldest first
        (another watcher's, once its lease ran out)."""
        with self._db.claiming():
            rows = self._db.q(
                "SELECT * FROM hooks WHERE state = 'new' AND (lease_until IS NULL OR "
                f"lease_until <= ?) ORDER BY id LIMIT ?{self._db.skip_locked}",
                (now, limit),
            )
            if rows:
                ids = [r["id"] for r in rows]
                self._db.x(
                    f"UPDATE hooks SET lease_owner = ?, lease_until = ? WHERE id IN "
                    f"({','.join('?' * len(ids))})",
                    [owner, now + lease, *ids],
                )
        return [_hook(r) for r in rows]

    def finish_hooks(self, results: Sequence[tuple[int, str]], *, now: float) -> None:
        """Mark hooks done, each with what came of it (inside ``writing``: with the
        observations they gave)."""
        self._db.many(
            "UPDATE hooks SET state = 'done', done_at = ?, result = ?, lease_owner = NULL, "
            "lease_until = NULL WHERE id = ?",
            [(now, result, hook_id) for hook_id, result in results],
        )
        self._db.x("DELETE FROM hooks WHERE state = 'done' AND done_at < ?", (now - KEEP,))

    def release_hooks(self, ids: Sequence[int], *, error: str) -> None:
        """Give hooks back (their reads failed): another round, here or on another watcher,
        tries them again."""
        with self._db.writing():
            self._db.many(
                "UPDATE hooks SET lease_owner = NULL, lease_until = NULL, result = ? WHERE id = ?",
                [(error[:500], i) for i in ids],
            )

    def hooks(self, state: str | None = None) -> list[Hook]:
        if state is None:
            rows = self._db.q("SELECT * FROM hooks ORDER BY id")
        else:
            rows = self._db.q("SELECT * FROM hooks WHERE state = ? ORDER BY id", (state,))
        return [_hook(r) for r in rows]
