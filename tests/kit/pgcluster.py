"""A throwaway PostgreSQL server for the suite's PostgreSQL watch stores.

One cluster per pytest process (a session fixture; each xdist worker is a process of its own,
so workers never share one), started on a Unix socket in a private temporary directory with no
TCP listener, fsync off, and stopped at the end of the session. Each test gets a schema of its
own (``options=-csearch_path=...`` in the URL), which costs a millisecond where a database would
cost a copy of the template.

``initdb`` and ``pg_ctl`` refuse to run as root, and CI runs as root: there they run as
``nobody`` through ``runuser``, in a directory handed over to it. The server binaries are
Debian's (``/usr/lib/postgresql/<version>/bin``, which are not on PATH), else whatever
``pg_ctl`` PATH finds. scripts/test installs Debian's ``postgresql`` when it is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PORT = 5432  # the socket's name only: nothing listens on TCP


def bindir() -> Path | None:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@dataclass
class Cluster:
    root: Path
    bindir: Path
    options: str = ""
    _schemas: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def pg_ctl(self, *argv: str) -> None:
        _run([*_as_server_user(), str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"),
              *argv])  # fmt: skip

    def crash(self) -> None:
        """Stop the server at once, as a crash would (its clients' connections drop)."""
        self.pg_ctl("-m", "immediate", "-w", "stop")

    def start(self) -> None:
        self.pg_ctl("-w", "-l", str(self.root / "server.log"), "-o", self.options, "start")

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def url(self, schema: str | None = None) -> str:
        base = f"postgresql://postgres@/postgres?host={self.socket_dir}&port={PORT}"
        return base + (f"&options=-csearch_path%3D{schema}" if schema else "")

    def new_schema(self) -> str:
        """A fresh, empty schema; its URL is ``url(name)``."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return name


def _as_server_user() -> list[str]:
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")


@contextlib.contextmanager
def running() -> Iterator[Cluster]:
    where = bindir()
    if where is None:
        raise RuntimeError(
            "no PostgreSQL server binaries (pg_ctl): install Debian's postgresql "
            "(scripts/test does)"
        )
    root = Path(tempfile.mkdtemp(prefix="pairgate-pg-"))
    cluster = Cluster(root, where)
    cluster.socket_dir.mkdir()
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for path in (root, cluster.socket_dir):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
    _run([*_as_server_user(), str(where / "initdb"), "-D", str(root / "data"), "-U", "postgres",
          "--auth=trust", "--no-sync", "-E", "UTF8"])  # fmt: skip
    cluster.options = (
        f"-k {cluster.socket_dir} -c listen_addresses= -p {PORT} -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    cluster.start()
    try:
        yield cluster
    finally:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            cluster.crash()
        shutil.rmtree(root, ignore_errors=True)
