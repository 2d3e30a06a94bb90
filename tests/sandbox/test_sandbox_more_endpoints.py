"""The remaining endpoints through python-gitlab: files API writes, user search, pipelines
lists, MR quick actions and the group MR listing's edges."""

from __future__ import annotations

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox


def test_files_api_writes(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(2)
    project.files.create(
        {
            "file_path": "docs/a.md",
            "branch": "topic",
            "start_branch": "main",
            "content": "one",
            "commit_message": "add a",
        }
    )
    f = project.files.get("docs/a.md", ref="topic")
    f.content = "two"
    f.save(branch="topic", commit_message="edit a")
    assert project.files.raw("docs/a.md", ref="topic") == b"two"
    project.files.delete("docs/a.md", branch="topic", commit_message="drop a")
    with pytest.raises(gitlab.GitlabGetError):
        project.files.get("docs/a.md", ref="topic")
    titles = [c.title for c in project.commits.list(ref_name="topic", get_all=True)]
    assert titles == ["drop a", "edit a", "add a", "Initial commit"]
    assert project.commits.get("topic").title == "drop a"
    with pytest.raises(gitlab.GitlabCreateError) as error:
        project.files.create(
            {"file_path": "README.md", "branch": "topic", "content": "x", "commit_message": "again"}
        )
    assert error.value.error_message == "A file with this name already exists"


def test_users_by_username(sandbox: RunningSandbox) -> None:
    users = sandbox.gitlab().users.list(username="renovate-bot", get_all=True)
    assert [(u.id, u.bot) for u in users] == [(12, True)]


def test_pipelines_lists(sandbox: RunningSandbox) -> None:
    sandbox.commit("feature", {"a": "1"})
    sandbox.create_mr("feature")
    branch = sandbox.pipeline("acme/app", "feature", [{"name": "t", "status": "failed"}])
    event = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "t", "status": "pending"}]
    )
    project = sandbox.gitlab().projects.get(2)
    mr = project.mergerequests.get(1)
    assert [p.id for p in mr.pipelines.list(get_all=True)] == [event["id"], branch["id"]]
    assert (mr.head_pipeline["id"], mr.head_pipeline["status"]) == (event["id"], "pending")
    listed = project.pipelines.list(get_all=True, status="failed")
    assert [p.id for p in listed] == [branch["id"]]
    jobs = project.pipelines.get(branch["id"]).jobs.list(get_all=True, scope=["failed"])
    assert [j.name for j in jobs] == ["t"]


def test_mr_quick_actions_approve(sandbox: RunningSandbox) -> None:
    sandbox.commit("feature", {"a": "1"})
    sandbox.create_mr("feature")
    mr = sandbox.gitlab("review_bot").projects.get(2).mergerequests.get(1)
    mr.notes.create({"body": "Looks right.\n/approve"})
    assert [a["user"]["id"] for a in mr.approvals.get().approved_by] == [11]
    bodies = [n.body for n in mr.notes.list(get_all=True, sort="asc")]
    assert bodies == ["approved this merge request", "Looks right."]


def test_merge_request_validation(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(2)
    with pytest.raises(gitlab.GitlabCreateError) as missing:
        project.mergerequests.create(
            {"source_branch": "nope", "target_branch": "main", "title": "t"}
        )
    assert missing.value.response_code == 400
    sandbox.commit("feature", {"a": "1"})
    sandbox.create_mr("feature")
    with pytest.raises(gitlab.GitlabCreateError) as twice:
        project.mergerequests.create(
            {"source_branch": "feature", "target_branch": "main", "title": "t"}
        )
    assert twice.value.response_code == 409
    reporter = sandbox.gitlab("reporter").projects.get(2, lazy=True)
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        reporter.mergerequests.create(
            {"source_branch": "feature", "target_branch": "main", "title": "t"}
        )
    assert refused.value.response_code == 403


def test_close_and_reopen_merge_request(sandbox: RunningSandbox) -> None:
    sandbox.commit("feature", {"a": "1"})
    sandbox.create_mr("feature")
    mr = sandbox.gitlab().projects.get(2).mergerequests.get(1)
    mr.state_event = "close"
    mr.save()
    assert (mr.state, mr.detailed_merge_status) == ("closed", "not_open")
    mr.state_event = "reopen"
    mr.save()
    assert mr.state == "opened"
