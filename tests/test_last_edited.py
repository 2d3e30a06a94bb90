"""read_last_edited: GitLab's lastEditedAt for the notes asked about, through GraphQL against the
sandbox, newest page first and only as far back as needed; fail closed on what it cannot see."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from pairgate import tracker
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.audit import AUDIT_WORKERS
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab, GitLabError
from pairgate.standalone.gitlab_env import gitlab_from_env
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


class _MeetingClient:
    """The real client, whose GraphQL calls each wait until ``parties`` of them are under way
    at once (a barrier): read one at a time, the first would wait alone and fail."""

    def __init__(self, client: GitLab, parties: int) -> None:
        self._client = client
        self._barrier = threading.Barrier(parties, timeout=10)

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        self._barrier.wait()
        return self._client.graphql(query, variables)


def test_the_audit_reads_the_issues_concurrently(sandbox: RunningSandbox, config: Config) -> None:
    issues = [int(sandbox.create_issue(f"issue {n}")["iid"]) for n in range(4)]
    notes = {issue: [sandbox.note(issue, "a note")["id"]] for issue in issues}
    edited = notes[issues[2]][0]
    sandbox.api(
        "PUT", f"/projects/acme%2Ftracker/issues/{issues[2]}/notes/{edited}", json={"body": "x"}
    )
    client = gitlab_from_env(config, agent_env(sandbox))
    sequential = read_last_edited(client, config, notes)
    assert [n for n, at in sequential.items() if at is not None] == [edited]
    meeting = _MeetingClient(client, parties=4)
    assert read_last_edited(meeting, config, notes, workers=AUDIT_WORKERS) == sequential  # type: ignore[arg-type]
    assert AUDIT_WORKERS == tracker.WORKERS  # bounded like the board's readers


def test_concurrent_reads_fail_closed_on_the_first_issue_that_fails(
    sandbox: RunningSandbox, config: Config
) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    note = sandbox.note(issue, "x")["id"]
    client = gitlab_from_env(config, agent_env(sandbox))
    wanted = {issue: [note], 4040: [1], 4041: [2]}
    with pytest.raises(GitLabError, match="does not show acme/tracker#4040 to this token"):
        read_last_edited(client, config, wanted, workers=3)
