"""read_last_edited: GitLab's lastEditedAt for the notes asked about, through GraphQL against the
sandbox, newest page first and only as far back as needed; fail closed on what it cannot see."""

from __future__ import annotations

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLabError, gitlab_from_env
from pairgate.standalone.reads import note_gid_number, read_last_edited
from tests.kit.run import agent_env


def graphql_posts(sandbox: RunningSandbox) -> int:
    return sum(1 for r in sandbox.requests() if r["path"] == "/api/graphql")


def test_it_pages_back_only_as_far_as_the_notes_asked_about(
    sandbox: RunningSandbox, config: Config
) -> None:
    issue = int(sandbox.create_issue("busy")["iid"])
    early = sandbox.note(issue, "an early note")["id"]
    for n in range(150):
        sandbox.note(issue, f"comment {n}")
    late = sandbox.note(issue, "a late note")["id"]
    path = f"/projects/acme%2Ftracker/issues/{issue}/notes/{early}"
    sandbox.api("PUT", path, json={"body": "an early note, edited"})
    client = gitlab_from_env(config, agent_env(sandbox))
    sandbox.clear_requests()
    assert read_last_edited(client, config, {issue: [late]}) == {late: None}
    assert graphql_posts(sandbox) == 1  # the newest 100 hold it
    sandbox.clear_requests()
    found = read_last_edited(client, config, {issue: [early, late]})
    assert found[late] is None and found[early] is not None
    assert graphql_posts(sandbox) == 2


def test_a_note_gitlab_does_not_list_fails_closed(sandbox: RunningSandbox, config: Config) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    sandbox.note(issue, "x")
    client = gitlab_from_env(config, agent_env(sandbox))
    with pytest.raises(GitLabError, match=f"does not list note 999999 of acme/tracker#{issue}"):
        read_last_edited(client, config, {issue: [999999]})
    with pytest.raises(GitLabError, match="does not show acme/tracker#4040 to this token"):
        read_last_edited(client, config, {4040: [1]})


def test_nothing_asked_is_nothing_read(sandbox: RunningSandbox, config: Config) -> None:
    client = gitlab_from_env(config, agent_env(sandbox))
    sandbox.clear_requests()
    assert read_last_edited(client, config, {}) == {}
    assert graphql_posts(sandbox) == 0


@pytest.mark.parametrize(
    ("gid", "number"),
    [
        ("gid://gitlab/Note/123", 123),
        ("gid://gitlab/DiscussionNote/7", 7),
        ("gid://gitlab/Issue/123", None),
        ("gid://gitlab/Note/x", None),
        ("123", None),
        (None, None),
    ],
)
def test_note_global_ids(gid: object, number: int | None) -> None:
    assert note_gid_number(gid) == number
