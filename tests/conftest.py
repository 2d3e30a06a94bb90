"""Shared fixtures: the suite's configuration, and the CLI run in-process or as a program."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pairgate.main import main
from pairgate.ownership import Context
from pairgate.sandbox.testing import RunningSandbox, running_sandbox

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_CONFIG = FIXTURES / "pairgate-config.json"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], env: dict[str, str] | None = None, **kw: object) -> Result:
    """Run pairgate in-process with an injected environment (never the real one)."""
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(env=dict(env or {}), stdout=out, stderr=err)
    code = main(argv, ctx=ctx, **kw)  # type: ignore[arg-type]
    return Result(int(code), out.getvalue(), err.getvalue())


def run_program(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str = ""
) -> Result:
    """Run a real program (python -m pairgate, a validator, the hook) with a clean environment."""
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    base["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        args,
        env={**base, **(env or {})},
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


PAIRGATE = [sys.executable, "-B", "-m", "pairgate"]


@pytest.fixture
def config_env() -> dict[str, str]:
    """An environment naming the suite's configuration."""
    return {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}


# -- the sandbox (docs/sandbox.md) ----------------------------------------------------------------


@pytest.fixture(scope="session")
def sandbox_server() -> Iterator[RunningSandbox]:
    """One sandbox for the whole session; use ``sandbox`` in tests, which resets it first."""
    with running_sandbox() as running:
        yield running


@pytest.fixture
def sandbox(sandbox_server: RunningSandbox) -> RunningSandbox:
    """The session's sandbox, back at the default world (a reset takes milliseconds)."""
    sandbox_server.reset()
    return sandbox_server
