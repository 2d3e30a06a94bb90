"""The cost of ``pairgate audit`` over a big window: wall time and requests. Prints; asserts
nothing.

    python3 -B benchmarks/audit.py [--mrs 1000] [--issues 300] [--notes 20] [--latency-ms 20]
                                   [--quick]

It starts a sandbox in a process of its own (GitLab is another machine: its CPU is not the
client's), opens ``--mrs`` merge requests in acme/app, merge request n citing tracker issue
n mod ``--issues``, writes ``--notes`` ledger records on each issue (a claim, the review round
of its first merge request up to the approval at its head, then offers declined in turn: a valid
chain the fold reads in full; the lead and the reviewer each write in a session of their own),
merges every merge request, injects ``--latency-ms`` of latency on every request to GitLab's
API, REST and GraphQL alike, and runs ``audit`` in-process. The merge requests that cite an
issue after its first are merged unapproved: the audit finds them. ``--quick`` is a small world
(6 merge requests citing 3 issues, 1 ms a request) for a smoke run.

Targets: under 5 s of wall time at the defaults, and each issue's notes read once. The floor in
requests: the merged listing's pages, one notes listing per cited issue, one GraphQL query per
hundred gated merge requests of a project (their diff_refs; a merge request it does not give is
read by itself) and one per issue holding approvals (whether they were edited); above it: the
group's project listing (twice: the shared-in projects, the default branches), each shared-in
project's merged listing, the frozen-label and updated-issue listings, one label-history listing
per issue updated in the window, and each default branch's first-parent commits and push events
(a page per 100 each)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.board import Sandbox, sandbox_process  # noqa: E402
from pairgate.main import main  # noqa: E402
from pairgate.standalone.errors import Context, fresh_id  # noqa: E402
from pairgate.standalone.records import compose_note  # noqa: E402

CONFIG = ROOT / "tests" / "fixtures" / "pairgate-config.json"
APP = "/projects/acme%2Fapp"
TRACKER = "/projects/acme%2Ftracker/issues"
WORKERS = 8


def open_mr(sandbox: Sandbox, session: requests.Session, n: int, issue: int) -> tuple[int, str]:
    """A branch with one commit, and a merge request citing ``issue``: (iid, head)."""
    headers = {"PRIVATE-TOKEN": sandbox.token("agents")}
    action = {"action": "create", "file_path": f"change-{n}.txt", "content": f"{n}\n"}
    commit = session.post(
        f"{sandbox.api_url}{APP}/repository/commits",
        json={
            "branch": f"b{n}",
            "start_branch": "main",
            "commit_message": "x",
            "actions": [action],
        },
        headers=headers,
    ).json()
    mr = session.post(
        f"{sandbox.api_url}{APP}/merge_requests",
        json={
            "source_branch": f"b{n}",
            "target_branch": "main",
            "title": f"Change {n}",
            "description": f"Related to acme/tracker#{issue}",
        },
        headers=headers,
    ).json()
    return int(mr["iid"]), str(commit["id"])


def ledger(
    first_mr: tuple[int, str], refs: dict[str, Any], count: int
) -> list[tuple[str, str, dict[str, Any]]]:
    """``count`` records: a claim, the review round of ``first_mr`` up to the approval (and the
    lead's accept of the offer back), then offers declined in turn. ``refs`` is the merge
    request's target branch and diff_refs when approved, which the approval binds."""
    iid, sha = first_mr
    mr = {"project": "acme/app", "iid": iid}
    offer = {"sha": sha, "mr": mr, "reason": None, "supersedes": None}
    out: list[tuple[str, str, dict[str, Any]]] = [
        ("acme-lead", "claim", {"role": "lead"}),
        ("acme-lead", "handoff", {"to": "acme-review", "role": "review", **offer}),
        ("acme-review", "accept", {"from": "acme-lead", "role": "review"}),
        (
            "acme-review",
            "approve",
            {
                "to": "acme-lead",
                "role": "lead",
                **offer,
                "not_covering": [],
                "self_approval": False,
                **refs,
            },
        ),
        ("acme-lead", "accept", {"from": "acme-review", "role": "lead"}),
    ]
    while len(out) < count:
        if out[-1][1] == "handoff":
            out.append(("acme-review", "decline", {"from": "acme-lead"}))
        else:
            out.append(("acme-lead", "handoff", {"to": "acme-review", "role": "review", **offer}))
    return out[:count]


def write_ledger(
    sandbox: Sandbox, session: requests.Session, issue: int, first: tuple[int, str], notes: int
) -> None:
    headers = {"PRIVATE-TOKEN": sandbox.token("agents")}
    found = session.get(f"{sandbox.api_url}{APP}/merge_requests/{first[0]}", headers=headers).json()
    refs = {
        "target_branch": found["target_branch"],
        "base_sha": found["diff_refs"]["base_sha"],
        "start_sha": found["diff_refs"]["start_sha"],
    }
    prev, last_offer = None, None
    for agent, event, fields in ledger(first, refs, notes):
        kind = "approval" if event == "approve" else "ownership"
        # Each agent writes in a session of its own, as two agents do: records of one session
        # by both would make every approval a self-approval.
        record = {"event": event, "agent": agent, "write_id": fresh_id(), "session": agent}
        record |= {"issue": f"acme/tracker#{issue}", "prev": prev, **fields}
        if event in ("accept", "decline"):
            record["offer"] = last_offer
        body, sealed = compose_note(kind, record, f"{agent} {event}")
        note = session.post(
            f"{sandbox.api_url}{TRACKER}/{issue}/notes", json={"body": body}, headers=headers
        ).json()
        prev = sealed["digest"]
        if event in ("handoff", "approve"):
            last_offer = note["id"]


def build(sandbox: Sandbox, mrs: int, issues: int, notes: int) -> float:
    start = time.perf_counter()
    sessions = [requests.Session() for _ in range(WORKERS)]
    headers = {"PRIVATE-TOKEN": sandbox.token("agents")}
    numbers = [
        int(
            sessions[0]
            .post(f"{sandbox.api_url}{TRACKER}", json={"title": f"issue {n}"}, headers=headers)
            .json()["iid"]
        )
        for n in range(issues)
    ]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        opened = list(
            pool.map(
                lambda n: open_mr(sandbox, sessions[n % WORKERS], n, numbers[n % issues]),
                range(mrs),
            )
        )
        firsts = {numbers[n % issues]: opened[n] for n in reversed(range(min(mrs, issues)))}
        list(
            pool.map(
                lambda item: write_ledger(
                    sandbox, sessions[item[0] % WORKERS], item[1], firsts[item[1]], notes
                ),
                enumerate(firsts),
            )
        )
    for iid, head in opened:  # merges one at a time: each moves main
        sessions[0].put(
            f"{sandbox.api_url}{APP}/merge_requests/{iid}/merge",
            json={"sha": head},
            headers=headers,
        ).raise_for_status()
    return time.perf_counter() - start


def run_audit(sandbox: Sandbox) -> tuple[int, float, float, dict[str, Any]]:
    env = {
        "PAIRGATE_CONFIG": str(CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sandbox.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sandbox.token("agents"),
    }
    out, err = io.StringIO(), io.StringIO()
    start, cpu = time.perf_counter(), time.process_time()
    code = main(["audit", "--days", "1", "--json"], ctx=Context(env=env, stdout=out, stderr=err))
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    return code, wall, used, json.loads(out.getvalue() or "{}")


@contextlib.contextmanager
def audit_world(
    mrs: int = 1000, issues: int = 300, notes: int = 20, latency_ms: int = 20
) -> Iterator[tuple[Sandbox, float]]:
    """A sandbox process holding the merges, its latency injected from here on (REST and
    GraphQL alike), and how long the world took to build."""
    with sandbox_process() as sandbox:
        built = build(sandbox, mrs, issues, notes)
        sandbox.clear_requests()
        sandbox.fault(path="^/api/", delay_ms=latency_ms, count=10**9)
        yield sandbox, built


def kind(request: dict[str, Any]) -> str:
    path = request["path"]
    if path == "/api/graphql":
        return "GraphQL"
    if path.endswith("/notes"):
        return "notes listing"
    if path.endswith("/merge_requests"):
        return "merged listing"
    if "/merge_requests/" in path:
        return "merge request read"
    return "other"


def main_(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mrs", type=int, default=1000)
    parser.add_argument("--issues", type=int, default=300)
    parser.add_argument("--notes", type=int, default=20)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="a small world, for a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.mrs, args.issues, args.notes, args.latency_ms = 6, 3, 6, 1
    with audit_world(args.mrs, args.issues, args.notes, args.latency_ms) as (sandbox, built):
        print(
            f"world: {args.mrs} merged MRs citing {args.issues} issues of {args.notes} notes, "
            f"built in {built:.1f}s"
        )
        code, wall, cpu, doc = run_audit(sandbox)
        log = sandbox.requests()
    notes = Counter(r["path"] for r in log if kind(r) == "notes listing")
    kinds = Counter(kind(r) for r in log)
    pages = math.ceil(args.mrs / 100)
    floor = pages + len(notes) + kinds["merge request read"] + kinds["GraphQL"]
    print(
        f"audit: exit {code}, {doc.get('merged')} merged, {doc.get('approved')} approved, "
        f"{len(doc.get('findings', []))} findings; {wall:.2f}s wall with {args.latency_ms} ms per "
        f"request ({cpu:.2f}s of the client's CPU; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs)"
    )
    print(f"requests: {len(log)} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})")
    print(
        f"floor: {floor} ({pages} merged-listing pages, one notes read for each of the "
        f"{len(notes)} cited issues, {kinds['merge request read']} merge request reads, "
        f"{kinds['GraphQL']} GraphQL queries: the diff_refs, a hundred a query, and the edits); "
        f"above it: {len(log) - floor} (the group's project "
        f"listing twice, the shared-in project's merged listing, the frozen-label and "
        f"updated-issue listings, one label history per issue, each default branch's "
        f"first-parent commits and push events)"
    )
    worst = max(notes.values(), default=0)
    print(
        f"targets: wall under 5 s: {'met' if wall < 5 else 'MISSED'}; each issue's notes read "
        f"once: {'met' if worst <= 1 else 'MISSED'} (at most {worst})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
