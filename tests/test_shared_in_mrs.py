"""The merge requests of a project shared into the group (partner/shared-lib, in the sandbox's
default world) are the gate's to judge, and GitLab's group-wide merge request listing leaves
them out. close, handoff, `freeze --scope mr:<iid>`, status and sync find them all the same,
through one lookup: the group's listing, the listing of its shared projects whose merge
requests are not disabled, and one listing of open merge requests per shared-in project (none
when there is none)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import MrRef
from tests.kit.names import LEAD, REVIEW
from tests.kit.world import Round, World

SHARED = "partner/shared-lib"
GROUP_MRS = "/api/v4/groups/100/merge_requests"
SHARED_PROJECTS = "/api/v4/groups/100/projects/shared"
PROJECT_MRS = re.compile(r"^/api/v4/projects/([^/]+)/merge_requests$")


@pytest.fixture
def shared(sandbox: RunningSandbox) -> Round:
    """A round whose merge request is in the shared-in project, claimed by the lead."""
    return Round(sandbox, project=SHARED).claim()


def listings(sandbox: RunningSandbox) -> list[str]:
    """The merge request and shared-project listings read since the last clear, in order."""
    found = []
    for r in sandbox.requests():
        if r["method"] != "GET":
            continue
        if r["path"] in (GROUP_MRS, SHARED_PROJECTS):
            found.append(r["path"].removeprefix("/api/v4/"))
        elif match := PROJECT_MRS.match(r["path"]):
            found.append(f"{match.group(1).replace('%2F', '/')} merge_requests")
    return found


def shared_listings_asked(sandbox: RunningSandbox) -> list[dict[str, list[str]]]:
    """The query of each listing of the group's shared projects since the last clear."""
    return [parse_qs(r["query"]) for r in sandbox.requests() if r["path"] == SHARED_PROJECTS]


def test_close_is_refused_while_a_shared_in_merge_request_cites_the_issue(
    shared: Round, config: Config
) -> None:
    result = shared.run(LEAD, "close", shared.issue)
    assert result.code == 1, result.err
    assert f"pairgate close: 1 open merge request(s) cite #{shared.issue}" in result.err
    assert f"pairgate merge-check --mr {shared.mr} --mr-project {SHARED}" in result.err
    assert shared.issue_state()["state"] == "opened"
    assert shared.ledger(config).holder == LEAD


def test_close_counts_each_merge_request_once_in_group_and_shared_in(
    shared: Round, sandbox: RunningSandbox
) -> None:
    in_group = World(sandbox).mr(f"Related to acme/tracker#{shared.issue}")
    sandbox.clear_requests()
    result = shared.run(LEAD, "close", shared.issue)
    assert result.code == 1
    assert f"2 open merge request(s) cite #{shared.issue}" in result.err
    refs = re.findall(r"^  (\S+!\d+): ", result.err, re.M)
    assert sorted(refs) == sorted([f"acme/app!{in_group['iid']}", f"{SHARED}!{shared.mr}"])
    # One read of each: the group's listing, its shared projects, the shared-in project's.
    assert listings(sandbox) == [
        "groups/100/merge_requests",
        "groups/100/projects/shared",
        f"{SHARED} merge_requests",
    ]
    (asked,) = shared_listings_asked(sandbox)
    assert asked["with_merge_requests_enabled"] == ["true"] and asked["simple"] == ["true"]


def test_close_is_not_let_through_when_the_shared_in_listing_cannot_be_read(
    shared: Round, sandbox: RunningSandbox
) -> None:
    """A shared-in project whose merge requests are enabled, so it is listed, but whose merge
    requests cannot be listed (a 403 the sandbox is told to give) is an error, never an empty
    list: close stops before its write."""
    shared.merge()
    assert sandbox.api("GET", "/projects/3")["merge_requests_access_level"] == "enabled"
    sandbox.fault(path=r"/projects/partner%2Fshared-lib/merge_requests$", status=403, count=10)
    sandbox.clear_requests()
    result = shared.run(LEAD, "close", shared.issue)
    assert result.code == 2, (result.code, result.err)
    assert "partner%2Fshared-lib/merge_requests" in result.err and "403" in result.err
    assert shared.issue_state()["state"] == "opened"
    assert f"{SHARED} merge_requests" in listings(sandbox)  # listed, then refused


def test_close_goes_ahead_once_the_shared_in_merge_request_has_merged(shared: Round) -> None:
    shared.merge()
    result = shared.run(LEAD, "close", shared.issue)
    assert result.code == 0, result.err
    assert shared.issue_state()["state"] == "closed"


def test_status_lists_the_shared_in_merge_request(shared: Round) -> None:
    done = shared.run(None, "status", shared.issue, "--json")
    assert done.code == 0, done.err
    mrs = json.loads(done.out)["merge_requests"]
    assert [(m["project"], m["iid"], m["state"]) for m in mrs] == [(SHARED, shared.mr, "opened")]
    text = shared.run(None, "status", shared.issue)
    assert text.code == 0, text.err
    assert f"  {SHARED}!{shared.mr} (opened) head {shared.head[:12]}: " in text.out


def test_handoff_finds_the_shared_in_merge_request_without_mr(
    shared: Round, config: Config
) -> None:
    result = shared.run(
        LEAD, "handoff", shared.issue, "--to", REVIEW, "--role", "review", "--sha", shared.head
    )
    assert result.code == 0, result.err
    assert shared.ledger(config).offer.mr == MrRef(SHARED, shared.mr)


def test_handoff_names_both_when_an_in_group_one_cites_the_issue_too(
    shared: Round, sandbox: RunningSandbox
) -> None:
    in_group = World(sandbox).mr(f"Related to acme/tracker#{shared.issue}")
    result = shared.run(
        LEAD, "handoff", shared.issue, "--to", REVIEW, "--role", "review", "--sha", shared.head
    )
    assert result.code == 1
    assert f"2 open merge requests cite #{shared.issue}; name one:" in result.err
    assert f"--mr {shared.mr} --mr-project {SHARED}" in result.err
    assert f"--mr {in_group['iid']} --mr-project acme/app" in result.err


@pytest.mark.parametrize("named", [False, True])
def test_freeze_mr_resolves_to_the_shared_in_merge_request(
    shared: Round, config: Config, named: bool
) -> None:
    scope = f"mr:{SHARED}!{shared.mr}" if named else f"mr:{shared.mr}"
    result = shared.run(LEAD, "freeze", shared.issue, "--scope", scope, "--reason", "cutting")
    assert result.code == 0, result.err
    assert f"froze mr:{SHARED}!{shared.mr} until" in result.out
    (window,) = shared.ledger(config).freezes
    assert window.scope == f"mr:{SHARED}!{shared.mr}"


def test_a_bare_mr_iid_in_both_is_ambiguous(shared: Round, sandbox: RunningSandbox) -> None:
    """acme/app's first merge request and partner/shared-lib's are both !1."""
    in_group = World(sandbox).mr(f"Related to acme/tracker#{shared.issue}")
    assert in_group["iid"] == shared.mr == 1
    result = shared.run(LEAD, "freeze", shared.issue, "--scope", "mr:1", "--reason", "cutting")
    assert result.code == 2
    assert f"--scope mr:1 is ambiguous; name one: mr:acme/app!1, mr:{SHARED}!1" in result.err


def test_sync_does_not_close_while_a_shared_in_merge_request_cites_it(
    sandbox: RunningSandbox,
) -> None:
    merged = Round(sandbox, "merged").approved()
    merged.merge()
    follow_up = World(sandbox).mr(f"acme/tracker#{merged.issue}", project=SHARED)
    result = merged.run(LEAD, "sync", merged.issue)
    assert result.code == 0, result.err
    assert f"{SHARED}!{follow_up['iid']}" in result.out and "citing it is still open" in result.out
    assert f"#{merged.issue}: not closed" in result.out


def unshared(sandbox: RunningSandbox) -> None:
    """The default world without its one share: a group with no shared-in project."""
    sandbox.api("DELETE", "/projects/3/share/100", as_user="maintainer")
    assert sandbox.api("GET", "/groups/100/projects/shared") == []


def command(round_: Round, name: str) -> tuple[str | None, list[Any]]:
    issue = round_.issue
    return {
        "close": (LEAD, ["close", issue]),
        "status": (None, ["status", issue]),
        "status --json": (None, ["status", issue, "--json"]),
        "handoff": (
            LEAD,
            ["handoff", issue, "--to", REVIEW, "--role", "review", "--sha", round_.head],
        ),
        "freeze": (LEAD, ["freeze", issue, "--scope", f"mr:{round_.mr}", "--reason", "cut"]),
    }[name]


@pytest.mark.parametrize("name", ["close", "status", "status --json", "handoff", "freeze"])
def test_no_shared_in_project_costs_one_listing_more_and_no_project_listing(
    sandbox: RunningSandbox, name: str
) -> None:
    unshared(sandbox)
    round_ = Round(sandbox).claim()
    agent, argv = command(round_, name)
    sandbox.clear_requests()
    result = round_.run(agent, *argv)
    assert result.code == (1 if name == "close" else 0), result.err
    # Before: the group's listing alone. Now one listing more, of the group's shared projects,
    # and no listing of any project's merge requests (a refused close never reaches the second
    # read it makes after its write; handoff's and freeze's writes start no listing).
    assert listings(sandbox) == ["groups/100/merge_requests", "groups/100/projects/shared"]
    assert not any(r["path"] == "/api/v4/groups/100/projects" for r in sandbox.requests())


def mrs_disabled(sandbox: RunningSandbox, project: str = SHARED) -> None:
    """The project's merge requests feature turned off, as a Maintainer turns it off."""
    level = "merge_requests_access_level"
    path = f"/projects/{project.replace('/', '%2F')}"
    assert sandbox.api("PUT", path, as_user="maintainer", json={level: "disabled"})[level] == (
        "disabled"
    )


@pytest.mark.parametrize("name", ["close", "status", "status --json", "handoff", "freeze"])
def test_a_shared_in_project_with_merge_requests_disabled_is_left_out(
    sandbox: RunningSandbox, config: Config, name: str
) -> None:
    """A docs-only project shared into the group answers 403 to the listing of its merge
    requests: asked for the shared projects whose merge requests are enabled, GitLab leaves it
    out, and every verb goes on as if it were not shared in. Its one merge request, opened while
    the feature was on and citing the issue, can no longer be merged, and counts nowhere: close
    goes ahead, handoff finds one MR to offer, and a bare mr:1 is not ambiguous."""
    round_ = Round(sandbox).claim()
    hidden = World(sandbox).mr(f"acme/tracker#{round_.issue}", project=SHARED)
    assert hidden["iid"] == round_.mr == 1
    mrs_disabled(sandbox)
    if name == "close":
        round_.merge()
    agent, argv = command(round_, name)
    sandbox.clear_requests()
    result = round_.run(agent, *argv)
    assert result.code == 0, result.err
    assert f"{SHARED} merge_requests" not in listings(sandbox)
    assert listings(sandbox)[:2] == ["groups/100/merge_requests", "groups/100/projects/shared"]
    asked = shared_listings_asked(sandbox)
    assert asked and all(q["with_merge_requests_enabled"] == ["true"] for q in asked)
    # No read refused (freeze's re-judging POST of a pipeline may be: no CI configuration here).
    refused = [r for r in sandbox.requests() if r["method"] == "GET" and r["status"] >= 400]
    assert refused == []
    assert SHARED not in result.out + result.err
    if name == "close":
        assert round_.issue_state()["state"] == "closed"
    elif name == "status --json":
        mrs = json.loads(result.out)["merge_requests"]
        assert [(m["project"], m["iid"]) for m in mrs] == [("acme/app", round_.mr)]
    elif name == "status":
        assert f"  acme/app!{round_.mr} (opened) head {round_.head[:12]}: " in result.out
    elif name == "handoff":
        assert round_.ledger(config).offer.mr == MrRef("acme/app", round_.mr)
    else:
        (window,) = round_.ledger(config).freezes
        assert window.scope == f"mr:acme/app!{round_.mr}"
