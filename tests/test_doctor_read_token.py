"""doctor's read-token-variable check against the sandbox: the CI/CD variable the published
pipeline's --read-token-variable names, as a gated project's merge request pipelines get it
(the project's, else its group's; masked, not protected, of environment scope *), what each way
of getting it wrong says, what a token that cannot see it says, and that no answer shows the
variable's value."""

from __future__ import annotations

import json

from pairgate.sandbox.testing import RunningSandbox
from tests.test_doctor import (
    GATED,
    PIPELINE,
    READ_VALUE,
    doctor,
    fix,
    make_owner,
    publish,
    recommended,
    statuses,
)

APP = "/projects/acme%2Fapp/variables"


def check(result_out: str, subject: str = "acme/app") -> dict:
    doc = json.loads(result_out)
    return next(
        c for c in doc["checks"] if (c["check"], c["subject"]) == ("read-token-variable", subject)
    )


def test_the_variable_in_each_project_passes_and_its_value_is_never_shown(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    text = doctor(sandbox)
    assert text.code == 0, text.out
    assert (
        "pass         read-token-variable     acme/app: GATE_READ (named by gate/pipeline.yml) is "
        "set in project acme/app: masked, not protected, environment scope *\n"
    ) in text.out
    as_json = doctor(sandbox, "--json")
    assert {s for (c, s), v in statuses(as_json).items() if c == "read-token-variable"} == set(
        GATED
    )
    for out in (text.out, text.err, as_json.out, as_json.err):
        assert READ_VALUE not in out


def test_a_missing_variable_is_a_hole_naming_the_call_that_adds_it(
    sandbox: RunningSandbox,
) -> None:
    recommended(sandbox)
    sandbox.api("DELETE", f"{APP}/GATE_READ", as_user="maintainer")
    make_owner(sandbox)  # the group's variables are read too: none there either
    result = doctor(sandbox)
    assert result.code == 1, result.out
    assert (
        "HOLE         read-token-variable     acme/app: GATE_READ (named by gate/pipeline.yml) is "
        "not a CI/CD variable of acme/app nor of its groups"
    ) in result.out
    assert "every gate job fails, approved or not" in result.out
    found = check(doctor(sandbox, "--json").out)
    assert found["status"] == "hole"
    assert found["fix"].startswith(
        "POST /projects/:id/variables key=GATE_READ value=<a read_api token> masked=true "
        "protected=false (or acme/app's Settings > CI/CD > Variables > Add variable"
    )
    assert "doctor cannot add it: it does not hold the token" in found["fix"]
    assert [r.split(" of ")[-1] for r in found["read"]] == ["acme/app", "acme"]


def test_an_unmasked_or_protected_variable_is_a_hole(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    sandbox.api("PUT", f"{APP}/GATE_READ", as_user="maintainer", json={"masked": False})
    unmasked = doctor(sandbox)
    assert unmasked.code == 1
    assert "acme/app: GATE_READ of project acme/app is not masked" in unmasked.out
    assert "fix: PUT /projects/:id/variables/GATE_READ, project acme/app masked=true" in (
        unmasked.out
    )
    sandbox.api("PUT", f"{APP}/GATE_READ", as_user="maintainer",
                json={"masked": True, "protected": True})  # fmt: skip
    make_owner(sandbox)
    protected = doctor(sandbox)
    assert protected.code == 1
    assert (
        "GATE_READ (named by gate/pipeline.yml) is protected in project acme/app: a protected "
        "variable is given only to pipelines on protected branches and tags, and a merge "
        "request pipeline runs on refs/merge-requests/<iid>/head"
    ) in protected.out
    assert "fix: PUT /projects/:id/variables/GATE_READ protected=false, project acme/app" in (
        protected.out
    )


def test_the_variable_set_only_in_the_group_passes(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    sandbox.api("DELETE", f"{APP}/GATE_READ", as_user="maintainer")
    make_owner(sandbox)
    body = {"key": "GATE_READ", "value": READ_VALUE, "masked": True}
    sandbox.api("POST", "/groups/acme/variables", as_user="maintainer", json=body)
    result = doctor(sandbox)
    assert result.code == 0, result.out
    assert "acme/app: GATE_READ (named by gate/pipeline.yml) is set in group acme: masked" in (
        result.out
    )
    assert READ_VALUE not in result.out
    # A protected one in the project is not given to merge request pipelines: the group's is.
    body = {"key": "GATE_READ", "value": READ_VALUE, "masked": True, "protected": True}
    sandbox.api("POST", APP, as_user="maintainer", json=body)
    again = check(doctor(sandbox, "--json").out)
    assert (again["status"], again["detail"]) == (
        "pass",
        "GATE_READ (named by gate/pipeline.yml) is set in group acme: masked, not protected, "
        "environment scope *",
    )


def test_a_group_variable_is_read_once_for_all_its_projects(sandbox: RunningSandbox) -> None:
    """acme/app and acme/tracker both get GATE_READ from group acme: one read of it serves
    both checks."""
    recommended(sandbox)
    for project in ("acme%2Fapp", "acme%2Ftracker"):
        sandbox.api("DELETE", f"/projects/{project}/variables/GATE_READ", as_user="maintainer")
    make_owner(sandbox)
    body = {"key": "GATE_READ", "value": READ_VALUE, "masked": True}
    sandbox.api("POST", "/groups/acme/variables", as_user="maintainer", json=body)
    sandbox.clear_requests()
    out = doctor(sandbox, "--json").out
    for project in ("acme/app", "acme/tracker"):
        assert check(out, project)["detail"].endswith("is set in group acme: masked, not "
                                                      "protected, environment scope *")  # fmt: skip
    group_reads = [
        r for r in sandbox.requests() if r["path"] == "/api/v4/groups/acme/variables/GATE_READ"
    ]
    assert len(group_reads) == 1, group_reads


def test_the_group_a_maintainer_cannot_read_is_cannot_read(sandbox: RunningSandbox) -> None:
    """Not in the project, and the group's variables are shown to Owners only: doctor cannot
    tell, and says so (exit 2), never a pass or a hole."""
    recommended(sandbox)
    sandbox.api("DELETE", f"{APP}/GATE_READ", as_user="maintainer")
    result = doctor(sandbox)
    assert result.code == 2, result.out
    assert (
        "CANNOT-READ  read-token-variable     acme/app: whether acme/app's gate jobs get GATE_READ "
        "cannot be seen: the CI/CD variables of group acme could not be read: the read token is "
        "not an Owner of the group (GitLab shows a group's CI/CD variables to its Owners)\n"
    ) in result.out
    assert (
        "fix: run doctor with the read_api token of an Owner of acme, or add GATE_READ to "
        "acme/app itself, where a Maintainer sees it"
    ) in result.out


def test_a_token_below_maintainer_cannot_see_the_variable(sandbox: RunningSandbox) -> None:
    recommended(sandbox)
    below = sandbox.info["users"]["agents"]["read_token"]  # a Developer's read_api token
    result = doctor(sandbox, PAIRGATE_TEST_TASK_API_TOKEN=below)
    assert result.code == 2
    assert (
        "CANNOT-READ  read-token-variable     acme/app: whether acme/app's gate jobs get GATE_READ "
        "cannot be seen: the CI/CD variables of project acme/app could not be read: the read "
        "token is below Maintainer in it (GitLab shows CI/CD variables to Maintainers)\n"
    ) in result.out
    assert "fix: run doctor with the read_api token of a Maintainer of acme/app" in result.out
    found = check(doctor(sandbox, "--json", PAIRGATE_TEST_TASK_API_TOKEN=below).out)
    assert found["status"] == "cannot-read" and len(found["read"]) == 1  # no group read after


def test_fix_does_not_add_the_variable_it_cannot_know(sandbox: RunningSandbox) -> None:
    publish(sandbox)
    make_owner(sandbox)
    make_owner(sandbox, "partner")
    result = fix(sandbox, "--pipeline", PIPELINE)
    assert result.code == 1, result.out
    assert not [ln for ln in result.out.splitlines() if "GATE_READ" in ln and "changed" in ln]
    found = statuses(doctor(sandbox, "--json"))
    assert {k for k, v in found.items() if v != "pass"} == {
        ("read-token-variable", p) for p in GATED
    }
    for project in GATED:
        missing = sandbox.request("GET", f"/projects/{project.replace('/', '%2F')}/variables/"
                                  "GATE_READ", "maintainer")  # fmt: skip
        assert missing.status_code == 404
