#!/usr/bin/env python3
"""How long the merge hook takes, run as Claude Code runs it. Prints; asserts nothing.

The hook is deployed with ``pairgate deploy-hooks`` into a temporary directory beside the suite's
configuration, then started by path with hook JSON on stdin:

- a harmless command (the bash fast path), against ``bash -c true``; target: at most 1.5 times;
- a command that says glab but merges nothing (Python reads it, no GitLab);
- a merge of an approved merge request, decided against a sandbox on loopback; target: 300 ms.

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


def median_ms(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, int]:
    times, code = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True)
        times.append((time.perf_counter() - start) * 1000)
        code = proc.returncode
    return statistics.median(times), code


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
        hook = [str(hooks / "block-unapproved-merge.sh")]
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
        env = {**agent_env(sandbox), "PATH": path, "HOME": tmp}
        project, iid = approved_at_head(World(sandbox))

        bare, _ = median_ms(["bash", "-c", "true"], "", env)
        rows = [
            ("bash -c true", bare, 0),
            ("harmless: git status", *median_ms(hook, hook_json("git status"), env)),
            ("reads glab, no merge", *median_ms(hook, hook_json("glab mr view 3"), env)),
            (
                f"merge {project}!{iid} (approved)",
                *median_ms(hook, hook_json(f"glab mr merge {iid} -R {project}"), env),
            ),
        ]
        print(f"median of {RUNS} runs each")
        print(f"{'case':34} {'ms':>8} {'x bash':>7} {'exit':>5}")
        for name, ms, code in rows:
            print(f"{name:34} {ms:8.1f} {ms / bare:7.2f} {code:5}")
        print("targets: harmless at most 1.5x bash -c true; a merge decided within 300 ms")


if __name__ == "__main__":
    main()
