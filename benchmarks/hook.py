#!/usr/bin/env python3
"""How long the merge hook takes, run as Claude Code runs it. Prints; asserts nothing.

The hook is deployed with ``pairgate deploy-hooks`` into a temporary directory beside the suite's
configuration, then started as the documentation registers it, ``bash <path>``, with hook JSON
on stdin:

- a harmless command (the bash fast path), against ``bash -c true`` measured side by side (the
  two alternate, run after run); target: at most 1.2 times;
- a command that says glab but merges nothing (Python reads it, no GitLab);
- a merge of an approved merge request bound to its head (``--sha``), decided against a sandbox
  on loopback; target: 300 ms.

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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.sandbox.testing import running_sandbox  # noqa: E402
from tests.conftest import FIXTURE_CONFIG, FIXTURES, agent_env  # noqa: E402
from tests.gate_world import World, approved_at_head  # noqa: E402

RUNS = 21


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


def once_ms(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True)
    return (time.perf_counter() - start) * 1000, proc.returncode


def median_ms(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, int]:
    runs = [once_ms(argv, stdin, env) for _ in range(RUNS)]
    return statistics.median(ms for ms, _ in runs), runs[-1][1]


def side_by_side_ms(
    first: list[str], second: list[str], stdin: str, env: dict[str, str]
) -> tuple[float, float, int]:
    """Medians of two commands run alternately, so that the machine's load weighs on both."""
    a, b, code = [], [], 0
    for _ in range(RUNS):
        a.append(once_ms(first, "", env)[0])
        ms, code = once_ms(second, stdin, env)
        b.append(ms)
    return statistics.median(a), statistics.median(b), code


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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, running_sandbox() as sandbox:
        hooks = Path(tmp) / "hooks"
        hooks.mkdir()
        deploy(hooks)
        hook = ["bash", str(hooks / "block-unapproved-merge.sh")]  # the registration
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
        env = {**agent_env(sandbox), "PATH": path, "HOME": tmp}
        project, iid = approved_at_head(World(sandbox))
        encoded = project.replace("/", "%2F")
        head = sandbox.api("GET", f"/projects/{encoded}/merge_requests/{iid}")["sha"]
        merge = f"glab mr merge {iid} -R {project} --sha {head}"

        median_ms(hook, hook_json(merge), env)  # compile and cache ownership.py first
        bare, harmless, code = side_by_side_ms(
            ["bash", "-c", "true"], hook, hook_json("git status"), env
        )
        rows = [
            ("bash -c true", bare, 0),
            ("harmless: git status", harmless, code),
            ("reads glab, no merge", *median_ms(hook, hook_json("glab mr view 3"), env)),
            (f"merge {project}!{iid} (approved, --sha)", *median_ms(hook, hook_json(merge), env)),
        ]
        print(f"median of {RUNS} runs each; the first two alternate")
        print(f"{'case':40} {'ms':>8} {'x bash':>7} {'exit':>5}")
        for name, ms, exit_code in rows:
            print(f"{name:40} {ms:8.1f} {ms / bare:7.2f} {exit_code:5}")
        print("targets: harmless at most 1.2x bash -c true; a merge decided within 300 ms")


if __name__ == "__main__":
    main()
