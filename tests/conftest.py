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
from tests import pgcluster, suite_configuration

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_CONFIG = FIXTURES / "pairgate-config.json"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def run_cli(argv: list[str], env: dict[str, str] | None = None, **kw: object) -> Result:
    """Run pairgate in-process with an injected environment (never the real one), under the
    configuration the test runs under (tests/suite_configuration.py)."""
    out, err = io.StringIO(), io.StringIO()
    run_env = suite_configuration.swapped(env or {})
    ctx = Context(env=run_env, stdout=out, stderr=err)
    code = main(argv, ctx=ctx, **kw)  # type: ignore[arg-type]
    return Result(
        int(code), *suite_configuration.read_back(run_env, out.getvalue(), err.getvalue())
    )


def clean_env(**extra: str) -> dict[str, str]:
    """A real program's environment: PATH and HOME only, then ``extra`` (no PYTHONPATH unless
    given, so a flat copy does not find the package)."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), **extra}


def run_program(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, stdin: str = ""
) -> Result:
    """Run a real program (python -m pairgate, a validator, the hook) with a clean environment."""
    run_env = suite_configuration.swapped(clean_env(**{"PYTHONPATH": str(ROOT), **(env or {})}))
    proc = subprocess.run(
        args,
        env=run_env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Result(
        proc.returncode, *suite_configuration.read_back(run_env, proc.stdout, proc.stderr)
    )


# Without -B: the first program compiles the package's modules into __pycache__ and the rest of
# the suite's programs load them (in a fresh clone, -B had each one compile them all again).
PAIRGATE = [sys.executable, "-m", "pairgate"]


@pytest.fixture
def config_env() -> dict[str, str]:
    """An environment naming the suite's configuration."""
    return {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}


# -- the source repository's wiring tests (tests/source-repository-wiring-tests.txt) -------------

WIRING_TESTS = Path(__file__).resolve().parent / "source-repository-wiring-tests.txt"
WIRING_ENV = "PAIRGATE_WIRING_TESTS"


def wiring_tests() -> list[str]:
    """The entries of source-repository-wiring-tests.txt: ``tests/<file>.py[::<test>]``."""
    lines = (line.strip() for line in WIRING_TESTS.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def is_wiring_test(path: Path, name: str, entries: list[str]) -> bool:
    resolved = path.resolve()
    if not resolved.is_relative_to(ROOT):  # a test file a test wrote elsewhere
        return False
    where = resolved.relative_to(ROOT).as_posix()
    test = f"{where}::{name.split('[', 1)[0]}"
    return any(entry in (where, test) for entry in entries)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the wiring tests unless PAIRGATE_WIRING_TESTS=run: the source repository's
    pipeline runs them, every other run of the suite leaves them out."""
    if os.environ.get(WIRING_ENV) == "run":
        return
    entries = wiring_tests()
    kept, wiring = [], []
    for item in items:
        (wiring if is_wiring_test(item.path, item.name, entries) else kept).append(item)
    if wiring:
        config.hook.pytest_deselected(items=wiring)
        items[:] = kept


# -- the second configuration (tests/suite_configuration.py) -------------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if (
        "suite_configuration" in metafunc.fixturenames
        and suite_configuration.runs_twice(str(metafunc.definition.fspath))
        and metafunc.definition.get_closest_marker("one_configuration") is None
    ):
        metafunc.parametrize(
            "suite_configuration", suite_configuration.CONFIGURATIONS, indirect=True
        )


@pytest.fixture(autouse=True, name="suite_configuration")
def _suite_configuration(request: pytest.FixtureRequest) -> Iterator[str]:
    """The cli_command the test runs under: ``pairgate``, or ``acme-pg`` in the second run of a
    refusal module."""
    cli = str(getattr(request, "param", "pairgate"))
    suite_configuration.activate(cli)
    yield cli
    suite_configuration.activate("pairgate")


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


# -- the watch store on both of its databases (tests/pgcluster.py) --------------------------------


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[pgcluster.Cluster]:
    """One throwaway PostgreSQL server for this pytest process, started on first use."""
    with pgcluster.running() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty watch store's location: a SQLite file, then a PostgreSQL schema of its own
    (a test taking this fixture runs on both)."""
    if request.param == "sqlite":
        return str(tmp_path / "watch.sqlite3")
    cluster = request.getfixturevalue("postgres_cluster")
    return str(cluster.url(cluster.new_schema()))


@pytest.fixture
def postgres_url(postgres_cluster: pgcluster.Cluster) -> str:
    """A new, empty PostgreSQL watch store (a schema of its own)."""
    return postgres_cluster.url(postgres_cluster.new_schema())
