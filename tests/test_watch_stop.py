"""A watcher with --listen ends when its store fails, with the store's message and exit 2, and
always on Ctrl-C or SIGTERM: real programs on a store whose server crashes, whose connection is
cut, which refuses a webhook, or which stops answering while they run. Each waits for the
process's own exit, within a bound far below the loop's 30 s tick."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from pairgate.watch.backends import is_postgres
from pairgate.watch.listen import STOP_WAIT
from tests.kit.pgcluster import Cluster
from tests.kit.watchfleet import TOKEN, Watcher, until
from tests.kit.world import Round

pytestmark = pytest.mark.slow

BOUND = 5.0  # seconds from the failure (or the signal) to the watcher's exit


def world_on(sandbox: Any, tmp_path: Path, url: str) -> Round:
    w = Round(sandbox, watch_dir=tmp_path, store_url=url)
    w.claim()
    w.poll()  # the first look, before the service starts
    return w


@pytest.fixture
def pg(postgres_cluster: Cluster) -> Iterator[Cluster]:
    yield postgres_cluster
    try:  # a test that crashed the session's server starts it again for the next
        psycopg.connect(postgres_cluster.url(), connect_timeout=2).close()
    except psycopg.OperationalError:
        postgres_cluster.start()


@dataclass
class Listening:
    watcher: Watcher
    backends: list[int]  # its loop's connection, then its receiver's


@pytest.fixture
def listening(sandbox: Any, tmp_path: Path, pg: Cluster) -> Iterator[Listening]:
    """A watcher that only listens (no poll: nothing but a failure or a hook wakes it before
    its 30 s tick), on a PostgreSQL store."""
    world = world_on(sandbox, tmp_path, pg.url(pg.new_schema()))
    since = server_time(pg)
    w = Watcher(world, tmp_path / "w", "--no-poll")
    try:
        found = backends(pg, since)  # before the test's own connections of ``settled``
        yield Listening(settled(world, w), found)
    finally:
        if w.proc.poll() is None:
            w.kill()


def server_time(pg: Cluster) -> datetime:
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0]


def backends(pg: Cluster, since: datetime) -> list[int]:
    """The connections opened since ``since`` (the watcher's two), oldest first: its loop's
    store, then the receiver's, which the watcher opens after it."""
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid() AND backend_start > %s ORDER BY backend_start",
            (since,),
        ).fetchall()
    assert len(rows) == 2, rows
    return [r[0] for r in rows]


def settled(world: Round, watcher: Watcher) -> Watcher:
    """``watcher`` once it took a first hook in: its loop is past its first round and waits,
    so what a test does next is met by a hook or by the wait, not by that round."""
    assert post_hook(watcher.url, timeout=BOUND).status_code == 200
    store = world.store()
    try:
        until(lambda: store.counts()["hooks_waiting"] == 0, BOUND)
    finally:
        store.close()
    return watcher


def ended(watcher: Watcher, bound: float = BOUND) -> tuple[int, str]:
    try:
        code = watcher.proc.wait(timeout=bound)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"the watcher still runs {bound}s on: {watcher.err.read_text()}"
        ) from None
    return code, watcher.err.read_text()


def failed_once(err: str, url: str) -> str:
    """The store's message, printed once, as main prints a StoreError."""
    lines = [line for line in err.splitlines() if "failed:" in line]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"pairgate: the watch store {url} failed: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def post_hook(url: str, *, padding: int = 0, **kwargs: Any) -> requests.Response:
    return requests.post(
        url,
        json={"object_kind": "note", "object_attributes": {"id": 1}, "padding": "x" * padding},
        headers={
            "X-Gitlab-Token": TOKEN,
            "X-Gitlab-Event": "Note Hook",
            "Idempotency-Key": os.urandom(8).hex(),
        },
        **kwargs,
    )


def test_a_watcher_ends_when_its_database_server_crashes(listening: Listening, pg: Cluster) -> None:
    watcher = listening.watcher
    pg.crash()
    code, err = ended(watcher)
    assert code == 2
    assert "server closed the connection unexpectedly" in failed_once(err, watcher.store_url)


@pytest.mark.parametrize("cut", ["loop", "receiver", "both"])
def test_a_watcher_ends_when_its_connection_is_cut(
    listening: Listening, pg: Cluster, cut: str
) -> None:
    watcher, (loop, receiver) = listening.watcher, listening.backends
    chosen = {"loop": [loop], "receiver": [receiver], "both": [loop, receiver]}[cut]
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        for pid in chosen:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    code, err = ended(watcher)
    assert code == 2
    assert "terminating connection due to administrator command" in failed_once(
        err, watcher.store_url
    )


def test_a_hook_the_store_cannot_take_is_refused_and_ends_the_watcher(
    sandbox: Any, tmp_path: Path, store_url: str
) -> None:
    """The store refuses the hook's insert (its table dropped under the watcher): 503 to
    GitLab, and the watcher ends, on either database."""
    world = world_on(sandbox, tmp_path, store_url)
    watcher = Watcher(world, tmp_path / "w", "--no-poll")
    try:
        settled(world, watcher)
        if is_postgres(store_url):
            with psycopg.connect(store_url, autocommit=True) as conn:
                conn.execute("DROP TABLE hooks")
        else:
            with sqlite3.connect(store_url) as conn:
                conn.execute("DROP TABLE hooks")
            conn.close()
        answer = post_hook(watcher.url, timeout=BOUND)
        code, err = ended(watcher)
    finally:
        if watcher.proc.poll() is None:
            watcher.kill()
    assert answer.status_code == 503
    assert answer.json()["error"].splitlines()[0] == failed_once(err, watcher.store_url)
    assert "hooks" in answer.json()["error"]
    assert code == 2


def test_a_full_disk_ends_a_sqlite_watcher(sandbox: Any, tmp_path: Path) -> None:
    """The disk fills under a SQLite store (the watcher may not grow its files any more): the
    hook it cannot store is refused, and the watcher ends with the store's message."""
    url = str(tmp_path / "watch.sqlite3")
    world = world_on(sandbox, tmp_path, url)
    watcher = Watcher(world, tmp_path / "w", "--no-poll")
    try:
        settled(world, watcher)
        largest = max(p.stat().st_size for p in tmp_path.glob("watch.sqlite3*"))
        limit = largest + 4096
        resource.prlimit(watcher.proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
        answer = post_hook(watcher.url, padding=limit + 65536, timeout=BOUND)
        code, err = ended(watcher)
    finally:
        if watcher.proc.poll() is None:
            watcher.kill()
    assert answer.status_code == 503
    assert answer.json()["error"] == failed_once(err, url)
    assert "disk I/O error" in err or "disk is full" in err
    assert code == 2


@pytest.mark.parametrize(
    ("sig", "expected"), [(signal.SIGINT, 0), (signal.SIGTERM, -signal.SIGTERM)]
)
def test_a_signal_ends_a_watcher_whose_database_stopped_answering(
    listening: Listening, sig: signal.Signals, expected: int
) -> None:
    """The server takes the connections and never answers (a frozen machine): a hook's handler
    waits on its insert holding the receiver's connection, and the signal still ends the
    watcher, with no message of a failure."""
    watcher, stopped = listening.watcher, listening.backends
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(requests.ReadTimeout):
            post_hook(watcher.url, timeout=0.5)
        watcher.proc.send_signal(sig)
        code, err = ended(watcher, STOP_WAIT + BOUND)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    assert code == expected
    assert "failed:" not in err and "Traceback" not in err, err
