#!/usr/bin/env python3
"""How long the merge hook takes, run as Claude Code runs it, next to its floors. Prints; asserts
nothing.

    python3 benchmarks/hook.py [--quick] [--venv DIR]

The hook is deployed with ``pairgate deploy-hooks`` into a temporary directory beside the suite's
configuration, then started as the documentation registers it, ``bash <path>``, with hook JSON
on stdin, compact as Claude Code writes it:

- a harmless command (the bash fast path), in microseconds; its floors: ``bash -c true``, and a
  bash script that reads stdin (in chunks, as the hook does) and exits, started as ``bash
  <path>``;
- a command that says glab but merges nothing (Python reads it, no GitLab);
- a merge of an approved merge request, decided against a sandbox on loopback; its floor: bash
  reading stdin as the hook does and starting python, which parses the command with
  tree-sitter-bash and makes the same requests the hook made (bodies and all) on http.client,
  with the marker found, decoded and its digest computed for every note (floor_client.py).

The hook's Python half is the first python3 on PATH: ``--venv``'s (a clean venv with a regular
``pip install .``, as benchmarks/run.py gives it), else the interpreter running this script (its
directory first on PATH, so that a version-manager shim in front of it is not what gets
measured). ``--quick`` runs each program once, for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.timing import Program, medians_ms  # noqa: E402
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


# The floor of a merge decision: the hook's start (bash reading stdin), then Python.
FLOOR_SH = READS_STDIN + 'exec python3 -E -P "$1" "$2" <<<"$input"\n'


def hook_json(command: str) -> str:
    """The hook input, compact as Claude Code writes it (JSON.stringify)."""
    return json.dumps(
        {
            "session_id": "bench",
            "cwd": "/tmp",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "benchmark"},
        },
        separators=(",", ":"),
    )


def floor_spec(
    sandbox: RunningSandbox,
    log: list[dict[str, Any]],
    calls: list[dict[str, Any]] | None = None,
    *,
    hook_input: bool = False,
) -> str:
    """The floor client's spec: ``calls`` ({"method", "target", "body"}) when given, else
    ``log``'s requests, which must then all be GETs (the log keeps no bodies)."""
    if calls is None:
        if any(e["method"] != "GET" for e in log):
            raise SystemExit("floor_spec: the log has requests with bodies; pass calls")
        calls = [
            {"method": "GET", "target": e["path"] + (f"?{e['query']}" if e["query"] else "")}
            for e in log
        ]
    spec = {"url": sandbox.url, "token": sandbox.token("agents"), "requests": calls}
    return json.dumps({**spec, "hook_input": hook_input})


def hook_calls(env: dict[str, str], project: str, iid: int) -> list[dict[str, Any]]:
    """The requests the hook's reader makes to decide this merge, bodies and all: the gate's
    decision made in this process through the hook's transport, each call recorded."""
    from pairgate.standalone import gitlab_once
    from pairgate.standalone.config import load_config
    from pairgate.standalone.gate import gate_merge
    from pairgate.standalone.gitlab_env import gitlab_from_env
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


def measure(
    sandbox: RunningSandbox, tmp: Path, runs: int = RUNS, venv: Path | None = None
) -> dict[str, tuple[float, int]]:
    """Every figure of the hook, and its floors, in ms (medians of ``runs``), with exit codes.
    ``venv``: the environment whose python3 runs the hook's Python half and the floor."""
    hooks = tmp / "hooks"
    hooks.mkdir()
    deploy(hooks)
    hook = ["bash", str(hooks / "block-unapproved-merge.sh")]  # the registration the docs give
    reads_stdin, floor_sh = tmp / "reads-stdin.sh", tmp / "floor.sh"
    reads_stdin.write_text(READS_STDIN)
    floor_sh.write_text(FLOOR_SH)
    python_dir = str(venv / "bin") if venv else os.path.dirname(sys.executable)
    path = os.pathsep.join([python_dir, os.environ["PATH"]])
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
    spec = floor_spec(sandbox, log, calls, hook_input=True)
    return medians_ms(
        {
            "bash -c true": Program(["bash", "-c", "true"], env, harmless),
            "reads stdin, exits": Program(["bash", str(reads_stdin)], env, harmless),
            "harmless: git status": Program(hook, env, harmless),
            "reads glab, no merge": Program(hook, env, hook_json("glab mr view 3")),
            f"merge {project}!{iid} (approved, --sha)": Program(hook, env, merge),
            f"floor: the same {len(log)} requests": Program(
                ["bash", str(floor_sh), str(FLOOR_CLIENT), spec], env, merge
            ),
        },
        runs,
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each program once (a smoke run)")
    parser.add_argument("--venv", type=Path, help="the clean venv whose python3 runs the hook")
    args = parser.parse_args(argv)
    runs = 1 if args.quick else RUNS
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as sandbox:
        rows = measure(sandbox, Path(tmp), runs, args.venv)
    bare = rows["bash -c true"][0]
    print(f"median of {runs} runs each; python3: {args.venv or sys.executable}")
    print(f"{'case':34} {'us':>9} {'x bash':>7} {'exit':>5}")
    for name, (ms, code) in rows.items():
        print(f"{name:34} {ms * 1000:9.0f} {ms / bare:7.2f} {code:5}")


if __name__ == "__main__":
    main(sys.argv[1:])
