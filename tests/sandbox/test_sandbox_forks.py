"""Forks: a fork into a group, and a merge request from it into its parent."""

from __future__ import annotations

from pairgate.sandbox.testing import RunningSandbox


def fork(sandbox: RunningSandbox, **params: object) -> dict:
    body = {"namespace_path": "outside", "path": "app-fork", **params}
    return dict(sandbox.api("POST", "/projects/2/fork", as_user="maintainer", json=body))


def test_a_fork_starts_with_the_parents_branches_and_ci_config_path(
    sandbox: RunningSandbox,
) -> None:
    sandbox.api(
        "PUT", "/projects/2", as_user="maintainer", json={"ci_config_path": "ci.yml@acme/tracker"}
    )
    made = fork(sandbox)
    assert made["path_with_namespace"] == "outside/app-fork"
    assert made["forked_from_project"]["path_with_namespace"] == "acme/app"
    assert made["ci_config_path"] == "ci.yml@acme/tracker"  # ForkService copies it
    parent = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    mine = sandbox.api(
        "GET", f"/projects/{made['id']}/repository/branches/main", as_user="maintainer"
    )
    assert mine["commit"]["id"] == parent
    assert "forked_from_project" not in sandbox.api("GET", "/projects/2")


def test_a_merge_request_from_a_fork_merges_into_the_parent(sandbox: RunningSandbox) -> None:
    made = fork(sandbox)
    head = sandbox.commit(
        "fix", {"fix.txt": "x\n"}, project="outside/app-fork", as_user="maintainer"
    )
    mr = sandbox.api("POST", f"/projects/{made['id']}/merge_requests", as_user="maintainer",
                     json={"source_branch": "fix", "target_branch": "main", "title": "Fix",
                           "target_project_id": 2})  # fmt: skip
    assert (mr["project_id"], mr["source_project_id"], mr["target_project_id"]) == (
        2,
        made["id"],
        2,
    )
    assert mr["references"]["full"] == f"acme/app!{mr['iid']}" and mr["sha"] == head["id"]
    listed = sandbox.api("GET", "/projects/2/merge_requests", params={"state": "opened"})
    assert [m["iid"] for m in listed] == [mr["iid"]]
    merged = sandbox.api(
        "PUT", f"/projects/2/merge_requests/{mr['iid']}/merge", json={"sha": head["id"]}
    )
    assert merged["state"] == "merged" and merged["sha"] == head["id"]


def test_fork_refusals(sandbox: RunningSandbox) -> None:
    unnamed = sandbox.request("POST", "/projects/2/fork", "maintainer", json={})
    assert (unnamed.status_code, unnamed.json()) == (400, {"error": "namespace_path is missing"})
    no_group = sandbox.request(
        "POST", "/projects/2/fork", "agents", json={"namespace_path": "outside"}
    )
    assert no_group.status_code == 404  # agents cannot see the outside group
    in_acme = sandbox.request(
        "POST", "/projects/2/fork", "agents", json={"namespace_path": "acme", "path": "x"}
    )
    assert (in_acme.status_code, in_acme.json()) == (403, {"message": "403 Forbidden"})
    sandbox.api(
        "PUT", "/projects/2", as_user="maintainer", json={"forking_access_level": "disabled"}
    )
    off = sandbox.request(
        "POST", "/projects/2/fork", "maintainer", json={"namespace_path": "outside"}
    )
    assert off.status_code == 403
    sandbox.api(
        "PUT", "/projects/2", as_user="maintainer", json={"forking_access_level": "enabled"}
    )
    fork(sandbox)
    taken = sandbox.request("POST", "/projects/2/fork", "maintainer",
                            json={"namespace_path": "outside", "path": "app-fork"})  # fmt: skip
    assert (taken.status_code, taken.json()) == (
        409,
        {"message": {"path": ["has already been taken"]}},
    )
    unrelated = sandbox.request("POST", "/projects/4/merge_requests", "maintainer",
                                json={"source_branch": "main", "target_branch": "main",
                                      "title": "x", "target_project_id": 2})  # fmt: skip
    assert unrelated.status_code == 400
    assert unrelated.json() == {
        "message": ["Validate fork Source project is not a fork of the target project"]
    }
