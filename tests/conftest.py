"""The suite's fixtures and collection hooks. What tests share besides fixtures is in tests/kit/
(its __init__ says what is where)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairgate.sandbox import testing as sandbox_testing
from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from pairgate.standalone.config import Config
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.pgcluster import Cluster, running
from tests.kit.run import suite_config
from tests.kit.suite_configuration import CONFIGURATIONS, activate, runs_twice
from tests.kit.wiring import WIRING_ENV, is_wiring_test, wiring_tests


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C and SIGQUIT as a terminal gives them, in this process and so in every program it
    starts: a shell without job control starts a background job (``scripts/test &``, a CI step
    run in the background) with both ignored, every child inherits that, and a Python started
    so never turns SIGINT into KeyboardInterrupt. The watcher's tests stop it with SIGINT and
    would wait in vain."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) is signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture
def config_env() -> dict[str, str]:
    """An environment naming the suite's configuration."""
    return {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}


@pytest.fixture
def config() -> Config:
    """The suite's configuration, loaded."""
    return suite_config()


# -- the source repository's wiring tests (tests/kit/wiring.py) ---------------------------------


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


# -- the second configuration (tests/kit/suite_configuration.py) ---------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if (
        "suite_configuration" in metafunc.fixturenames
        and runs_twice(str(metafunc.definition.fspath))
        and metafunc.definition.get_closest_marker("one_configuration") is None
    ):
        metafunc.parametrize("suite_configuration", CONFIGURATIONS, indirect=True)


@pytest.fixture(autouse=True, name="suite_configuration")
def _suite_configuration(request: pytest.FixtureRequest) -> Iterator[str]:
    """The cli_command the test runs under: ``pairgate``, or ``acme-pg`` in the second run of a
    refusal module."""
    cli = str(getattr(request, "param", "pairgate"))
    activate(cli)
    yield cli
    activate("pairgate")


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


# -- the watch store on both of its databases (tests/kit/pgcluster.py) ----------------------------


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for this pytest process, started on first use."""
    with running() as cluster:
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
def postgres_url(postgres_cluster: Cluster) -> str:
    """A new, empty PostgreSQL watch store (a schema of its own)."""
    return postgres_cluster.url(postgres_cluster.new_schema())
