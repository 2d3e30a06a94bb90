"""pairgate doctor against the sandbox: a deployment configured as the README recommends passes,
and flipping each setting, one at a time, turns exactly that check into a hole."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.verbs.merge_requests import MERGE_CHECK_JOB
from pairgate.version import schema_checker
from tests.kit.names import ACCOUNT_BOUND_CONFIG, FIXTURE_CONFIG
from tests.kit.run import Result, agent_env, run_cli

PIPELINE = "gate/pipeline.yml"
GATE = f"acme/tracker:{PIPELINE}"
DIGEST = "registry.example.com/ci/python-gate@sha256:" + "ab" * 32
GATED = ("acme/app", "acme/tracker", "partner/shared-lib")
RECOMMENDED = {
    "only_allow_merge_if_pipeline_succeeds": True,
    "allow_merge_on_skipped_pipeline": False,
    "ci_config_path": f"{PIPELINE}@acme/tracker",
    "forking_access_level": "disabled",
    "restrict_user_defined_variables": True,
    "ci_pipeline_variables_minimum_override_role": "maintainer",
}


def publish(
    sandbox: RunningSandbox, image: str = DIGEST, config: Path = ACCOUNT_BOUND_CONFIG
) -> Result:
    """deploy-pipeline --publish, as the README's deployment runs it (a Maintainer's token),
    with the configuration doctor reads (the gate files carry it)."""
    argv = ["deploy-pipeline", "--publish", PIPELINE, "--image", image, "--runner-tag", "gate",
            "--read-token-variable", "GATE_READ", "--gate-dir", "gate", "--gitlab-url",
            sandbox.url]  # fmt: skip
    env = {"PAIRGATE_CONFIG": str(config)}
    env["PAIRGATE_TEST_DEPLOY_TOKEN"] = sandbox.token("maintainer")
    result = run_cli(argv, env)
    assert result.code == 0, result.err
    return result


def pipeline_text(sandbox: RunningSandbox) -> str:
    found = sandbox.api("GET", f"/projects/1/repository/files/{_enc(PIPELINE)}?ref=main")
    return base64.b64decode(found["content"]).decode("utf-8")


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


READ_VALUE = "glpat-gate-read-0123456789"  # the read token's stand-in: doctor never shows it


def recommended(sandbox: RunningSandbox) -> None:
    """Every setting the README's gate section asks for, and the gate jobs' read token as a
    masked, unprotected CI/CD variable of each gated project."""
    publish(sandbox)
    for project in GATED:
        put(sandbox, project, **RECOMMENDED)
        sandbox.variable("GATE_READ", READ_VALUE, project=project, masked=True)
    protect(sandbox, "acme/tracker", "main", 40, 40)
    for project in ("acme/tracker", "acme/app"):  # renovate_exempt_namespaces: ["acme"]
        protect(sandbox, project, "renovate/*", 40, 40)


def doctor_env(sandbox: RunningSandbox, **overrides: str) -> dict[str, str]:
    """A Maintainer's read_api token reads every setting, the protected branches included. The
    deployment binds the review role to the review bot's account, as the README recommends."""
    read = sandbox.info["users"]["maintainer"]["read_token"]
    bound = {"PAIRGATE_CONFIG": str(ACCOUNT_BOUND_CONFIG)}
    return agent_env(sandbox, **{**bound, "PAIRGATE_TEST_TASK_API_TOKEN": read, **overrides})


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
    per_project |= {"agents-role", "review-bot-role", "pipeline-variables", "read-token-variable"}
    gated = per_project | {"default-branch"}
    assert {c for c, s in found if s == "acme/app"} == gated | {"renovate-branches"}
    assert {c for c, s in found if s == "partner/shared-lib"} == gated  # not exempt
    assert {c for c, s in found if s == "acme/tracker"} == per_project | {
        "renovate-branches", "tracker-default-branch"}  # fmt: skip
    assert {c for c, s in found if s == GATE} == {"gate-files", "gate-image"}
    assert {s for c, s in found if c in ("agents-role", "review-bot-role")} >= {"acme"}
    assert ("tracker-default-branch", "acme/tracker") in found
    assert ("independence-basis", "configuration") in found
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
        if kind == "groups":  # an Owner's change, and the default world has none
            sandbox.set_member(user, level, group=ref)
        else:
            body = {"user_id": user, "access_level": level}
            sandbox.api("POST", f"/{kind}/{_enc(ref)}/members", as_user="maintainer", json=body)

    return flip


def _unprotect(project: str, name: str) -> Flip:
    def flip(sandbox: RunningSandbox) -> None:
        sandbox.api("DELETE", f"/projects/{_enc(project)}/protected_branches/{_enc(name)}",
                    as_user="maintainer")  # fmt: skip

    return flip


def _edit(change: Callable[[str], str]) -> Flip:
    """An edit of the published pipeline, committed to the tracker as a Maintainer would."""

    def flip(sandbox: RunningSandbox) -> None:
        text = change(pipeline_text(sandbox))
        sandbox.commit("main", {PIPELINE: text}, project="acme/tracker")

    return flip


def _gate_file(path: str, content: str | None) -> Flip:
    def flip(sandbox: RunningSandbox) -> None:
        sandbox.commit("main", {path: content}, project="acme/tracker")

    return flip


def _settings(**settings: Any) -> Flip:
    return lambda sb: put(sb, "acme/app", **settings)


def make_owner(sandbox: RunningSandbox, group: str = "acme") -> None:
    """The maintainer account (whose read token doctor runs with) made an Owner of ``group``,
    so that it reads the group's CI/CD variables."""
    sandbox.set_member("maintainer", 50, group=group)


def _variable(method: str, *, owner: bool = False, **fields: Any) -> Flip:
    """acme/app's GATE_READ changed (or deleted) as a Maintainer would."""

    def flip(sandbox: RunningSandbox) -> None:
        path = "/projects/acme%2Fapp/variables/GATE_READ"
        sandbox.api(method, path, as_user="maintainer", json=fields or None)
        if owner:
            make_owner(sandbox)

    return flip


# The neutered merge-check jobs that reading a job's own keys passed; each is an edit.
NEVER = f"\n{MERGE_CHECK_JOB}:\n  rules:\n    - when: never\n"
HIDDEN = f"\n.manual:\n  when: manual\n{MERGE_CHECK_JOB}:\n  extends: .manual\n  script: [x]\n"
RULES = f"\n{MERGE_CHECK_JOB}:\n  rules:\n    - allow_failure: true\n  script: [x]\n"
INCLUDE = "\ninclude:\n  - project: acme/app\n    file: gate-override.yml\n"


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
    ("second-definition-never-runs", _edit(lambda t: t + NEVER), EVERY_PROJECT),
    ("extends-a-hidden-manual-job", _edit(lambda t: t + HIDDEN), EVERY_PROJECT),
    ("allow-failure-in-rules", _edit(lambda t: t + RULES), EVERY_PROJECT),
    ("a-top-level-include", _edit(lambda t: t + INCLUDE), EVERY_PROJECT),
    ("one-space-changed", _edit(lambda t: t.replace("  script:", "  script: ", 1)),
     EVERY_PROJECT),
    ("gate-file-missing", _gate_file("gate/ownership.py", None), {("gate-files", GATE)}),
    ("gate-file-old", _gate_file("gate/validate-mr-merge-check.py", "# old\n"),
     {("gate-files", GATE)}),
    ("image-by-tag", lambda sb: publish(sb, "registry.example.com/gate:3.12") and None,
     {("gate-image", GATE)}),
    ("gated-branch-pushable-by-developers", lambda sb: protect(sb, "acme/app", "main", 30, 30),
     {("default-branch", "acme/app")}),
    ("gated-branch-unprotected", _unprotect("acme/app", "main"),
     {("default-branch", "acme/app")}),
    ("pipeline-variables-unrestricted", _settings(restrict_user_defined_variables=False),
     {("pipeline-variables", "acme/app")}),
    ("pipeline-variables-for-developers",
     _settings(ci_pipeline_variables_minimum_override_role="developer"),
     {("pipeline-variables", "acme/app")}),
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
    ("names-and-sessions",
     lambda sb: publish(sb, config=FIXTURE_CONFIG) and {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
     {("independence-basis", "configuration")}),
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
    # Not in the project (or only protected there, or only for an environment): the group's
    # variables decide, which only an Owner's token reads.
    ("read-token-variable-missing", _variable("DELETE", owner=True),
     {("read-token-variable", "acme/app")}),
    ("read-token-variable-protected", _variable("PUT", owner=True, protected=True),
     {("read-token-variable", "acme/app")}),
    ("read-token-variable-scoped", _variable("PUT", owner=True, environment_scope="review/*"),
     {("read-token-variable", "acme/app")}),
    ("read-token-variable-unmasked", _variable("PUT", masked=False),
     {("read-token-variable", "acme/app")}),
    ("read-token-variable-a-file", _variable("PUT", variable_type="file"),
     {("read-token-variable", "acme/app")}),
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
    unread = {(c["check"], c["subject"]) for c in doc["checks"] if c["status"] == "cannot-read"}
    assert unread == {("renovate-branches", p) for p in ("acme/app", "acme/tracker")} | {
        (check, p)
        for p in GATED  # shown to Maintainers only
        for check in ("pipeline-variables", "read-token-variable")
    }
    assert doc["cannot_read"] == 8 and doc["holes"] == 0
    assert by_key[("default-branch", "acme/app")]["status"] == "pass"  # from the branch entity
    text = doctor(sandbox, PAIRGATE_TEST_TASK_API_TOKEN=read)
    assert text.code == 2
    assert (
        "CANNOT-READ  renovate-branches       acme/app: the protected branches of acme/app could "
        "not be read: GitLab answered 403 Forbidden (the read token's account is not a "
        "Maintainer there)\n"
    ) in text.out
    remedies = [ln for ln in text.out.split("CANNOT-READ", 1)[1].splitlines() if "fix: " in ln]
    assert remedies and not [ln for ln in remedies if "scope" in ln]  # it has read_api


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
    sandbox.set_member("reporter", 10, group="acme")
    found = statuses(doctor(sandbox, "--json", PAIRGATE_TEST_TASK_API_TOKEN=token["token"]))
    assert found[("tracker-pipeline", "acme/app")] == "cannot-read"


def test_project_limits_it_and_refuses_an_ungated_one(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    found = statuses(doctor(sandbox, "--json", "--project", "acme/app"))
    assert {s for _, s in found} == {"acme/app", "acme/tracker", "acme", "accounts",
                                     "PAIRGATE_TEST_TASK_API_TOKEN", GATE,
                                     "configuration"}  # fmt: skip
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


# -- the edits that reading a job's keys passed: each names the first differing line -----------


@pytest.mark.parametrize("edit", [NEVER, HIDDEN, RULES, INCLUDE], ids=["never", "hidden", "rules",
                                                                      "include"])  # fmt: skip
def test_a_neutered_merge_check_job_is_a_hole_naming_the_line(
    sandbox: RunningSandbox, edit: str
) -> None:
    recommended(sandbox)
    _edit(lambda t: t + edit)(sandbox)
    result = doctor(sandbox)
    assert result.code == 1
    length = len(pipeline_text(sandbox).splitlines()) - len(edit.splitlines())
    line = next(ln for ln in result.out.splitlines() if ln.split()[1:3] == ["tracker-pipeline",
                                                                           "acme/app:"])  # fmt: skip
    assert line.startswith("HOLE")
    assert f"line {length + 1} is '', past the end pairgate renders" in line, line


def test_a_gated_branch_open_to_developers_is_a_hole_and_they_push_to_it(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    protect(sandbox, "acme/app", "main", 30, 30)
    found = statuses(doctor(sandbox, "--json"))
    assert found[("default-branch", "acme/app")] == "hole"
    pushed = sandbox.request(
        "POST", "/projects/2/repository/commits", "agents",
        json={"branch": "main", "commit_message": "straight in",
              "actions": [{"action": "create", "file_path": "x.txt", "content": "x"}]},
    )  # fmt: skip
    assert pushed.status_code == 201  # the hole doctor names is real


# -- doctor --fix ---------------------------------------------------------------------------------


def fix(sandbox: RunningSandbox, *flags: str, token: str = "maintainer") -> Result:
    deploy = {"PAIRGATE_TEST_DEPLOY_TOKEN": sandbox.token(token) if token else ""}
    return doctor(sandbox, "--fix", *flags, **deploy)


def test_fix_closes_every_fixable_hole_printing_each_change(sandbox: RunningSandbox) -> None:
    publish(sandbox)
    for project in GATED:  # the read token: the operator's to add, doctor does not hold it
        sandbox.variable("GATE_READ", READ_VALUE, project=project, masked=True)
    assert doctor(sandbox).code == 1
    result = fix(sandbox, "--pipeline", PIPELINE)
    assert result.code == 0, result.out
    changed = [ln for ln in result.out.splitlines() if ln.startswith("changed: ")]
    assert ("changed: acme/app: only_allow_merge_if_pipeline_succeeds: false -> true  "
            "(PUT /projects/acme%2Fapp)") in changed  # fmt: skip
    assert ("changed: acme/app: ci_config_path: null -> 'gate/pipeline.yml@acme/tracker'  "
            "(PUT /projects/acme%2Fapp)") in changed  # fmt: skip
    assert ("changed: acme/tracker: protected branch main: push Maintainers; merge Developers + "
            "Maintainers -> push Maintainers; merge Maintainers  (DELETE then POST "
            "/projects/acme%2Ftracker/protected_branches)") in changed  # fmt: skip
    fields = {ln.split(": ")[2] for ln in changed}
    assert {"forking_access_level", "restrict_user_defined_variables",
            "protected branch renovate/*"} <= fields  # fmt: skip
    assert "0 hole(s), 0 cannot read" in result.out
    assert doctor(sandbox).code == 0
    again = fix(sandbox)
    assert again.code == 0 and "doctor --fix: nothing to change" in again.out


def test_fix_dry_run_prints_the_calls_and_makes_none(sandbox: RunningSandbox) -> None:
    publish(sandbox)
    before = statuses(doctor(sandbox, "--json"))
    result = fix(sandbox, "--dry-run", "--pipeline", PIPELINE)
    assert result.code == 0
    lines = [ln for ln in result.out.splitlines() if ln.startswith("would change: ")]
    assert ("would change: partner/shared-lib: forking_access_level: 'enabled' -> 'disabled'  "
            "(PUT /projects/partner%2Fshared-lib)") in lines  # fmt: skip
    assert not [ln for ln in result.out.splitlines() if ln.startswith("changed: ")]
    assert statuses(doctor(sandbox, "--json")) == before


def test_fix_without_the_pipeline_leaves_ci_config_path_and_says_so(
    sandbox: RunningSandbox,
) -> None:
    publish(sandbox)
    result = fix(sandbox)
    assert result.code == 1
    assert ("not fixed: acme/app: ci_config_path is null; name the tracker's pipeline file "
            "with --pipeline PATH") in result.out  # fmt: skip
    found = statuses(doctor(sandbox, "--json"))
    assert {k for k, v in found.items() if v != "pass"} == EVERY_PROJECT


def test_fix_refusals(sandbox: RunningSandbox) -> None:
    publish(sandbox)
    untokened = fix(sandbox, token="")
    assert untokened.code == 2
    assert "doctor --fix: set PAIRGATE_TEST_DEPLOY_TOKEN to a token (scope api)" in untokened.err
    developer = fix(sandbox, "--pipeline", PIPELINE, token="agents")
    assert developer.code == 2  # a Developer cannot even read the protected branches
    assert "doctor --fix: could not read what to fix: " in developer.err
    assert developer.err.rstrip().endswith("Nothing was changed.")
    read_only = sandbox.info["users"]["maintainer"]["read_token"]
    refused = doctor(sandbox, "--fix", "--pipeline", PIPELINE,
                     PAIRGATE_TEST_DEPLOY_TOKEN=read_only)  # fmt: skip
    assert refused.code == 2
    assert "doctor --fix: PUT /projects/acme%2Fapp was refused" in refused.err
    assert "Already changed: nothing." in refused.err
    alone = doctor(sandbox, "--dry-run")
    assert alone.code == 2 and "doctor: --dry-run and --pipeline go with --fix" in alone.err
    newline = fix(sandbox, "--pipeline", "gate/p.yml\ninclude: x")
    assert newline.code == 2 and "--pipeline 'gate/p.yml\\ninclude: x' is not one line" in (
        newline.err
    )


def test_fix_closes_a_gated_branch_open_to_developers_keeping_its_merge_level(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    protect(sandbox, "acme/app", "main", 30, 30)
    assert statuses(doctor(sandbox, "--json"))[("default-branch", "acme/app")] == "hole"
    result = fix(sandbox)
    assert result.code == 0, result.out
    assert [ln for ln in result.out.splitlines() if ln.startswith("changed: ")] == [
        "changed: acme/app: protected branch main: push Developers + Maintainers; merge "
        "Developers + Maintainers -> push Maintainers; merge Developers + Maintainers  (DELETE "
        "then POST /projects/acme%2Fapp/protected_branches)"
    ]
    pushed = sandbox.request(
        "POST", "/projects/2/repository/commits", "agents",
        json={"branch": "main", "commit_message": "straight in",
              "actions": [{"action": "create", "file_path": "x.txt", "content": "x"}]},
    )  # fmt: skip
    assert pushed.status_code == 403


def test_fix_never_points_a_project_at_a_pipeline_that_is_not_published(
    sandbox: RunningSandbox,
) -> None:
    result = fix(sandbox, "--pipeline", "gate/nowhere.yml")
    assert result.code == 1
    assert ("not fixed: ci_config_path: gate/nowhere.yml is not on acme/tracker's default "
            "branch") in result.out  # fmt: skip
    assert "ci_config_path:" not in "".join(
        ln for ln in result.out.splitlines() if ln.startswith("changed: ")
    )
    assert sandbox.api("GET", "/projects/2")["ci_config_path"] is None
