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
from pairgate.sandbox import testing as sandbox_testing
from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from pairgate.standalone.config import Config, load_config
from pairgate.standalone.errors import Context

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


def clean_env(**extra: str) -> dict[str, str]:
    """A real program's environment: PATH and HOME only, then ``extra`` (no PYTHONPATH unless
    given, so a flat copy does not find the package)."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **extra}


def run_program(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str = ""
) -> Result:
    """Run a real program (python -m pairgate, a validator, the hook) with a clean environment."""
    proc = subprocess.run(
        args,
        env=clean_env(**{"PYTHONPATH": str(ROOT), **(env or {})}),
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


@pytest.fixture(autouse=True)
def _strict_sandbox(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that sent a sandbox a request no sandbox route serves (the sandbox answered
    GitLab's catch-all 404, which GitLab itself may not): the test leaned on a gap. A test
    whose point is such a request says so with ``@pytest.mark.sandbox_unserved_ok`` (optionally
    with regular expressions for ``METHOD path``: only those are then allowed)."""
    mark = sandbox_testing.unserved_mark()
    yield
    found = sandbox_testing.unserved_since(mark)
    marker = request.node.get_closest_marker("sandbox_unserved_ok")
    if marker is not None:
        found = sandbox_testing.unexpected(found, list(marker.args))
    if found:
        lines = "\n".join(
            f"  {e['method']} {e['path']}" + (f"?{e['query']}" if e["query"] else "") for e in found
        )
        pytest.fail(
            f"the test sent the sandbox requests it does not serve:\n{lines}\n"
            "serve them in pairgate/sandbox/, or mark the test sandbox_unserved_ok",
            pytrace=False,
        )


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


# -- the ledger: an agent's environment against the sandbox ----------------------------------------


def agent_env(
    sandbox: RunningSandbox,
    agent: str | None = "acme-lead",
    user: str = "agents",
    **overrides: str,
) -> dict[str, str]:
    """The environment an agent runs pairgate in against ``sandbox``: the suite configuration,
    ``agent`` as PAIRGATE_TEST_AGENT_ID (None leaves it unset), reads and writes over HTTPS as
    the sandbox ``user``, the review bot's token, and a session id. ``overrides`` are
    variables to add (an empty value removes one)."""
    env = {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
        "PAIRGATE_TEST_GITLAB_URL": sandbox.url,
        "PAIRGATE_TEST_TASK_API_TOKEN": sandbox.token(user),
        "PAIRGATE_TEST_TASK_WRITE_TOKEN": sandbox.token(user),
        "PAIRGATE_TEST_REVIEW_BOT_TOKEN": sandbox.token("review_bot"),
        "PAIRGATE_TEST_SESSION_ID": f"session-{agent or 'none'}",
    }
    if agent is not None:
        env["PAIRGATE_TEST_AGENT_ID"] = agent
    env.update(overrides)
    return {k: v for k, v in env.items() if v != ""}


@pytest.fixture
def config() -> Config:
    """The suite's configuration, loaded."""
    return load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
