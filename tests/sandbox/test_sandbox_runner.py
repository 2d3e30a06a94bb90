"""The sandbox's runner (``pairgate sandbox --runner``): which pipelines GitLab's events make,
what their jobs are given, child pipelines, statuses and logs back in the sandbox, [skip ci],
retries. One scenario of four pipelines is played once (gitlab-ci-local starts are what cost),
in one test, so that no two test workers play it; each ``check_`` reads one part of what it
left, and python-gitlab reads the new routes.

Each job runs probe.py, which prints what it was given as one ``FACTS {...}`` line of its log.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gitlab
import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from tests.kit.gcl import gitlab_ci_local

pytestmark = pytest.mark.slow

PROBE = """\
import json, os, urllib.request
env = os.environ
names = ("CI_PIPELINE_SOURCE", "CI_PIPELINE_ID", "CI_JOB_ID", "CI_COMMIT_SHA", "CI_COMMIT_BRANCH",
         "CI_COMMIT_REF_NAME", "CI_MERGE_REQUEST_IID", "CI_MERGE_REQUEST_PROJECT_PATH",
         "CI_PROJECT_PATH", "CI_PROJECT_ID", "CI_API_V4_URL", "CI_SERVER_URL",
         "CI_OPEN_MERGE_REQUESTS", "CI_CONFIG_PATH", "PROTECTED_ONE", "FROM_THE_PARENT", "SECRET")
facts = {name: env.get(name) for name in names}
facts["home"], facts["home_held"] = env["HOME"], sorted(os.listdir(env["HOME"]))
facts["pwd"], facts["pwd_held"] = os.getcwd(), os.path.exists("left-behind")
for where in (env["HOME"], "."):
    with open(os.path.join(where, "left-behind"), "w") as out:
        out.write("a job was here")
ask = urllib.request.Request(env["CI_API_V4_URL"] + "/job", headers={"JOB-TOKEN": env["CI_JOB_TOKEN"]})
job = json.load(urllib.request.urlopen(ask))
facts["job"] = {"id": job["id"], "name": job["name"], "status": job["status"]}
print("FACTS " + json.dumps(facts))
"""
CI = """\
workflow:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS
      when: never
    - if: $CI_COMMIT_BRANCH
variables:
  FROM_THE_PARENT: forwarded
facts:
  script: [python3 probe.py]
child:
  rules:
    - if: $CI_MERGE_REQUEST_IID
  trigger:
    include:
      - local: ci/child.yml
    strategy: depend
"""
CHILD = "child-facts:\n  script: [python3 probe.py]\n"
SECRET = "s3cr3t-value-" + secrets.token_hex(4)


@dataclass
class Scenario:
    sandbox: RunningSandbox
    pipelines: dict[str, dict[str, Any]]  # by what made them
    no_jobs: requests.Response  # POST /projects/:id/pipeline on a branch with an open MR

    def jobs(self, pipeline_id: int) -> list[dict[str, Any]]:
        return list(self.sandbox.api("GET", f"/projects/2/pipelines/{pipeline_id}/jobs"))

    def facts(self, job_id: int) -> dict[str, Any]:
        trace = self.sandbox.request("GET", f"/projects/2/jobs/{job_id}/trace").text
        line = next(x for x in trace.splitlines() if x.startswith("FACTS "))
        return dict(json.loads(line[len("FACTS ") :]))

    def only_job(self, made_by: str) -> dict[str, Any]:
        (job,) = self.jobs(self.pipelines[made_by]["id"])
        return job


@contextlib.contextmanager
def played() -> Iterator[Scenario]:
    """A push to a new branch (a branch pipeline), the merge request (its pipeline), a push to
    it (a merge request pipeline and no branch pipeline: the workflow says so), a pipeline by
    the API on another branch, and one it refuses."""
    with running_sandbox(runner=gitlab_ci_local()) as sandbox:
        sandbox.variable("SECRET", SECRET, masked=True)
        sandbox.variable("PROTECTED_ONE", "only-on-protected-branches", protected=True)
        files = {".gitlab-ci.yml": CI, "ci/child.yml": CHILD, "probe.py": PROBE}
        made = {}
        sandbox.commit("feature", files, message="Add the CI")
        sandbox.wait_for_pipelines()
        (made["push"],) = sandbox.api("GET", "/projects/2/pipelines")
        mr = sandbox.create_mr("feature", title="Add the CI")
        sandbox.wait_for_pipelines()
        made["mr"] = sandbox.api("GET", "/projects/2/merge_requests/1")["head_pipeline"]
        sandbox.commit("feature", {"more.txt": "more\n"})
        sandbox.wait_for_pipelines()
        made["mr push"] = sandbox.api("GET", "/projects/2/merge_requests/1")["head_pipeline"]
        sandbox.commit("other", files, message="Add the CI elsewhere [skip ci]")
        made["api"] = (
            sandbox.gitlab().projects.get(2, lazy=True).pipelines.create({"ref": "other"}).asdict()
        )
        no_jobs = sandbox.request("POST", "/projects/2/pipeline", "agents", json={"ref": "feature"})
        sandbox.wait_for_pipelines()
        assert mr["iid"] == 1
        yield Scenario(sandbox, made, no_jobs)


def check_each_event_makes_the_pipelines_gitlab_makes_with_their_source(scenario: Scenario) -> None:
    listed = scenario.sandbox.api("GET", "/projects/2/pipelines", params={"sort": "asc"})
    assert [(p["ref"], p["source"], p["status"]) for p in listed] == [
        ("feature", "push", "success"),
        ("refs/merge-requests/1/head", "merge_request_event", "success"),
        ("refs/merge-requests/1/head", "merge_request_event", "success"),
        ("other", "push", "skipped"),  # its [skip ci]
        ("other", "api", "success"),  # the API ignores [skip ci]
    ]
    assert scenario.pipelines["mr push"]["sha"] != scenario.pipelines["mr"]["sha"]
    assert (scenario.no_jobs.status_code, scenario.no_jobs.json()) == (
        400,
        {"message": {"base": ["No stages / jobs for this pipeline."]}},
    )


def check_a_job_is_given_gitlabs_variables_and_the_projects(scenario: Scenario) -> None:
    sandbox = scenario.sandbox
    mr = scenario.pipelines["mr"]
    job = next(j for j in scenario.jobs(mr["id"]) if j["name"] == "facts")
    facts = scenario.facts(job["id"])
    assert {k: facts[k] for k in facts if k.startswith("CI_")} == {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_PIPELINE_ID": str(mr["id"]),
        "CI_JOB_ID": str(job["id"]),
        "CI_COMMIT_SHA": mr["sha"],
        "CI_COMMIT_BRANCH": None,  # not in merge request pipelines
        "CI_COMMIT_REF_NAME": "feature",
        "CI_MERGE_REQUEST_IID": "1",
        "CI_MERGE_REQUEST_PROJECT_PATH": "acme/app",
        "CI_PROJECT_PATH": "acme/app",
        "CI_PROJECT_ID": "2",
        "CI_API_V4_URL": sandbox.api_url,
        "CI_SERVER_URL": sandbox.url,
        "CI_OPEN_MERGE_REQUESTS": "acme/app!1",
        "CI_CONFIG_PATH": ".gitlab-ci.yml",
    }
    assert facts["SECRET"] == "[MASKED]"  # given, and masked in the log
    assert facts["PROTECTED_ONE"] is None  # protected: not on refs/merge-requests/1/head
    push = scenario.facts(scenario.only_job("push")["id"])
    assert (push["CI_PIPELINE_SOURCE"], push["CI_COMMIT_BRANCH"]) == ("push", "feature")
    assert push["CI_MERGE_REQUEST_IID"] is None


def check_a_job_token_answers_get_job_for_its_job_while_it_runs(scenario: Scenario) -> None:
    job = scenario.only_job("push")
    facts = scenario.facts(job["id"])
    assert facts["job"] == {"id": job["id"], "name": "facts", "status": "running"}
    world = scenario.sandbox.server.app.world
    token = world.jobs[job["id"]].token
    assert token not in scenario.sandbox.request("GET", f"/projects/2/jobs/{job['id']}/trace").text
    after = requests.get(scenario.sandbox.api_url + "/job", headers={"JOB-TOKEN": token}, timeout=5)
    assert (after.status_code, after.json()) == (401, {"message": "401 Unauthorized"})
    others = {j.token for j in world.jobs.values() if j.id != job["id"]}
    assert token not in others and not token.startswith("sandbox-job-")


def check_each_job_gets_a_fresh_home_and_work_directory(scenario: Scenario) -> None:
    seen = []
    for made_by in ("push", "mr", "mr push", "api"):
        for job in scenario.jobs(scenario.pipelines[made_by]["id"]):
            facts = scenario.facts(job["id"])
            assert facts["home_held"] == [] and facts["pwd_held"] is False, facts
            seen.append((facts["home"], facts["pwd"]))
    assert len({home for home, _ in seen}) == len(seen) == 4
    assert len({pwd for _, pwd in seen}) == 4


def check_a_trigger_job_runs_its_child_pipeline_and_takes_its_status(scenario: Scenario) -> None:
    sandbox = scenario.sandbox
    mr = scenario.pipelines["mr"]
    (bridge,) = sandbox.api("GET", f"/projects/2/pipelines/{mr['id']}/bridges")
    child = bridge["downstream_pipeline"]
    assert (bridge["name"], bridge["status"], child["status"]) == ("child", "success", "success")
    assert (child["source"], child["sha"], child["ref"]) == (
        "parent_pipeline",
        mr["sha"],
        mr["ref"],
    )
    assert [j["name"] for j in scenario.jobs(mr["id"])] == ["facts"]  # bridges are not jobs
    (job,) = scenario.jobs(child["id"])
    facts = scenario.facts(job["id"])
    assert facts["CI_PIPELINE_SOURCE"] == "parent_pipeline"
    assert facts["CI_MERGE_REQUEST_IID"] == "1"  # the parent's MR variables are passed down
    assert facts["FROM_THE_PARENT"] == "forwarded"  # a YAML variable, forwarded
    listed = sandbox.api("GET", "/projects/2/pipelines", params={"source": "parent_pipeline"})
    assert {p["id"] for p in listed} == {
        b["downstream_pipeline"]["id"]
        for made_by in ("mr", "mr push")
        for b in sandbox.api(
            "GET", f"/projects/2/pipelines/{scenario.pipelines[made_by]['id']}/bridges"
        )
    }
    assert scenario.pipelines["push"]["id"] not in {p["id"] for p in listed}


def check_python_gitlab_reads_pipelines_bridges_jobs_and_traces(scenario: Scenario) -> None:
    project = scenario.sandbox.gitlab().projects.get(2)
    pipeline = project.pipelines.get(scenario.pipelines["mr"]["id"])
    assert pipeline.source == "merge_request_event" and pipeline.status == "success"
    (bridge,) = pipeline.bridges.list()
    assert bridge.downstream_pipeline["source"] == "parent_pipeline"
    (job,) = pipeline.jobs.list()
    trace = project.jobs.get(job.id).trace()
    assert trace.decode().startswith("$ python3 probe.py") and b"[MASKED]" in trace
    created = scenario.pipelines["api"]
    assert (created["source"], created["ref"], created["status"]) == ("api", "other", "pending")


def check_python_gitlab_keeps_ci_variables_and_the_configuration_path(scenario: Scenario) -> None:
    project = scenario.sandbox.gitlab("maintainer").projects.get(2)
    assert {v.key: (v.masked, v.protected) for v in project.variables.list()} == {
        "SECRET": (True, False),
        "PROTECTED_ONE": (False, True),
    }
    with pytest.raises(gitlab.GitlabCreateError) as bad:
        project.variables.create({"key": "SHORT", "value": "short", "masked": True})
    assert bad.value.response_code == 400
    project.ci_config_path = "../outside.yml"
    with pytest.raises(gitlab.GitlabUpdateError) as traversal:
        project.save()
    assert "cannot include leading slash or directory traversal" in str(traversal.value)
    denied = scenario.sandbox.request("GET", "/projects/2/variables", "agents")
    assert (denied.status_code, denied.json()) == (403, {"message": "403 Forbidden"})


def check_a_retried_job_runs_again_in_a_home_of_its_own(scenario: Scenario) -> None:
    sandbox = scenario.sandbox
    old = scenario.only_job("push")
    new = sandbox.api("POST", f"/projects/2/jobs/{old['id']}/retry")
    sandbox.wait_for_pipelines()
    again = sandbox.api("GET", f"/projects/2/jobs/{new['id']}")
    assert (again["status"], again["name"]) == ("success", "facts")
    facts = scenario.facts(new["id"])
    assert facts["job"]["id"] == new["id"] and facts["home_held"] == []
    assert facts["home"] != scenario.facts(old["id"])["home"]


def check_skip_ci_and_ci_skip_make_skipped_pipelines_that_block_a_merge(
    scenario: Scenario,
) -> None:
    sandbox = scenario.sandbox
    before = {p["id"] for p in sandbox.api("GET", "/projects/2/pipelines")}
    sandbox.commit("feature", {"a.txt": "a\n"}, message="Tidy up [ci skip]")
    head = sandbox.mirror_commit(
        secrets.token_hex(20), "feature", {"b.txt": "b\n"}, push_options=["ci.skip"]
    )["id"]
    made = [p for p in sandbox.api("GET", "/projects/2/pipelines") if p["id"] not in before]
    assert sorted((p["ref"], p["status"]) for p in made) == [
        ("feature", "skipped"),  # [skip ci] and ci.skip come before the workflow
        ("feature", "skipped"),
        ("refs/merge-requests/1/head", "skipped"),
        ("refs/merge-requests/1/head", "skipped"),
    ]
    assert not sandbox.server.app.runner.busy()  # nothing to run
    sandbox.settings(only_allow_merge_if_pipeline_succeeds=True)
    mr = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert (mr["sha"], mr["head_pipeline"]["status"]) == (head, "skipped")
    assert mr["detailed_merge_status"] == "ci_must_pass"
    sandbox.settings(allow_merge_on_skipped_pipeline=True)
    assert (
        sandbox.api("GET", "/projects/2/merge_requests/1")["detailed_merge_status"] == "mergeable"
    )


def check_a_cancelled_pipeline_stops_the_job_it_runs(scenario: Scenario) -> None:
    """POST .../pipelines/:id/cancel: the running job is canceled and its run stopped, not
    waited out (a job that would wait two minutes)."""
    sandbox = scenario.sandbox
    waits = "waits:\n  script: [python3 -c 'import time; time.sleep(120)']\n"
    sandbox.commit("waiting", {".gitlab-ci.yml": waits}, message="A job that waits")
    (pipeline,) = sandbox.api("GET", "/projects/2/pipelines", params={"ref": "waiting"})
    (job,) = scenario.jobs(pipeline["id"])
    deadline = time.monotonic() + 60
    while sandbox.api("GET", f"/projects/2/jobs/{job['id']}")["status"] != "running":
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)  # until its shell reports the start to the sandbox
    project = sandbox.gitlab().projects.get(2, lazy=True)
    answer = project.pipelines.get(pipeline["id"]).cancel()
    assert (answer["id"], answer["status"]) == (pipeline["id"], "canceled")
    started = time.monotonic()
    sandbox.wait_for_pipelines(timeout=60)
    assert time.monotonic() - started < 60
    assert sandbox.api("GET", f"/projects/2/jobs/{job['id']}")["status"] == "canceled"
    assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}")["status"] == "canceled"


def test_the_runner_plays_gitlabs_pipelines() -> None:
    with played() as scenario:
        check_each_event_makes_the_pipelines_gitlab_makes_with_their_source(scenario)
        check_a_job_is_given_gitlabs_variables_and_the_projects(scenario)
        check_a_job_token_answers_get_job_for_its_job_while_it_runs(scenario)
        check_each_job_gets_a_fresh_home_and_work_directory(scenario)
        check_a_trigger_job_runs_its_child_pipeline_and_takes_its_status(scenario)
        check_python_gitlab_reads_pipelines_bridges_jobs_and_traces(scenario)
        check_python_gitlab_keeps_ci_variables_and_the_configuration_path(scenario)
        check_a_retried_job_runs_again_in_a_home_of_its_own(scenario)
        check_skip_ci_and_ci_skip_make_skipped_pipelines_that_block_a_merge(scenario)
        check_a_cancelled_pipeline_stops_the_job_it_runs(scenario)
