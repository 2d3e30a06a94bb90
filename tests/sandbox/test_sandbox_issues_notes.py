"""Issues, labels and notes: order, permissions, quick actions, system notes."""

from __future__ import annotations

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox


def test_default_tracking_issue(sandbox: RunningSandbox) -> None:
    issue = sandbox.gitlab().projects.get("acme/tracker").issues.get(1)
    assert (issue.iid, issue.state, issue.title) == (1, "opened", "Automation tracking issue")
    assert sandbox.request("GET", "/projects/1/issues/99").json() == {"message": "404 Not found"}


def test_create_list_and_filter_issues(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(1)
    a = project.issues.create({"title": "a", "labels": ["pair::open", "bug"]})
    b = project.issues.create({"title": "b", "labels": ["bug"]})
    b.state_event = "close"
    b.save()
    assert a.labels == ["bug", "pair::open"]  # sorted by title, not as given
    iids = lambda **kw: [i.iid for i in project.issues.list(get_all=True, **kw)]  # noqa: E731
    assert iids() == [3, 2, 1]  # state defaults to all, newest first
    assert iids(state="opened") == [2, 1] and iids(state="closed") == [3]
    assert iids(labels=["bug"]) == [3, 2] and iids(labels=["bug", "pair::open"]) == [2]
    assert iids(labels="None") == [1] and iids(labels="Any") == [3, 2]
    assert sandbox.request("GET", "/projects/1/issues", params={"state": "x"}).json() == {
        "error": "state does not have a valid value"
    }


def test_edit_labels_free_tier_keeps_both_scoped_labels(sandbox: RunningSandbox) -> None:
    issue = sandbox.gitlab().projects.get(1).issues.get(1)
    old = issue.updated_at
    sandbox.advance_clock(5)
    issue.labels = ["pair::open", "x"]
    issue.save()
    assert issue.updated_at > old
    body = sandbox.request(
        "PUT",
        "/projects/1/issues/1",
        json={"add_labels": "pair::closed", "remove_labels": "x"},
    ).json()
    assert body["labels"] == ["pair::closed", "pair::open"]


def test_premium_scoped_labels_keep_the_newest(sandbox: RunningSandbox) -> None:
    sandbox.set_options(scoped_labels="premium")
    sandbox.request("PUT", "/projects/1/issues/1", json={"labels": "pair::open,other::a"})
    body = sandbox.request(
        "PUT", "/projects/1/issues/1", json={"add_labels": "pair::closed"}
    ).json()
    assert body["labels"] == ["other::a", "pair::closed"]
    sandbox.reset()  # the switch lasts until the reset
    body = sandbox.request("PUT", "/projects/1/issues/1", json={"labels": "a::x,a::y"}).json()
    assert body["labels"] == ["a::x", "a::y"]


def test_edit_issue_errors(sandbox: RunningSandbox) -> None:
    empty = sandbox.request("PUT", "/projects/1/issues/1", json={})
    assert empty.status_code == 400 and empty.json()["error"].endswith(
        "at least one parameter must be provided"
    )
    bad = sandbox.request("PUT", "/projects/1/issues/1", json={"state_event": "open"})
    assert bad.json() == {"error": "state_event does not have a valid value"}
    missing = sandbox.request("POST", "/projects/1/issues", json={})
    assert (missing.status_code, missing.json()) == (400, {"error": "title is missing"})


def test_250_notes_come_back_in_order_across_three_pages(sandbox: RunningSandbox) -> None:
    issue = sandbox.gitlab().projects.get("acme/tracker", lazy=True).issues.get(1)
    for i in range(250):
        issue.notes.create({"body": f"note {i}"})
    pages = [issue.notes.list(sort="asc", per_page=100, page=p) for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [100, 100, 50]
    every = [n.body for page in pages for n in page]
    assert every == [f"note {i}" for i in range(250)]
    assert [n.body for n in issue.notes.list(get_all=True, per_page=100, sort="asc")] == every
    newest_first = issue.notes.list(per_page=2, get_all=False)
    assert [n.body for n in newest_first] == ["note 249", "note 248"]


def test_note_fields(sandbox: RunningSandbox) -> None:
    note = sandbox.request("POST", "/projects/1/issues/1/notes", json={"body": "hi\r\n<!-- x -->"})
    body = note.json()
    assert note.status_code == 201 and body["body"] == "hi\r\n<!-- x -->"
    assert body["author"] == {
        "id": 10,
        "username": "agents",
        "name": "Agents",
        "state": "active",
        "locked": False,
        "avatar_url": None,
        "web_url": sandbox.url + "/agents",
    }
    assert (body["system"], body["noteable_type"], body["noteable_iid"]) == (False, "Issue", 1)
    assert body["created_at"] == body["updated_at"] and body["created_at"].endswith("Z")
    again = sandbox.request("GET", f"/projects/1/issues/1/notes/{body['id']}").json()
    assert again["body"] == body["body"]
    assert sandbox.request("POST", "/projects/1/issues/1/notes", json={}).json() == {
        "error": "body is missing"
    }


def test_note_edit_and_delete_permissions(sandbox: RunningSandbox) -> None:
    note = sandbox.note(1, "mine")
    path = f"/projects/1/issues/1/notes/{note['id']}"
    sandbox.advance_clock(3)
    assert sandbox.request("PUT", path, "review_bot", json={"body": "x"}).json() == {
        "message": "403 Forbidden"
    }
    edited = sandbox.request("PUT", path, json={"body": "mine, edited"}).json()
    assert edited["body"] == "mine, edited" and edited["updated_at"] > edited["created_at"]
    assert sandbox.request("PUT", path, "maintainer", json={"body": "moderated"}).status_code == 200
    assert sandbox.request("DELETE", path, "reporter").status_code == 403
    deleted = sandbox.request("DELETE", path, "maintainer")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert sandbox.request("GET", path).json() == {"message": "404 Not found"}


def test_system_notes_are_immutable(sandbox: RunningSandbox) -> None:
    sandbox.request("PUT", "/projects/1/issues/1", json={"title": "Renamed"})
    notes = sandbox.request("GET", "/projects/1/issues/1/notes").json()
    system = [n for n in notes if n["system"]]
    assert system[0]["body"] == "changed title from **Automation tracking issue** to **Renamed**"
    path = f"/projects/1/issues/1/notes/{system[0]['id']}"
    assert sandbox.request("PUT", path, "maintainer", json={"body": "x"}).status_code == 403
    assert sandbox.request("DELETE", path, "maintainer").status_code == 403
    comments = sandbox.request(
        "GET", "/projects/1/issues/1/notes", params={"activity_filter": "only_comments"}
    ).json()
    assert comments == []


def test_close_quick_action_closes_the_issue_and_answers_202(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(1)
    response = sandbox.request("POST", "/projects/1/issues/1/notes", json={"body": "/close"})
    assert response.status_code == 202
    assert response.json() == {
        "commands_changes": {"state_event": "close"},
        "summary": ["Closed this issue."],
    }
    assert project.issues.get(1).state == "closed"
    assert sandbox.request("GET", "/projects/1/issues/1/notes").json() == []


def test_quick_actions_are_stripped_from_a_mixed_body(sandbox: RunningSandbox) -> None:
    body = 'Taking this.\n/label ~"pair::open" ~bug\n```\n/close\n```\n/unknown stays'
    note = sandbox.request("POST", "/projects/1/issues/1/notes", json={"body": body})
    assert note.status_code == 201
    assert note.json()["body"] == "Taking this.\n```\n/close\n```\n/unknown stays"
    issue = sandbox.request("GET", "/projects/1/issues/1").json()
    assert issue["labels"] == ["bug", "pair::open"] and issue["state"] == "opened"


def test_quick_actions_from_a_non_member_are_never_run(sandbox: RunningSandbox) -> None:
    outsider = sandbox.request("POST", "/projects/4/issues/1/notes", json={"body": "/close"})
    assert (outsider.status_code, outsider.json()) == (404, {"message": "404 Project Not Found"})


def test_internal_notes(sandbox: RunningSandbox) -> None:
    note = sandbox.request(
        "POST", "/projects/1/issues/1/notes", json={"body": "secret", "internal": True}
    ).json()
    assert note["internal"] is True and note["confidential"] is True
    seen = sandbox.request("GET", "/projects/1/issues/1/notes", "reporter").json()
    assert [n["body"] for n in seen] == ["secret"]


def test_python_gitlab_sees_gitlab_errors(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(1, lazy=True)
    with pytest.raises(gitlab.GitlabGetError) as error:
        project.issues.get(42)
    assert error.value.response_code == 404 and error.value.error_message == "404 Not found"
