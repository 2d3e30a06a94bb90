"""Branches, commits, files, merge requests, approvals, merge and pipelines."""

from __future__ import annotations

import base64

import gitlab
import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox


@pytest.fixture
def mr(sandbox: RunningSandbox) -> dict:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"}, message="Add app\n\nBody.")
    return sandbox.create_mr("feature", title="Add app", description="Closes #1")


def test_every_project_has_main_with_one_stable_commit(sandbox: RunningSandbox) -> None:
    heads = {}
    for project in ("acme/tracker", "acme/app", "partner/shared-lib", "outside/app"):
        branch = sandbox.api(
            "GET",
            f"/projects/{project.replace('/', '%2F')}/repository/branches/main",
            as_user="maintainer",
        )
        commit = branch["commit"]
        assert len(commit["id"]) == 40 and commit["parent_ids"] == []
        heads[project] = commit["id"]
    assert len(set(heads.values())) == 4
    sandbox.reset()
    again = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    assert again == heads["acme/app"]


def test_commit_with_actions_and_files(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("maintainer").projects.get(1)
    commit = project.commits.create(
        {
            "branch": "main",
            "commit_message": "Add configuration",
            "actions": [
                {"action": "create", "file_path": "config/pairgate-config.json", "content": "{}\n"},
                {"action": "update", "file_path": "README.md", "content": "# tracker\n"},
            ],
        }
    )
    assert project.branches.get("main").commit["id"] == commit.id
    raw = project.files.raw("config/pairgate-config.json", ref=commit.id)
    assert raw == b"{}\n"
    f = project.files.get("README.md", ref="main")
    assert base64.b64decode(f.content) == b"# tracker\n" and f.last_commit_id == commit.id
    assert project.commits.get(commit.id).parent_ids == [
        sandbox.api("GET", f"/projects/1/repository/commits/{commit.id}")["parent_ids"][0]
    ]
    project.commits.create(
        {
            "branch": "main",
            "commit_message": "Drop it",
            "actions": [{"action": "delete", "file_path": "config/pairgate-config.json"}],
        }
    )
    gone = sandbox.request(
        "GET",
        "/projects/1/repository/files/config%2Fpairgate-config.json/raw",
        params={"ref": "main"},
    )
    assert (gone.status_code, gone.json()) == (404, {"message": "404 File Not Found"})
    old = sandbox.request(
        "GET",
        "/projects/1/repository/files/config%2Fpairgate-config.json/raw",
        params={"ref": commit.id},
    )
    assert old.text == "{}\n" and old.headers["X-Gitlab-Commit-Id"] == commit.id


@pytest.mark.sandbox_unserved_ok(r"^GET /api/v4/projects/1/repository/files/a/b\.txt/raw$")
def test_raw_file_with_a_read_token(sandbox: RunningSandbox) -> None:
    token = sandbox.users["review_bot"]["read_token"]
    response = requests.get(
        sandbox.api_url + "/projects/acme%2Ftracker/repository/files/README.md/raw",
        params={"ref": "main"},
        headers={"PRIVATE-TOKEN": token},
        timeout=5,
    )
    assert response.status_code == 200 and response.text == "# acme/tracker\n"
    assert response.headers["Content-Type"].startswith("text/plain")
    missing_ref = requests.get(
        sandbox.api_url + "/projects/1/repository/files/README.md/raw",
        params={"ref": "nope"},
        headers={"PRIVATE-TOKEN": token},
        timeout=5,
    )
    assert missing_ref.json() == {"message": "404 Commit Not Found"}
    unencoded = requests.get(
        sandbox.api_url + "/projects/1/repository/files/a/b.txt/raw",
        headers={"PRIVATE-TOKEN": token},
        timeout=5,
    )
    assert unencoded.json() == {"error": "404 Not Found"}


def test_developers_cannot_push_to_protected_main(sandbox: RunningSandbox) -> None:
    response = sandbox.request(
        "POST",
        "/projects/2/repository/commits",
        json={
            "branch": "main",
            "commit_message": "x",
            "actions": [{"action": "create", "file_path": "x", "content": ""}],
        },
    )
    assert response.json() == {
        "message": "403 Forbidden - You are not allowed to push into this branch"
    }


def test_branch_create_and_get(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab().projects.get(2)
    branch = project.branches.create({"branch": "topic/x", "ref": "main"})
    assert branch.name == "topic/x"
    assert project.branches.get("topic/x").commit["id"] == project.branches.get("main").commit["id"]
    with pytest.raises(gitlab.GitlabGetError) as error:
        project.branches.get("nope")
    assert error.value.error_message == "404 Branch Not Found"


def test_merge_request_fields(sandbox: RunningSandbox, mr: dict) -> None:
    head = sandbox.api("GET", "/projects/2/repository/branches/feature")["commit"]["id"]
    assert (mr["iid"], mr["state"], mr["sha"], mr["head_pipeline"]) == (1, "opened", head, None)
    assert mr["diff_refs"]["head_sha"] == head and mr["detailed_merge_status"] == "mergeable"
    assert mr["author"]["id"] == 10 and mr["source_branch"] == "feature"
    project = sandbox.gitlab().projects.get(2)
    commits = project.mergerequests.get(1).commits()
    assert [c.title for c in commits] == ["Add app"]
    listed = project.mergerequests.list(get_all=True, state="opened", source_branch="feature")
    assert [m.iid for m in listed] == [1]
    assert project.mergerequests.list(get_all=True, state="merged") == []
    assert [m.iid for m in project.mergerequests.list(get_all=True, search="add app")] == [1]
    group = sandbox.gitlab().groups.get(100)
    assert [m.iid for m in group.mergerequests.list(get_all=True)] == [1]


def test_edit_merge_request_moves_updated_at(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.advance_clock(10)
    edited = sandbox.request(
        "PUT",
        "/projects/2/merge_requests/1",
        json={"title": "Draft: Add app", "description": "new"},
    ).json()
    assert edited["updated_at"] > mr["updated_at"] and edited["draft"] is True
    assert edited["detailed_merge_status"] == "draft_status"


def test_related_merge_requests(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.commit("other", {"b": "b"})
    sandbox.create_mr("other", title="Mentions acme/tracker#1")
    related = sandbox.request("GET", "/projects/1/issues/1/related_merge_requests").json()
    assert [(m["project_id"], m["iid"]) for m in related] == [(2, 2)]
    sandbox.commit("local", {"c": "c"}, project="acme/tracker", as_user="agents")
    sandbox.create_mr("local", project="acme/tracker", title="Fix", description="For #1.")
    related = sandbox.request("GET", "/projects/1/issues/1/related_merge_requests").json()
    assert [(m["project_id"], m["iid"]) for m in related] == [(2, 2), (1, 1)]


def test_wrong_sha_approve_is_409_naming_the_head(sandbox: RunningSandbox, mr: dict) -> None:
    project = sandbox.gitlab("review_bot").projects.get(2)
    with pytest.raises(gitlab.GitlabMRApprovalError) as error:
        project.mergerequests.get(1).approve(sha="0" * 40)
    assert error.value.response_code == 409
    assert error.value.error_message == f"SHA does not match HEAD of source branch: {mr['sha']}"
    approvals = project.mergerequests.get(1).approvals.get()
    assert approvals.approved_by == []


def test_approve_records_approved_by_and_survives_a_push(sandbox: RunningSandbox, mr: dict) -> None:
    project = sandbox.gitlab("review_bot").projects.get(2)
    project.mergerequests.get(1).approve(sha=mr["sha"])
    approvals = project.mergerequests.get(1).approvals.get()
    assert [a["user"]["id"] for a in approvals.approved_by] == [11]
    moved = sandbox.commit("feature", {"src/app.py": "print('bye')\n"}, message="Change app")
    after = project.mergerequests.get(1)
    assert after.sha == moved["id"] != mr["sha"]
    assert [a["user"]["id"] for a in after.approvals.get().approved_by] == [11]
    assert next(iter(after.commits())).id == moved["id"]
    notes = [n.body for n in after.notes.list(get_all=True) if n.system]
    assert notes == ["added 1 commit", "approved this merge request"]


def test_approval_ladder(sandbox: RunningSandbox, mr: dict) -> None:
    path = "/projects/2/merge_requests/1"
    assert sandbox.request("POST", path + "/approve", "reporter").json() == {
        "message": "403 Forbidden"
    }
    first = sandbox.request("POST", path + "/approve", "review_bot", json={"sha": mr["sha"]})
    assert first.status_code == 201 and first.json()["user_has_approved"] is True
    assert sandbox.request("POST", path + "/approve", "review_bot").status_code == 304
    assert sandbox.request("POST", path + "/unapprove", "review_bot").status_code == 201
    assert sandbox.request("POST", path + "/unapprove", "review_bot").status_code == 304
    sandbox.set_options(legacy_approval_statuses=True, approvals_shape="ce")
    sandbox.request("POST", path + "/approve", "review_bot")
    assert sandbox.request("POST", path + "/approve", "review_bot").status_code == 401
    sandbox.request("POST", path + "/unapprove", "review_bot")
    assert sandbox.request("POST", path + "/unapprove", "review_bot").status_code == 404
    assert set(sandbox.request("GET", path + "/approvals").json()) == {
        "user_has_approved",
        "user_can_approve",
        "approved",
        "approved_by",
    }


def test_premium_reset_on_push(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_options(reset_approvals_on_push=True)
    sandbox.request("POST", "/projects/2/merge_requests/1/approve", "review_bot")
    sandbox.commit("feature", {"more": "x"})
    assert (
        sandbox.request("GET", "/projects/2/merge_requests/1/approvals").json()["approved_by"] == []
    )


def test_merge_with_wrong_sha_is_409_and_with_the_right_one_merges(
    sandbox: RunningSandbox, mr: dict
) -> None:
    project = sandbox.gitlab().projects.get(2)
    merge_request = project.mergerequests.get(1)
    with pytest.raises(gitlab.GitlabMRClosedError) as error:
        merge_request.merge(sha="f" * 40)
    assert error.value.response_code == 409 and mr["sha"] in error.value.error_message
    merge_request.merge(sha=mr["sha"])
    merged = project.mergerequests.get(1)
    assert (merged.state, merged.sha, merged.merge_user["id"]) == ("merged", mr["sha"], 10)
    main = project.branches.get("main").commit
    assert main["id"] == merged.merge_commit_sha and main["parent_ids"][1] == mr["sha"]
    assert project.files.raw("src/app.py", ref="main") == b"print('hi')\n"
    again = sandbox.request("PUT", "/projects/2/merge_requests/1/merge")
    assert (again.status_code, again.json()) == (405, {"message": "405 Method Not Allowed"})


def test_merge_refused_to_reporter_before_sha_check(sandbox: RunningSandbox, mr: dict) -> None:
    response = sandbox.request(
        "PUT", "/projects/2/merge_requests/1/merge", "reporter", json={"sha": "0" * 40}
    )
    assert (response.status_code, response.json()) == (401, {"message": "401 Unauthorized"})


def test_pipeline_becomes_head_pipeline_and_goes_stale(sandbox: RunningSandbox, mr: dict) -> None:
    created = sandbox.pipeline(
        "acme/app",
        "feature",
        [
            {"name": "test", "status": "success"},
            {"name": "lint", "status": "failed", "allow_failure": True},
        ],
    )
    assert created["status"] == "success" and created["sha"] == mr["sha"]
    project = sandbox.gitlab().projects.get(2)
    merge_request = project.mergerequests.get(1)
    assert merge_request.head_pipeline["id"] == created["id"]
    assert merge_request.head_pipeline["sha"] == merge_request.sha
    jobs = project.pipelines.get(created["id"]).jobs.list(get_all=True)
    assert {(j.name, j.status, j.allow_failure) for j in jobs} == {
        ("test", "success", False),
        ("lint", "failed", True),
    }
    assert [p.id for p in merge_request.pipelines.list(get_all=True)] == [created["id"]]
    sandbox.commit("feature", {"x": "y"})
    stale = project.mergerequests.get(1)
    assert stale.head_pipeline["id"] == created["id"] and stale.head_pipeline["sha"] != stale.sha


def test_merge_request_ref_pipeline_and_status_following_jobs(
    sandbox: RunningSandbox, mr: dict
) -> None:
    running = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "running"}]
    )
    assert (running["status"], running["source"]) == ("running", "merge_request_event")
    failed = sandbox.control(
        "PUT", f"pipelines/{running['id']}", json={"jobs": [{"name": "gate", "status": "failed"}]}
    )
    assert failed["status"] == "failed"
    head = sandbox.request("GET", "/projects/2/merge_requests/1").json()["head_pipeline"]
    assert (head["id"], head["status"]) == (running["id"], "failed")


def test_job_token_reads_allowed_routes_of_its_own_project(
    sandbox: RunningSandbox, mr: dict
) -> None:
    pipeline = sandbox.pipeline("acme/app", "feature", [{"name": "gate", "status": "running"}])
    token = pipeline["jobs"][0]["token"]
    headers = {"JOB-TOKEN": token}
    ok = requests.get(sandbox.api_url + "/projects/2/merge_requests/1", headers=headers, timeout=5)
    assert ok.status_code == 200
    other = requests.get(sandbox.api_url + "/projects/1/issues/1", headers=headers, timeout=5)
    assert other.status_code == 404
    notes = requests.get(sandbox.api_url + "/projects/2/issues/1/notes", headers=headers, timeout=5)
    assert notes.status_code == 404  # issue notes do not take job tokens: anonymous
    assert requests.get(sandbox.api_url + "/user", headers=headers, timeout=5).status_code == 401
