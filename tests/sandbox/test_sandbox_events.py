"""The history the audit reads, through python-gitlab: the first-parent commits list with its
time window (doc/api/commits.md), a project's push events (doc/api/events.md, action=pushed,
push_data) and an issue's resource label events (doc/api/resource_label_events.md)."""

from __future__ import annotations

from typing import Any

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox


def _app(sandbox: RunningSandbox) -> Any:
    return gitlab.Gitlab(sandbox.url, private_token=sandbox.token("maintainer")).projects.get(
        "acme/app"
    )


def test_first_parent_walks_only_first_parents_inside_the_window(sandbox: RunningSandbox) -> None:
    sandbox.commit("feature", {"f.txt": "f\n"})
    mr = sandbox.create_mr("feature")
    sandbox.api(
        "PUT", f"/projects/acme%2Fapp/merge_requests/{mr['iid']}/merge", as_user="maintainer"
    )
    app = _app(sandbox)
    merged = app.mergerequests.get(mr["iid"])
    full = [c.id for c in app.commits.list(ref_name="main", get_all=True)]
    first = [c.id for c in app.commits.list(ref_name="main", first_parent=True, get_all=True)]
    assert merged.sha in full and merged.sha not in first
    assert first[0] == merged.merge_commit_sha
    later = sandbox.advance_clock(3600)
    pushed = sandbox.commit("main", {"direct.txt": "d\n"})
    windowed = app.commits.list(ref_name="main", first_parent=True, since=later, get_all=True)
    assert [c.id for c in windowed] == [pushed["id"]]
    before = app.commits.list(ref_name="main", first_parent=True, until=later, get_all=True)
    assert pushed["id"] not in [c.id for c in before] and first[0] in [c.id for c in before]
    with pytest.raises(gitlab.GitlabListError):
        app.commits.list(ref_name="main", since="yesterday", get_all=True)


def test_a_push_is_listed_with_who_pushed_it(sandbox: RunningSandbox) -> None:
    pushed = sandbox.commit("main", {"direct.txt": "d\n"}, message="Straight to main")
    events = _app(sandbox).events.list(action="pushed", get_all=True)
    newest = events[0]
    assert newest.action_name == "pushed to"
    assert newest.author_username == "maintainer" and newest.author["username"] == "maintainer"
    data = newest.push_data
    assert data["commit_to"] == pushed["id"] and data["ref"] == "main"
    assert data["commit_from"] == pushed["parent_ids"][0] and data["commit_count"] == 1
    assert data["action"] == "pushed" and data["ref_type"] == "branch"
    assert data["commit_title"] == "Straight to main"
    created = sandbox.commit("topic", {"t.txt": "t\n"})
    newest = _app(sandbox).events.list(action="pushed", get_all=True)[0]
    assert newest.action_name == "pushed new" and newest.push_data["commit_from"] is None
    assert (
        newest.push_data["commit_to"] == created["id"] and newest.push_data["action"] == "created"
    )
    assert _app(sandbox).events.list(action="pushed", after="2999-01-01", get_all=True) == []
    with pytest.raises(gitlab.GitlabListError):
        _app(sandbox).events.list(action="commented", get_all=True)


def test_label_changes_on_an_issue_are_listed_in_order(sandbox: RunningSandbox) -> None:
    gl = gitlab.Gitlab(sandbox.url, private_token=sandbox.token("agents"))
    issue = gl.projects.get("acme/tracker").issues.create(
        {"title": "Freeze", "labels": "pairgate::frozen"}
    )
    issue.labels = ["agent::lead"]
    issue.save()
    sandbox.note(issue.iid, "/label ~pairgate::frozen")
    events = issue.resourcelabelevents.list(get_all=True)
    seen = [(e.action, e.label["name"]) for e in events]
    assert seen == [
        ("add", "pairgate::frozen"),
        ("add", "agent::lead"),
        ("remove", "pairgate::frozen"),
        ("add", "pairgate::frozen"),
    ]
    assert events[0].user["username"] == "agents" and events[0].resource_type == "Issue"
    assert events[0].resource_id == issue.id and events[0].created_at
