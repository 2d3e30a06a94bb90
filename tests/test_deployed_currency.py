"""deployed_currency: CURRENT, STALE and every UNVERIFIABLE case, against real git repositories."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairgate.currency import deployed_currency
from pairgate.currency.deployed_currency import CURRENT, STALE, UNVERIFIABLE, measure
from tests.kit.gitrepos import GIT_ENV, World, commit, git, make_world

PATHS = ("tool", "hooks")


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def test_a_fresh_clone_is_current(world: World) -> None:
    currency = measure(world.deployed, PATHS, env=GIT_ENV)
    assert currency.state == CURRENT
    assert currency.checkout == str(world.deployed)
    assert currency.missing == ()


def test_commits_that_do_not_touch_the_deployed_paths_leave_it_current(world: World) -> None:
    world.push({"notes.txt": "v2\n"}, "Only notes")
    world.fetch()
    assert measure(world.deployed, PATHS, env=GIT_ENV).state == CURRENT


def test_missing_commits_to_the_deployed_paths_are_named(world: World) -> None:
    first = world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.push({"notes.txt": "v2\n"}, "Only notes")
    second = world.push({"tool/new.py": "x\n"}, "Add a module\twith a tab")
    world.fetch()
    currency = measure(world.deployed, PATHS, env=GIT_ENV)
    assert currency.state == STALE
    assert [(c.sha, c.subject) for c in currency.missing] == [
        (second, "Add a module\twith a tab"),
        (first, "Tighten the hook"),
    ]
    assert "lacks 2 origin/main commits to tool, hooks (as of the last fetch)" in currency.reason
    assert f"  {first} Tighten the hook" in deployed_currency.describe(currency)


def test_pulling_makes_it_current_again_and_local_commits_do_not_matter(world: World) -> None:
    world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.fetch()
    git(world.deployed, "merge", "-q", "--ff-only", "origin/main")
    commit(world.deployed, {"tool/local.py": "mine\n"}, "A local change")
    assert measure(world.deployed, PATHS, env=GIT_ENV).state == CURRENT


def test_it_measures_as_of_the_last_fetch_unless_asked_to_fetch(world: World) -> None:
    sha = world.push({"tool/main.py": "v2\n"}, "Change the tool")
    assert measure(world.deployed, PATHS, env=GIT_ENV).state == CURRENT
    fetched = measure(world.deployed, PATHS, env=GIT_ENV, fetch_timeout=10)
    assert fetched.state == STALE
    assert [c.sha for c in fetched.missing] == [sha]


def test_a_failed_fetch_is_said_and_the_last_fetch_is_measured(world: World) -> None:
    world.push({"tool/main.py": "v2\n"}, "Change the tool")
    world.fetch()
    git(world.deployed, "remote", "set-url", "origin", str(world.origin.parent / "gone.git"))
    currency = measure(world.deployed, PATHS, env=GIT_ENV, fetch_timeout=10)
    assert currency.state == STALE
    assert len(currency.notes) == 1
    assert currency.notes[0].startswith("fetch failed (")
    assert currency.notes[0].endswith("measured against the last fetch")


def test_any_path_inside_the_checkout_measures_it(world: World) -> None:
    world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.fetch()
    for inside in (world.deployed / "hooks", world.deployed / "hooks" / "hook.sh"):
        currency = measure(inside, PATHS, env=GIT_ENV)
        assert (currency.state, currency.checkout) == (STALE, str(world.deployed))


def test_a_symlink_measures_the_checkout_its_target_is_in(world: World, tmp_path: Path) -> None:
    world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.fetch()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "link").symlink_to(world.deployed / "tool")
    currency = measure(elsewhere / "link", PATHS, env=GIT_ENV)
    assert (currency.state, currency.checkout) == (STALE, str(world.deployed))


# --- UNVERIFIABLE: it cannot measure, and it never measures somewhere else instead ----------


def test_a_directory_in_no_checkout(tmp_path: Path) -> None:
    currency = measure(tmp_path, PATHS, env=GIT_ENV)
    assert currency.state == UNVERIFIABLE
    assert currency.reason == f"no checkout at {tmp_path}: no .git in it or in a directory above it"
    assert currency.checkout is None


def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    currency = measure(tmp_path / "nothing", PATHS, env=GIT_ENV)
    assert (currency.state, currency.reason) == (
        UNVERIFIABLE,
        f"{tmp_path / 'nothing'} does not exist",
    )


def test_a_bare_repository(world: World) -> None:
    """A bare repository has no work tree, and no .git: git is not started."""
    currency = measure(world.origin, PATHS, env=GIT_ENV)
    reason = f"no checkout at {world.origin}: no .git in it or in a directory above it"
    assert (currency.state, currency.reason, currency.checkout) == (UNVERIFIABLE, reason, None)


def test_a_linked_work_tree_whose_git_is_a_file_is_measured(world: World, tmp_path: Path) -> None:
    """``.git`` as a file (a linked work tree, a submodule) is a checkout too: git measures it."""
    linked = tmp_path / "linked"
    git(world.deployed, "worktree", "add", "-q", "--detach", str(linked))
    assert (linked / ".git").is_file()
    currency = measure(linked / "tool", PATHS, env=GIT_ENV)
    assert (currency.state, currency.checkout) == (CURRENT, str(linked))


def test_a_checkout_without_origin_main(world: World) -> None:
    git(world.deployed, "remote", "remove", "origin")
    currency = measure(world.deployed, PATHS, env=GIT_ENV)
    assert (currency.state, currency.reason) == (
        UNVERIFIABLE,
        "it has no origin/main (fetch origin first)",
    )


def test_a_checkout_with_no_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "tool").mkdir()
    (tmp_path / "hooks").mkdir()
    currency = measure(tmp_path, PATHS, env=GIT_ENV)
    assert (currency.state, currency.reason) == (UNVERIFIABLE, "no commit is checked out")


def test_git_missing(world: World, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    currency = measure(world.deployed, PATHS, env={**GIT_ENV, "PATH": str(empty)})
    assert (currency.state, currency.reason) == (
        UNVERIFIABLE,
        "git is not installed (not found on PATH)",
    )


@pytest.mark.parametrize(
    "paths",
    [("tool", "validators"), ("../deployed/tool",), ("/etc",), ("tool/../../upstream/tool",)],
)
def test_a_deployed_path_that_is_not_in_the_checkout(world: World, paths: tuple[str, ...]) -> None:
    currency = measure(world.deployed, paths, env=GIT_ENV)
    assert currency.state == UNVERIFIABLE
    assert currency.reason.startswith("not in the checkout: ")


def test_no_deployed_paths(world: World) -> None:
    currency = measure(world.deployed, (), env=GIT_ENV)
    assert (currency.state, currency.reason) == (UNVERIFIABLE, "no deployed paths are configured")


def test_a_git_dir_in_the_environment_does_not_redirect_it(world: World, tmp_path: Path) -> None:
    # Inside a git hook GIT_DIR names the hook's repository; the checkout given still wins.
    env = {**GIT_ENV, "GIT_DIR": str(world.deployed / ".git"), "GIT_WORK_TREE": str(world.deployed)}
    assert measure(tmp_path, PATHS, env=env).state == UNVERIFIABLE
    world.push({"tool/main.py": "v2\n"}, "Change the tool")
    world.fetch()
    assert measure(world.upstream, PATHS, env=env).state == CURRENT


def test_it_runs_at_most_two_git_processes(world: World, tmp_path: Path) -> None:
    # A git on PATH that logs each run and hands over to the real one.
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    log = tmp_path / "git-runs"
    real = shutil.which("git", path=GIT_ENV["PATH"])
    (shim_dir / "git").write_text(f'#!/bin/sh\necho run >> "{log}"\nexec "{real}" "$@"\n')
    (shim_dir / "git").chmod(0o755)
    world.push({"tool/main.py": "v2\n"}, "Change the tool")
    world.fetch()
    env = {**GIT_ENV, "PATH": f"{shim_dir}:{GIT_ENV['PATH']}"}
    assert measure(world.deployed, PATHS, env=env).state == STALE
    assert log.read_text().count("run") == 2


# --- the standalone program --------------------------------------------------------------------


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    """deployed_currency.py alone in a directory, as a deployment has it."""
    here = tmp_path / "flat"
    here.mkdir()
    shutil.copy2(deployed_currency.__file__, here / "deployed_currency.py")
    return here / "deployed_currency.py"


def run_flat(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -I: no PYTHONPATH, no user site, so an import of pairgate would fail here.
    return subprocess.run(
        [sys.executable, "-I", str(script), *args],
        cwd=script.parent,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_standalone_exit_codes_and_json(world: World, flat: Path, tmp_path: Path) -> None:
    current = run_flat(flat, "--checkout", str(world.deployed), "--paths", *PATHS)
    assert (current.returncode, current.stderr) == (0, "")
    assert current.stdout.startswith(f"CURRENT ({world.deployed}): ")

    sha = world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    stale = run_flat(flat, "--checkout", str(world.deployed), "--paths", *PATHS, "--fetch")
    assert stale.returncode == 1
    assert f"  {sha} Tighten the hook" in stale.stdout

    answer = run_flat(flat, "--checkout", str(tmp_path), "--paths", "tool", "--json")
    assert answer.returncode == 2
    data = json.loads(answer.stdout)
    assert sorted(data) == ["checkout", "missing", "notes", "paths", "reason", "state"]
    assert (data["state"], data["checkout"], data["paths"]) == (UNVERIFIABLE, None, ["tool"])
