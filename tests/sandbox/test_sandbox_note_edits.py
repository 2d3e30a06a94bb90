"""Issue notes: an edit that GitLab records (GraphQL lastEditedAt) and an emoji reaction that
only moves updated_at (GitLab's AwardEmoji callback bumps it; nothing else changes)."""

from __future__ import annotations

from pairgate.sandbox.testing import RunningSandbox

NOTES = "/projects/acme%2Ftracker/issues/{issue}/notes"


def _edited_at(sandbox: RunningSandbox, issue: int, note: int) -> str | None:
    return next(n for n in sandbox.server.app.world.notes.values() if n.id == note).last_edited_at


def test_a_body_change_is_an_edit_and_the_same_body_is_not(sandbox: RunningSandbox) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    note = sandbox.note(issue, "first")
    path = NOTES.format(issue=issue) + f"/{note['id']}"
    sandbox.advance_clock(5)
    same = sandbox.api("PUT", path, json={"body": "first"})
    assert same["updated_at"] > note["created_at"]
    assert _edited_at(sandbox, issue, note["id"]) is None
    sandbox.advance_clock(5)
    changed = sandbox.api("PUT", path, json={"body": "second"}, as_user="maintainer")
    assert changed["body"] == "second" and "last_edited_at" not in changed  # REST has no field
    assert _edited_at(sandbox, issue, note["id"]) == changed["updated_at"]


def test_an_emoji_reaction_moves_updated_at_and_is_no_edit(sandbox: RunningSandbox) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    note = sandbox.note(issue, "approve this")
    awards = NOTES.format(issue=issue) + f"/{note['id']}/award_emoji"
    sandbox.advance_clock(5)
    award = sandbox.api("POST", awards, json={"name": "thumbsup"}, as_user="maintainer")
    assert (award["name"], award["awardable_type"], award["user"]["username"]) == (
        "thumbsup",
        "Note",
        "maintainer",
    )
    after = sandbox.api("GET", NOTES.format(issue=issue) + f"/{note['id']}")
    assert after["updated_at"] > after["created_at"] and after["body"] == "approve this"
    assert _edited_at(sandbox, issue, note["id"]) is None
    assert [a["name"] for a in sandbox.api("GET", awards)] == ["thumbsup"]
    again = sandbox.request("POST", awards, "maintainer", json={"name": "thumbsup"})
    assert again.status_code == 404
