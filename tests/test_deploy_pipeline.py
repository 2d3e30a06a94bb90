"""pairgate deploy-pipeline: the tracker-held pipeline, rendered from the components the package
ships, written as deploy-hooks writes (refusals first, --check compares bytes, a STALE copy does
not write), and what the rendered file says to GitLab (asserted on the YAML; tests/
test_gate_pipeline.py runs it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairgate.deployment.tracker_pipeline import (
    Component,
    checked_inputs,
    interpolate,
    parse_component,
)
from tests.kit.gitrepos import GIT_ENV, World, make_world
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import run_cli

FLAGS = [
    "--image",
    "registry.example.com/ci/python-gate@sha256:e70f170d3e65194ba0b2cce7d7689896fb97013aba8d5cefab99928dfb14d2de",
    "--runner-tag",
    "gate",
    "--runner-tag",
    "linux",
    "--read-token-variable",
    "AGENT_TRACKER_READ_TOKEN",
    "--gate-dir",
    "tools/pairgate",
    "--gitlab-url",
    "https://gitlab.example.com",
]
GATE_JOBS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)


def deploy(target: Path, *extra: str, env: dict[str, str] | None = None, **kw: Any) -> Any:
    return run_cli(
        ["deploy-pipeline", "--target", str(target), *FLAGS, *extra],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG), **(env or {})},
        **kw,
    )


@pytest.fixture
def rendered(tmp_path: Path) -> dict[str, Any]:
    target = tmp_path / "pipeline.yml"
    assert deploy(target).code == 0
    return dict(yaml.safe_load(target.read_text(encoding="utf-8")))


def without_currency_note(err: str) -> str:
    """stderr without the note about this checkout's currency (main's, before every command)."""
    return "".join(line for line in err.splitlines(keepends=True) if "currency is" not in line)


def job(document: dict[str, Any], name: str) -> dict[str, Any]:
    """A job with its ``extends`` resolved (one level, as the components use it)."""
    found = dict(document[name])
    base = found.pop("extends", None)
    return {**document[base], **found} if base else found


# -- writing, as deploy-hooks writes -----------------------------------------------------------


def test_the_setting_it_prints_names_the_file_s_path_in_the_checkout(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ci").mkdir()
    result = deploy(tmp_path / "ci" / "gate.yml")
    assert result.code == 0, result.err
    assert "configuration file to: ci/gate.yml@acme/tracker\n" in result.out
    assert "as ci/gate.yml (or let pairgate deploy-pipeline --publish ci/gate.yml" in result.out


def test_it_writes_the_file_and_a_second_run_is_in_line(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    first = deploy(target)
    assert (first.code, without_currency_note(first.err)) == (0, "")
    assert first.out.startswith(f"wrote: {target}\n")
    assert (
        "commit it to acme/tracker's default branch as pipeline.yml (or let pairgate "
        "deploy-pipeline --publish pipeline.yml commit it with the gate's files), and set each "
        "gated project's CI/CD configuration file to: pipeline.yml@acme/tracker\n"
    ) in first.out
    data = target.read_bytes()
    again = deploy(target)
    assert again.code == 0 and again.out.startswith(f"in line: {target}\n")
    assert target.read_bytes() == data
    check = deploy(target, "--check")
    assert (check.code, check.out) == (0, f"in line: {target}\n")


def test_check_reports_drift_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    missing = deploy(target, "--check")
    assert missing.code == 1
    assert missing.out.startswith(f"missing: {target}\n")
    assert "run pairgate deploy-pipeline --target" in missing.out
    assert not target.exists()
    deploy(target)
    target.write_text(target.read_text() + "# an edit\n")
    edited = target.read_bytes()
    differs = deploy(target, "--check")
    assert differs.code == 1 and differs.out.startswith(f"differs: {target}\n")
    assert target.read_bytes() == edited
    # Other flags render other bytes: the file records the flags that render it.
    deploy(target)
    other = run_cli(
        [
            "deploy-pipeline",
            "--target",
            str(target),
            *FLAGS[:-1],
            "https://other.example",
            "--check",
        ],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert other.code == 1 and "differs:" in other.out


def test_the_file_names_the_command_that_renders_it(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    deploy(target)
    second_line = target.read_text().splitlines()[1]
    assert second_line == "#   pairgate deploy-pipeline --target FILE " + " ".join(FLAGS)


@pytest.mark.parametrize("kind", ["missing directory", "directory in the way", "symlink"])
def test_a_target_it_cannot_write_is_refused_before_anything_is_written(
    tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "pipeline.yml"
    if kind == "missing directory":
        target = tmp_path / "nowhere" / "pipeline.yml"
        says = f"the target {target.parent} does not exist; create it first"
    elif kind == "directory in the way":
        target.mkdir()
        says = f"{target} exists and is not a regular file; remove it first"
    else:
        (tmp_path / "elsewhere.yml").write_text("theirs\n")
        target.symlink_to(tmp_path / "elsewhere.yml")
        says = f"{target} exists and is not a regular file; remove it first"
    result = deploy(target)
    assert result.code == 2
    assert says in result.err and "Nothing was written." in result.err
    if kind == "symlink":
        assert (tmp_path / "elsewhere.yml").read_text() == "theirs\n"


def test_without_a_pinned_instance_it_refuses(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    result = run_cli(
        ["deploy-pipeline", "--target", str(target), *FLAGS[:-2]],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 2
    assert without_currency_note(result.err) == (
        "pairgate deploy-pipeline: name the instance the gate jobs run on with --gitlab-url "
        "https://gitlab.example.com (or set PAIRGATE_TEST_GITLAB_URL): the pin is what keeps the "
        "read token off any host a merge request could name. Nothing was written.\n"
    )
    assert not target.exists()


def test_the_instance_defaults_to_the_configured_gitlab_url(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    result = run_cli(
        ["deploy-pipeline", "--target", str(target), *FLAGS[:-2]],
        env={
            "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
            "PAIRGATE_TEST_GITLAB_URL": "https://gitlab.internal.example/api/v4/",
        },
    )
    assert result.code == 0, result.err
    text = target.read_text()
    assert "PINNED = 'https://gitlab.internal.example'" in text
    assert "--gitlab-url 'https://gitlab.internal.example'" in text


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--gate-dir", "../outside", "--gate-dir '../outside' is not a path in the tracker"),
        ("--gate-dir", "tools/pair gate", "--gate-dir 'tools/pair gate' is not a path"),
        (
            "--read-token-variable",
            "TOKEN; echo",
            "mr-ownership-gate: the input read-token-variable is 'TOKEN; echo', which does not "
            "match its regex",
        ),
        (
            "--gitlab-url",
            "https://gitlab.example.com/'x",
            'the input gitlab-url is "https://gitlab.example.com/\'x", which does not match',
        ),
    ],
)
def test_a_value_that_could_break_out_of_the_job_text_is_refused(
    tmp_path: Path, flag: str, value: str, says: str
) -> None:
    flags = list(FLAGS)
    flags[flags.index(flag) + 1] = value
    target = tmp_path / "pipeline.yml"
    result = run_cli(
        ["deploy-pipeline", "--target", str(target), *flags],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 2
    assert says in result.err and result.err.rstrip().endswith("Nothing was written.")
    assert not target.exists()


# -- a STALE copy does not write (the currency check main runs first) ---------------------------


@pytest.fixture
def stale(tmp_path: Path) -> tuple[World, dict[str, str]]:
    world = make_world(tmp_path)
    values = json.loads(FIXTURE_CONFIG.read_text())
    values.update(deployed_paths=["tool", "hooks"], cli_install_command="pip install -U pairgate")
    config = tmp_path / "pairgate-config.json"
    config.write_text(json.dumps(values))
    world.push({"hooks/hook.sh": "v2\n"}, "Tighten the hook")
    world.fetch()
    return world, {**GIT_ENV, "PAIRGATE_CONFIG": str(config)}


def test_a_stale_copy_is_refused_the_write_and_writes_nothing(
    stale: tuple[World, dict[str, str]], tmp_path: Path
) -> None:
    world, env = stale
    target = tmp_path / "pipeline.yml"
    result = run_cli(
        ["deploy-pipeline", "--target", str(target), *FLAGS], env=env, origin=str(world.deployed)
    )
    assert result.code == 1
    assert result.err.startswith("pairgate deploy-pipeline: refused: this copy is STALE")
    assert not target.exists()


def test_a_stale_copy_still_compares_with_a_warning(
    stale: tuple[World, dict[str, str]], tmp_path: Path
) -> None:
    world, env = stale
    target = tmp_path / "pipeline.yml"
    result = run_cli(
        ["deploy-pipeline", "--target", str(target), *FLAGS, "--check"],
        env=env,
        origin=str(world.deployed),
    )
    assert "pairgate: warning: this copy is STALE" in result.err
    assert result.code == 1 and result.out.startswith(f"missing: {target}")


# -- what the rendered file tells GitLab ------------------------------------------------------


def test_the_gate_jobs_are_the_trackers_alone_and_trust_nothing_they_inherit(
    rendered: dict[str, Any],
) -> None:
    assert "variables" not in rendered and "default" not in rendered  # nothing global to inherit
    assert {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'} in rendered["workflow"]["rules"]
    for name in GATE_JOBS:
        gate = job(rendered, name)
        assert gate["inherit"] == {"default": False, "variables": False}, name
        assert gate["variables"] == {"GIT_STRATEGY": "none", "GIT_SUBMODULE_STRATEGY": "none"}
        assert gate["allow_failure"] is False and "when" not in gate
        assert gate["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        assert gate["needs"] == [] and gate["cache"] == [] and gate["services"] == []
        assert "hooks" not in gate and "after_script" not in gate
        assert (
            gate["image"]
            == "registry.example.com/ci/python-gate@sha256:e70f170d3e65194ba0b2cce7d7689896fb97013aba8d5cefab99928dfb14d2de"
        )
        assert gate["tags"] == ["gate", "linux"]
        text = "\n".join(gate["before_script"] + gate["script"])
        assert "$[[" not in text
        assert "env -i \\\n" in text and '"$PAIRGATE_PYTHON" -I "$@"' in text
        assert f"pairgate_run {name}.py --tokens-on-stdin" in gate["script"][0]
        assert "--gitlab-url 'https://gitlab.example.com'" in gate["script"][0]
        assert "TRACKER = 'acme/tracker'" in text and "PREFIX = 'PAIRGATE_TEST'" in text
        assert "PINNED = 'https://gitlab.example.com'" in text
        assert f"'tools/pairgate/{name}.py'" in text
        assert "PAIRGATE_TOKEN_VARIABLE='AGENT_TRACKER_READ_TOKEN'" in text


def test_the_projects_own_ci_file_runs_as_a_child_whose_status_is_the_pipelines(
    rendered: dict[str, Any],
) -> None:
    child = rendered["project-pipeline"]
    assert child["trigger"] == {
        "include": [
            {"project": "$CI_PROJECT_PATH", "ref": "$CI_COMMIT_SHA", "file": ".gitlab-ci.yml"}
        ],
        "strategy": "depend",
        "forward": {"yaml_variables": False, "pipeline_variables": False},
    }
    assert child["inherit"] == {"default": False, "variables": False}
    # Only the project's own file decides whether it runs (GitLab makes no child from a file
    # that does not exist); no allow_failure, no when: a red child is a red pipeline.
    assert child["rules"] == [{"exists": [".gitlab-ci.yml"]}]
    assert {"allow_failure", "when", "variables"}.isdisjoint(child)
    jobs = [k for k in rendered if not k.startswith(".") and k not in ("workflow",)]
    assert sorted(jobs) == sorted([*GATE_JOBS, "project-pipeline"])


def test_the_components_share_the_gate_jobs_text_byte_for_byte() -> None:
    texts = [
        (ROOT / "templates" / name / "template.yml").read_text(encoding="utf-8")
        for name in ("mr-ownership-gate", "mr-merge-check", "mr-evidence")
    ]
    for block in ("pairgate-gate-job", "pairgate-fetch"):
        pattern = re.compile(rf"# {block}:begin.*?# {block}:end", re.DOTALL)
        shared = [pattern.findall(text) for text in texts]
        assert len(shared[0]) == 1 and shared[0] == shared[1] == shared[2], block


def test_with_an_evidence_image_the_evidence_job_is_written_in(tmp_path: Path) -> None:
    target = tmp_path / "pipeline.yml"
    result = deploy(target, "--evidence-image", "registry.example.com/app/tests:1")
    assert result.code == 0, result.err
    text = target.read_text(encoding="utf-8")
    assert "--evidence-image registry.example.com/app/tests:1" in text.splitlines()[1]
    document = yaml.safe_load(text)
    evidence = job(document, "rerun-mr-evidence")
    assert evidence["image"] == "registry.example.com/app/tests:1"
    assert evidence["inherit"] == {"default": False, "variables": False}
    assert evidence["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    # it checks out the merge request's head (the code under test), and it informs: the
    # merge stays merge-check's to decide
    assert evidence["variables"] == {"GIT_STRATEGY": "fetch", "GIT_SUBMODULE_STRATEGY": "none"}
    assert evidence["allow_failure"] is True
    assert evidence["artifacts"]["paths"] == ["pairgate-evidence-ci.json"]
    script = "\n".join(evidence["before_script"] + evidence["script"])
    assert "pairgate_run -m pairgate.evidence.ci --tokens-on-stdin" in script
    assert "--gitlab-url 'https://gitlab.example.com'" in script
    assert "'tools/pairgate/pairgate-config.json'" in script and "$[[" not in script
    jobs = [k for k in document if not k.startswith(".") and k != "workflow"]
    assert sorted(jobs) == sorted([*GATE_JOBS, "rerun-mr-evidence", "project-pipeline"])


# -- the interpolation itself ------------------------------------------------------------------


def component(body: str, **inputs: dict[str, Any]) -> Component:
    return Component("c", inputs, body)


def test_a_whole_value_keeps_its_type_and_text_is_written_in_raw() -> None:
    c = component(
        "j:\n  tags: $[[ inputs.tags ]]\n  image: $[[ inputs.image ]]\n"
        "  script: [\"echo '$[[ inputs.name | expand_vars ]]'\"]\n",
        tags={"type": "array"},
        image={},
        name={},
    )
    text = interpolate(c, {"tags": ["a", "b"], "image": "i:1", "name": "x/y"})
    assert yaml.safe_load(text) == {
        "j": {"tags": ["a", "b"], "image": "i:1", "script": ["echo 'x/y'"]}
    }


@pytest.mark.parametrize(
    ("body", "values", "says"),
    [
        ("a: $[[ inputs.other ]]\n", {"name": "x"}, "undeclared input other"),
        ("a: $[[ inputs.name | truncate ]]\n", {"name": "x"}, "only expand_vars of a literal"),
        ("a: $[[ inputs.name | expand_vars ]]\n", {"name": "$CI_PROJECT_PATH"}, "only expand_vars"),
    ],
)
def test_a_block_it_cannot_fill_exactly_is_refused(
    body: str, values: dict[str, str], says: str
) -> None:
    with pytest.raises(Exception, match=says):
        interpolate(component(body, name={}), values)


def test_inputs_are_checked_against_their_declarations() -> None:
    parsed = parse_component(
        "c", "spec:\n  inputs:\n    a: {regex: ^x$}\n    b: {default: d}\n---\nj: 1\n"
    )
    assert checked_inputs(parsed, {"a": "x"}) == {"a": "x", "b": "d"}
    for given, says in (
        ({}, "the input a has no value and no default"),
        ({"a": "y"}, "does not match its regex"),
        ({"a": "x", "z": "1"}, "unknown inputs: z"),
    ):
        with pytest.raises(Exception, match=says):
            checked_inputs(parsed, given)


def test_the_example_deployments_pipeline_is_what_this_pairgate_renders() -> None:
    """examples/tracker-pipeline.yml, for examples/pairgate-config.json; after changing a
    component or the frame, render it again with the command on its second line."""
    example = ROOT / "examples" / "tracker-pipeline.yml"
    command = example.read_text(encoding="utf-8").splitlines()[1].split()
    assert command[:5] == ["#", "example-task", "deploy-pipeline", "--target", "FILE"]
    result = run_cli(
        ["deploy-pipeline", "--target", str(example), *command[5:], "--check"],
        env={"PAIRGATE_CONFIG": str(ROOT / "examples" / "pairgate-config.json")},
    )
    assert (result.code, result.out) == (0, f"in line: {example}\n"), result.out
