"""The watcher with webhooks and as a fleet: requests per idle hour, time from a note to its
batch, and a fleet run checked for loss and duplicates. Prints; asserts nothing. Run by
``benchmarks/watch.py``, or alone:

    python3 -B benchmarks/watch_fleet.py [--quick] [--watchers 4] [--mrs 500] [--events 10000]

- idle hour: the requests an idle hour costs one poll-only watcher (a poll every 180 s), four
  machines each polling their own store, and four watchers sharing one store with webhooks on
  (the safety-net poll every 900 s, taken in turns). Each poll is a real one against the
  sandbox, on a clock the benchmark moves; an idle hour brings no webhook.
- latency: a note posted, until its batch is in the store: by webhook (``watch --listen``, a
  real program), and by poll (the wait for the next poll, then the poll itself).
- fleet: ``--watchers`` watchers (real programs) share a PostgreSQL store behind one webhook
  URL (a round-robin balancer, as a load balancer in front of a fleet would be); ``--events``
  comments are posted over ``--mrs`` merge requests while an agent acknowledges each batch as
  it is pushed. Then the store is checked: events lost, events stored twice, batches pushed
  twice, pushes after an ACK.

``--quick``: a fleet of ``QUICK_FLEET`` and six idle minutes, for a smoke run; its figures mean
nothing (watch.py's ``--quick`` leaves its fleet to this one).

PostgreSQL: a throwaway server (tests/kit/pgcluster.py) when its binaries and psycopg are there;
otherwise a SQLite store, and the benchmark says so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pairgate.standalone.config import load_config  # noqa: E402
from pairgate.standalone.gitlab_env import gitlab_from_env  # noqa: E402
from pairgate.watch import runner  # noqa: E402
from pairgate.watch.store import Store  # noqa: E402

CONFIG = ROOT / "tests" / "fixtures" / "pairgate-config.json"
TOKEN = "bench-hook-token"
# --quick: watchers, merge requests, events. Two watchers
# behind the balancer are the fewest that share a store; the figures of a smoke run mean nothing.
QUICK_FLEET = (2, 4, 40)
LEAD = "acme-lead"
APP = "/projects/acme%2Fapp"


@contextlib.contextmanager
def a_store_server(tmp: Path) -> Iterator[Callable[[], str]]:
    """Yields a function giving a new, empty store: a PostgreSQL schema when a throwaway
    server can be started, else a SQLite file."""
    try:
        import psycopg  # noqa: F401

        from tests.kit.pgcluster import running

        cluster_cm = running()
        cluster = cluster_cm.__enter__()
    except Exception as exc:  # no binaries, no psycopg, no unprivileged user
        print(f"(no PostgreSQL here: {type(exc).__name__}: {str(exc)[:120]}; SQLite stores)")
        count = iter(range(10**6))
        yield lambda: str(tmp / f"store-{next(count)}.sqlite3")
        return
    try:
        yield lambda: cluster.url(cluster.new_schema())
    finally:
        cluster_cm.__exit__(None, None, None)


def env_for(sb: Any, store: str) -> dict[str, str]:
    return {
        "PAIRGATE_CONFIG": str(CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sb.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sb.token("agents"),
        "PAIRGATE_TEST_WATCH_STORE": store,
        "PAIRGATE_TEST_WEBHOOK_TOKEN": TOKEN,
    }


class Watcher:
    """``pairgate watch --listen`` as a program of its own."""

    def __init__(self, sb: Any, store: str, home: Path, *argv: str) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.err = home / "stderr"
        env = {**os.environ, "PYTHONPATH": str(ROOT), **env_for(sb, store)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pairgate", "watch", "--listen", "127.0.0.1:0", *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.err.open("w"),
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"receiving GitLab webhooks at (\S+)", self.err.read_text())
            if found:
                self.url = found.group(1)
                return
            time.sleep(0.02)
        raise RuntimeError(f"the watcher did not start: {self.err.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


def register(sb: Any, url: str) -> None:
    flags = ("push_events", "merge_requests_events", "note_events", "pipeline_events", "job_events")
    body = {"url": url, "token": TOKEN, **dict.fromkeys(flags, True)}
    sb.api("POST", f"{APP}/hooks", "maintainer", json=body)


class Balancer:
    """One webhook URL in front of the fleet: each POST to the next watcher in turn."""

    def __init__(self, targets: list[str]) -> None:
        turn = iter(range(10**9))
        http = threading.local()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if not hasattr(http, "s"):
                    http.s = requests.Session()
                target = targets[next(turn) % len(targets)]
                try:
                    answer = http.s.post(target, data=body, headers=dict(self.headers), timeout=30)
                    status, content = answer.status_code, answer.content
                except requests.RequestException:
                    status, content = 502, b""  # GitLab records a failed delivery
                self.send_response(status)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


# -- idle hour --------------------------------------------------------------------------------


def idle_hour(sb: Any, new_store: Callable[[], str], span: int = 3600) -> dict[str, int]:
    """Requests per idle hour (or ``span`` seconds), each poll a real one on a clock the
    benchmark moves."""
    config = load_config(env_for(sb, ""))
    client = gitlab_from_env(config, env_for(sb, ""))

    def run(watchers: int, interval: float, shared: bool) -> int:
        stores = [Store.open(new_store(), tracker="acme/tracker")]
        if not shared:
            stores += [Store.open(new_store(), tracker="acme/tracker") for _ in range(watchers - 1)]
        start = time.time()
        for store in stores:  # the first look is not idle
            runner.poll(client, config, store, now=start)
        owners = [f"w{i}" for i in range(watchers)]
        phase = {o: interval * i / watchers for i, o in enumerate(owners)}
        wakes = sorted(
            (start + 1 + phase[o] + k * interval, o)
            for o in owners
            for k in range(int(span / interval) + 1)
            if phase[o] + k * interval < span
        )
        sb.ctl("DELETE", "requests")
        for at, owner in wakes:
            store = stores[0] if shared else stores[owners.index(owner)]
            if shared and not store.claim_poll(owner, now=at, interval=interval * 0.9):
                continue
            runner.poll(client, config, store, now=at)
        count = len(sb.ctl("GET", "requests"))
        for store in stores:
            store.close()
        return count

    return {
        "one watcher, poll only (180 s)": run(1, 180, True),
        "4 machines, poll only, a store each (180 s)": run(4, 180, False),
        "4 watchers, one store, poll only (180 s, in turns)": run(4, 180, True),
        "4 watchers, one store, webhooks (safety net 900 s, in turns)": run(4, 900, True),
    }


# -- latency ----------------------------------------------------------------------------------


def latency(sb: Any, store_url: str, tmp: Path, mr_iid: int, samples: int) -> dict[str, Any]:
    store = Store.open(store_url, tracker="acme/tracker")
    config = load_config(env_for(sb, store_url))
    client = gitlab_from_env(config, env_for(sb, store_url))
    runner.poll(client, config, store, now=time.time())  # the first look

    def stored() -> int:
        rows = store._db.q("SELECT COUNT(*) AS n FROM events WHERE kind = 'comment-added'")
        return int(rows[0]["n"])

    watcher = Watcher(sb, store_url, tmp / "latency", "--no-poll")
    register(sb, watcher.url)
    by_hook = []
    try:
        for i in range(samples):
            before = stored()
            start = time.perf_counter()
            sb.api("POST", f"{APP}/merge_requests/{mr_iid}/notes", "review_bot",
                   json={"body": f"latency {i}"})  # fmt: skip
            while stored() == before and time.perf_counter() - start < 30:
                time.sleep(0.002)
            by_hook.append(time.perf_counter() - start)
    finally:
        watcher.stop()
    sb.api("POST", f"{APP}/merge_requests/{mr_iid}/notes", "review_bot", json={"body": "poll"})
    start = time.perf_counter()
    runner.poll(client, config, store, now=time.time() + 180)
    poll_time = time.perf_counter() - start
    store.close()
    return {"hook": by_hook, "poll": poll_time}


# -- the fleet run ----------------------------------------------------------------------------


def fleet_run(
    sb: Any, store_url: str, tmp: Path, *, watchers: int, mrs: list[int], events: int
) -> dict[str, Any]:
    store = Store.open(store_url, tracker="acme/tracker")
    config = load_config(env_for(sb, store_url))
    runner.poll(config=config, client=gitlab_from_env(config, env_for(sb, store_url)),
                store=store, now=time.time())  # fmt: skip
    fleet = [
        Watcher(sb, store_url, tmp / f"w{i}", "--deliver-command", "true") for i in range(watchers)
    ]
    balancer = Balancer([w.url for w in fleet])
    register(sb, balancer.url)
    stop = threading.Event()
    acked = [0]

    def agent() -> None:  # acknowledges each batch once it has been pushed to it
        mine = Store.open(store_url, tracker="acme/tracker")
        while not stop.is_set():
            for batch in mine.live_batches(LEAD):
                if batch.state == "pending" and batch.attempts:
                    with mine.writing():
                        mine.ack(batch.id, agent=LEAD, note=None, now=time.time(), cli="pairgate")
                    acked[0] += 1
            time.sleep(0.05)
        mine.close()

    helper = threading.Thread(target=agent, daemon=True)
    helper.start()
    sb.ctl("DELETE", "requests")
    start = time.perf_counter()

    def post(i: int) -> int:
        path = f"{APP}/merge_requests/{mrs[i % len(mrs)]}/notes"
        return int(sb.api("POST", path, "review_bot", json={"body": f"event {i}"})["id"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        notes = list(pool.map(post, range(events)))
    posted = time.perf_counter() - start

    def count(sql: str) -> int:
        return int(store._db.q(sql)[0]["n"])

    deadline = time.monotonic() + max(120, events / 20)
    while time.monotonic() < deadline:
        done = count("SELECT COUNT(*) AS n FROM events WHERE kind = 'comment-added'") >= events
        pending = count("SELECT COUNT(*) AS n FROM batches WHERE state = 'pending'")
        unsent = sb.ctl("GET", "webhooks")["waiting"]  # every hook delivered and taken in
        waiting = count("SELECT COUNT(*) AS n FROM hooks WHERE state = 'new'")
        if done and not pending and not unsent and not waiting:
            break
        gone = next((w for w in fleet if w.proc.poll() is not None), None)
        if gone is not None:  # it would not drain: say why, rather than wait out the deadline
            print(f"a watcher exited (exit {gone.proc.returncode}) before the fleet drained:")
            print(gone.err.read_text()[-2000:].rstrip())
            break
        time.sleep(0.2)
    drained = time.perf_counter() - start
    time.sleep(1.0)  # a watcher that would push after an ACK has had its chance
    stop.set()
    helper.join()
    for w in fleet:
        w.stop()
    balancer.stop()
    reads = [r for r in sb.ctl("GET", "requests") if r["method"] == "GET"]  # not the comments
    hooks = store._db.q("SELECT received_at, done_at FROM hooks WHERE done_at IS NOT NULL")
    waits = sorted(r["done_at"] - r["received_at"] for r in hooks) or [0.0]
    received = [r["received_at"] for r in hooks] or [0.0]
    rows = store._db.q("SELECT detail FROM events WHERE kind = 'comment-added'")
    seen = Counter(json.loads(r["detail"])["note_id"] for r in rows)
    pushes = Counter(
        r["batch_id"] for r in store._db.q("SELECT batch_id FROM attempts WHERE channel = 'push'")
    )
    late = count(
        "SELECT COUNT(*) AS n FROM attempts a JOIN batches b ON b.id = a.batch_id "
        "WHERE b.acked_at IS NOT NULL AND a.at > b.acked_at"
    )
    figures = {
        "watchers": watchers,
        "merge requests": len(mrs),
        "events": events,
        "posted in s": round(posted, 1),
        "all stored and acknowledged in s": round(drained, 1),
        "events lost": len(set(notes) - set(seen)),
        "events stored twice": sum(1 for n in seen.values() if n > 1),
        "batches": count("SELECT COUNT(*) AS n FROM batches"),
        "batches pushed twice": sum(1 for n in pushes.values() if n > 1),
        "pushes after an ACK": late,
        "batches left pending": count("SELECT COUNT(*) AS n FROM batches WHERE state = 'pending'"),
        "webhooks stored": count("SELECT COUNT(*) AS n FROM hooks"),
        "webhooks received over s": round(max(received) - min(received), 1),
        "webhook to observations, median s": round(statistics.median(waits), 2),
        "reads of GitLab": len(reads),
    }
    store.close()
    return figures


def main_(argv: list[str]) -> int:
    from watch import build, sandbox_process  # the sandbox and the world of benchmarks/watch.py

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small fleet, for a smoke test")
    parser.add_argument("--watchers", type=int, default=4)
    parser.add_argument("--mrs", type=int, default=500)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args(argv)
    if args.quick:
        args.watchers, args.mrs, args.events = QUICK_FLEET
    with (
        tempfile.TemporaryDirectory() as tmp,
        sandbox_process() as sb,
        a_store_server(Path(tmp)) as new_store,
    ):
        report(sb, Path(tmp), new_store, args, build)
    return 0


def report(sb: Any, tmp: Path, new_store: Callable[[], str], args: Any, build: Any) -> None:
    mrs = build(sb, 3 if args.quick else 50)
    span = 360 if args.quick else 3600  # quick: two polls of each poll-only watcher
    hour = idle_hour(sb, new_store, span)
    base = hour["one watcher, poll only (180 s)"]
    print(f"requests per idle {'hour' if span == 3600 else f'{span // 60} minutes'}:")
    for name, value in hour.items():
        print(f"  {name}: {value} ({value / base:.2f}x one poll-only watcher)")
    samples = 3 if args.quick else 10
    lat = latency(sb, new_store(), tmp, int(mrs[0]["iid"]), samples)
    hook = sorted(lat["hook"])
    print(
        f"note to batch by webhook: median {statistics.median(hook) * 1000:.0f} ms, "
        f"max {hook[-1] * 1000:.0f} ms ({samples} notes)"
    )
    print(
        f"note to batch by poll: the wait for the next poll (on average 90 s at 180 s, 450 s at "
        f"900 s), then the poll: {lat['poll'] * 1000:.0f} ms"
    )
    sb.ctl("POST", "reset")
    start = time.perf_counter()
    world = build(sb, args.mrs)
    print(f"fleet world: {args.mrs} merge requests, built in {time.perf_counter() - start:.1f}s")
    figures = fleet_run(
        sb, new_store(), tmp, watchers=args.watchers, mrs=[int(m["iid"]) for m in world],
        events=args.events,
    )  # fmt: skip
    print("fleet run: " + "; ".join(f"{k} {v}" for k, v in figures.items()))
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
