"""Every ledger write that can turn a verdict from allowed to refused starts a new merge request
pipeline for each open merge request it reaches, so GitLab's "Pipelines must succeed" waits for
the gate to judge again instead of trusting the last green pipeline. These cases run on the
sandbox without a runner: which pipelines each verb asks for, what it says, and how loudly it
says that one could not start. tests/test_ci_door.py shows the merges refused on the runner."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pairgate.standalone.config import Config
from pairgate.verbs.pipelines import BATCH
from tests.kit.names import LEAD, REVIEW
from tests.kit.world import Round, World

MERGE_CHECK = "validate-mr-merge-check"
ASKED = re.compile(r"^/api/v4/projects/(.+)/merge_requests/(\d+)/pipelines$")


@pytest.fixture
def world(sandbox: Any) -> Round:
    """acme/app's merge request pipelines get the gate's job (GitLab makes one when asked)."""
    sandbox.set_ci("acme/app", [{"name": MERGE_CHECK}])
    return Round(sandbox)


def asked(world: Round) -> list[str]:
    """The merge requests a pipeline was asked for since the last clear, in order: each
    affected one twice, its hold before the write and its judging pipeline after it."""
    found = []
    for r in world.sb.requests():
        match = ASKED.match(r["path"])
        if r["method"] == "POST" and match:
            found.append(f"{match.group(1).replace('%2F', '/')}!{match.group(2)}")
    return found


def started(world: Round, what: str) -> str:
    """The line a verb prints for the pipeline it started for the round's merge request."""
    (pipeline,) = [
        p
        for p in world.sb.api("GET", f"{world.mr_path}/pipelines")
        if p["source"] == "merge_request_event"
    ][:1]
    return (
        f"started merge request pipeline {pipeline['id']} of acme/app!{world.mr} at "
        f"{world.head[:12]}, so the gate judges it again after {what} and a merge waits for "
        f"that verdict"
    )


def note_of(result: Any, pattern: str) -> int:
    found = re.search(pattern, result.out)
    assert found, result.out
    return int(found.group(1))


def other_mr(world: Round, cites: int | None) -> str:
    """Another open merge request of acme/app, citing ``cites`` (None: no issue)."""
    text = "" if cites is None else f"Related to acme/tracker#{cites}"
    return f"acme/app!{World(world.sb).mr(text)['iid']}"


def test_withdraw_starts_a_pipeline_for_the_approved_merge_request(
    world: Round, config: Config
) -> None:
    world.approved()
    other_mr(world, world.issue)  # cites the issue, but the approval names the round's MR
    approval = world.ledger(config).approvals[-1].note_id
    world.sb.clear_requests()
    result = world.run(REVIEW, "withdraw", world.issue, "--approval", approval, "--reason", "no")
    assert result.code == 0, result.err
    assert asked(world) == [f"acme/app!{world.mr}"] * 2
    withdrawal = note_of(result, r"\(note (\d+)\); no door counts it now")
    assert started(world, f"the withdrawal (note {withdrawal})") in result.out
    (pipeline,) = world.sb.api("GET", f"{world.mr_path}/pipelines")[:1]
    made = world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{pipeline['id']}")
    assert made["user"]["username"] == "agents"  # the agent's own write token


def test_an_mr_freeze_starts_one_for_the_merge_request_it_names(world: Round) -> None:
    world.claim()
    other_mr(world, world.issue)
    world.sb.clear_requests()
    scope = f"mr:{world.mr}"
    result = world.run(LEAD, "freeze", world.issue, "--scope", scope, "--reason", "cutting")
    assert result.code == 0, result.err
    assert asked(world) == [f"acme/app!{world.mr}"] * 2
    note = note_of(result, r"note (\d+) on #")
    assert started(world, f"the freeze (note {note})") in result.out


def test_an_issue_freeze_starts_one_for_each_merge_request_citing_the_issue(
    world: Round,
) -> None:
    world.claim()
    citing = other_mr(world, world.issue)
    other_mr(world, None)  # cites nothing: the window does not reach it
    world.sb.clear_requests()
    result = world.run(LEAD, "freeze", world.issue, "--scope", "issue", "--reason", "cutting")
    assert result.code == 0, result.err
    assert sorted(asked(world)) == sorted([f"acme/app!{world.mr}", citing] * 2)


def test_a_board_freeze_starts_one_for_every_open_merge_request_in_batches(
    world: Round,
) -> None:
    world.claim()
    others = [other_mr(world, None) for _ in range(BATCH + 1)]  # more than one batch
    world.sb.clear_requests()
    result = world.run(LEAD, "freeze", world.issue, "--scope", "board", "--reason", "release")
    assert result.code == 0, result.err
    assert sorted(asked(world)) == sorted([f"acme/app!{world.mr}", *others] * 2)
    assert (
        len(re.findall(r"^started merge request pipeline \d+ of ", result.out, re.M))
        == len(others) + 1
    )


def test_release_starts_one_for_each_merge_request_citing_the_issue(world: Round) -> None:
    world.approved()
    world.sb.clear_requests()
    result = world.run(LEAD, "release", world.issue)
    assert result.code == 0, result.err
    assert asked(world) == [f"acme/app!{world.mr}"] * 2
    note = note_of(result, r"released #\d+ \(note (\d+)\)")
    assert started(world, f"the release (note {note})") in result.out


def test_decline_starts_one(world: Round) -> None:
    world.claim().offer().accept().approve()  # the approval's offer back to the lead is out
    world.sb.clear_requests()
    result = world.run(LEAD, "decline", world.issue)
    assert result.code == 0, result.err
    assert asked(world) == [f"acme/app!{world.mr}"] * 2
    note = note_of(result, r"\(note (\d+)\); \S+ keeps")
    assert started(world, f"the decline (note {note})") in result.out


def test_a_superseding_handoff_starts_one_and_a_first_offer_none(
    world: Round, config: Config
) -> None:
    world.claim()
    world.sb.clear_requests()
    world.offer()
    assert asked(world) == []  # a first offer takes nothing away
    offer = world.ledger(config).offer
    assert offer is not None
    result = world.run(
        LEAD,
        *("handoff", world.issue, "--to", REVIEW, "--role", "review", "--sha", world.head),
        *("--mr", world.mr, "--mr-project", "acme/app", "--supersede", offer.note_id),
    )
    assert result.code == 0, result.err
    assert asked(world) == [f"acme/app!{world.mr}"] * 2
    note = note_of(result, r"\(note (\d+)\)\. ")
    assert started(world, f"the superseding handoff (note {note})") in result.out


def test_close_looks_again_and_says_when_no_merge_request_is_affected(sandbox: Any) -> None:
    issue = World(sandbox).issue()
    lead = Round.__new__(Round)
    lead.__dict__.update({"sb": sandbox, "issue": issue, "state": None, "store_url": None})
    lead.clock = None
    lead.claim()
    sandbox.clear_requests()
    result = lead.run(LEAD, "close", issue)
    assert result.code == 0, result.err
    note = note_of(result, r"closed #\d+ \(note (\d+)\)")
    assert (
        f"No open merge request is affected by the close (note {note}): no pipeline to start."
    ) in result.out
    listed = [r for r in sandbox.requests() if r["path"].endswith("/groups/100/merge_requests")]
    assert len(listed) == 2  # the refusal's read, and the read after the write


def test_a_pipeline_gitlab_refuses_is_said_loudly_and_the_write_stands(
    world: Round, config: Config
) -> None:
    world.approved()
    approval = world.ledger(config).approvals[-1].note_id
    # the hold before the write and the judging pipeline after it
    world.sb.fault(method="POST", path=r"/merge_requests/\d+/pipelines$", status=403, count=2)
    result = world.run(REVIEW, "withdraw", world.issue, "--approval", approval, "--reason", "no")
    assert result.code == 2
    withdrawal = note_of(result, r"\(note (\d+)\); no door counts it now")
    warning = next(x for x in result.err.splitlines() if x.startswith("WARNING: "))
    assert warning.startswith(
        f"WARNING: the withdrawal (note {withdrawal}) stands, but GitLab started NO new merge "
        f"request pipeline of acme/app!{world.mr} ("
    )
    assert warning.endswith(
        'Its last pipeline may still be green, and with "Pipelines must succeed" GitLab merges '
        "on that old verdict until the gate runs again. Start one now: glab api --method POST "
        f"projects/acme%2Fapp/merge_requests/{world.mr}/pipelines"
    )
    assert world.ledger(config).approvals[-1].withdrawn_by == withdrawal
    assert "removed the review bot's approval" in result.out  # the rest of the verb ran


def test_a_lost_answer_says_the_pipeline_may_have_started(world: Round) -> None:
    world.approved()
    world.sb.fault(method="POST", path=r"/merge_requests/\d+/pipelines$", status=502, count=2)
    result = world.run(LEAD, "release", world.issue)
    assert result.code == 2
    assert "It may have started all the same: look at the merge request's pipelines first." in (
        result.err
    )


def test_a_project_without_a_merge_request_job_is_said_and_not_an_error(sandbox: Any) -> None:
    world = Round(sandbox)  # acme/app has no CI configuration: GitLab answers 405
    world.claim()
    result = world.run(LEAD, "release", world.issue)
    assert result.code == 0, result.err
    assert (
        f"warning: no merge request pipeline of acme/app!{world.mr} started after the release "
        "(note "
    ) in result.err
    assert "the project's CI has no merge request job" in result.err
    assert "WARNING" not in result.err


def test_a_merge_request_of_a_shared_in_project_is_reached_too(world: Round) -> None:
    """partner/shared-lib is shared into acme, so the gate judges its merge requests; GitLab's
    group-wide listing leaves them out, and the re-judging reads them apart."""
    world.sb.set_ci("partner/shared-lib", [{"name": MERGE_CHECK}])
    shared = World(world.sb).mr(
        f"Related to acme/tracker#{world.issue}", project="partner/shared-lib"
    )
    world.approved()
    world.sb.clear_requests()
    result = world.run(LEAD, "release", world.issue)
    assert result.code == 0, result.err
    assert sorted(asked(world)) == sorted(
        [f"acme/app!{world.mr}", f"partner/shared-lib!{shared['iid']}"] * 2
    )


def test_the_merge_waits_for_the_new_pipeline(world: Round) -> None:
    """With "Pipelines must succeed", the approval's green pipeline lets the merge through
    until the write; the pipeline the write starts is the head pipeline now, and the merge
    waits for it (GitLab's 405 while it runs)."""
    world.sb.settings(only_allow_merge_if_pipeline_succeeds=True)
    world.approved()
    (green,) = world.sb.api("GET", f"{world.mr_path}/pipelines")
    (job,) = world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{green['id']}/jobs")
    world.sb.set_job(job["id"], "success")
    mr = world.sb.api("GET", world.mr_path)
    assert mr["detailed_merge_status"] == "mergeable", mr["detailed_merge_status"]
    assert world.run(LEAD, "release", world.issue).code == 0
    mr = world.sb.api("GET", world.mr_path)
    assert mr["head_pipeline"]["id"] != green["id"]
    assert mr["detailed_merge_status"] == "ci_still_running"
    merge = world.sb.request(
        "PUT", f"{world.mr_path}/merge", "maintainer", json={"sha": world.head}
    )
    assert (merge.status_code, merge.json()) == (405, {"message": "405 Method Not Allowed"})
