"""docs/sandbox.md's whole round, run exactly as written: the sandbox block in one process, the
round block in a shell, against a deployment that only `--config-out` wrote."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.kit.names import ROOT
from tests.kit.run import clean_env

pytestmark = [pytest.mark.slow]
# scripts/test runs this file once more with the pairgate installed from the wheel into a fresh
# virtual environment: the round a new user plays, from nothing but `pip install`.
INSTALLED = os.environ.get("PAIRGATE_DOC_ROUND_WITH", "")
DOC = ROOT / "docs" / "sandbox.md"
DOC_PORT = "8765"


def block(marker: str) -> str:
    """The fenced sh block right after ``<!-- round:<marker> -->``."""
    found = re.search(rf"<!-- round:{marker} -->\n```sh\n(.*?)\n```", DOC.read_text(), re.S)
    assert found, f"docs/sandbox.md has no round:{marker} block"
    return found.group(1)


def free_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


@contextlib.contextmanager
def serving(program: str, serve: str, env: dict[str, str], *, stops_within: float) -> Iterator[Any]:
    """The document's sandbox block running in bash, with ``pairgate`` as ``program``: its ready
    line; then SIGTERM, which it answers with exit 0 within ``stops_within`` seconds."""
    sandbox = subprocess.Popen(
        ["bash", "-c", f'pairgate() {{ exec {program} "$@"; }}\n{serve}'],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert sandbox.stdout is not None
        yield json.loads(sandbox.stdout.readline())
    finally:
        sandbox.send_signal(signal.SIGTERM)
        assert sandbox.wait(timeout=stops_within) == 0


def play(program: str, script: str, env: dict[str, str], *, timeout: float) -> Any:
    """The document's play block in bash, with ``pairgate`` as ``program``."""
    return subprocess.run(
        ["bash", "-c", f'pairgate() {{ {program} "$@"; }}\n{script}'],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_documented_round_runs(tmp_path: Path) -> None:
    # curl is part of the round as written; scripts/test installs it where it is missing.
    assert shutil.which("curl"), "the documented round uses curl: apt-get install curl"
    port = free_port()  # the doc's fixed port may be taken on a shared machine
    serve, play_block = (block(m).replace(DOC_PORT, port) for m in ("sandbox", "play"))
    if INSTALLED:
        program = shlex.quote(INSTALLED)
        env = clean_env(HOME=str(tmp_path))
    else:
        # Without -B, as the deployment's test: the first start compiles, the rest load it.
        program = f"{shlex.quote(sys.executable)} -m pairgate"
        env = clean_env(PYTHONPATH=str(ROOT), HOME=str(tmp_path))
    with serving(program, serve, env, stops_within=10) as line:
        assert line["url"] == f"http://127.0.0.1:{port}"
        assert line["example"]["merge_request"]["iid"] == 1
        assert line["example"]["issue"] == {"project": "acme/tracker", "id": 502, "iid": 2}
        round_ = play(program, play_block, env, timeout=300)
        out = round_.stdout
        assert round_.returncode == 0, out + round_.stderr
        assert "acme-lead holds #2 as lead (note 1001)." in out
        assert "acme/app!1 may merge: acme-review approved its head" in out
        # The example world carries a merge request job: approve's pipeline starts.
        assert "started merge request pipeline" in out and "as the review bot" in out
        assert "warning: the approval stands" not in round_.stderr, round_.stderr
        assert "the hook blocks the merge (exit 2)" in out
        assert "the hook lets the merge through" in out
        assert re.search(r"^merged [0-9a-f]{40}$", out, re.M), out
        assert sorted(p.name for p in (tmp_path / "pairgate-sandbox" / "agents").iterdir()) == [
            "acme-finder.md",
            "acme-lead.md",
            "acme-review.md",
            "acme-solo.md",
        ]
        unserved = requests.get(line["sandbox_api"] + "/unserved", timeout=5).json()
        assert unserved == []  # the round used only routes the sandbox serves
