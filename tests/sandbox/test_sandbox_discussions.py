"""Discussions on merge requests and issues, note edits touching what they are on, and the
``updated_after`` / ``updated_before`` window on the listings a watcher polls."""

from __future__ import annotations

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox

MR = "/projects/acme%2Fapp/merge_requests/1"


@pytest.fixture
def mr(sandbox: RunningSandbox) -> dict:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"})
    return sandbox.create_mr("feature", title="Add app", description="acme/tracker#1")


def test_a_thread_and_a_lone_note_through_python_gitlab(sandbox: RunningSandbox, mr: dict) -> None:
    project = sandbox.gitlab("review_bot").projects.get("acme/app")
    remote = project.mergerequests.get(mr["iid"])
    lone = remote.notes.create({"body": "a lone comment"})
    thread = remote.discussions.create({"body": "please rename x"})
    reply = thread.notes.create({"body": "and y"})
    listed = remote.discussions.list(get_all=True)
    assert [d.id for d in listed] == [d.id for d in listed if len(d.id) == 40]
    assert [(d.individual_note, [n["body"] for n in d.attributes["notes"]]) for d in listed] == [
        (True, ["a lone comment"]),
        (False, ["please rename x", "and y"]),
    ]
    first, second = listed[1].attributes["notes"]
    assert (first["type"], first["resolvable"], first["resolved"]) == (
        "DiscussionNote",
        True,
        False,
    )
    assert second["id"] == reply.id and second["type"] == "DiscussionNote"
    assert remote.discussions.get(thread.id).attributes["notes"][1]["body"] == "and y"
    # The lone note stays a lone note in the notes listing: same notes, flat.
    flat = sandbox.api("GET", f"{MR}/notes", params={"sort": "asc"})
    assert [n["id"] for n in flat] == [lone.id, first["id"], reply.id]
    assert flat[0]["type"] is None and flat[0]["resolvable"] is False


def test_a_reply_turns_a_lone_note_into_a_thread(sandbox: RunningSandbox, mr: dict) -> None:
    lone = sandbox.api("POST", f"{MR}/notes", json={"body": "lone"})
    (discussion,) = sandbox.api("GET", f"{MR}/discussions")
    assert discussion["individual_note"] is True
    sandbox.api("POST", f"{MR}/discussions/{discussion['id']}/notes", json={"body": "reply"})
    (after,) = sandbox.api("GET", f"{MR}/discussions")
    assert after["id"] == discussion["id"] and after["individual_note"] is False
    assert after["notes"][0]["id"] == lone["id"]
    assert [n["type"] for n in after["notes"]] == ["DiscussionNote", "DiscussionNote"]


def test_discussion_errors(sandbox: RunningSandbox, mr: dict) -> None:
    missing = sandbox.request("GET", f"{MR}/discussions/{'0' * 40}")
    assert (missing.status_code, missing.json()) == (404, {"message": "404 Discussion Not Found"})
    reply = sandbox.request("POST", f"{MR}/discussions/{'0' * 40}/notes", json={"body": "x"})
    assert reply.status_code == 404
    assert sandbox.request("POST", f"{MR}/discussions", json={}).json() == {
        "error": "body is missing"
    }
    sandbox.request("PUT", MR, json={"title": "Renamed"})  # a system note: not a thread
    (system,) = sandbox.api("GET", f"{MR}/discussions")
    refused = sandbox.request("POST", f"{MR}/discussions/{system['id']}/notes", json={"body": "x"})
    assert (refused.status_code, refused.json()) == (
        400,
        {"message": "400 Bad request - Discussion can not be replied to."},
    )
    assert sandbox.request("GET", f"{MR}/discussions", "reporter").status_code == 200


def test_issue_discussions_and_a_missing_one_in_python_gitlab(sandbox: RunningSandbox) -> None:
    sandbox.api("POST", "/projects/1/issues/1/notes", json={"body": "secret", "internal": True})
    sandbox.api("POST", "/projects/1/issues/1/discussions", json={"body": "open"})
    seen = sandbox.api("GET", "/projects/1/issues/1/discussions", as_user="reporter")
    assert [d["notes"][0]["body"] for d in seen] == ["secret", "open"]  # Reporters read internal
    assert seen[0]["notes"][0]["internal"] is True and seen[1]["individual_note"] is False
    with pytest.raises(gitlab.GitlabGetError):
        sandbox.gitlab().projects.get(1).issues.get(1).discussions.get("f" * 40)


def test_editing_a_note_touches_the_merge_request_and_deleting_does_not(
    sandbox: RunningSandbox, mr: dict
) -> None:
    note = sandbox.api("POST", f"{MR}/notes", json={"body": "first"}, as_user="review_bot")
    touched = sandbox.api("GET", MR)["updated_at"]
    assert touched == note["created_at"]
    sandbox.advance_clock(5)
    edited = sandbox.api(
        "PUT", f"{MR}/notes/{note['id']}", json={"body": "second"}, as_user="review_bot"
    )
    assert sandbox.api("GET", MR)["updated_at"] == edited["updated_at"] > touched
    sandbox.advance_clock(5)
    sandbox.api("DELETE", f"{MR}/notes/{note['id']}", as_user="review_bot")
    assert sandbox.api("GET", MR)["updated_at"] == edited["updated_at"]


def test_updated_after_and_before_on_the_listings(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.commit("other", {"b.txt": "b\n"})
    sandbox.create_mr("other", title="Other")
    sandbox.advance_clock(60)
    middle = sandbox.advance_clock(0)
    sandbox.advance_clock(60)
    sandbox.api("POST", f"{MR}/notes", json={"body": "moves !1"})
    sandbox.create_issue("new issue")
    listed = sandbox.api(
        "GET", "/groups/100/merge_requests", params={"updated_after": middle, "state": "all"}
    )
    assert [m["iid"] for m in listed] == [1]
    before = sandbox.api("GET", "/groups/100/merge_requests", params={"updated_before": middle})
    assert [m["iid"] for m in before] == [2]
    project = sandbox.api("GET", "/projects/2/merge_requests", params={"updated_after": middle})
    assert [m["iid"] for m in project] == [1]
    issues = sandbox.api("GET", "/projects/1/issues", params={"updated_after": middle})
    assert [i["title"] for i in issues] == ["new issue"]
    # Inclusive at both ends (GitLab's gteq / lteq), and a time without a zone is UTC.
    exact = listed[0]["updated_at"]
    assert len(sandbox.api("GET", MR[:-2], params={"updated_after": exact})) == 1
    naive = exact.removesuffix("Z")
    assert len(sandbox.api("GET", MR[:-2], params={"updated_before": naive})) == 2
    bad = sandbox.request("GET", "/groups/100/merge_requests", params={"updated_after": "soon"})
    assert (bad.status_code, bad.json()) == (400, {"error": "updated_after is invalid"})


def test_pipelines_by_update_time(sandbox: RunningSandbox, mr: dict) -> None:
    first = sandbox.pipeline("acme/app", "feature", [{"name": "test", "status": "running"}])
    second = sandbox.pipeline("acme/app", "feature", [{"name": "test", "status": "running"}])
    sandbox.advance_clock(60)
    middle = sandbox.advance_clock(0)
    sandbox.advance_clock(60)
    sandbox.control(
        "PUT", f"pipelines/{first['id']}", json={"jobs": [{"name": "test", "status": "failed"}]}
    )
    path = "/projects/acme%2Fapp/pipelines"
    changed = sandbox.api("GET", path, params={"updated_after": middle})
    assert [(p["id"], p["status"]) for p in changed] == [(first["id"], "failed")]
    by_update = sandbox.api("GET", path, params={"order_by": "updated_at", "sort": "desc"})
    assert [p["id"] for p in by_update] == [first["id"], second["id"]]
    assert sandbox.request("GET", path, params={"order_by": "x"}).json() == {
        "error": "order_by does not have a valid value"
    }


def test_a_thread_in_the_diff_through_python_gitlab(sandbox: RunningSandbox, mr: dict) -> None:
    """A DiffNote (doc/api/discussions.md, "Create a new thread in the merge request diff"): its
    position comes back as GitLab's Position entity, and a reply keeps it."""
    project = sandbox.gitlab("review_bot").projects.get("acme/app")
    remote = project.mergerequests.get(mr["iid"])
    refs = remote.diff_refs
    position = {
        "base_sha": refs["base_sha"],
        "start_sha": refs["start_sha"],
        "head_sha": refs["head_sha"],
        "position_type": "text",
        "new_path": "src/app.py",
        "new_line": 1,
    }
    thread = remote.discussions.create({"body": "why print?", "position": position})
    thread.notes.create({"body": "and here"})
    (listed,) = remote.discussions.list(get_all=True)
    first, reply = listed.attributes["notes"]
    assert (first["type"], first["resolvable"], reply["type"]) == ("DiffNote", True, "DiffNote")
    assert (
        first["position"]
        == reply["position"]
        == {
            **position,
            "old_path": "src/app.py",
            "old_line": None,
            "line_range": None,
        }
    )
    # Form fields work as well; a position without its SHAs is refused as GitLab does.
    form = sandbox.request(
        "POST",
        f"{MR}/discussions",
        data={"body": "x", **{f"position[{k}]": v for k, v in position.items()}},
    )
    assert form.status_code == 201 and form.json()["notes"][0]["position"]["new_line"] == 1
    bad = sandbox.request(
        "POST", f"{MR}/discussions", json={"body": "x", "position": {"position_type": "text"}}
    )
    assert (bad.status_code, bad.json()) == (400, {"error": "position[base_sha] is missing"})
