"""The cost of ``pairgate board`` on a big board: wall time and requests. Prints; asserts nothing.

    python3 -B benchmarks/board.py [--issues 500] [--notes 20] [--latency-ms 20] [--workers 4,10,16]
                                   [--quick]

It starts a sandbox in a process of its own (GitLab is another machine: its CPU is not the
client's), files ``--issues`` issues labelled agent::lead, each with ``--notes`` ledger
records (a claim, then offers declined in turn: a valid chain the fold reads in full), injects
``--latency-ms`` of latency on every API request, and runs ``board`` in-process. Then its floor:
a minimal client (http.client, one keep-alive connection per thread, as many threads as board has
readers: tracker.WORKERS) making the same
requests board made, each answer read and decoded, against the same sandbox with the same
latency. ``--workers`` runs board again with each reader count, for sizing WORKERS
(pairgate/tracker.py). Targets: within 1.1 times the floor, and never more than one
notes listing per page of 100 notes on an issue. ``--quick`` is a small world (12 issues of 4
notes, 2 ms a request) for a smoke run. ``measure_process`` (benchmarks/run.py's whole-process
row) starts board from a venv's console script instead, against a floor started as a program too.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate import tracker as boardread  # noqa: E402
from pairgate.main import main  # noqa: E402
from pairgate.standalone.errors import Context, fresh_id  # noqa: E402
from pairgate.standalone.records import compose_note, forget_reads  # noqa: E402

CONFIG = ROOT / "tests" / "fixtures" / "pairgate-config.json"
TRACKER = "/projects/acme%2Ftracker/issues"
SHA = "a" * 40


class Sandbox:
    """``pairgate sandbox`` as a separate process: its ready line, and its control endpoints."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.url, self.api_url = info["url"], info["api_url"]
        self.control = info["sandbox_api"]

    def token(self, user: str) -> str:
        return str(self.info["users"][user]["token"])

    def fault(self, **spec: Any) -> None:
        requests.post(f"{self.control}/faults", json=spec, timeout=10).raise_for_status()

    def clear_requests(self) -> None:
        requests.delete(f"{self.control}/requests", timeout=10).raise_for_status()

    def requests(self) -> list[dict[str, Any]]:
        return list(requests.get(f"{self.control}/requests", timeout=60).json())


@contextlib.contextmanager
def sandbox_process() -> Iterator[Sandbox]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-B", "-m", "pairgate", "sandbox"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        assert proc.stdout is not None
        yield Sandbox(json.loads(proc.stdout.readline()))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def records(count: int) -> list[tuple[str, dict[str, object]]]:
    """``count`` ledger events: a claim, then handoffs each declined, ending on a live offer."""
    out: list[tuple[str, dict[str, object]]] = [("claim", {"role": "lead"})]
    while len(out) < count:
        if out[-1][0] == "handoff":
            out.append(("decline", {"from": "acme-lead"}))
        else:
            mr = {"project": "acme/app", "iid": 1}
            fields = {"to": "acme-review", "role": "review", "sha": SHA, "mr": mr}
            out.append(("handoff", {**fields, "reason": None, "supersedes": None}))
    return out


def file_issue(sandbox: Sandbox, session: requests.Session, n: int, notes: int) -> None:
    headers = {"PRIVATE-TOKEN": sandbox.token("agents")}
    issue = session.post(
        f"{sandbox.api_url}{TRACKER}",
        json={"title": f"issue {n}", "labels": "agent::lead"},
        headers=headers,
    ).json()["iid"]
    prev, offer = None, None
    for event, fields in records(notes):
        agent = "acme-review" if event == "decline" else "acme-lead"
        record = {"event": event, "agent": agent, "write_id": fresh_id()}
        record |= {"session": "bench", "prev": prev, **fields}
        record["issue"] = f"acme/tracker#{issue}"
        if event == "decline":
            record["offer"] = offer
        body, sealed = compose_note("ownership", record, f"{agent} {event}")
        note = session.post(
            f"{sandbox.api_url}{TRACKER}/{issue}/notes", json={"body": body}, headers=headers
        ).json()
        prev, offer = sealed["digest"], note["id"] if event == "handoff" else offer


def build(sandbox: Sandbox, issues: int, notes: int) -> float:
    start = time.perf_counter()
    sessions = [requests.Session() for _ in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda n: file_issue(sandbox, sessions[n % 8], n, notes), range(issues)))
    return time.perf_counter() - start


def board_env(sandbox: Sandbox) -> dict[str, str]:
    """What board is run with: the suite's configuration, the sandbox's URL and tokens."""
    return {
        "PAIRGATE_CONFIG": str(CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sandbox.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sandbox.token("agents"),
        "PAIRGATE_TEST_TASK_WRITE_TOKEN": sandbox.token("agents"),
    }


def run_board(sandbox: Sandbox, workers: int | None = None) -> tuple[int, float, float, str]:
    env = board_env(sandbox)
    out, err = io.StringIO(), io.StringIO()
    forget_reads()  # as in a fresh process: no note read before
    chosen = boardread.WORKERS
    boardread.WORKERS = workers or chosen
    try:
        start, cpu = time.perf_counter(), time.process_time()
        code = main(["board"], ctx=Context(env=env, stdout=out, stderr=err))
        return code, time.perf_counter() - start, time.process_time() - cpu, out.getvalue()
    finally:
        boardread.WORKERS = chosen


def floor_client(sandbox: Sandbox, log: list[dict[str, Any]], threads: int | None = None) -> float:
    """Seconds for a minimal client to make ``log``'s GETs: ``threads`` threads (board's own
    reader count by default), each with one keep-alive http.client connection, every answer
    read and decoded."""
    threads = threads or boardread.WORKERS
    where = urlsplit(sandbox.url)
    local = threading.local()
    headers = {"PRIVATE-TOKEN": sandbox.token("agents")}

    def get(entry: dict[str, Any]) -> None:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        target = entry["path"] + (f"?{entry['query']}" if entry["query"] else "")
        local.conn.request("GET", target, headers=headers)
        json.loads(local.conn.getresponse().read())

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(get, [e for e in log if e["method"] == "GET"]))
    return time.perf_counter() - start


@contextlib.contextmanager
def board_world(issues: int = 500, notes: int = 20, latency_ms: int = 20) -> Iterator[Sandbox]:
    """A sandbox process holding the board, its latency injected from here on."""
    with sandbox_process() as sandbox:
        build(sandbox, issues, notes)
        sandbox.fault(path="^/api/v4/", delay_ms=latency_ms, count=10**9)
        yield sandbox


def measure(sandbox: Sandbox, runs: int = 3) -> dict[str, Any]:
    """board and its floor, alternately, ``runs`` times each: the medians, and board's log."""
    boards, floors, code, log = [], [], 0, []
    for _ in range(runs):
        sandbox.clear_requests()
        code, wall, _, _ = run_board(sandbox)
        log = sandbox.requests()
        boards.append(wall)
        floors.append(floor_client(sandbox, log))
    return {
        "board": statistics.median(boards),
        "floor": statistics.median(floors),
        "code": code,
        "requests": len(log),
    }


def measure_process(sandbox: Sandbox, venv: Path, runs: int = 3) -> dict[str, Any]:
    """board as a user starts it, ``venv``'s console script, and its floor started as a program
    too: ``venv``'s python3 making the same GETs on http.client from as many threads as board
    has readers (benchmarks/floor_client.py). The medians of ``runs`` alternate runs."""
    from benchmarks.hook import FLOOR_CLIENT, floor_spec

    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": os.environ.get("HOME", "/tmp")}
    board_argv = [str(venv / "bin" / "pairgate"), "board"]
    boards, floors, log = [], [], []
    for _ in range(runs):
        sandbox.clear_requests()
        start = time.perf_counter()
        done = subprocess.run(board_argv, env={**env, **board_env(sandbox)}, capture_output=True)
        boards.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"pairgate board failed in {venv}: {done.stderr.decode()[-500:]}")
        log = sandbox.requests()
        spec = json.loads(floor_spec(sandbox, log)) | {"threads": boardread.WORKERS}
        floor = [str(venv / "bin" / "python3"), str(FLOOR_CLIENT), json.dumps(spec)]
        start = time.perf_counter()
        subprocess.run(floor, env=env, check=True)
        floors.append(time.perf_counter() - start)
    return {
        "board": statistics.median(boards),
        "floor": statistics.median(floors),
        "requests": len(log),
    }


def main_(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=500)
    parser.add_argument("--notes", type=int, default=20)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--workers", default="", help="reader counts to try, such as 4,10,16")
    parser.add_argument("--quick", action="store_true", help="a small world, for a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.issues, args.notes, args.latency_ms = 12, 4, 2
    with sandbox_process() as sandbox:
        built = build(sandbox, args.issues, args.notes)
        print(f"world: {args.issues} labelled issues x {args.notes} notes, built in {built:.1f}s")
        sandbox.clear_requests()
        sandbox.fault(path="^/api/v4/", delay_ms=args.latency_ms, count=10**9)
        code, wall, cpu, out = run_board(sandbox)
        log = sandbox.requests()
        floor = min(floor_client(sandbox, log) for _ in range(1 if args.quick else 3))
        sweep = [
            (n, statistics.median(run_board(sandbox, n)[1] for _ in range(3)))
            for n in (int(w) for w in args.workers.split(",") if w)
        ]
    rows = len(out.splitlines()) - 1
    notes_per_issue = Counter(r["path"] for r in log if r["path"].endswith("/notes"))
    kinds = Counter(
        "notes listing" if r["path"].endswith("/notes")
        else "issue listing" if r["path"].endswith("/issues")
        else "other"
        for r in log
    )  # fmt: skip
    pages = math.ceil(args.notes / 100)
    worst = max(notes_per_issue.values(), default=0)
    print(
        f"board: exit {code}, {rows} rows, {wall:.2f}s wall with {args.latency_ms} ms per "
        f"request ({cpu:.2f}s of the client's CPU; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs)"
    )
    print(
        f"floor: {floor:.2f}s ({boardread.WORKERS} threads as board's readers, http.client, "
        f"the same {len(log)} requests)"
    )
    print(f"requests: {len(log)} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})")
    print(f"notes listings per issue: at most {worst} (pages of 100 notes per issue: {pages})")
    for n, seconds in sweep:
        print(f"board with {n:>2} readers: {seconds:.2f}s ({seconds / floor:.2f}x the floor)")
    print(
        f"targets: within 1.1x the floor: {'met' if wall <= 1.1 * floor else 'MISSED'} "
        f"({wall / floor:.2f}x); one notes listing per page: "
        f"{'met' if worst <= pages else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
