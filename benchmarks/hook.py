#!/usr/bin/env python3
"""How long the merge hook takes, run as Claude Code runs it, next to its floors. Prints; asserts
nothing.

The hook is deployed with ``pairgate deploy-hooks`` into a temporary directory beside the suite's
configuration, then started as the documentation registers it, ``bash <path>``, with hook JSON
on stdin:

- a harmless command (the bash fast path); its floor: a bash script that reads stdin (in
  chunks, as the hook does) and exits, started as ``bash <path>``; ``bash -c true`` for scale;
- a command that says glab but merges nothing (Python reads it, no GitLab);
- a merge of an approved merge request, decided against a sandbox on loopback; its floor:
  python with http.client making the same requests the hook made (bodies and all), and their parse
  (benchmarks/floor_client.py).

``python3`` is the interpreter running this script (its directory first on PATH), so that a
version-manager shim in front of it is not what gets measured.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.sandbox.testing import RunningSandbox, running_sandbox  # noqa: E402
from tests.kit.gate_cases import approved_at_head  # noqa: E402
from tests.kit.names import FIXTURE_CONFIG, FIXTURES  # noqa: E402
from tests.kit.run import agent_env  # noqa: E402
from tests.kit.world import World  # noqa: E402

RUNS = 21
FLOOR_CLIENT = Path(__file__).resolve().parent / "floor_client.py"
# The hook's way of reading stdin, and nothing else.
READS_STDIN = """input=
while IFS= read -r -N 65536 chunk; do input+=$chunk; done
input+=$chunk
"""


def deploy(into: Path) -> None:
    subprocess.run(
        [sys.executable, "-B", "-m", "pairgate", "deploy-hooks", "--target", str(into)],
        env={**os.environ, "PYTHONPATH": str(ROOT), "PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
        check=True,
        capture_output=True,
    )
    shutil.copy(FIXTURE_CONFIG, into / "pairgate-config.json")
    shutil.copy(ROOT / "hooks" / "_hooklib.sh", into / "_hooklib.sh")
    shutil.copy(FIXTURES / "automation_mr_families.py", into / "automation_mr_families.py")


def medians_ms(
    programs: dict[str, tuple[list[str], str]], env: dict[str, str], runs: int = RUNS
) -> dict[str, tuple[float, int]]:
    """Each program's (median wall time in ms, exit code), the programs run in turn ``runs``
    times over (so a slow spell of the machine falls on all of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in programs}
    codes: dict[str, int] = {}
    for _ in range(runs):
        for name, (argv, stdin) in programs.items():
            start = time.perf_counter()
            proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True)
            times[name].append((time.perf_counter() - start) * 1000)
            codes[name] = proc.returncode
    return {name: (statistics.median(values), codes[name]) for name, values in times.items()}


def hook_json(command: str) -> str:
    return json.dumps(
        {
            "session_id": "bench",
            "cwd": "/tmp",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "benchmark"},
        }
    )


def floor_argv(
    sandbox: RunningSandbox, log: list[dict[str, Any]], calls: list[dict[str, Any]] | None = None
) -> list[str]:
    """The floor client's command line: ``calls`` ({"method", "target", "body"}) when given,
    else ``log``'s requests, which must then all be GETs (the log keeps no bodies)."""
    if calls is None:
        if any(e["method"] != "GET" for e in log):
            raise SystemExit("floor_argv: the log has requests with bodies; pass calls")
        calls = [
            {"method": "GET", "target": e["path"] + (f"?{e['query']}" if e["query"] else "")}
            for e in log
        ]
    spec = {"url": sandbox.url, "token": sandbox.token("agents"), "requests": calls}
    return [sys.executable, str(FLOOR_CLIENT), json.dumps(spec)]


def hook_calls(env: dict[str, str], project: str, iid: int) -> list[dict[str, Any]]:
    """The requests the hook's reader makes to decide this merge, bodies and all: the gate's
    decision made in this process through the hook's transport, each call recorded."""
    from pairgate.standalone import gitlab_once
    from pairgate.standalone.config import load_config
    from pairgate.standalone.gate import gate_merge
    from pairgate.standalone.gitlab import gitlab_from_env
    from pairgate.standalone.hook import HOOK_TIMEOUT

    calls: list[dict[str, Any]] = []
    answer = gitlab_once.OneAttempt._answer

    def recorded(self: Any, target: str, body: Any = None) -> Any:
        calls.append({"method": "GET" if body is None else "POST", "target": target, "body": body})
        return answer(self, target, body)

    gitlab_once.OneAttempt._answer = recorded  # type: ignore[method-assign]
    try:
        config = load_config(env)
        client = gitlab_from_env(
            config, env, timeout=HOOK_TIMEOUT, transport=gitlab_once.one_attempt_transport
        )
        gate_merge(client, config, project, iid, now=time.time())
    finally:
        gitlab_once.OneAttempt._answer = answer  # type: ignore[method-assign]
    return calls


def measure(sandbox: RunningSandbox, tmp: Path, runs: int = RUNS) -> dict[str, Any]:
    """Every figure of the hook, and its floors, in ms (medians of ``runs``)."""
    hooks = tmp / "hooks"
    hooks.mkdir()
    deploy(hooks)
    hook = ["bash", str(hooks / "block-unapproved-merge.sh")]  # the registration the docs give
    reads_stdin = tmp / "reads-stdin.sh"
    reads_stdin.write_text(READS_STDIN)
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
    env = {**agent_env(sandbox), "PATH": path, "HOME": str(tmp)}
    project, iid = approved_at_head(World(sandbox))
    encoded = project.replace("/", "%2F")
    head = sandbox.api("GET", f"/projects/{encoded}/merge_requests/{iid}")["sha"]
    # Bound to the approved head, as the hook requires: an unbound merge is refused.
    merge = hook_json(f"glab mr merge {iid} -R {project} --sha {head}")
    sandbox.clear_requests()
    subprocess.run(hook, input=merge, env=env, capture_output=True, text=True, check=False)
    log = sandbox.requests()
    calls = hook_calls(
        {**env, "PAIRGATE_CONFIG": str(hooks / "pairgate-config.json")}, project, iid
    )
    if [c["method"] for c in calls] != [e["method"] for e in log]:
        raise SystemExit(f"the hook made {log}, its reader in this process {calls}")
    harmless = hook_json("git status")
    return medians_ms(
        {
            "bash -c true": (["bash", "-c", "true"], ""),
            "reads stdin, exits": (["bash", str(reads_stdin)], harmless),
            "harmless: git status": (hook, harmless),
            "reads glab, no merge": (hook, hook_json("glab mr view 3")),
            f"merge {project}!{iid} (approved, --sha)": (hook, merge),
            f"floor: the same {len(log)} requests": (floor_argv(sandbox, log, calls), ""),
        },
        env,
        runs,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as sandbox:
        rows = measure(sandbox, Path(tmp))
    bare = rows["bash -c true"][0]
    print(f"median of {RUNS} runs each")
    print(f"{'case':34} {'ms':>8} {'x bash':>7} {'exit':>5}")
    for name, (ms, code) in rows.items():
        print(f"{name:34} {ms:8.1f} {ms / bare:7.2f} {code:5}")


if __name__ == "__main__":
    main()
