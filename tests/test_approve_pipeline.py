"""approve starts a merge request pipeline at the approved head as the review bot, and says so;
a failure to start one leaves the approval standing and says how to start it. status and board
show whether the head's pipeline has run the gate (validate-mr-merge-check) since the approval.
The end to end case plays the runner: the pipeline's job runs under gitlab-ci-local from the
tracker-held pipeline, with that job's own token, and the pipeline goes green."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pairgate.standalone.config import Config
from tests.kit.gcl import MERGE_CHECK, publish, repository, run
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.run import run_cli
from tests.kit.world import Round

PIPELINES = "/api/v4/projects/acme%2Fapp/merge_requests/{mr}/pipelines"


@pytest.fixture
def world(sandbox: Any) -> Round:
    w = Round(sandbox)
    w.claim()
    w.offer()
    w.accept()
    return w


def with_ci(world: Round) -> None:
    """acme/app's merge request pipelines get the gate's merge-check job."""
    world.sb.set_ci("acme/app", [{"name": MERGE_CHECK}])


def approve(world: Round, *extra: str) -> Any:
    return world.run(
        "acme-review",
        "approve",
        world.issue,
        "--mr",
        world.mr,
        "--mr-project",
        "acme/app",
        "--sha",
        world.head,
        "--to",
        "acme-lead",
        *extra,
    )


def mr_pipelines(world: Round) -> list[dict[str, Any]]:
    return list(world.sb.api("GET", f"{world.mr_path}/pipelines"))


def gate_of(world: Round) -> Any:
    status = world.run(None, "status", world.issue, "--json")
    assert status.code == 0, status.err
    return json.loads(status.out)["approvals"][-1]["gate"]


def retry(world: Round, head: str) -> str:
    return (
        f"pairgate approve {world.issue} --mr {world.mr} --sha {head} --to acme-lead "
        "--mr-project acme/app --server-approval-only"
    )


def test_approve_starts_a_pipeline_at_the_approved_head_as_the_review_bot(world: Round) -> None:
    with_ci(world)
    head = world.head
    world.sb.clear_requests()
    result = approve(world)
    assert result.code == 0, result.err
    (pipeline,) = mr_pipelines(world)
    assert (pipeline["sha"], pipeline["ref"]) == (head, f"refs/merge-requests/{world.mr}/head")
    assert (
        f"started merge request pipeline {pipeline['id']} of acme/app!{world.mr} at {head[:12]} "
        "as the review bot, so the gate jobs run again at the approved head"
    ) in result.out
    writes = [(r["method"], r["path"]) for r in world.sb.requests() if r["method"] == "POST"]
    path = PIPELINES.format(mr=world.mr)
    assert writes[-1] == ("POST", path)  # after the approval and its note
    assert ("POST", f"/api/v4/projects/acme%2Fapp/merge_requests/{world.mr}/approve") in writes
    started = world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{pipeline['id']}")
    assert started["user"]["username"] == world.sb.users["review_bot"]["username"]


def test_a_pipeline_that_cannot_start_leaves_the_approval_standing(
    world: Round, config: Config
) -> None:
    head = world.head  # acme/app has no CI configuration: GitLab answers 405
    cli = config.cli
    result = approve(world)
    assert result.code == 0
    assert result.err.strip().endswith(
        f"warning: the approval stands, but GitLab started no merge request pipeline of "
        f"acme/app!{world.mr} at {head[:12]} (the project's CI has no merge request job: GitLab "
        f"answers 405 when no job of its CI configuration runs in merge request pipelines), so "
        f"the gate jobs have not run since it. Fix the project's CI first: set its CI/CD "
        f"configuration file to the tracker-held gate pipeline ({cli} deploy-pipeline "
        f"renders it), or give its .gitlab-ci.yml a job with rules: [{{if: "
        f"'$CI_PIPELINE_SOURCE == \"merge_request_event\"'}}]. Start one: {retry(world, head)}"
    )
    assert [a.sha for a in world.ledger(config).approvals] == [head]
    assert gate_of(world)["state"] == "none"


def test_a_lost_answer_says_the_pipeline_may_have_started(world: Round, config: Config) -> None:
    with_ci(world)
    world.sb.fault(method="POST", path=r"/merge_requests/\d+/pipelines$", status=502, count=1)
    result = approve(world)
    assert result.code == 0
    assert "It may have started all the same: look at the merge request's pipelines first." in (
        result.err
    )
    assert len(world.ledger(config).approvals) == 1


def test_server_approval_only_starts_one_too(world: Round) -> None:
    approve(world)  # no CI yet: no pipeline
    with_ci(world)
    result = approve(world, "--server-approval-only")
    assert result.code == 0, result.err
    assert "no note written." in result.out
    assert "started merge request pipeline" in result.out
    assert len(mr_pipelines(world)) == 1


def test_status_and_board_say_whether_the_gate_ran_since_the_approval(world: Round) -> None:
    with_ci(world)
    head = world.head
    before = world.sb.pipeline(
        "acme/app",
        f"refs/merge-requests/{world.mr}/head",
        [{"name": MERGE_CHECK, "status": "success"}],
        sha=head,
    )
    world.sb.advance_clock(5)
    approve(world)
    gate = gate_of(world)
    started = next(p for p in mr_pipelines(world) if p["id"] != before["id"])
    assert gate == {
        "state": "pending",
        "pipeline_id": started["id"],
        "pipeline_status": "pending",
        "pipeline_web_url": started["web_url"],
        "job": MERGE_CHECK,
        "job_status": "pending",
    }  # the green pipeline from before the approval does not count
    job = world.sb.api("GET", f"/projects/acme%2Fapp/pipelines/{started['id']}/jobs")[0]
    world.sb.set_job(job["id"], "success")
    assert gate_of(world)["state"] == "passed"
    text = world.run(None, "status", world.issue).out
    assert f"gate since: pipeline {started['id']}: {MERGE_CHECK} passed" in text
    board = json.loads(world.run(None, "board", "--json").out)
    (entry,) = [i for i in board["issues"] if i["issue"] == world.issue]
    assert entry["approval"]["gate"]["state"] == "passed"
    assert "gate passed" in world.run(None, "board").out
    world.sb.set_job(job["id"], "failed")
    assert gate_of(world)["state"] == "failed"
    world.push()  # the approval goes stale: no gate is shown for it
    assert gate_of(world) is None


def test_a_pipeline_without_the_gate_job_is_said_to_lack_it(world: Round) -> None:
    world.sb.set_ci("acme/app", [{"name": "tests"}])
    approve(world)
    assert gate_of(world)["state"] == "no-gate-job"


@pytest.mark.slow
def test_the_pipeline_approve_starts_goes_green_when_its_runner_runs_the_gate(
    world: Round, tmp_path: Path
) -> None:
    """Play the runner: take the job approve's pipeline got, run it as GitLab would run the
    tracker-held pipeline's validate-mr-merge-check (gitlab-ci-local, with that job's token),
    and report its result back."""
    sb = world.sb
    publish(sb)
    with_ci(world)
    head = world.head
    assert approve(world).code == 0
    (pipeline,) = mr_pipelines(world)
    (job,) = sb.api("GET", f"/projects/acme%2Fapp/pipelines/{pipeline['id']}/jobs")
    running = sb.set_job(job["id"], "running")
    rendered = tmp_path / "rendered.yml"
    flags = ["--image", "python:3.11-slim", "--runner-tag", "pairgate", "--gate-dir", "gate"]
    flags += ["--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sb.url]
    assert (
        run_cli(
            ["deploy-pipeline", "--target", str(rendered), *flags],
            env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
        ).code
        == 0
    )
    repo = repository(tmp_path / "app", sb, {"pipeline.yml": rendered.read_text()})
    ci = {
        "CI_JOB_TOKEN": str(running["token"]),
        "CI_PIPELINE_ID": str(pipeline["id"]),
        "CI_PROJECT_ID": str(pipeline["project_id"]),
        "CI_MERGE_REQUEST_PROJECT_ID": str(pipeline["project_id"]),
        "CI_MERGE_REQUEST_PROJECT_PATH": "acme/app",
        "CI_MERGE_REQUEST_IID": str(world.mr),
        "CI_COMMIT_SHA": head,
    }
    result = run(repo, sb, ci, file="pipeline.yml", jobs=(MERGE_CHECK,))
    assert result.job(MERGE_CHECK) == "PASS", result.output
    assert "may merge: acme-review approved its head" in result.lines(MERGE_CHECK)
    sb.set_job(job["id"], "success")
    assert sb.api("GET", f"/projects/acme%2Fapp/pipelines/{pipeline['id']}")["status"] == "success"
    assert gate_of(world)["state"] == "passed"
