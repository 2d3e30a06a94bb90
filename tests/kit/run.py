"""Running pairgate: in-process through ``pairgate.main`` (``run_cli``, the one in-process
runner), as a real program (``run_program``), and the environments both run in."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pairgate.main import main
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config, load_config
from pairgate.standalone.errors import Context
from tests.kit.names import FIXTURE_CONFIG, LEAD, ROOT
from tests.kit.suite_configuration import read_back, swapped

# Without -B: the first program compiles the package's modules into __pycache__ and the rest of
# the suite's programs load them (in a fresh clone, -B had each one compile them all again).
PAIRGATE = [sys.executable, "-m", "pairgate"]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_cli(
    argv: list[str],
    env: dict[str, str] | None = None,
    *,
    now: float | Callable[[], float] | None = None,
    **kw: Any,
) -> Result:
    """Run pairgate in-process with an injected environment (never the real one) and clock
    (``now``: a time, or a clock to read; the real time when None), under the configuration the
    test runs under (tests/kit/suite_configuration.py). ``kw`` goes to ``main`` (``origin``)."""
    out, err = io.StringIO(), io.StringIO()
    run_env = swapped(env or {})
    clock = {} if now is None else {"now": now if callable(now) else (lambda: now)}
    ctx = Context(env=run_env, stdout=out, stderr=err, **clock)  # type: ignore[arg-type]
    code = main(argv, ctx=ctx, **kw)
    return Result(int(code), *read_back(run_env, out.getvalue(), err.getvalue()))


def ok(argv: list[str], env: dict[str, str], **kw: Any) -> Result:
    """``run_cli`` of a command that must succeed."""
    result = run_cli(argv, env, **kw)
    assert result.code == 0, f"{argv}: {result.err}"
    return result


def clean_env(**extra: str) -> dict[str, str]:
    """A real program's environment: PATH and HOME only, then ``extra`` (no PYTHONPATH unless
    given, so a flat copy does not find the package)."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **extra}


def run_program(
    args: list[str], env: dict[str, str] | None = None, cwd: Any = None, stdin: str = ""
) -> Result:
    """Run a real program (python -m pairgate, a validator, the hook) with a clean environment."""
    run_env = swapped(clean_env(**{"PYTHONPATH": str(ROOT), **(env or {})}))
    proc = subprocess.run(
        args,
        env=run_env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Result(proc.returncode, *read_back(run_env, proc.stdout, proc.stderr))


def agent_env(
    sandbox: RunningSandbox,
    agent: str | None = LEAD,
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


def suite_config() -> Config:
    """The suite's configuration (tests/fixtures/pairgate-config.json), loaded."""
    return load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
