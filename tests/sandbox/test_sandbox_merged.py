"""Merged merge requests: what merging records, the merged listings and their time filters,
ordering, retargeting, and unapprove."""

from __future__ import annotations

import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox


@pytest.fixture
def mr(sandbox: RunningSandbox) -> dict:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"})
    return sandbox.create_mr("feature", title="Add app")


def merge(sandbox: RunningSandbox, iid: int, as_user: str = "agents") -> dict:
    return dict(sandbox.api("PUT", f"/projects/2/merge_requests/{iid}/merge", as_user=as_user))


def test_merging_records_who_when_and_the_merge_commit(sandbox: RunningSandbox, mr: dict) -> None:
    gl = sandbox.gitlab("maintainer")
    merge_request = gl.projects.get(2, lazy=True).mergerequests.get(1)
    merge_request.merge(sha=mr["sha"])
    merged = gl.projects.get(2, lazy=True).mergerequests.get(1)
    assert merged.state == "merged" and merged.sha == mr["sha"]  # sha stays the merged head
    assert merged.merged_by["username"] == merged.merge_user["username"] == "maintainer"
    assert merged.merged_at and merged.merged_at >= merged.created_at
    main = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]
    assert main["id"] == merged.merge_commit_sha and main["parent_ids"][1] == mr["sha"]
    assert merged.diff_refs["head_sha"] == mr["sha"]
    listed = sandbox.api("GET", "/projects/2/merge_requests", params={"state": "merged"})
    assert [(m["iid"], m["merged_by"]["id"], m["merge_commit_sha"]) for m in listed] == [
        (1, 13, main["id"])
    ]


def test_auto_merge_names_the_merge_user_not_a_merger(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.pipeline("acme/app", "feature", [{"name": "gate", "status": "running"}])
    waiting = sandbox.api("PUT", "/projects/2/merge_requests/1/merge", json={"auto_merge": True})
    assert (waiting["state"], waiting["merge_when_pipeline_succeeds"]) == ("opened", True)
    assert waiting["merge_user"]["username"] == "agents" and waiting["merged_by"] is None
    sandbox.commit("feature", {"src/app.py": "print('bye')\n"})
    pushed = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert pushed["merge_when_pipeline_succeeds"] is False  # a push cancels auto-merge
    assert pushed["merge_user"] is None


def test_auto_merge_waits_out_a_failed_pipeline_and_merges_on_a_green_one(
    sandbox: RunningSandbox, mr: dict
) -> None:
    sandbox.set_options(pipelines_must_succeed=True)
    running = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "running"}]
    )
    waiting = sandbox.api("PUT", "/projects/2/merge_requests/1/merge", json={"auto_merge": True})
    assert (waiting["state"], waiting["merge_when_pipeline_succeeds"]) == ("opened", True)
    sandbox.set_job(running["jobs"][0]["id"], "failed")
    failed = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert (failed["state"], failed["merge_when_pipeline_succeeds"]) == ("opened", True)
    assert failed["detailed_merge_status"] == "ci_must_pass"  # a failed pipeline never merges it
    again = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "running"}]
    )
    sandbox.set_job(again["jobs"][0]["id"], "success")
    merged = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert (merged["state"], merged["merged_by"]["username"]) == ("merged", "agents")
    assert merged["sha"] == mr["sha"]


def test_auto_merge_is_set_on_a_failed_pipeline_and_merges_at_once_when_nothing_blocks(
    sandbox: RunningSandbox, mr: dict
) -> None:
    sandbox.set_options(pipelines_must_succeed=True)
    sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "failed"}]
    )
    set_ = sandbox.api(
        "PUT", "/projects/2/merge_requests/1/merge", json={"merge_when_pipeline_succeeds": True}
    )
    assert (set_["state"], set_["merge_when_pipeline_succeeds"]) == ("opened", True)
    sandbox.commit("other", {"x.txt": "x\n"})
    sandbox.create_mr("other", title="Another")
    green = sandbox.pipeline(
        "acme/app", "refs/merge-requests/2/head", [{"name": "gate", "status": "success"}]
    )
    assert green["status"] == "success"
    now = sandbox.api("PUT", "/projects/2/merge_requests/2/merge", json={"auto_merge": True})
    assert now["state"] == "merged"  # mergeable with no pipeline in progress: merged at once


def test_a_branch_pipeline_does_not_displace_the_merge_request_pipeline_at_the_same_head(
    sandbox: RunningSandbox, mr: dict
) -> None:
    ours = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "success"}]
    )
    sandbox.pipeline("acme/app", "feature", [{"name": "gate", "status": "failed"}])
    head = sandbox.api("GET", "/projects/2/merge_requests/1")["head_pipeline"]
    assert head["id"] == ours["id"]


def test_reopening_takes_the_newest_pipeline_at_the_head_merge_request_pipelines_first(
    sandbox: RunningSandbox, mr: dict
) -> None:
    """GitLab's reopen transition recomputes the head pipeline (UpdateHeadPipelineForMerge-
    RequestWorker) and starts none: a branch pipeline made while the MR was closed heads it."""
    sandbox.settings(only_allow_merge_if_pipeline_succeeds=True)
    path = "/projects/2/merge_requests/1"
    first = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "failed"}]
    )
    sandbox.api("PUT", path, json={"state_event": "close"})
    head = sandbox.commit("feature", {"src/app.py": "print('unreviewed')\n"})["id"]
    assert sandbox.api("GET", path)["sha"] == mr["sha"]  # closed: its head stays
    branch = sandbox.pipeline("acme/app", "feature", [{"name": "unit", "status": "success"}])
    assert sandbox.api("GET", path)["head_pipeline"]["id"] == first["id"]  # closed: none heads it
    reopened = sandbox.api("PUT", path, json={"state_event": "reopen"})
    assert (reopened["sha"], reopened["head_pipeline"]["id"]) == (head, branch["id"])
    assert reopened["detailed_merge_status"] == "mergeable"
    assert merge(sandbox, 1)["state"] == "merged"


def test_reopening_prefers_a_merge_request_pipeline_and_keeps_a_stale_one_when_none_is_at_the_head(
    sandbox: RunningSandbox, mr: dict
) -> None:
    sandbox.settings(only_allow_merge_if_pipeline_succeeds=True)
    path = "/projects/2/merge_requests/1"
    stale = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "success"}]
    )
    sandbox.api("POST", f"{path}/notes", json={"body": "/close"})
    assert sandbox.api("GET", path)["state"] == "closed"
    head = sandbox.commit("feature", {"src/app.py": "print('unreviewed')\n"})["id"]
    sandbox.pipeline(
        "acme/app", "v1", [{"name": "unit", "status": "success"}], sha=head
    )  # no branch of the MR
    sandbox.api("POST", f"{path}/notes", json={"body": "/reopen"})
    reopened = sandbox.api("GET", path)
    assert (reopened["sha"], reopened["head_pipeline"]["id"]) == (head, stale["id"])
    assert reopened["detailed_merge_status"] == "ci_must_pass"  # its head pipeline is stale
    sandbox.api("PUT", path, json={"state_event": "close"})
    ours = sandbox.pipeline(
        "acme/app", "refs/merge-requests/1/head", [{"name": "gate", "status": "failed"}], sha=head
    )
    sandbox.pipeline("acme/app", "feature", [{"name": "unit", "status": "success"}])  # newer
    reopened = sandbox.api("PUT", path, json={"state_event": "reopen"})
    assert reopened["head_pipeline"]["id"] == ours["id"]
    assert reopened["detailed_merge_status"] == "ci_must_pass"


def three_mrs_two_merged(sandbox: RunningSandbox) -> list[str]:
    """!1 merged first, !2 merged an hour later, !3 open; returns the two merge times."""
    for n in (1, 2, 3):
        sandbox.commit(f"b{n}", {f"f{n}.txt": f"{n}\n"})
        sandbox.create_mr(f"b{n}", title=f"Change {n}")
        sandbox.advance_clock(60)
    first = merge(sandbox, 1)["merged_at"]
    sandbox.advance_clock(3600)
    second = merge(sandbox, 2, as_user="maintainer")["merged_at"]
    return [first, second]


def iids(sandbox: RunningSandbox, path: str, **params: object) -> list[int]:
    return [m["iid"] for m in sandbox.api("GET", path, params=params)]


def test_merged_listings_and_their_time_filters(sandbox: RunningSandbox) -> None:
    first, second = three_mrs_two_merged(sandbox)
    group = "/groups/acme/merge_requests"
    assert iids(sandbox, group, state="merged") == [2, 1]
    assert iids(sandbox, group, state="merged", merged_after=second) == [2]  # inclusive
    assert iids(sandbox, group, state="merged", merged_before=first) == [1]
    assert iids(sandbox, group, merged_after=first) == [2, 1]  # open ones have no merged_at
    assert iids(sandbox, group, state="merged", updated_after=second) == [2]
    created = sandbox.api("GET", "/projects/2/merge_requests/2")["created_at"]
    assert iids(sandbox, group, created_before=created) == [2, 1]
    assert iids(sandbox, group, created_after=created) == [3, 2]
    assert iids(sandbox, group, merge_user_id=13) == [2]
    assert iids(sandbox, group, merge_user_username="agents") == [1]
    # A date is its midnight, UTC: the first merge's day (the second may fall on the next one).
    date_only = first[:10]
    assert iids(sandbox, "/projects/2/merge_requests", merged_after=date_only) == [2, 1]


def test_merged_time_filters_switch(sandbox: RunningSandbox) -> None:
    _, second = three_mrs_two_merged(sandbox)
    sandbox.set_options(merged_time_filters=False)  # older GitLab ignores them
    assert iids(sandbox, "/groups/100/merge_requests", state="merged", merged_after=second) == [
        2,
        1,
    ]


def test_merged_listing_order(sandbox: RunningSandbox) -> None:
    three_mrs_two_merged(sandbox)
    path = "/projects/2/merge_requests"
    assert iids(sandbox, path, order_by="merged_at", sort="asc") == [1, 2, 3]  # unmerged last
    assert iids(sandbox, path, order_by="merged_at") == [2, 1, 3]
    assert iids(sandbox, path, order_by="updated_at", sort="desc")[0] == 2
    assert iids(sandbox, path, order_by="title", sort="asc") == [1, 2, 3]
    assert iids(sandbox, path, sort="asc") == [1, 2, 3]


def test_python_gitlab_lists_merged_mrs_of_the_group(sandbox: RunningSandbox) -> None:
    _, second = three_mrs_two_merged(sandbox)
    group = sandbox.gitlab("agents").groups.get(100, lazy=True)
    found = group.mergerequests.list(state="merged", updated_after=second, get_all=True)
    assert [(m.iid, m.merged_by["username"]) for m in found] == [(2, "maintainer")]


def test_list_filter_refusals(sandbox: RunningSandbox) -> None:
    bad = sandbox.request("GET", "/groups/999/merge_requests", "agents",
                          params={"merged_after": "yesterday"})  # fmt: skip
    assert (bad.status_code, bad.json()) == (400, {"error": "merged_after is invalid"})
    order = sandbox.request("GET", "/projects/2/merge_requests", "agents",
                            params={"order_by": "popularity"})  # fmt: skip
    assert order.json() == {"error": "order_by does not have a valid value"}
    unknown = sandbox.request("GET", "/groups/999/merge_requests", "agents")
    assert unknown.json() == {"message": "404 Group Not Found"}


def test_retarget_moves_the_diff_refs_and_keeps_the_head(sandbox: RunningSandbox, mr: dict) -> None:
    main = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    develop = sandbox.commit("develop", {"d.txt": "d\n"})["id"]
    sandbox.api("POST", "/projects/2/merge_requests/1/approve", as_user="review_bot")
    before = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert before["diff_refs"] == {"base_sha": main, "head_sha": mr["sha"], "start_sha": main}
    after = sandbox.api("PUT", "/projects/2/merge_requests/1", json={"target_branch": "develop"})
    assert after["target_branch"] == "develop" and after["sha"] == mr["sha"]
    assert after["diff_refs"] == {"base_sha": main, "head_sha": mr["sha"], "start_sha": develop}
    notes = sandbox.api("GET", "/projects/2/merge_requests/1/notes")
    assert notes[0]["system"] and notes[0]["body"] == (
        "changed target branch from `main` to `develop`"
    )
    approvals = sandbox.api("GET", "/projects/2/merge_requests/1/approvals")
    assert [a["user"]["username"] for a in approvals["approved_by"]] == ["review-bot"]  # Free


def test_retarget_on_premium_drops_approvals(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_options(reset_approvals_on_push=True)
    sandbox.create_branch("develop")
    sandbox.api("POST", "/projects/2/merge_requests/1/approve", as_user="review_bot")
    sandbox.api("PUT", "/projects/2/merge_requests/1", json={"target_branch": "develop"})
    approvals = sandbox.api("GET", "/projects/2/merge_requests/1/approvals")
    assert approvals["approved_by"] == []


def test_a_push_refreshes_the_diff_against_a_moved_target(
    sandbox: RunningSandbox, mr: dict
) -> None:
    main = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    moved = sandbox.commit("main", {"other.txt": "x\n"})["id"]
    stale = sandbox.api("GET", "/projects/2/merge_requests/1")["diff_refs"]
    assert stale["start_sha"] == main  # no new version until the source moves
    head = sandbox.commit("feature", {"src/app.py": "print('bye')\n"})["id"]
    fresh = sandbox.api("GET", "/projects/2/merge_requests/1")["diff_refs"]
    assert fresh == {"base_sha": main, "head_sha": head, "start_sha": moved}


def test_unapprove_removes_only_the_callers_approval(sandbox: RunningSandbox, mr: dict) -> None:
    for user in ("review_bot", "maintainer"):
        sandbox.api("POST", "/projects/2/merge_requests/1/approve", as_user=user)
    bot = sandbox.gitlab("review_bot").projects.get(2, lazy=True).mergerequests.get(1, lazy=True)
    bot.unapprove()
    approvals = sandbox.api("GET", "/projects/2/merge_requests/1/approvals")
    assert [a["user"]["username"] for a in approvals["approved_by"]] == ["maintainer"]
    reporter = sandbox.request("POST", "/projects/2/merge_requests/1/unapprove", "reporter")
    assert (reporter.status_code, reporter.json()) == (403, {"message": "403 Forbidden"})
    unknown = sandbox.request("POST", "/projects/2/merge_requests/9/unapprove", "review_bot")
    assert (unknown.status_code, unknown.json()) == (404, {"message": "404 Not found"})
    bad = requests.post(sandbox.api_url + "/projects/2/merge_requests/1/unapprove",
                        headers={"PRIVATE-TOKEN": "nope"}, timeout=5)  # fmt: skip
    assert bad.status_code == 401
