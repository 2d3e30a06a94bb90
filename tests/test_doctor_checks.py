"""doctor's checks as pure functions: the answers GitLab could give, the odd ones first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pairgate.deployment.gate_files import PipelineInputs, recorded_inputs, rendered
from pairgate.doctor.branches import covers, default_branch_check, entry_problem, renovate_check
from pairgate.doctor.checks import (
    PipelineFile,
    image_check,
    independence_check,
    pipeline_file,
    pipeline_problem,
    setting_checks,
    token_check,
    variables_check,
)
from pairgate.doctor.ci_token import Answer, levels, metadata, read_token_variable_check
from pairgate.standalone.gitlab import GitLabError
from pairgate.verbs.merge_requests import MERGE_CHECK_JOB
from tests.kit.run import suite_config


@pytest.mark.parametrize(
    ("value", "found"),
    [
        (None, "it is unset"),
        ("", "it is unset"),
        (".gitlab-ci.yml", "a file of the project itself"),
        ("ci.yml@acme/app", "it names acme/app, not the tracker acme/tracker"),
        ("ci.yml@ACME/Tracker", PipelineFile("ci.yml", None)),
        ("gate/p.yaml@acme/tracker:main", PipelineFile("gate/p.yaml", "main")),
        ("https://example.com/ci.yml", "it is a remote URL"),
        ("ci.txt@acme/tracker", "a file of the project itself"),
    ],
)
def test_where_a_ci_config_path_points(value: object, found: object) -> None:
    result = pipeline_file(value, "acme/tracker")
    assert result == found if isinstance(found, PipelineFile) else str(found) in str(result)


DIGEST = "registry.example.com/ci/python-gate@sha256:" + "ab" * 32
INPUTS = PipelineInputs(DIGEST, ("gate",), "GATE_READ", "gate", "https://gitlab.example.com")


@pytest.fixture(scope="module")
def published() -> bytes:
    return rendered(suite_config(), "test", INPUTS)


def test_the_rendered_pipeline_records_its_inputs_and_passes(published: bytes) -> None:
    assert recorded_inputs(published.decode()) == INPUTS
    assert pipeline_problem(suite_config(), published) is None


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t + f"\n{MERGE_CHECK_JOB}:\n  rules:\n    - when: never\n", "past the end"),
        (lambda t: t.replace("    strategy: depend", "    strategy: mirror"), "strategy: mirror'"),
        (lambda t: t.replace("\n\n", "\n\ninclude: x.yml\n", 1), "'include: x.yml'"),
        (
            lambda t: t.replace("#   pairgate deploy-pipeline", "#   made by hand", 1),
            "names no deploy-pipeline command",
        ),
        (
            lambda t: t.replace("--runner-tag gate", "--runner-tag gate --when manual", 1),
            "unknown flag --when",
        ),
        (lambda t: t.replace(DIGEST, "py:3", 1), "where pairgate renders '  image: \"py:3\"'"),
        (lambda t: t.rstrip("\n"), "final newline"),
    ],
)
def test_any_edit_of_the_pipeline_is_a_hole_naming_the_first_differing_line(
    published: bytes, edit: Callable[[str], str], problem: str
) -> None:
    found = pipeline_problem(suite_config(), edit(published.decode()).encode())
    assert found is not None and problem in found, found


def test_pipeline_variables_need_both_settings() -> None:
    both = {"restrict_user_defined_variables": True,
            "ci_pipeline_variables_minimum_override_role": "maintainer"}  # fmt: skip
    assert variables_check("p", both).status == "pass"
    for key, value in (
        ("restrict_user_defined_variables", False),
        ("ci_pipeline_variables_minimum_override_role", "developer"),
    ):
        assert variables_check("p", {**both, key: value}).status == "hole"
    assert variables_check("p", {"restrict_user_defined_variables": True}).status == "cannot-read"


def test_an_image_by_tag_is_a_hole_and_by_digest_passes() -> None:
    assert image_check("g", INPUTS).status == "pass"
    tagged = image_check("g", PipelineInputs("py:3.12", ("t",), "V", "g", "https://x"))
    assert tagged.status == "hole" and "whoever can push that tag" in tagged.detail


def test_a_setting_missing_from_the_answer_is_cannot_read() -> None:
    checks = {
        c.check: c for c in setting_checks("acme/app", {"allow_merge_on_skipped_pipeline": 0})
    }
    assert checks["pipelines-must-succeed"].status == "cannot-read"
    assert checks["skipped-pipelines"].status == "hole"  # 0 is not false: never read as one
    assert checks["forking"].status == "cannot-read"


def never(user: int) -> int:
    raise AssertionError(f"read user {user}")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"access_level": 40}, None),
        ({"access_level": 0}, None),
        ({"access_level": 60}, None),
        ({"access_level": 30, "access_level_description": "Developers + Maintainers"},
         "Developers + Maintainers may push"),
        ({"access_level": 40, "group_id": 7}, "the members of group id 7 may push"),
        ({"access_level": 40, "deploy_key_id": 3}, "deploy key 3 may push"),
        ({"access_level": 40, "user_id": 12}, None),  # the allowed account
        ({"access_level": None}, "access level None may push"),
    ],
)  # fmt: skip
def test_access_entries(entry: dict, problem: str | None) -> None:
    assert entry_problem(entry, "push", never, allowed_user=12) == problem


def test_a_user_entry_is_judged_by_the_users_role() -> None:
    levels = {13: 40, 10: 30}
    assert entry_problem({"user_id": 13}, "merge", levels.__getitem__, None) is None
    assert entry_problem({"user_id": 10}, "merge", levels.__getitem__, None) == (
        "user id 10 (Developer) may merge"
    )
    failed = entry_problem({"user_id": 9}, "push", lambda u: GitLabError("boom"), None)
    assert failed == "user id 9 may push (its role could not be read: boom)"


@pytest.mark.parametrize(
    ("name", "covered"),
    [("renovate/*", True), ("*", True), ("ren*", True), ("renovate/lodash", False),
     ("renovate/a*", False), ("*/*", False), ("other/*", False)],
)  # fmt: skip
def test_which_rules_cover_every_renovate_branch(name: str, covered: bool) -> None:
    assert covers(name, "renovate/") is covered


def test_a_narrower_rule_that_lets_developers_push_is_still_a_hole() -> None:
    rules = [
        {"name": "renovate/*", "push_access_levels": [{"access_level": 40}]},
        {"name": "renovate/lodash", "push_access_levels": [{"access_level": 30}]},
    ]
    check = renovate_check("acme/app", "renovate/", 12, rules, never)
    assert check.status == "hole" and "rule 'renovate/lodash'" in check.detail


def test_a_wildcard_rule_protects_the_default_branch() -> None:
    rules = [{"name": "m*", "push_access_levels": [{"access_level": 40}],
              "merge_access_levels": [{"access_level": 40}]}]  # fmt: skip
    assert default_branch_check("acme/tracker", "main", rules, None, never).status == "pass"
    other = [{**rules[0], "name": "release/*"}]
    assert default_branch_check("acme/tracker", "main", other, None, never).status == "hole"


def test_the_read_token_check() -> None:
    assert token_check(None, "X_TASK_API_TOKEN").status == "cannot-read"
    assert token_check({"scopes": ["read_api", "read_repository"]}, "X").status == "pass"
    hole = token_check({"scopes": ["read_api", "write_repository"]}, "X")
    assert hole.status == "hole" and "with write_repository" in hole.detail
    assert token_check({"scopes": []}, "X").status == "pass"


def test_independence_resting_on_names_and_sessions_is_a_hole_with_its_fix() -> None:
    names = independence_check([], [10], 11, "PAIRGATE_TEST_TASK_WRITE_TOKEN")
    assert (names.check, names.status) == ("independence-basis", "hole")
    assert names.detail.startswith("review_author_user_ids is not set: independence rests on names")
    assert names.fix == (
        "set review_author_user_ids to the review account (user id 11, the review bot's), and "
        "run each reviewer's session with that account's token in PAIRGATE_TEST_TASK_WRITE_TOKEN: "
        "an approval then counts only in a note GitLab reports as written by it"
    )
    shared = independence_check([10, 11], [10], 11, "W")
    assert shared.status == "hole" and "user id 10 is in both" in shared.detail
    bound = independence_check([11], [10], 11, "W")
    assert bound.status == "pass" and bound.detail.startswith("account-bound")


# -- the read-token variable: the levels a job's variables come from --------------------------


def test_a_projects_variables_come_from_it_then_each_group_nearest_first() -> None:
    assert levels("top/sub/team/app") == [
        ("projects", "top/sub/team/app"),
        ("groups", "top/sub/team"),
        ("groups", "top/sub"),
        ("groups", "top"),
    ]


GOOD = {"key": "GATE_READ", "masked": True, "protected": False, "variable_type": "env_var"}


def _reader(answers: dict[str, Answer]) -> tuple[Callable[[str, str], Answer], list[str]]:
    asked: list[str] = []

    def read(kind: str, ref: str) -> Answer:
        asked.append(ref)
        return answers.get(ref)

    return read, asked


def test_a_protected_subgroup_variable_gives_way_to_its_parents() -> None:
    read, asked = _reader({"top/sub": {**GOOD, "protected": True}, "top": GOOD, "x": GOOD})
    found = read_token_variable_check("top/sub/app", "GATE_READ", "gate/p.yml", read)
    assert (found.status, found.detail) == (
        "pass",
        "GATE_READ (named by gate/p.yml) is set in group top: masked, not protected, "
        "environment scope *",
    )
    assert asked == ["top/sub/app", "top/sub", "top"]


def test_the_nearest_unprotected_variable_decides_and_the_rest_is_not_read() -> None:
    read, asked = _reader({"top/app": {**GOOD, "masked": False}, "top": GOOD})
    found = read_token_variable_check("top/app", "GATE_READ", "gate/p.yml", read)
    assert found.status == "hole" and "of project top/app is not masked" in found.detail
    assert asked == ["top/app"]


def test_protected_everywhere_is_a_hole_naming_each_level() -> None:
    read, _ = _reader({"top/app": {**GOOD, "protected": True}, "top": {**GOOD, "protected": True}})
    found = read_token_variable_check("top/app", "GATE_READ", "gate/p.yml", read)
    assert found.status == "hole"
    assert "is protected in project top/app and group top" in found.detail


def test_a_file_variable_is_a_hole() -> None:
    read, _ = _reader({"top/app": {**GOOD, "variable_type": "file"}})
    found = read_token_variable_check("top/app", "GATE_READ", "gate/p.yml", read)
    assert found.status == "hole" and "a file variable holds a path" in found.detail


def test_an_answer_without_the_flags_or_an_error_is_cannot_read() -> None:
    read, _ = _reader({"top/app": {"key": "GATE_READ"}})
    found = read_token_variable_check("top/app", "GATE_READ", "gate/p.yml", read)
    assert found.status == "cannot-read" and "has no masked, protected" in found.detail
    failing = GitLabError("GitLab answered 502", status=502)
    read, _ = _reader({"top/app": {**GOOD, "protected": True}, "top": failing})
    found = read_token_variable_check("top/app", "GATE_READ", "gate/p.yml", read)
    assert found.status == "cannot-read"
    assert found.detail.endswith("GitLab answered 502; it is protected in project top/app")


def test_only_the_judged_fields_of_gitlabs_answer_are_kept() -> None:
    answer = {**GOOD, "value": "glpat-secret", "description": "d", "raw": False}
    assert metadata(answer) == GOOD
