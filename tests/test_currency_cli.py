"""main runs the currency check before each configured command: a stale copy does not write."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from pairgate import main as main_module
from pairgate.standalone.errors import Context
from tests.kit.gitrepos import GIT_ENV, World, make_world
from tests.kit.names import FIXTURE_CONFIG, FIXTURES
from tests.kit.run import Result, run_cli

INSTALL = "pip install --upgrade 'acme-pairgate @ git+https://example.invalid/acme/pairgate'"
WRITING = ["claim", "1", "--role", "lead"]
# A command that reads the configuration and writes nothing, the same on every run: a check of
# a hooks directory that is not there (deploy-hooks --list reads no configuration at all).
READING = ["deploy-hooks", "--target", "/nonexistent/hooks", "--check"]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The suite's configuration, with deployed_paths naming paths in the world's clones."""
    values = json.loads(FIXTURE_CONFIG.read_text())
    values.update(deployed_paths=["tool", "hooks"], cli_install_command=INSTALL)
    config = tmp_path / "pairgate-config.json"
    config.write_text(json.dumps(values))
    return {**GIT_ENV, "PAIRGATE_CONFIG": str(config)}


def make_stale(world: World) -> str:
    sha = world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.fetch()
    return sha


def without_currency_lines(result: Result) -> Result:
    kept = [line for line in result.err.splitlines(keepends=True) if "currency" not in line]
    return Result(result.code, result.out, "".join(kept))


def test_a_writing_command_on_a_stale_copy_is_refused(world: World, env: dict[str, str]) -> None:
    sha = make_stale(world)
    result = run_cli(WRITING, env=env, origin=str(world.deployed))
    assert result.code == 1
    assert result.err.startswith(
        f"pairgate claim: refused: this copy is STALE ({world.deployed}): it lacks 1 origin/main "
        f"commit to tool, hooks (as of the last fetch):\n  {sha} Tighten the hook\n"
    )
    assert result.err.rstrip("\n").endswith(f"Update it: {INSTALL}")
    assert result.out == ""


def test_a_reading_command_on_a_stale_copy_warns_and_runs(
    world: World, env: dict[str, str]
) -> None:
    current = run_cli(READING, env=env, origin=str(world.deployed))
    sha = make_stale(world)
    stale = run_cli(READING, env=env, origin=str(world.deployed))
    warning = (
        f"pairgate: warning: this copy is STALE ({world.deployed}): it lacks 1 origin/main "
        f"commit to tool, hooks (as of the last fetch):\n  {sha} Tighten the hook\n"
        f"Update it: {INSTALL}\n"
    )
    assert stale.err.startswith(warning)
    # Past the warning, the command does exactly what it does on a current copy.
    assert stale.code == current.code
    assert (stale.out, stale.err[len(warning) :]) == (current.out, current.err)


def test_a_current_copy_says_nothing(world: World, env: dict[str, str]) -> None:
    result = run_cli(WRITING, env=env, origin=str(world.deployed))
    assert "STALE" not in result.err
    assert "currency" not in result.err


def test_a_long_list_of_missing_commits_is_cut_short(world: World, env: dict[str, str]) -> None:
    for n in range(12):
        world.push({"tool/main.py": f"v{n}\n"}, f"Change {n}")
    world.fetch()
    result = run_cli(WRITING, env=env, origin=str(world.deployed))
    assert result.code == 1
    assert "it lacks 12 origin/main commits" in result.err
    assert "  ... and 2 more\n" in result.err
    assert "Change 11" in result.err and "Change 1\n" not in result.err


def test_a_symlinked_origin_measures_its_targets_checkout(
    world: World, env: dict[str, str], tmp_path: Path
) -> None:
    make_stale(world)
    link = tmp_path / "deployment-link"
    link.symlink_to(world.deployed / "tool")
    result = run_cli(WRITING, env=env, origin=str(link))
    assert result.code == 1
    assert f"this copy is STALE ({world.deployed})" in result.err


def test_an_unmeasurable_origin_is_one_line_and_not_fatal(
    world: World, env: dict[str, str], tmp_path: Path
) -> None:
    make_stale(world)  # main.py's own checkout is never measured instead
    measured = run_cli(WRITING, env=env, origin=str(tmp_path / "nowhere"))
    assert measured.err.startswith(
        f"pairgate: note: this copy's currency is UNVERIFIABLE: {tmp_path / 'nowhere'} "
        "does not exist\n"
    )
    assert "refused: this copy" not in measured.err
    current = run_cli(WRITING, env=env, origin=str(world.upstream))
    assert without_currency_lines(measured) == current


def test_without_an_origin_the_checkout_of_main_py_is_measured(config_env: dict[str, str]) -> None:
    # The suite's configuration names a deployed path no checkout has, so the suite never
    # depends on how far its own checkout is behind origin/main.
    result = run_cli(READING, env={**GIT_ENV, **config_env})
    top = Path(main_module.__file__).resolve().parent.parent
    assert result.err.splitlines()[0] == (
        f"pairgate: note: this copy's currency is UNVERIFIABLE ({top}): not in the checkout: "
        "no-deployed-copy-is-measured-by-the-suite"
    )


def test_commands_that_read_no_configuration_are_not_measured(
    world: World, env: dict[str, str]
) -> None:
    make_stale(world)
    result = run_cli(["claim", "--help"], env=env, origin=str(world.deployed))
    assert (result.code, result.err) == (0, "")


@pytest.mark.parametrize("command", ["deploy-hooks", "deploy-agents"])
def test_a_deploy_that_writes_on_a_stale_copy_is_refused_and_writes_nothing(
    world: World, env: dict[str, str], tmp_path: Path, command: str
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    sha = make_stale(world)
    result = run_cli([command, "--target", str(target)], env=env, origin=str(world.deployed))
    assert result.code == 1
    assert result.err.startswith(f"pairgate {command}: refused: this copy is STALE")
    assert f"  {sha} Tighten the hook\n" in result.err
    assert result.err.rstrip("\n").endswith(f"Update it: {INSTALL}")
    assert list(target.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["deploy-hooks", "--target", "{t}", "--check"],
        ["deploy-agents", "--target", "{t}", "--check"],
    ],
)
def test_a_deploy_check_on_a_stale_copy_warns_and_compares(
    world: World, env: dict[str, str], tmp_path: Path, argv: list[str]
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    # deploy-agents renders before it compares: the deployment's texts beside the configuration.
    shutil.copytree(FIXTURES / "agent-text", tmp_path / "agent-text")
    shutil.copy(FIXTURES / "liveness-oracle.md", tmp_path)
    make_stale(world)
    words = [w.format(t=target) for w in argv]
    result = run_cli(words, env=env, origin=str(world.deployed))
    assert "pairgate: warning: this copy is STALE" in result.err
    assert result.code == 1 and "missing: " in result.out  # it compared, and said what differs


def test_a_copy_in_no_checkout_says_what_to_set_once_a_day(
    env: dict[str, str], tmp_path: Path
) -> None:
    installed = tmp_path / "site-packages" / "pairgate"
    installed.mkdir(parents=True)
    (installed / "main.py").write_text("# an installed copy, in no git checkout\n")
    state = {**env, "XDG_STATE_HOME": str(tmp_path / "state")}
    day = 1_800_000_000.0

    def note(when: float, *extra: str) -> str:
        ctx = Context(env=state, stdout=io.StringIO(), stderr=io.StringIO(), now=lambda: when)
        main_module.main([*READING, *extra], origin=str(installed / "main.py"), ctx=ctx)
        return ctx.stderr.getvalue()  # type: ignore[attr-defined,no-any-return]

    first = note(day)
    assert "is in no git checkout, so whether it is current cannot be measured" in first
    assert "name that checkout: PAIRGATE_TEST_CHECKOUT=<a path inside it>" in first
    assert "no git checkout" not in note(day + 60)  # the same day: said already
    assert "no git checkout" in note(day + 86_400)  # the next day: said again
    # --verbose says it every time (GitLab is not reachable here; the note comes first).
    state["PAIRGATE_TEST_GITLAB_URL"] = "http://127.0.0.1:9"
    state["PAIRGATE_TEST_TASK_API_TOKEN"] = "t"
    for _ in range(2):
        ctx = Context(env=state, stdout=io.StringIO(), stderr=io.StringIO(), now=lambda: day)
        main_module.main(["waiting", "--verbose"], origin=str(installed / "main.py"), ctx=ctx)
        assert "no git checkout" in ctx.stderr.getvalue()  # type: ignore[attr-defined]


def test_the_checkout_variable_names_what_is_measured(world: World, env: dict[str, str]) -> None:
    sha = make_stale(world)
    named = {**env, "PAIRGATE_TEST_CHECKOUT": str(world.deployed)}
    result = run_cli(WRITING, env=named)  # no origin: the variable names the checkout
    assert result.code == 1
    assert f"this copy is STALE ({world.deployed})" in result.err and sha in result.err
    # An explicit origin still wins over the variable.
    assert "STALE" not in run_cli(WRITING, env=named, origin=str(world.upstream)).err
