"""The cost of ``pairgate watch`` and ``pairgate inbox``: requests and wall time. Prints; asserts
nothing.

    python3 -B benchmarks/watch.py [--quick] [--mrs 200] [--changed 50] [--latency-ms 20]
        [--events 10000] [--fleet-watchers 4] [--fleet-mrs 500] [--fleet-events 10000]

It starts a sandbox in a process of its own (GitLab is another machine), files ten tracker
issues a lead holds and ``--mrs`` open merge requests citing them (each with a comment and a
passed pipeline; the sandbox clock moves ten seconds between two, as a real group's merge
requests change at different times), and polls once into a temporary store. Then:

- idle: a second poll with nothing changed. Target: at most 5 requests.
- busy: ``--changed`` merge requests get a new comment (and half of them a failed pipeline),
  every API request is delayed ``--latency-ms``, and one poll reads it all. Target: under 3 s.
- inbox: a store holding ``--events`` events (most acknowledged, twenty batches pending for one
  agent) answers ``inbox --json`` and the Stop hook. Target: under 100 ms each, in-process (the
  interpreter's start-up, printed beside it, comes on top for a hook).
- webhooks and a fleet (benchmarks/watch_fleet.py): requests per idle hour with and without
  webhooks, the time from a note to its batch by webhook and by poll, and a fleet run (4
  watchers, 500 merge requests, 10,000 events) checked for loss and duplicates.

``--quick``: a small world of each, for a smoke test (the figures then mean little), and no
fleet: ``benchmarks/watch_fleet.py --quick`` runs that same report by itself.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pairgate.commands.inbox import inbox  # noqa: E402
from pairgate.standalone.config import load_config  # noqa: E402
from pairgate.standalone.errors import Context, fresh_id  # noqa: E402
from pairgate.standalone.gitlab_env import gitlab_from_env  # noqa: E402
from pairgate.standalone.records import compose_note  # noqa: E402
from pairgate.watch import hooks, runner  # noqa: E402
from pairgate.watch.batches import NewBatch, Plan  # noqa: E402
from pairgate.watch.records import Event  # noqa: E402
from pairgate.watch.store import Store  # noqa: E402

CONFIG = ROOT / "tests" / "fixtures" / "pairgate-config.json"
APP = "/projects/acme%2Fapp"
TRACKER = "/projects/acme%2Ftracker/issues"


class Sandbox:
    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.url, self.api_url, self.control = info["url"], info["api_url"], info["sandbox_api"]
        self.http = requests.Session()

    def token(self, user: str) -> str:
        return str(self.info["users"][user]["token"])

    def api(self, method: str, path: str, user: str = "agents", **kw: Any) -> Any:
        answer = self.http.request(
            method,
            self.api_url + path,
            headers={"PRIVATE-TOKEN": self.token(user)},
            timeout=60,
            **kw,
        )
        answer.raise_for_status()
        return answer.json() if answer.content else None

    def ctl(self, method: str, path: str, **kw: Any) -> Any:
        answer = self.http.request(method, f"{self.control}/{path}", timeout=60, **kw)
        answer.raise_for_status()
        return answer.json() if answer.content else None


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


def build(sb: Sandbox, mrs: int) -> list[dict[str, Any]]:
    issues = []
    for n in range(10):
        iid = sb.api("POST", TRACKER, json={"title": f"issue {n}", "labels": "agent::lead"})["iid"]
        record = {
            "event": "claim",
            "agent": "acme-lead",
            "issue": f"acme/tracker#{iid}",
            "write_id": fresh_id(),
            "session": "bench-acme-lead",  # one session per agent
        }
        body, _ = compose_note(
            "ownership", record | {"prev": None, "role": "lead"}, "acme-lead claims"
        )
        sb.api("POST", f"{TRACKER}/{iid}/notes", json={"body": body})
        issues.append(iid)
    made = []
    for n in range(mrs):
        branch = f"b{n}"
        actions = [{"action": "create", "file_path": f"f{n}.txt", "content": str(n)}]
        sb.api(
            "POST",
            f"{APP}/repository/commits",
            json={
                "branch": branch,
                "start_branch": "main",
                "commit_message": "c",
                "actions": actions,
            },
        )
        description = f"Fixes acme/tracker#{issues[n % 10]}"
        mr = sb.api(
            "POST",
            f"{APP}/merge_requests",
            json={
                "source_branch": branch,
                "target_branch": "main",
                "title": f"MR {n}",
                "description": description,
            },
        )
        sb.api(
            "POST",
            f"{APP}/merge_requests/{mr['iid']}/notes",
            "review_bot",
            json={"body": "looks fine"},
        )
        sb.ctl(
            "POST",
            "pipelines",
            json={"project": "acme/app", "ref": branch, "jobs": [{"name": "test"}]},
        )
        sb.ctl("POST", "clock", json={"advance_seconds": 10})
        made.append(mr)
    sb.ctl("POST", "clock", json={"advance_seconds": 600})
    return made


def change(sb: Sandbox, mrs: list[dict[str, Any]], count: int) -> None:
    def one(n: int) -> None:
        mr = mrs[n]
        sb.api(
            "POST",
            f"{APP}/merge_requests/{mr['iid']}/notes",
            "review_bot",
            json={"body": f"please fix {n}"},
        )
        if n % 2 == 0:
            jobs = [{"name": "test", "status": "failed"}, {"name": "lint"}]
            sb.ctl(
                "POST",
                "pipelines",
                json={"project": "acme/app", "ref": mr["source_branch"], "jobs": jobs},
            )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(count)))


def poll(
    sb: Sandbox, store: Store, clock: list[float]
) -> tuple[runner.Outcome, float, Counter[str]]:
    env = {
        "PAIRGATE_CONFIG": str(CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sb.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sb.token("agents"),
    }
    config = load_config(env)
    client = gitlab_from_env(config, env)
    sb.ctl("DELETE", "requests")
    start = time.perf_counter()
    outcome = runner.poll(client, config, store, now=clock[0])
    wall = time.perf_counter() - start
    kinds = Counter(_kind(r["path"]) for r in sb.ctl("GET", "requests"))
    return outcome, wall, kinds


def _kind(path: str) -> str:
    for suffix in (
        "/discussions",
        "/approvals",
        "/jobs",
        "/pipelines",
        "/issues",
        "/notes",
        "/merge_requests",
    ):
        if path.endswith(suffix):
            return suffix.strip("/")
    return "one merge request" if "/merge_requests/" in path else "other"


def fill(store: Store, events: int, now: float) -> None:
    """``events`` events in batches of ten: all acknowledged but the last twenty batches."""
    with store.writing():
        for start in range(0, events, 10):
            batch = [
                Event(
                    f"mr:acme/app!{start // 10}",
                    "comment-added",
                    "a" * 40,
                    None,
                    {"note_id": i, "author": "r", "body": f"comment {i}\n" * 3},
                )
                for i in range(start, min(start + 10, events))
            ]
            stored = store.add_events(batch, now)
            (made,) = store.apply(
                Plan(
                    new=(
                        NewBatch(
                            "acme-lead", stored[0].subject, "bench", tuple(e.id for e in stored)
                        ),
                    )
                ),
                now,
            )
            if start < events - 200:
                store.ack(made, agent="acme-lead", note=None, now=now, cli="pairgate")


def timed_inbox(path: Path) -> float:
    out = io.StringIO()
    env = {"PAIRGATE_CONFIG": str(CONFIG), "PAIRGATE_TEST_AGENT_ID": "acme-lead"}
    ctx = Context(env=env, stdout=out, stderr=io.StringIO())
    start = time.perf_counter()
    inbox(ctx=ctx, agent="acme-lead", json=True, store=path)
    wall = time.perf_counter() - start
    assert len(json.loads(out.getvalue())["batches"]) == 20
    return wall


def timed_stop(path: Path) -> float:
    store = Store.open(path, tracker="acme/tracker")
    start = time.perf_counter()
    answer = hooks.answer(
        "Stop",
        {"session_id": "s"},
        store=store,
        agent="acme-lead",
        cli="pairgate",
        store_flag="",
        now=time.time(),
        remind_after=1800,
    )
    wall = time.perf_counter() - start
    store.close()
    assert answer is not None and answer.get("decision") == "block"
    return wall


def startup(path: Path) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PAIRGATE_CONFIG": str(CONFIG),
        "PAIRGATE_TEST_AGENT_ID": "acme-lead",
    }
    code = "from pairgate.commands import inbox"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-B", "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main_(argv: list[str]) -> int:
    import watch_fleet

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mrs", type=int, default=200)
    parser.add_argument("--changed", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--fleet-watchers", type=int, default=4)
    parser.add_argument("--fleet-mrs", type=int, default=500)
    parser.add_argument("--fleet-events", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="small worlds, for a smoke test")
    args = parser.parse_args(argv)
    if args.quick:
        args.mrs, args.changed, args.events = 20, 5, 1000
    with tempfile.TemporaryDirectory() as tmp, sandbox_process() as sb:
        start = time.perf_counter()
        mrs = build(sb, args.mrs)
        print(
            f"world: {args.mrs} open merge requests citing 10 issues, built in {time.perf_counter() - start:.1f}s"
        )
        store = Store.open(Path(tmp) / "watch.sqlite3", tracker="acme/tracker")
        clock = [time.time()]
        first, wall, kinds = poll(sb, store, clock)
        print(
            f"first poll: {len(first.events)} events, {sum(kinds.values())} requests, {wall:.2f}s"
        )
        clock[0] += 180
        idle, wall, kinds = poll(sb, store, clock)
        idle_requests = sum(kinds.values())
        print(
            f"idle poll: {len(idle.events)} events, {idle_requests} requests ({dict(kinds)}), {wall:.3f}s"
        )
        change(sb, mrs, args.changed)
        sb.ctl(
            "POST",
            "faults",
            json={"path": "^/api/v4/", "delay_ms": args.latency_ms, "count": 10**9},
        )
        clock[0] += 180
        busy, busy_wall, kinds = poll(sb, store, clock)
        sb.ctl("DELETE", "faults")
        print(
            f"busy poll: {args.changed} changed merge requests, {len(busy.events)} events, "
            f"{sum(kinds.values())} requests ({dict(kinds)}), {busy_wall:.2f}s with {args.latency_ms} ms per request"
            f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        store.close()
        big = Path(tmp) / "big.sqlite3"
        filled = Store.open(big, tracker="acme/tracker")
        start = time.perf_counter()
        fill(filled, args.events, time.time())
        filled.close()
        print(
            f"store: {args.events} events in {args.events // 10} batches, 20 pending, filled in {time.perf_counter() - start:.1f}s"
        )
        timed_inbox(big)  # the first call opens the files; time the answers after it
        inbox_wall = min(timed_inbox(big) for _ in range(5))
        stop_wall = min(timed_stop(big) for _ in range(5))
        boot = startup(big)
        print(
            f"inbox --json: {inbox_wall * 1000:.0f} ms; Stop hook answer: {stop_wall * 1000:.0f} ms (in-process)"
        )
        print(
            f"interpreter start-up with the inbox imported: {boot * 1000:.0f} ms (a hook pays it on top)"
        )
        if args.quick:
            # The smoke run's fleet is watch_fleet.py --quick's, the same report: not twice.
            print("webhooks and a fleet: benchmarks/watch_fleet.py --quick")
        else:
            sb.ctl("POST", "reset")
            fleet = argparse.Namespace(
                quick=False,
                watchers=args.fleet_watchers,
                mrs=args.fleet_mrs,
                events=args.fleet_events,
            )
            with watch_fleet.a_store_server(Path(tmp)) as new_store:
                watch_fleet.report(sb, Path(tmp), new_store, fleet, build)
    print(
        f"targets: idle poll at most 5 requests: {'met' if idle_requests <= 5 else 'MISSED'}; "
        f"busy poll under 3 s: {'met' if busy_wall < 3 else 'MISSED'}; "
        f"inbox under 100 ms: {'met' if max(inbox_wall, stop_wall) < 0.1 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
