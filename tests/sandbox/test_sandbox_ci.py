"""CI: the project's ci_config_path, merge request pipelines from the sandbox job list, job
statuses moved as a runner would, GET /job by job token, job retries and pipeline cancels."""

from __future__ import annotations

import gitlab
import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox

JOBS = [
    {"name": "gate", "stage": "test"},
    {"name": "report", "stage": "report", "allow_failure": True},
]


@pytest.fixture
def mr(sandbox: RunningSandbox) -> dict:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"})
    return sandbox.create_mr("feature", title="Add app")


def job_get(sandbox: RunningSandbox, path: str, **kw) -> requests.Response:
    return requests.get(sandbox.api_url + path, timeout=5, **kw)


# -- ci_config_path and PUT /projects/:id -----------------------------------------------------


def test_ci_config_path_is_null_until_a_maintainer_sets_it(sandbox: RunningSandbox) -> None:
    assert sandbox.api("GET", "/projects/2")["ci_config_path"] is None
    path = ".gitlab/gate.yml@acme/tracker"
    edited = sandbox.api("PUT", "/projects/2", as_user="maintainer", json={"ci_config_path": path})
    assert edited["ci_config_path"] == path and edited["id"] == 2
    assert sandbox.api("GET", "/projects/acme%2Fapp", as_user="reporter")["ci_config_path"] == path
    cleared = sandbox.api("PUT", "/projects/2", as_user="maintainer", data={"ci_config_path": ""})
    assert cleared["ci_config_path"] is None


def test_python_gitlab_saves_a_project_setting(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("maintainer").projects.get("acme/app")
    project.ci_config_path = "ci.yml@acme/tracker"
    project.only_allow_merge_if_pipeline_succeeds = True
    project.save()
    again = sandbox.gitlab("agents").projects.get(2)
    assert again.ci_config_path == "ci.yml@acme/tracker"
    assert again.only_allow_merge_if_pipeline_succeeds is True


def test_only_a_maintainer_edits_a_project(sandbox: RunningSandbox) -> None:
    body = {"ci_config_path": "x.yml"}
    for user, status in (("agents", 403), ("reporter", 403)):
        response = sandbox.request("PUT", "/projects/2", user, json=body)
        assert (response.status_code, response.json()) == (status, {"message": "403 Forbidden"})
    read_only = requests.put(
        sandbox.api_url + "/projects/2",
        headers={"PRIVATE-TOKEN": sandbox.users["maintainer"]["read_token"]},
        json=body,
        timeout=5,
    )
    assert read_only.status_code == 403 and read_only.json()["error"] == "insufficient_scope"
    bad = requests.put(
        sandbox.api_url + "/projects/2", headers={"PRIVATE-TOKEN": "nope"}, json=body, timeout=5
    )
    assert (bad.status_code, bad.json()) == (401, {"message": "401 Unauthorized"})
    anonymous = requests.put(sandbox.api_url + "/projects/2", json=body, timeout=5)
    assert anonymous.status_code == 401
    unknown = sandbox.request("PUT", "/projects/999", "maintainer", json=body)
    assert (unknown.status_code, unknown.json()) == (404, {"message": "404 Project Not Found"})
    assert sandbox.api("GET", "/projects/2")["ci_config_path"] is None


def test_project_edit_parameters_are_checked_first(sandbox: RunningSandbox) -> None:
    empty = sandbox.request("PUT", "/projects/999", "agents", json={"name": "ignored"})
    assert empty.status_code == 400
    assert empty.json()["error"].endswith("are missing, at least one parameter must be provided")
    flag = sandbox.request(
        "PUT", "/projects/2", "agents", json={"only_allow_merge_if_pipeline_succeeds": "maybe"}
    )
    assert flag.json() == {"error": "only_allow_merge_if_pipeline_succeeds is invalid"}
    method = sandbox.request("PUT", "/projects/2", "maintainer", json={"merge_method": "squash"})
    assert (method.status_code, method.json()) == (
        400,
        {"error": "merge_method does not have a valid value"},
    )


# -- merge request pipelines -----------------------------------------------------------------


def test_mr_pipeline_at_the_head_from_the_job_list(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_ci("acme/app", JOBS)
    response = sandbox.request("POST", "/projects/2/merge_requests/1/pipelines", "review_bot")
    assert response.status_code == 200
    pipeline = response.json()
    assert (pipeline["ref"], pipeline["sha"], pipeline["source"], pipeline["status"]) == (
        "refs/merge-requests/1/head",
        mr["sha"],
        "merge_request_event",
        "pending",
    )
    assert pipeline["user"]["username"] == "review-bot" and pipeline["before_sha"] == "0" * 40
    jobs = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")
    assert {j["name"]: (j["status"], j["allow_failure"]) for j in jobs} == {
        "gate": ("pending", False),
        "report": ("created", True),
    }
    got = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert (got["head_pipeline"]["id"], got["head_pipeline"]["sha"]) == (pipeline["id"], mr["sha"])
    listed = sandbox.api("GET", "/projects/2/merge_requests/1/pipelines")
    assert listed[0]["id"] == pipeline["id"]


def test_python_gitlab_creates_an_mr_pipeline(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_ci("acme/app", JOBS)
    project = sandbox.gitlab("review_bot").projects.get(2, lazy=True)
    created = project.mergerequests.get(1, lazy=True).pipelines.create()
    assert created.ref == "refs/merge-requests/1/head" and created.sha == mr["sha"]
    assert [p.id for p in project.mergerequests.get(1, lazy=True).pipelines.list()] == [created.id]


def test_mr_pipeline_refusals(sandbox: RunningSandbox, mr: dict) -> None:
    path = "/projects/2/merge_requests/1/pipelines"
    no_ci = sandbox.request("POST", path, "agents")
    assert (no_ci.status_code, no_ci.json()) == (405, {"message": "405 Method Not Allowed"})
    sandbox.set_ci("acme/app", JOBS)
    reporter = sandbox.request("POST", "/projects/2/merge_requests/99/pipelines", "reporter")
    assert (reporter.status_code, reporter.json()) == (403, {"message": "403 Forbidden"})
    unknown = sandbox.request("POST", "/projects/2/merge_requests/99/pipelines", "agents")
    assert (unknown.status_code, unknown.json()) == (404, {"message": "404 Not found"})
    bad = requests.post(sandbox.api_url + path, headers={"PRIVATE-TOKEN": "nope"}, timeout=5)
    assert (bad.status_code, bad.json()) == (401, {"message": "401 Unauthorized"})
    hidden = sandbox.request("POST", "/projects/4/merge_requests/1/pipelines", "agents")
    assert hidden.json() == {"message": "404 Project Not Found"}
    assert sandbox.api("GET", "/projects/2/pipelines") == []
    queued = sandbox.request("POST", path, "agents", json={"async": True})
    assert (queued.status_code, queued.content) == (202, b"")
    assert len(sandbox.api("GET", "/projects/2/pipelines")) == 1


def test_merged_results_pipeline_with_merge_pipelines_enabled(
    sandbox: RunningSandbox, mr: dict
) -> None:
    sandbox.set_ci("acme/app", [{"name": "gate"}])
    settings = {"merge_pipelines_enabled": True, "only_allow_merge_if_pipeline_succeeds": True}
    sandbox.api("PUT", "/projects/2", as_user="maintainer", json=settings)
    pipeline = sandbox.api("POST", "/projects/2/merge_requests/1/pipelines")
    assert pipeline["ref"] == "refs/merge-requests/1/merge" and pipeline["sha"] != mr["sha"]
    merge = sandbox.api("GET", f"/projects/2/repository/commits/{pipeline['sha']}")
    main = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    assert merge["parent_ids"] == [main, mr["sha"]]
    job = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")[0]
    got = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert got["detailed_merge_status"] == "ci_still_running"
    sandbox.set_job(job["id"], "success")
    got = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert got["head_pipeline"]["sha"] == pipeline["sha"] != got["sha"]
    assert got["detailed_merge_status"] == "mergeable"  # the merged results pipeline counts


# -- jobs: statuses, GET /job, retry ---------------------------------------------------------


def test_pipeline_status_follows_the_runner(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_ci("acme/app", JOBS)
    pipeline = sandbox.api("POST", "/projects/2/merge_requests/1/pipelines")
    gate, report = sorted(
        sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs"), key=lambda j: j["id"]
    )
    running = sandbox.set_job(gate["id"], "running")
    assert running["status"] == "running" and running["started_at"] and running["token"]
    assert running["pipeline"]["status"] == "running"
    sandbox.set_job(gate["id"], "success")
    done = sandbox.set_job(report["id"], "failed")  # allowed to fail
    assert done["finished_at"] and done["pipeline"]["status"] == "success"
    head = sandbox.api("GET", "/projects/2/merge_requests/1")["head_pipeline"]
    assert (head["id"], head["status"]) == (pipeline["id"], "success")
    missing = requests.post(sandbox.sandbox_api + "/jobs/1", json={"status": "running"}, timeout=5)
    assert (missing.status_code, missing.json()) == (404, {"message": "404 Job Not Found"})
    bad = requests.post(
        sandbox.sandbox_api + f"/jobs/{gate['id']}", json={"status": "done"}, timeout=5
    )
    assert bad.status_code == 400 and "done" in bad.json()["error"]


def running_job(sandbox: RunningSandbox) -> dict:
    sandbox.set_ci("acme/app", [{"name": "gate"}])
    pipeline = sandbox.api("POST", "/projects/2/merge_requests/1/pipelines", as_user="review_bot")
    job = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")[0]
    return sandbox.set_job(job["id"], "running")


def test_get_job_answers_the_job_of_a_job_token(sandbox: RunningSandbox, mr: dict) -> None:
    job = running_job(sandbox)
    by_header = job_get(sandbox, "/job", headers={"JOB-TOKEN": job["token"]})
    assert by_header.status_code == 200
    body = by_header.json()
    assert (body["id"], body["name"], body["status"], body["ref"]) == (
        job["id"],
        "gate",
        "running",
        "refs/merge-requests/1/head",
    )
    pipeline = body["pipeline"]
    assert {k: pipeline[k] for k in ("project_id", "sha", "ref", "source")} == {
        "project_id": 2,
        "sha": mr["sha"],
        "ref": "refs/merge-requests/1/head",
        "source": "merge_request_event",
    }
    assert pipeline["status"] == "running" and body["user"]["username"] == "review-bot"
    assert body["project"] == {"ci_job_token_scope_enabled": False} and "token" not in body
    by_param = job_get(sandbox, "/job", params={"job_token": job["token"]}).json()
    by_bearer = job_get(sandbox, "/job", headers={"Authorization": f"Bearer {job['token']}"})
    assert by_param["id"] == by_bearer.json()["id"] == job["id"]


def test_get_job_refusals(sandbox: RunningSandbox, mr: dict) -> None:
    job = running_job(sandbox)
    bad = job_get(sandbox, "/job", headers={"JOB-TOKEN": "sandbox-job-1-token"})
    assert (bad.status_code, bad.json()) == (401, {"message": "401 Unauthorized"})
    assert job_get(sandbox, "/job").status_code == 401
    personal = sandbox.request("GET", "/job", "agents")
    assert (personal.status_code, personal.json()) == (404, {"message": "404 Job Not Found"})
    sandbox.set_job(job["id"], "success")  # a finished job's token is dead
    finished = job_get(sandbox, "/job", headers={"JOB-TOKEN": job["token"]})
    assert (finished.status_code, finished.json()) == (401, {"message": "401 Unauthorized"})
    mr_read = job_get(sandbox, "/projects/2/merge_requests/1", headers={"JOB-TOKEN": job["token"]})
    assert mr_read.status_code == 401
    # where job tokens are not taken at all, even a dead one is simply no credentials
    notes = job_get(sandbox, "/projects/2/issues/1/notes", headers={"JOB-TOKEN": job["token"]})
    assert notes.json() == {"message": "404 Project Not Found"}


def test_retry_replaces_a_finished_job(sandbox: RunningSandbox, mr: dict) -> None:
    job = running_job(sandbox)
    pipeline_id = job["pipeline"]["id"]
    running = sandbox.request("POST", f"/projects/2/jobs/{job['id']}/retry", "agents")
    assert running.json() == {"message": "403 Forbidden - Job is not retryable"}
    sandbox.set_job(job["id"], "failed")
    assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline_id}")["status"] == "failed"
    for user, status, body in (
        ("reporter", 403, {"message": "403 Forbidden"}),
        ("agents", 404, {"message": "404 Not found"}),
    ):
        target = job["id"] if user == "reporter" else 999999
        refused = sandbox.request("POST", f"/projects/2/jobs/{target}/retry", user)
        assert (refused.status_code, refused.json()) == (status, body)
    project = sandbox.gitlab("agents").projects.get(2, lazy=True)
    retried = project.jobs.get(job["id"], lazy=True).retry()
    assert retried["id"] != job["id"] and (retried["name"], retried["status"]) == (
        "gate",
        "pending",
    )
    jobs = sandbox.api("GET", f"/projects/2/pipelines/{pipeline_id}/jobs")
    assert [j["id"] for j in jobs] == [retried["id"]]
    every = sandbox.api(
        "GET", f"/projects/2/pipelines/{pipeline_id}/jobs", params={"include_retried": True}
    )
    assert [j["id"] for j in every] == [retried["id"], job["id"]]
    assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline_id}")["status"] == "pending"
    sandbox.set_job(retried["id"], "success")
    assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline_id}")["status"] == "success"
    assert project.jobs.get(retried["id"]).status == "success"


def test_sandbox_ci_control(sandbox: RunningSandbox) -> None:
    assert sandbox.control("GET", "ci", params={"project": "acme/app"}) == {
        "project": "acme/app",
        "jobs": None,
    }
    set_ = sandbox.set_ci("2", [{"name": "gate"}])
    assert set_["jobs"] == [{"name": "gate", "stage": "test", "allow_failure": False}]
    bad = requests.post(
        sandbox.sandbox_api + "/ci", json={"project": "acme/app", "jobs": [{}]}, timeout=5
    )
    assert bad.status_code == 400
    unknown = requests.post(sandbox.sandbox_api + "/ci", json={"project": "x/y"}, timeout=5)
    assert unknown.status_code == 404
    sandbox.reset()
    assert sandbox.control("GET", "ci", params={"project": "acme/app"})["jobs"] is None


def test_python_gitlab_reads_a_job_with_the_job_token(sandbox: RunningSandbox, mr: dict) -> None:
    job = running_job(sandbox)
    gl = gitlab.Gitlab(sandbox.url, job_token=job["token"])
    mr_read = gl.projects.get(2, lazy=True).mergerequests.get(1)
    assert mr_read.sha == mr["sha"]
    assert gl.http_get("/job")["id"] == job["id"]


def test_a_jobs_log_is_plain_text_as_its_runner_sent_it(sandbox: RunningSandbox, mr: dict) -> None:
    job = running_job(sandbox)
    empty = sandbox.request("GET", f"/projects/2/jobs/{job['id']}/trace", "reporter")
    assert (empty.status_code, empty.text) == (200, "")  # GitLab: the raw log, or ''
    sandbox.set_job(job["id"], "success", trace="step 1\npairgate-evidence-ci: {}\n")
    read = sandbox.request("GET", f"/projects/2/jobs/{job['id']}/trace", "reporter")
    assert read.headers["Content-Type"].startswith("text/plain")
    assert read.headers["Content-Disposition"] == f'infile; filename="{job["id"]}.log"'
    assert read.text == "step 1\npairgate-evidence-ci: {}\n"
    # python-gitlab, a client nobody here wrote, reads it the same way
    project = sandbox.gitlab("agents").projects.get(2, lazy=True)
    assert project.jobs.get(job["id"], lazy=True).trace() == read.content
    missing = sandbox.request("GET", "/projects/2/jobs/999999/trace", "agents")
    assert (missing.status_code, missing.json()) == (404, {"message": "404 Not found"})
    bad = requests.post(
        sandbox.sandbox_api + f"/jobs/{job['id']}",
        json={"status": "success", "trace": 1},
        timeout=5,
    )
    assert (bad.status_code, bad.json()["error"]) == (400, "trace must be a string")


def test_cancel_stops_the_jobs_that_have_not_finished(sandbox: RunningSandbox, mr: dict) -> None:
    """pipelines.md, "Cancel a pipeline's jobs": 200 with the pipeline, canceled; a finished job
    keeps its end and a manual one waits on (Ci::CancelPipelineService)."""
    sandbox.set_ci("acme/app", [*JOBS, {"name": "deploy", "stage": "deploy", "when": "manual"}])
    pipeline = sandbox.api("POST", "/projects/2/merge_requests/1/pipelines")
    jobs = {
        j["name"]: j for j in sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")
    }
    sandbox.set_job(jobs["report"]["id"], "success")
    sandbox.set_job(jobs["deploy"]["id"], "manual")
    path = f"/projects/2/pipelines/{pipeline['id']}/cancel"
    for user, target, status, body in (
        ("reporter", pipeline["id"], 403, {"message": "403 Forbidden"}),
        ("reporter", 999999, 404, {"message": "404 Not found"}),  # found before it is checked
        ("agents", 999999, 404, {"message": "404 Not found"}),
    ):
        refused = sandbox.request("POST", f"/projects/2/pipelines/{target}/cancel", user)
        assert (refused.status_code, refused.json()) == (status, body)
    assert sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}")["status"] == "running"
    answer = sandbox.request("POST", path, "agents")
    assert answer.status_code == 200
    assert (answer.json()["id"], answer.json()["status"]) == (pipeline["id"], "canceled")
    after = {
        j["name"]: j["status"]
        for j in sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")
    }
    assert after == {"gate": "canceled", "report": "success", "deploy": "manual"}
    again = sandbox.request("POST", path, "agents")  # nothing left: GitLab answers it all the same
    assert (again.status_code, again.json()["status"]) == (200, "canceled")
    mr_read = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert mr_read["head_pipeline"]["status"] == "canceled"


def test_python_gitlab_cancels_a_pipeline(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_ci("acme/app", JOBS)
    project = sandbox.gitlab("review_bot").projects.get(2, lazy=True)
    created = project.mergerequests.get(1, lazy=True).pipelines.create()
    answer = project.pipelines.get(created.id).cancel()
    assert (answer["id"], answer["status"]) == (created.id, "canceled")
    assert project.pipelines.get(created.id).status == "canceled"
    denied = sandbox.gitlab("reporter").projects.get(2, lazy=True).pipelines.get(created.id)
    with pytest.raises(gitlab.GitlabPipelineCancelError) as refused:
        denied.cancel()
    assert refused.value.response_code == 403
