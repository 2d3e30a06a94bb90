"""The CI door, run whole: the tracker-held pipeline deployed as the README says, every merge
request pipeline run by the sandbox's runner (gitlab-ci-local), and each case a merge attempt
through GitLab's merge API with "Pipelines must succeed" on.

The deployment (``door``): ``pairgate deploy-pipeline`` renders the pipeline; it goes to the
tracker's default branch with the gate's files; acme/app's CI/CD configuration file setting is
``<path>@acme/tracker``, "Pipelines must succeed" on and skipped pipelines not successful, and
the read token a masked CI/CD variable. acme/app's own ``.gitlab-ci.yml`` (one job) runs as the
child pipeline. Merge request branches are pushed with ``ci.skip``: the branch pipeline GitLab
makes before the merge request exists is not what these cases are about. The first case is the
round ``pairgate demo --ci`` plays, which deploys the same way in a sandbox of its own.

Each case was run against a deliberately broken gate; what each break lets through, and the
cases that fail on it:
- the verdict allows every merge request: every case;
- a ledger write that starts no pipeline (the green one outlives it): the withdrawn approval,
  and the freeze and the release after the approval;
- an approval outlives a push (the head not compared): the push after the approval;
- freezes never read into the verdict: the freeze;
- the gate's jobs in the project's own ``.gitlab-ci.yml`` (no configuration file setting): the
  merge request that redefines them;
- ``approve`` starts no pipeline (a refusal that never lifts): the approved merge and
  auto-merge, and the push and freeze cases, whose gate jobs never run at the approved head;
- the merge-check job rendered ``allow_failure: true``: every case but the push's, which the
  approval-at-head job still fails;
- the tracker's workflow admitting branch pipelines on every branch (as it did): the merge
  request closed, pushed to and reopened, whose merge GitLab then takes on the green branch
  pipeline;
- a retarget that starts no pipeline (older GitLab; the sandbox's own before): the retarget
  after the approval.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from tests.kit.gcl import TRACKER_FILES, gitlab_ci_local
from tests.kit.names import APP, FIXTURE_CONFIG, LEAD, REVIEW, mr_path, project_path
from tests.kit.run import agent_env, ok, run_cli

pytestmark = pytest.mark.slow

PIPELINE_FILE = "ci/pairgate-pipeline.yml"
MERGE_CHECK = "validate-mr-merge-check"
GATE_JOBS = ("validate-mr-carries-ownership-record", "validate-mr-approval-at-head", MERGE_CHECK)
OWN_CI = "unit:\n  script:\n    - echo the project tests pass\n"


@pytest.fixture(scope="module")
def runner_sandbox() -> Iterator[RunningSandbox]:
    """A sandbox whose pipelines run (one per test worker, reset before each test)."""
    with running_sandbox(runner=gitlab_ci_local()) as sandbox:
        yield sandbox


@dataclass
class Door:
    """The deployed gate, and one merge request's round through it."""

    sandbox: RunningSandbox
    issue: int = 0
    mr: int = 0
    sha: str = ""
    branch: str = ""
    approval: int = 0  # the approval's note

    @property
    def lead(self) -> dict[str, str]:
        return agent_env(self.sandbox, LEAD)

    @property
    def review(self) -> dict[str, str]:
        return agent_env(self.sandbox, REVIEW)

    def push(
        self,
        files: dict[str, str | None],
        *,
        options: list[str] | None = None,
        message: str = "Work on the issue",
    ) -> str:
        """A commit pushed to the branch (with push ``options``)."""
        self.sha = secrets.token_hex(20)
        self.sandbox.mirror_commit(
            self.sha, self.branch, files, message=message, push_options=options
        )
        return self.sha

    def open(self, files: dict[str, str | None] | None = None, *, pipeline: bool = True) -> Door:
        """An issue the lead claims, then a merge request citing it, whose opening runs a merge
        request pipeline: the approval's jobs fail until the review approves its head.
        (Claimed first: a pipeline that ran before the claim fails the record job too, and
        handoff refuses to offer a head whose pipeline failed on anything but the approval.)
        With ``pipeline`` False no pipeline runs before the review's: the merge request opens
        at a ``[skip ci]`` commit and the work is pushed with ``ci.skip`` (both skipped)."""
        self.issue = int(self.sandbox.create_issue("Work through the CI door")["iid"])
        self.verb(self.lead, "claim", "--role", "lead")
        self.branch = f"issue-{self.issue}"
        work = files or {f"work-{self.issue}.txt": "a change\n"}
        if not pipeline:
            self.push({f"start-{self.issue}.txt": "\n"}, message="Start [skip ci]")
        else:
            self.push(work, options=["ci.skip"])
        description = f"Related to acme/tracker#{self.issue}"
        mr = self.sandbox.create_mr(self.branch, title="Work", description=description)
        self.mr = int(mr["iid"])
        if not pipeline:
            self.push(work, options=["ci.skip"])
        return self

    def verb(self, env: dict[str, str], *argv: str) -> str:
        return ok([argv[0], str(self.issue), *argv[1:]], env).out

    def review_round(self) -> Door:
        """The lead offers the head; the review accepts and approves it (which starts a merge
        request pipeline at the approved head)."""
        self.verb(self.lead, "handoff", "--to", REVIEW, "--role", "review", "--sha", self.sha)
        self.verb(self.review, "accept")
        return self.approve()

    def approve(self) -> Door:
        mr = ["--mr", str(self.mr), "--mr-project", "acme/app"]
        said = self.verb(self.review, "approve", *mr, "--sha", self.sha, "--to", LEAD)
        found = re.search(r"\(note (\d+)\)", said)
        assert found, said
        self.approval = int(found.group(1))
        return self

    def merge(self, **fields: Any) -> requests.Response:
        """A merge through GitLab's merge API, as the agents account, bound to the head."""
        self.sandbox.wait_for_pipelines()
        path = f"{mr_path(APP, self.mr)}/merge"
        return self.sandbox.request("PUT", path, "agents", json={"sha": self.sha, **fields})

    def state(self) -> dict[str, Any]:
        self.sandbox.wait_for_pipelines()
        return dict(self.sandbox.api("GET", mr_path(APP, self.mr)))

    def gate(self) -> dict[str, str]:
        """The head pipeline's gate jobs, by status; asserts the pipeline is at the head."""
        head = self.state()["head_pipeline"]
        assert head["sha"] == self.sha and head["source"] == "merge_request_event", head
        jobs = self.sandbox.api("GET", f"{project_path()}/pipelines/{head['id']}/jobs")
        return {j["name"]: j["status"] for j in jobs}

    def trace(self, job: str) -> str:
        head = self.state()["head_pipeline"]
        jobs = self.sandbox.api("GET", f"{project_path()}/pipelines/{head['id']}/jobs")
        found = next(j for j in jobs if j["name"] == job)
        return self.sandbox.request("GET", f"{project_path()}/jobs/{found['id']}/trace").text


def deploy(sandbox: RunningSandbox, tmp: Path) -> None:
    """The README's deployment, against the sandbox."""
    rendered = tmp / "pipeline.yml"
    flags = ["--image", "python:3.11-slim", "--runner-tag", "pairgate", "--gate-dir", "gate"]
    flags += ["--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sandbox.url]
    result = run_cli(
        ["deploy-pipeline", "--target", str(rendered), *flags],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 0, result.err
    files: dict[str, str | None] = {
        path: source.read_text(encoding="utf-8") for path, source in TRACKER_FILES.items()
    }
    files[PIPELINE_FILE] = rendered.read_text(encoding="utf-8")
    sandbox.commit("main", files, project="acme/tracker", message="Deploy the gate")
    sandbox.settings(
        ci_config_path=f"{PIPELINE_FILE}@acme/tracker",
        only_allow_merge_if_pipeline_succeeds=True,
        allow_merge_on_skipped_pipeline=False,
    )
    token = sandbox.users["agents"]["read_token"]
    sandbox.variable("GATE_READ_TOKEN", token, masked=True)
    sandbox.commit("main", {".gitlab-ci.yml": OWN_CI}, message="Our own CI [skip ci]")


@pytest.fixture
def door(runner_sandbox: RunningSandbox, tmp_path: Path) -> Door:
    runner_sandbox.reset()
    deploy(runner_sandbox, tmp_path)
    return Door(runner_sandbox)


def refused(response: requests.Response) -> bool:
    return (response.status_code, response.json()) == (405, {"message": "405 Method Not Allowed"})


def test_an_unapproved_mr_is_refused_and_the_same_mr_approved_at_its_head_merges() -> None:
    """The round ``pairgate demo --ci`` plays: the deployment above, the unapproved merge
    request's pipeline failing on the gate job and its merge refused, then approve's green
    pipeline and the merge. (Its own sandbox and deployment: one round, not two.)"""
    gitlab_ci_local()
    result = run_cli(["demo", "--ci"], env={})
    assert result.code == 0, result.err
    steps = re.findall(r"^== \d+\. (.*)$", result.out, re.MULTILINE)
    merges = [s.rsplit(": ", 1)[1] for s in steps if s.startswith("The merge button")]
    pipelines = [s.rsplit(": ", 1)[1] for s in steps if s.startswith("Merge request pipeline")]
    assert merges == ["HTTP 405", "HTTP 200"]
    assert pipelines == ["failed", "success"]
    first, second = result.out.split("== 6.", 1)
    assert f"{MERGE_CHECK}: failed" in first and "GitLab answers" in first
    assert '{"message": "405 Method Not Allowed"}' in first
    assert "FAILED: no approval in acme/tracker#2 names acme/app!1" in first
    assert all(f"{job}: success" in second for job in GATE_JOBS)
    assert "acme/app!1 may merge: acme-review approved its head" in second
    assert re.search(r"GitLab answers merged, merge commit [0-9a-f]{40}\.", second)


def test_a_push_after_the_approval_is_refused(door: Door) -> None:
    door.open(pipeline=False).review_round()
    assert door.gate()[MERGE_CHECK] == "success"
    door.push({"late.txt": "after the review\n"})
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"


def test_an_mr_whose_own_ci_file_redefines_the_gate_jobs_is_refused(door: Door) -> None:
    neutered = "".join(f"{job}:\n  script: [echo ok]\n  allow_failure: true\n" for job in GATE_JOBS)
    door.open({".gitlab-ci.yml": neutered + "workflow:\n  rules:\n    - when: always\n"})
    assert refused(door.merge())
    jobs = door.gate()  # the tracker's jobs, as the tracker defines them
    assert set(jobs) == set(GATE_JOBS) and jobs[MERGE_CHECK] == "failed", jobs
    head = door.state()["head_pipeline"]["id"]
    (bridge,) = door.sandbox.api("GET", f"{project_path()}/pipelines/{head}/bridges")
    assert bridge["name"] == "project-pipeline" and bridge["status"] == "success"
    child = bridge["downstream_pipeline"]["id"]
    child_jobs = door.sandbox.api("GET", f"{project_path()}/pipelines/{child}/jobs")
    assert {j["name"]: j["status"] for j in child_jobs} == dict.fromkeys(GATE_JOBS, "success")


def test_an_mr_closed_pushed_to_and_reopened_is_refused(door: Door) -> None:
    """Reopening an MR makes the newest pipeline at its head its head pipeline, a branch
    pipeline of its source branch included, and starts none (GitLab's reopen transition). A
    branch pipeline has no gate job, so while the MR is closed a push must start none: the
    tracker's workflow admits branch pipelines on the default branch only."""
    door.open()
    assert refused(door.merge())
    door.sandbox.api("PUT", mr_path(APP, door.mr), json={"state_event": "close"})
    door.push({"unreviewed.txt": "a change nobody reviewed\n"}, message="Unreviewed")
    door.sandbox.api("PUT", mr_path(APP, door.mr), json={"state_event": "reopen"})
    assert refused(door.merge())
    state = door.state()
    assert (state["sha"], state["detailed_merge_status"]) == (door.sha, "ci_must_pass")
    assert door.sandbox.api("GET", f"{project_path()}/pipelines", params={"sha": door.sha}) == []
    # The merge request's own pipeline at the new head runs the gate, which refuses it.
    door.sandbox.api("POST", f"{mr_path(APP, door.mr)}/pipelines")
    assert door.gate()[MERGE_CHECK] == "failed"
    assert refused(door.merge())


def test_a_retarget_after_the_approval_is_refused(door: Door) -> None:
    """GitLab starts a merge request pipeline when the target changes (UpdateService), so the
    gate judges again: the approval names the old target and merge base."""
    door.open(pipeline=False).review_round()
    assert door.gate()[MERGE_CHECK] == "success"
    door.sandbox.commit("stable", {"stable.txt": "a release line\n"}, message="Stable [skip ci]")
    door.sandbox.api("PUT", mr_path(APP, door.mr), json={"target_branch": "stable"})
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"
    said = "targeted main, and it now targets stable: the change to be merged is not the one"
    assert said in door.trace(MERGE_CHECK)


def test_a_freeze_is_refused(door: Door) -> None:
    door.open(pipeline=False)
    door.verb(door.lead, "handoff", "--to", REVIEW, "--role", "review", "--sha", door.sha)
    door.verb(door.review, "accept")
    reason = "Holding the merge: the release is being cut"
    scope = f"mr:{door.mr}"
    door.verb(door.review, "freeze", "--scope", scope, "--minutes", "60", "--reason", reason)
    door.approve()
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"
    assert f"froze mr:acme/app!{door.mr}" in door.trace(MERGE_CHECK)


def test_auto_merge_set_before_the_approval_merges_only_after_it(door: Door) -> None:
    door.open()
    waiting = door.merge(auto_merge=True)
    assert waiting.status_code == 200, waiting.text
    assert (waiting.json()["state"], waiting.json()["merge_when_pipeline_succeeds"]) == (
        "opened",
        True,
    )
    assert door.state()["state"] == "opened"  # its failed pipeline never merges it
    assert door.gate()[MERGE_CHECK] == "failed"
    door.review_round()
    state = door.state()
    assert state["state"] == "merged", state
    assert state["merge_user"]["username"] == "agents"


def test_a_withdrawn_approval_is_refused(door: Door) -> None:
    door.open(pipeline=False).review_round()
    assert door.gate()[MERGE_CHECK] == "success"
    reason = "I read it again: the rounding is wrong"
    said = door.verb(door.review, "withdraw", "--approval", str(door.approval), "--reason", reason)
    assert "started merge request pipeline" in said and f"of acme/app!{door.mr}" in said
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"  # the pipeline withdraw started judged again


def test_a_freeze_after_the_approval_is_refused(door: Door) -> None:
    door.open(pipeline=False).review_round()
    assert door.gate()[MERGE_CHECK] == "success"
    reason = "Holding the merge: the release is being cut"
    scope = f"mr:{door.mr}"
    door.verb(door.review, "freeze", "--scope", scope, "--minutes", "60", "--reason", reason)
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"
    assert f"froze mr:acme/app!{door.mr}" in door.trace(MERGE_CHECK)


def test_a_release_after_the_approval_is_refused(door: Door) -> None:
    door.open(pipeline=False).review_round()
    door.verb(door.lead, "accept")  # the approval's offer back: the lead holds the issue
    assert door.gate()[MERGE_CHECK] == "success"
    door.verb(door.lead, "release")
    assert refused(door.merge())
    assert door.gate()[MERGE_CHECK] == "failed"
    assert "which nobody holds" in door.trace(MERGE_CHECK)


def test_a_project_without_its_own_ci_file_merges_once_approved(door: Door) -> None:
    """GitLab makes no child from a .gitlab-ci.yml that does not exist: without the rule on
    project-pipeline its bridge fails, and the pipeline of a project with no CI of its own is
    red whatever the gate says."""
    door.open(pipeline=False)
    door.push({".gitlab-ci.yml": None}, options=["ci.skip"])
    door.review_round()
    jobs = door.gate()
    assert set(jobs) == set(GATE_JOBS) and jobs[MERGE_CHECK] == "success", jobs
    head = door.state()["head_pipeline"]
    assert head["status"] == "success"
    assert door.sandbox.api("GET", f"{project_path()}/pipelines/{head['id']}/bridges") == []
    merged = door.merge()
    assert merged.status_code == 200 and merged.json()["state"] == "merged", merged.text
