"""pairgate doctor against the sandbox: a deployment configured as the README recommends passes,
and flipping each setting, one at a time, turns exactly that check into a hole."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pairgate.doctor.checks import MERGE_CHECK_JOB
from pairgate.sandbox.testing import RunningSandbox
from pairgate.version import schema_checker
from tests.kit.run import Result, agent_env, run_cli

PIPELINE = "gate/pipeline.yml"
GATED = ("acme/app", "acme/tracker", "partner/shared-lib")
RECOMMENDED = {
    "only_allow_merge_if_pipeline_succeeds": True,
    "allow_merge_on_skipped_pipeline": False,
    "ci_config_path": f"{PIPELINE}@acme/tracker",
    "forking_access_level": "disabled",
}


def pipeline_file(job: dict[str, Any] | None = None) -> str:
    """The tracker-held pipeline, as far as doctor reads it: the merge-check job is there."""
    merge_check = job if job is not None else {"script": ["python3 -I merge-check"]}
    text = "validate-mr-approval-at-head:\n  script: [python3 -I approval]\n"
    if merge_check:
        text += f"{MERGE_CHECK_JOB}:\n" + "".join(
            f"  {key}: {json.dumps(value)}\n" for key, value in merge_check.items()
        )
    return text + "reused:\n  script: !reference [validate-mr-approval-at-head, script]\n"


def _enc(path: str) -> str:
    return path.replace("/", "%2F")


def put(sandbox: RunningSandbox, project: str, **settings: Any) -> None:
    sandbox.api("PUT", f"/projects/{_enc(project)}", as_user="maintainer", json=settings)


def protect(sandbox: RunningSandbox, project: str, name: str, push: int, merge: int) -> None:
    rules = f"/projects/{_enc(project)}/protected_branches"
    existing = sandbox.request("GET", f"{rules}/{_enc(name)}", "maintainer")
    if existing.ok:
        sandbox.api("DELETE", f"{rules}/{_enc(name)}", as_user="maintainer")
    body = {"name": name, "push_access_level": push, "merge_access_level": merge}
    sandbox.api("POST", rules, as_user="maintainer", json=body)


def recommended(sandbox: RunningSandbox) -> None:
    """Every setting the README's gate section asks for."""
    sandbox.commit("main", {PIPELINE: pipeline_file()}, project="acme/tracker")
    for project in GATED:
        put(sandbox, project, **RECOMMENDED)
    protect(sandbox, "acme/tracker", "main", 40, 40)
    for project in ("acme/tracker", "acme/app"):  # renovate_exempt_namespaces: ["acme"]
        protect(sandbox, project, "renovate/*", 40, 40)


def doctor_env(sandbox: RunningSandbox, **overrides: str) -> dict[str, str]:
    """A Maintainer's read_api token reads every setting, the protected branches included."""
    read = sandbox.info["users"]["maintainer"]["read_token"]
    return agent_env(sandbox, **{"PAIRGATE_TEST_TASK_API_TOKEN": read, **overrides})


def doctor(sandbox: RunningSandbox, *flags: str, **overrides: str) -> Result:
    return run_cli(["doctor", *flags], doctor_env(sandbox, **overrides))


def statuses(result: Result) -> dict[tuple[str, str], str]:
    doc = json.loads(result.out)
    return {(c["check"], c["subject"]): c["status"] for c in doc["checks"]}


def test_a_deployment_as_the_readme_recommends_passes(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    result = doctor(sandbox)
    assert result.code == 0, result.out
    assert "0 hole(s), 0 cannot read" in result.out and "HOLE" not in result.out
    found = statuses(doctor(sandbox, "--json"))
    assert set(found.values()) == {"pass"}
    per_project = {"pipelines-must-succeed", "skipped-pipelines", "forking", "tracker-pipeline"}
    per_project |= {"agents-role", "review-bot-role"}
    assert {c for c, s in found if s == "acme/app"} == per_project | {"renovate-branches"}
    assert {c for c, s in found if s == "partner/shared-lib"} == per_project  # not exempt
    assert {s for c, s in found if c in ("agents-role", "review-bot-role")} >= {"acme"}
    assert ("tracker-default-branch", "acme/tracker") in found
    assert {
        ("accounts-distinct", "accounts"),
        ("read-token", "PAIRGATE_TEST_TASK_API_TOKEN"),
    } <= set(found)


def test_every_check_says_which_field_it_read(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    doc = json.loads(doctor(sandbox, "--json").out)
    assert set(doc) == {"holes", "cannot_read", "passed", "checks", "schema_checker"}
    for check in doc["checks"]:
        assert check["read"] and all("(doc/api/" in field for field in check["read"]), check
        assert set(check) == {"check", "subject", "status", "read", "detail", "fix"}
    text = doctor(sandbox).out
    assert (
        "read: GET /projects/:id only_allow_merge_if_pipeline_succeeds (doc/api/projects.md)"
        in text
    )


Flip = Callable[[RunningSandbox], dict[str, str] | None]


def _member(kind: str, ref: str, user: int, level: int) -> Flip:
    def flip(sandbox: RunningSandbox) -> None:
        path = f"/{kind}/{_enc(ref)}/members"
        if kind == "groups":
            sandbox.api("PUT", f"{path}/{user}", as_user="maintainer", json={"access_level": level})
        else:
            body = {"user_id": user, "access_level": level}
            sandbox.api("POST", path, as_user="maintainer", json=body)

    return flip


def _unprotect(project: str, name: str) -> Flip:
    def flip(sandbox: RunningSandbox) -> None:
        sandbox.api("DELETE", f"/projects/{_enc(project)}/protected_branches/{_enc(name)}",
                    as_user="maintainer")  # fmt: skip

    return flip


def _pipeline(job: dict[str, Any]) -> Flip:
    def flip(sandbox: RunningSandbox) -> None:
        sandbox.commit("main", {PIPELINE: pipeline_file(job)}, project="acme/tracker")

    return flip


EVERY_PROJECT = {("tracker-pipeline", p) for p in GATED}
FLIPS: list[tuple[str, Flip, set[tuple[str, str]]]] = [
    ("pipelines-must-succeed-off",
     lambda sb: put(sb, "acme/app", only_allow_merge_if_pipeline_succeeds=False),
     {("pipelines-must-succeed", "acme/app")}),
    ("skipped-pipelines-count",
     lambda sb: put(sb, "acme/app", allow_merge_on_skipped_pipeline=True),
     {("skipped-pipelines", "acme/app")}),
    ("own-ci-file", lambda sb: put(sb, "acme/app", ci_config_path=".gitlab-ci.yml"),
     {("tracker-pipeline", "acme/app")}),
    ("ci-file-of-another-project",
     lambda sb: put(sb, "acme/app", ci_config_path=f"{PIPELINE}@acme/app"),
     {("tracker-pipeline", "acme/app")}),
    ("ci-file-at-an-unprotected-ref",
     lambda sb: put(sb, "acme/app", ci_config_path=f"{PIPELINE}@acme/tracker:feature"),
     {("tracker-pipeline", "acme/app")}),
    ("no-merge-check-job", _pipeline({}), EVERY_PROJECT),
    ("merge-check-job-allowed-to-fail", _pipeline({"script": ["x"], "allow_failure": True}),
     EVERY_PROJECT),
    ("merge-check-job-manual", _pipeline({"script": ["x"], "when": "manual"}), EVERY_PROJECT),
    ("tracker-branch-mergeable-by-developers",
     lambda sb: protect(sb, "acme/tracker", "main", 40, 30),
     {("tracker-default-branch", "acme/tracker")}),
    ("tracker-branch-unprotected", _unprotect("acme/tracker", "main"),
     {("tracker-default-branch", "acme/tracker")}),
    ("agents-maintain-a-project", _member("projects", "acme/app", 10, 40),
     {("agents-role", "acme/app")}),
    ("agents-own-the-group", _member("groups", "acme", 10, 50),
     {("agents-role", p) for p in ("acme", "acme/app", "acme/tracker")}),
    ("review-bot-maintains-a-project", _member("projects", "acme/app", 11, 40),
     {("review-bot-role", "acme/app")}),
    ("one-account-for-both",
     lambda sb: {"PAIRGATE_TEST_REVIEW_BOT_TOKEN": sb.token("agents")},
     {("accounts-distinct", "accounts")}),
    ("renovate-branches-unprotected", _unprotect("acme/app", "renovate/*"),
     {("renovate-branches", "acme/app")}),
    ("renovate-branches-pushable-by-developers",
     lambda sb: protect(sb, "acme/app", "renovate/*", 30, 40),
     {("renovate-branches", "acme/app")}),
    ("read-token-can-write",
     lambda sb: {"PAIRGATE_TEST_TASK_API_TOKEN": sb.token("maintainer")},
     {("read-token", "PAIRGATE_TEST_TASK_API_TOKEN")}),
    ("forking-enabled", lambda sb: put(sb, "acme/app", forking_access_level="enabled"),
     {("forking", "acme/app")}),
    ("forking-for-members", lambda sb: put(sb, "acme/app", forking_access_level="private"),
     {("forking", "acme/app")}),
]  # fmt: skip


@pytest.mark.parametrize(("flip", "holes"), [f[1:] for f in FLIPS], ids=[f[0] for f in FLIPS])
def test_flipping_one_setting_opens_exactly_that_hole(
    sandbox: RunningSandbox, flip: Flip, holes: set[tuple[str, str]]
) -> None:
    recommended(sandbox)
    env = flip(sandbox) or {}
    result = doctor(sandbox, **env)
    assert result.code == 1, result.out
    found = statuses(doctor(sandbox, "--json", **env))
    assert {key for key, status in found.items() if status != "pass"} == holes
    lines = [line.split() for line in result.out.splitlines() if line.startswith("HOLE")]
    assert sorted((words[1], words[2].rstrip(":")) for words in lines) == sorted(holes)
    assert result.out.count("fix: ") == len(holes)


def test_a_developer_read_token_reads_the_tracker_branch_from_the_branch_entity(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    read = sandbox.info["users"]["agents"]["read_token"]
    result = doctor(sandbox, "--json", PAIRGATE_TEST_TASK_API_TOKEN=read)
    assert result.code == 2
    doc = json.loads(result.out)
    by_key = {(c["check"], c["subject"]): c for c in doc["checks"]}
    branch = by_key[("tracker-default-branch", "acme/tracker")]
    assert branch["status"] == "pass" and "were not checked" in branch["detail"]
    assert "developers_can_merge (doc/api/branches.md)" in branch["read"][0]
    renovate = by_key[("renovate-branches", "acme/app")]
    assert renovate["status"] == "cannot-read"
    assert renovate["fix"] == (
        "run doctor with a Maintainer's read_api token: only a Maintainer reads protected branch "
        "rules"
    )
    assert doc["cannot_read"] == 2 and doc["holes"] == 0
    text = doctor(sandbox, PAIRGATE_TEST_TASK_API_TOKEN=read)
    assert text.code == 2
    assert (
        "CANNOT-READ  renovate-branches       acme/app: the protected branches of acme/app could "
        "not be read: GitLab answered 403 Forbidden (the read token's account is not a "
        "Maintainer there)\n"
    ) in text.out
    assert "scope" not in text.out.split("CANNOT-READ", 1)[1]  # it has read_api: one remedy


def test_a_developer_read_token_still_sees_a_mergeable_tracker_branch(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    protect(sandbox, "acme/tracker", "main", 40, 30)
    read = sandbox.info["users"]["agents"]["read_token"]
    found = statuses(doctor(sandbox, "--json", PAIRGATE_TEST_TASK_API_TOKEN=read))
    assert found[("tracker-default-branch", "acme/tracker")] == "hole"


def test_without_the_review_bot_token_its_checks_cannot_read(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    result = doctor(sandbox, PAIRGATE_TEST_REVIEW_BOT_TOKEN="")
    assert result.code == 2
    assert "CANNOT-READ  accounts-distinct" in result.out
    assert "neither PAIRGATE_TEST_REVIEW_BOT_TOKEN nor" in result.out
    assert "review_bot_token_file) holds a token" in result.out


def test_a_settings_field_gitlab_does_not_show_is_cannot_read_never_a_guess(
    sandbox: RunningSandbox,
) -> None:
    """ci_config_path is shown only to Reporter and above; a Guest-level token sees no field."""
    recommended(sandbox)
    token = sandbox.control("POST", "tokens", json={"user": "reporter", "scopes": ["read_api"]})
    sandbox.api("PUT", "/groups/100/members/14", as_user="maintainer", json={"access_level": 10})
    found = statuses(doctor(sandbox, "--json", PAIRGATE_TEST_TASK_API_TOKEN=token["token"]))
    assert found[("tracker-pipeline", "acme/app")] == "cannot-read"


def test_project_limits_it_and_refuses_an_ungated_one(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    found = statuses(doctor(sandbox, "--json", "--project", "acme/app"))
    assert {s for _, s in found} == {"acme/app", "acme/tracker", "acme", "accounts",
                                     "PAIRGATE_TEST_TASK_API_TOKEN"}  # fmt: skip
    refused = doctor(sandbox, "--project", "outside/app")
    assert refused.code == 2 and "--project outside/app: not a gated project" in refused.err


def test_doctor_says_which_schema_checker_is_active_without_gitlab(
    sandbox: RunningSandbox,
) -> None:
    line = f"schema checker: {schema_checker()}\n"
    result = doctor(sandbox, PAIRGATE_TEST_GITLAB_URL="http://127.0.0.1:9")
    assert result.code == 2
    assert result.out == line  # said before any read, which then fails
    recommended(sandbox)
    assert doctor(sandbox).out.startswith(line)
    assert json.loads(doctor(sandbox, "--json").out)["schema_checker"] == schema_checker()
