"""CI/CD variables of projects and groups, read and written with python-gitlab: GitLab's answers
(doc/api/project_level_variables.md, doc/api/group_level_variables.md), who may use them
(project: Maintainer; group: Owner), the environment scope filter, and what a job is given."""

from __future__ import annotations

import gitlab
import pytest

from pairgate.sandbox import ci_variables
from pairgate.sandbox.records import Group, Project
from pairgate.sandbox.testing import RunningSandbox

MAINTAINER_ID = 13  # the sandbox's maintainer account


def make_owner(sandbox: RunningSandbox, group: int = 100) -> None:
    sandbox.set_member(MAINTAINER_ID, 50, group=str(group))


def test_a_project_variable_is_read_one_by_one_by_a_maintainer(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("maintainer").projects.get("acme/app")
    project.variables.create(
        {"key": "READ", "value": "s3cret-value", "masked": True, "environment_scope": "*"}
    )
    one = project.variables.get("READ")
    assert (one.key, one.masked, one.protected, one.environment_scope) == ("READ", True, False, "*")
    assert (one.variable_type, one.raw, one.hidden) == ("env_var", False, False)
    scoped = project.variables.get("READ", filter={"environment_scope": "*"})
    assert scoped.key == "READ"
    with pytest.raises(gitlab.GitlabGetError) as other_scope:
        project.variables.get("READ", filter={"environment_scope": "production"})
    assert other_scope.value.response_code == 404
    with pytest.raises(gitlab.GitlabGetError) as missing:
        project.variables.get("NOPE")
    assert missing.value.response_code == 404
    answer = sandbox.request("GET", "/projects/2/variables/NOPE", "maintainer")
    assert answer.json() == {"message": "404 Variable Not Found"}
    below = sandbox.request("GET", "/projects/2/variables/READ", "agents")  # a Developer
    assert (below.status_code, below.json()) == (403, {"message": "403 Forbidden"})


def test_group_variables_are_an_owners(sandbox: RunningSandbox) -> None:
    group = sandbox.gitlab("maintainer").groups.get(100)
    with pytest.raises(gitlab.GitlabGetError) as maintainer:
        group.variables.get("READ")
    assert maintainer.value.response_code == 403  # admin_cicd_variables: Owners only
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        group.variables.create({"key": "READ", "value": "s3cret-value"})
    assert refused.value.response_code == 403
    make_owner(sandbox)
    group.variables.create({"key": "READ", "value": "s3cret-value", "masked": True})
    one = group.variables.get("READ")
    assert (one.key, one.masked, one.protected, one.environment_scope) == ("READ", True, False, "*")
    assert [v.key for v in group.variables.list(get_all=True)] == ["READ"]
    one.protected = True
    one.save()
    assert group.variables.get("READ").protected is True
    with pytest.raises(gitlab.GitlabGetError) as missing:
        group.variables.get("NOPE")
    assert missing.value.response_code == 404
    unseen = sandbox.request("GET", "/groups/102/variables/READ", "agents")  # not a member
    assert (unseen.status_code, unseen.json()) == (404, {"message": "404 Group Not Found"})
    group.variables.delete("READ")
    assert group.variables.list(get_all=True) == []


def test_a_job_gets_its_groups_variables_under_its_projects() -> None:
    group = Group(1, "g", "G", variables=[
        {"key": "A", "value": "from-group-a", "masked": True},
        {"key": "B", "value": "from-group-b"},
        {"key": "P", "value": "protected-one", "protected": True},
        {"key": "S", "value": "staging-only", "environment_scope": "staging"},
    ])  # fmt: skip
    project = Project(2, "p", "P", 1, "2026-01-01T00:00:00Z")
    project.variables = [{"key": "B", "value": "from-project-b"}]
    values, masked = ci_variables.project_variables(project, "refs/merge-requests/1/head", group)
    assert values == {"A": "from-group-a", "B": "from-project-b"}
    assert masked == ["from-group-a"]
