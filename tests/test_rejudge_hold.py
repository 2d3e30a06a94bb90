"""The hold before a ledger write that can turn a verdict to refused: a merge request pipeline
started BEFORE the note, so that GitLab's "Pipelines must succeed" has a pending head pipeline
while the note lands, then the judging pipeline after the note, then the hold cancelled. On the
sandbox without a runner, read from its request log; tests/test_rejudge.py has what each verb
asks for and says, tests/test_ci_door.py the merges refused on the runner."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.tracker import read_mr
from pairgate.verbs.pipelines import holding, rejudge
from pairgate.verbs.turn import begin, write
from tests.kit.names import LEAD, REVIEW
from tests.kit.run import agent_env
from tests.kit.world import Round

MERGE_CHECK = "validate-mr-merge-check"
PIPELINES = re.compile(r"/merge_requests/\d+/pipelines$")
NOTES = re.compile(r"/issues/\d+/notes$")
CANCEL = re.compile(r"/pipelines/(\d+)/cancel$")


@pytest.fixture
def world(sandbox: Any) -> Round:
    sandbox.set_ci("acme/app", [{"name": MERGE_CHECK}])
    return Round(sandbox)


def writes(world: Round) -> list[str]:
    """The writes since the last clear, in order, as pipeline / note / cancel <id>."""
    found = []
    for r in world.sb.requests():
        if r["method"] != "POST":
            continue
        if PIPELINES.search(r["path"]):
            found.append("pipeline")
        elif NOTES.search(r["path"]):
            found.append("note")
        elif match := CANCEL.search(r["path"]):
            found.append(f"cancel {match.group(1)}")
    return found


def mr_pipelines(world: Round) -> list[dict[str, Any]]:
    """The round's merge request pipelines, newest first."""
    listed = world.sb.api("GET", f"{world.mr_path}/pipelines")
    return [p for p in listed if p["source"] == "merge_request_event"]


def ready(world: Round, fault: dict[str, Any] | None) -> None:
    """The log cleared (and ``fault`` set) once the verb's round is set up, just before it."""
    world.sb.clear_requests()
    if fault:
        world.sb.fault(**fault)


def withdraw(world: Round, config: Config, fault: dict[str, Any] | None = None) -> Any:
    world.approved()
    approval = world.ledger(config).approvals[-1].note_id
    ready(world, fault)
    return world.run(REVIEW, "withdraw", world.issue, "--approval", approval, "--reason", "no")


def release(world: Round, config: Config, fault: dict[str, Any] | None = None) -> Any:
    world.approved()
    ready(world, fault)
    return world.run(LEAD, "release", world.issue)


def freeze(world: Round, config: Config, fault: dict[str, Any] | None = None) -> Any:
    world.claim()
    ready(world, fault)
    scope = f"mr:{world.mr}"
    return world.run(LEAD, "freeze", world.issue, "--scope", scope, "--reason", "cutting")


VERBS = {"withdraw": withdraw, "release": release, "freeze": freeze}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_hold_starts_before_the_note_and_is_cancelled_after_the_judging_pipeline(
    world: Round, config: Config, verb: str
) -> None:
    result = VERBS[verb](world, config)
    assert result.code == 0, result.err
    judging, hold = mr_pipelines(world)[:2]
    assert writes(world) == ["pipeline", "note", "pipeline", f"cancel {hold['id']}"]
    assert world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{hold['id']}")["status"] == (
        "canceled"
    )
    head = world.sb.api("GET", world.mr_path)["head_pipeline"]
    assert (head["id"], head["status"]) == (judging["id"], "pending")
    line = next(x for x in result.out.splitlines() if x.startswith("started merge request"))
    assert line.startswith(f"started merge request pipeline {judging['id']} of acme/app!")
    assert line.endswith(
        f"a merge waits for that verdict (pipeline {hold['id']}, started before it, held the "
        "merge meanwhile)"
    )
    assert "hold pipeline" not in result.err


@pytest.mark.parametrize("status", [405, 500])
@pytest.mark.parametrize("verb", ["withdraw", "release"])
def test_a_hold_gitlab_refuses_leaves_the_write_and_the_judging_pipeline_as_they_were(
    world: Round, config: Config, verb: str, status: int
) -> None:
    """405 (no merge request job) or any error: the write is what was asked for."""
    fault = {"method": "POST", "path": PIPELINES.pattern, "status": status, "count": 1}
    result = VERBS[verb](world, config, fault)
    assert result.code == 0, result.err
    assert writes(world) == ["pipeline", "note", "pipeline"]  # no hold to cancel
    (judging,) = mr_pipelines(world)[:1]
    line = next(x for x in result.out.splitlines() if x.startswith("started merge request"))
    assert line.startswith(f"started merge request pipeline {judging['id']} of acme/app!")
    assert line.endswith("and a merge waits for that verdict")
    assert "warning" not in result.err.lower() and "hold pipeline" not in result.err


def test_a_hold_that_cannot_be_cancelled_is_a_quiet_note(world: Round, config: Config) -> None:
    result = release(world, config, {"method": "POST", "path": CANCEL.pattern, "status": 500})
    assert result.code == 0, result.err
    hold = mr_pipelines(world)[1]
    (note,) = [x for x in result.err.splitlines() if "hold pipeline" in x]
    assert note.startswith(
        f"note: the hold pipeline {hold['id']} of acme/app!{world.mr} was not cancelled ("
    )
    assert "500 Internal Server Error" in note
    assert note.endswith(
        "); its gate jobs only judge the ledger once more, which costs CI minutes and lets "
        "nothing through. Cancel it: glab api --method POST "
        f"projects/acme%2Fapp/pipelines/{hold['id']}/cancel"
    )


def test_a_write_gitlab_refuses_still_cancels_the_hold_and_says_nothing_of_it(
    world: Round, config: Config
) -> None:
    result = release(world, config, {"method": "POST", "path": NOTES.pattern, "status": 403})
    assert result.code != 0
    (hold,) = mr_pipelines(world)[:1]
    assert writes(world) == ["pipeline", "note", f"cancel {hold['id']}"]  # no judging pipeline
    assert "hold pipeline" not in result.err + result.out
    assert world.ledger(config).holder == LEAD  # nothing was written


def test_a_merge_after_the_hold_and_before_the_note_is_refused(
    world: Round, config: Config
) -> None:
    """The verb's steps one at a time: the approval's green pipeline lets the merge through;
    once the hold is started, before any note, GitLab refuses the merge (405: the head
    pipeline runs), and after the note and the judging pipeline it still does."""
    world.sb.settings(only_allow_merge_if_pipeline_succeeds=True)
    world.approved()
    (green,) = mr_pipelines(world)
    (job,) = world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{green['id']}/jobs")
    world.sb.set_job(job["id"], "success")
    assert world.sb.api("GET", world.mr_path)["detailed_merge_status"] == "mergeable"
    env = agent_env(world.sb, LEAD)
    client = gitlab_from_env(config, env)
    out, err = io.StringIO(), io.StringIO()
    turn = begin(Context(env=env, stdout=out, stderr=err), config, client, world.issue, None)
    mrs = [read_mr(client, "acme/app", world.mr, cli=config.cli)]
    notes = len(world.notes())

    def merge() -> Any:
        path = f"{world.mr_path}/merge"
        return world.sb.request("PUT", path, "maintainer", json={"sha": world.head})

    with holding(turn, mrs) as holds:
        (hold,) = holds
        assert len(world.notes()) == notes  # nothing written yet
        head = world.sb.api("GET", world.mr_path)["head_pipeline"]
        assert (head["id"], head["status"]) == (hold.pipeline, "pending")
        refused = merge()
        assert (refused.status_code, refused.json()) == (405, {"message": "405 Method Not Allowed"})
        event = write(turn, "ownership", "release", {"role": turn.ledger.role})
        assert rejudge(turn, mrs, what=f"the release (note {event.note_id})", holds=holds) == 0
    assert world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{hold.pipeline}")["status"] == (
        "canceled"
    )
    assert world.sb.api("GET", world.mr_path)["head_pipeline"]["id"] not in (
        green["id"],
        hold.pipeline,
    )
    refused = merge()
    assert (refused.status_code, refused.json()) == (405, {"message": "405 Method Not Allowed"})
    assert err.getvalue() == ""


def test_a_judging_pipeline_gitlab_refuses_after_a_hold_says_the_cancelled_hold_refuses_the_merge(
    world: Round, config: Config
) -> None:
    """The hold started, the judging pipeline did not: the cancelled hold is the newest
    pipeline, so GitLab refuses the merge until a new one succeeds, and the warning says that
    (not that the old green pipeline may still decide)."""
    world.sb.settings(only_allow_merge_if_pipeline_succeeds=True)
    world.approved()
    env = agent_env(world.sb, LEAD)
    client = gitlab_from_env(config, env)
    out, err = io.StringIO(), io.StringIO()
    turn = begin(Context(env=env, stdout=out, stderr=err), config, client, world.issue, None)
    mrs = [read_mr(client, "acme/app", world.mr, cli=config.cli)]
    with holding(turn, mrs) as holds:
        (hold,) = holds
        event = write(turn, "ownership", "release", {"role": turn.ledger.role})
        world.sb.fault(method="POST", path=r"/merge_requests/\d+/pipelines$", status=403)
        what = f"the release (note {event.note_id})"
        assert rejudge(turn, mrs, what=what, holds=holds) == 2
    warning = next(x for x in err.getvalue().splitlines() if x.startswith("WARNING: "))
    assert warning.startswith(
        f"WARNING: {what} stands, but GitLab started NO new merge request pipeline of "
        f"acme/app!{world.mr} ("
    )
    assert warning.endswith(
        f"Its hold pipeline {hold.pipeline}, started before {what}, is cancelled next: then, "
        'with "Pipelines must succeed", GitLab refuses the merge until a new pipeline succeeds. '
        f"Start one now: glab api --method POST projects/acme%2Fapp/merge_requests/{world.mr}"
        "/pipelines"
    )
    head = world.sb.api("GET", world.mr_path)["head_pipeline"]
    assert (head["id"], head["status"]) == (hold.pipeline, "canceled")
    merged = world.sb.request(
        "PUT", f"{world.mr_path}/merge", "maintainer", json={"sha": world.head}
    )
    assert (merged.status_code, merged.json()) == (405, {"message": "405 Method Not Allowed"})
