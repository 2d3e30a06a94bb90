"""Which configuration a pipeline reads (pairgate/sandbox/ci_config.py), where GitLab cannot read
it: the project's ``path@group/project[:ref]`` setting naming a project, ref or file that is not
there, and a trigger job's ``include:`` naming one. GitLab fails these before it reads a job, and
so does the sandbox's runner: its gitlab-ci-local here is a program that is not there, which a
start would name in the pipeline's error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pairgate.sandbox import ci_config, defaults, repo
from pairgate.sandbox.ci_children import bridge_status
from pairgate.sandbox.ci_plans import _cache_key
from pairgate.sandbox.model import World
from pairgate.sandbox.testing import running_sandbox

CI = "job:\n  script: [echo hi]\n"


@pytest.mark.parametrize(
    ("setting", "error"),
    [
        ("ci.yml@outside/app", "Project `outside/app` not found or access denied!"),
        ("ci.yml@acme/nowhere", "Project `acme/nowhere` not found or access denied!"),
        ("ci.yml@acme/tracker:gone", "Project `acme/tracker` reference `gone` does not exist!"),
        ("missing.yml@acme/tracker", "Project `acme/tracker` file `missing.yml` does not exist!"),
        ("https://example.com/ci.yml", "Remote CI/CD configuration files are not served here"),
    ],
)
def test_a_configuration_gitlab_cannot_read_fails_the_pipeline_without_jobs(
    setting: str, error: str, tmp_path: Path
) -> None:
    with running_sandbox(runner=str(tmp_path / "gitlab-ci-local")) as sandbox:
        sandbox.commit("main", {"ci.yml": CI}, project="acme/tracker", message="CI [skip ci]")
        sandbox.settings(ci_config_path=setting)
        sandbox.commit("feature", {".gitlab-ci.yml": CI, "ci.yml": CI})
        (pipeline,) = sandbox.api("GET", "/projects/2/pipelines")
        shown = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}")
        assert (shown["status"], shown["source"], shown["yaml_errors"]) == (
            "failed",
            "push",
            error if error.endswith("!") else f"{error}: {setting}",
        )
        assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs") == []


def test_the_tracker_file_at_a_ref_and_no_file_at_all(tmp_path: Path) -> None:
    with running_sandbox(runner=str(tmp_path / "gitlab-ci-local")) as sandbox:
        sandbox.commit("main", {"README.md": "no CI here\n"}, message="Docs")
        assert sandbox.api("GET", "/projects/2/pipelines") == []  # no configuration, no pipeline
        pinned = sandbox.commit("main", {"ci.yml": "{"}, project="acme/tracker", message="Bad")
        sandbox.commit("main", {"ci.yml": CI}, project="acme/tracker", message="Good [skip ci]")
        world = sandbox.server.app.world
        agents = world.users[10]
        assert ci_config.read_file(world, "acme/tracker", None, "ci.yml", agents) == CI
        assert ci_config.read_file(world, "acme/tracker", pinned["id"], "ci.yml", agents) == "{"


@pytest.fixture
def world() -> tuple[World, str]:
    """The default world, acme/app at a commit holding ci/child.yml and no .gitlab-ci.yml."""
    world = defaults.build()
    app = world.projects[2]
    tree = {"README.md": "# acme/app\n", "ci/child.yml": CI}
    commit = repo.make_commit(
        world, app, parents=[app.branches["main"]], tree=tree, message="Add", author=None
    )
    return world, commit.id


def children(world: tuple[World, str], include: object) -> list[ci_config.Source]:
    w, sha = world
    values = {"CI_PROJECT_PATH": "acme/app", "CI_COMMIT_SHA": sha, "DIR": "ci"}
    return ci_config.child_sources(w, w.projects[2], sha, include, values, w.users[10])


def test_a_child_reads_each_location_with_its_variables_expanded(world: tuple[World, str]) -> None:
    assert [s.path for s in children(world, "ci/child.yml")] == ["ci/child.yml"]
    assert [s.path for s in children(world, [{"local": "/$DIR/child.yml"}])] == ["ci/child.yml"]
    project = {"project": "$CI_PROJECT_PATH", "ref": "${CI_COMMIT_SHA}", "file": "ci/child.yml"}
    (read,) = children(world, [project])
    assert (read.path, read.text) == ("ci/child.yml@acme/app", CI)


@pytest.mark.parametrize(
    ("include", "error"),
    [
        ([{"local": "ci/none.yml"}], "Local file `ci/none.yml` does not exist!"),
        # The tracker-held pipeline's project-pipeline job, for a project without its own CI
        # file: GitLab cannot make the child, and a depend bridge fails its pipeline.
        (
            [{"project": "$CI_PROJECT_PATH", "ref": "$CI_COMMIT_SHA", "file": ".gitlab-ci.yml"}],
            "Project `acme/app` file `.gitlab-ci.yml` does not exist!",
        ),
        ([{"project": "outside/app", "file": "ci.yml"}], "not found or access denied!"),
        ([{"project": "acme/app"}], "include config must specify the file"),
        ([{"local": "ci/child.yml"}] * 4, "trigger:include config is too long"),
        ([{"remote": "https://example.com/ci.yml"}], "is not served here"),
    ],
)
def test_a_child_gitlab_cannot_make_names_why(
    world: tuple[World, str], include: object, error: str
) -> None:
    with pytest.raises(ci_config.ConfigError) as raised:
        children(world, include)
    assert error in str(raised.value)


def test_a_depend_bridge_takes_success_and_canceled_and_fails_on_anything_else() -> None:
    assert [bridge_status(s) for s in ("success", "canceled", "failed", "skipped", "manual")] == [
        "success",
        "canceled",
        "failed",
        "failed",
        "failed",
    ]


def test_skip_ci_is_gitlabs_pattern_or_the_push_option() -> None:
    said = ["[skip ci]", "[ci skip]", "[Skip-CI]", "x [CI_SKIP] y"]
    assert all(ci_config.skips(f"Work {s}") for s in said)
    assert not any(ci_config.skips(m) for m in ("skip ci", "[skip  ci]", "[skipci]"))
    assert ci_config.skips("Work", {"ci.skip": True})
    assert ci_config.checked_config_path("") is None
    for bad in ("../ci.yml", "/ci.yml", "a/../b.yml"):
        with pytest.raises(ValueError, match="directory traversal"):
            ci_config.checked_config_path(bad)


def test_a_remembered_plan_depends_on_the_files_an_exists_rule_names() -> None:
    """gitlab-ci-local's answer is remembered per configuration; a job whose rules test an
    exact path with ``exists`` gets a different answer when the commit lacks the file, so the
    key says whether each such path is there, and a glob or ``changes`` is never remembered."""
    text = "child:\n  rules:\n    - exists:\n        - .gitlab-ci.yml\n  script: [':']\n"
    with_file = _cache_key(text, {}, {".gitlab-ci.yml": "a: 1\n", "README.md": ""})
    without = _cache_key(text, {}, {"README.md": ""})
    assert with_file is not None and without is not None and with_file != without
    assert with_file == _cache_key(text, {}, {".gitlab-ci.yml": "b: 2\n"})
    globbed = text.replace(".gitlab-ci.yml", "'*.yml'")
    assert _cache_key(globbed, {}, {}) is None
    changes = "child:\n  rules:\n    - changes: [a.txt]\n  script: [':']\n"
    assert _cache_key(changes, {}, {}) is None
