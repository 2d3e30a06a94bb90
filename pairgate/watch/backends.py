"""The two databases a watch store can live in, behind one small connection interface: SQLite
(one file, one machine: the default) and PostgreSQL (one server, a fleet of watchers).

The store writes one SQL text for both, with ``?`` placeholders; the PostgreSQL connection turns
them into psycopg's ``%s``. What differs is how a transaction starts:

- SQLite: ``BEGIN IMMEDIATE``, the database's one writer at a time (readers never wait).
- PostgreSQL: ``writing`` takes a transaction-level advisory lock on the store, so the store's
  writers queue one at a time as on SQLite and the same code keeps the same meaning; ``claiming``
  does not, and locks only the rows it claims (``FOR UPDATE SKIP LOCKED``), so watchers claiming
  deliveries never wait on each other or on a poll's commit.

psycopg is imported only here, only for a PostgreSQL store: ``pip install pairgate`` needs none.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from pairgate.standalone.errors import PairgateError

BUSY_MS = 10_000  # how long a SQLite writer waits for another (an ack while a poll commits)
CONNECT_TIMEOUT = 10  # seconds, for a PostgreSQL server that does not answer
_SCHEMES = ("postgresql://", "postgres://")


class StoreError(PairgateError):
    """The store cannot be used: unreadable, unreachable, another tracker's, or of another
    schema."""


Row = Mapping[str, Any]


class Database(Protocol):
    kind: str  # "sqlite" or "postgresql"
    skip_locked: str  # appended to a claiming SELECT

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[Row]: ...
    def x(self, sql: str, args: Sequence[Any] = ()) -> int: ...
    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def insert(self, sql: str, args: Sequence[Any]) -> int: ...
    def tables(self) -> set[str]: ...
    def writing(self) -> contextlib.AbstractContextManager[None]: ...
    def claiming(self) -> contextlib.AbstractContextManager[None]: ...
    def migrating(self) -> contextlib.AbstractContextManager[None]: ...
    def fileno(self) -> int | None: ...
    def close(self) -> None: ...


def is_postgres(where: str | Path) -> bool:
    return isinstance(where, str) and where.startswith(_SCHEMES)


def shown(where: str | Path) -> str:
    """A store as messages and notifications name it: a PostgreSQL URL without its password
    (which belongs in ~/.pgpass or PGPASSWORD, never in a notification an agent reads)."""
    if not is_postgres(where):
        return str(where)
    assert isinstance(where, str)
    parts = urlsplit(where)
    if parts.password is None:
        return where
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


class SQLite:
    kind = "sqlite"
    skip_locked = ""

    def __init__(self, path: Path) -> None:
        self.where = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A connection may serve more than one thread (the webhook receiver's, each under
            # the receiver's lock); a Store is never used by two threads at once.
            self.conn = sqlite3.connect(
                path, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False
            )
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"pairgate: cannot use the watch store {path}: {exc}") from None

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        """A SQLite error (a full disk, an I/O error) is the store's message, as on PostgreSQL."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"pairgate: the watch store {self.where} failed: {exc}") from None

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        with self._failing():
            return self.conn.execute(sql, tuple(args)).fetchall()

    def x(self, sql: str, args: Sequence[Any] = ()) -> int:
        with self._failing():
            return self.conn.execute(sql, tuple(args)).rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self._failing():
            self.conn.executemany(sql, rows)

    def insert(self, sql: str, args: Sequence[Any]) -> int:
        with self._failing():
            return int(self.conn.execute(sql, tuple(args)).lastrowid or 0)

    def tables(self) -> set[str]:
        rows = self.q("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r["name"] for r in rows}

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction, taken up front (IMMEDIATE) so two writers queue rather than
        fail half way."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"pairgate: the watch store {self.where} is busy: {exc}") from None
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the error that got here says more
                self.conn.execute("ROLLBACK")
            raise
        with self._failing():
            self.conn.execute("COMMIT")

    claiming = writing
    migrating = writing

    def fileno(self) -> int | None:
        return None  # a file: nothing ends it from the other side

    def close(self) -> None:
        self.conn.close()


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (and a literal ``%`` as ``%%``). The store's SQL
    has no ``?`` inside a string literal."""
    return re.sub(r"\?", "%s", sql.replace("%", "%%"))


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for ``name``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


MIGRATION_LOCK = lock_key("pairgate watch store: migrations")


class Postgres:
    kind = "postgresql"
    skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(self, dsn: str, *, tracker: str) -> None:
        self.where = shown(dsn)
        self.write_lock = lock_key(f"pairgate watch store: {tracker}")
        try:
            import psycopg
            from psycopg.rows import dict_row
        except ImportError:
            raise StoreError(
                "pairgate: a PostgreSQL watch store needs psycopg: pip install 'pairgate[postgres]'"
            ) from None
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        try:
            self.conn = psycopg.connect(
                dsn, autocommit=True, row_factory=dict_row, connect_timeout=CONNECT_TIMEOUT
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"pairgate: cannot use the watch store {self.where}: {str(exc).strip()}"
            ) from None

    def _fail(self, exc: BaseException) -> StoreError:
        return StoreError(f"pairgate: the watch store {self.where} failed: {str(exc).strip()}")

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        try:
            return list(self.conn.execute(_pg_sql(sql), tuple(args)).fetchall())
        except self._errors as exc:
            raise self._fail(exc) from None

    def x(self, sql: str, args: Sequence[Any] = ()) -> int:
        try:
            return int(self.conn.execute(_pg_sql(sql), tuple(args)).rowcount)
        except self._errors as exc:
            raise self._fail(exc) from None

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        try:
            with self.conn.cursor() as cur:
                cur.executemany(_pg_sql(sql), [tuple(r) for r in rows])
        except self._errors as exc:
            raise self._fail(exc) from None

    def insert(self, sql: str, args: Sequence[Any]) -> int:
        return int(self.q(sql + " RETURNING id", args)[0]["id"])

    def tables(self) -> set[str]:
        rows = self.q(
            "SELECT table_name AS name FROM information_schema.tables "
            "WHERE table_schema = current_schema()"
        )
        return {r["name"] for r in rows}

    @contextlib.contextmanager
    def _transaction(self, lock: int | None) -> Iterator[None]:
        try:
            with self.conn.transaction():
                if lock is not None:
                    self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
                yield
        except self._errors as exc:
            raise self._fail(exc) from None

    def writing(self) -> contextlib.AbstractContextManager[None]:
        return self._transaction(self.write_lock)

    def claiming(self) -> contextlib.AbstractContextManager[None]:
        return self._transaction(None)

    def migrating(self) -> contextlib.AbstractContextManager[None]:
        return self._transaction(MIGRATION_LOCK)

    def fileno(self) -> int | None:
        """The connection's socket: it turns readable when the server ends the connection
        (stopped, restarted, or the backend terminated), so an idle watcher hears of it at once."""
        return None if self.conn.closed else self.conn.fileno()

    def close(self) -> None:
        self.conn.close()
