"""Settings and access: project settings and their effect on merging, protected branches,
members with access levels, and the personal access token self endpoint."""

from __future__ import annotations

import gitlab
import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox


@pytest.fixture
def mr(sandbox: RunningSandbox) -> dict:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"})
    return sandbox.create_mr("feature", title="Add app")


def put_project(sandbox: RunningSandbox, **settings: object) -> dict:
    return dict(sandbox.api("PUT", "/projects/2", as_user="maintainer", json=settings))


# -- project settings ------------------------------------------------------------------------


def test_settings_and_who_sees_them(sandbox: RunningSandbox) -> None:
    seen = sandbox.api("GET", "/projects/2")
    assert {k: seen[k] for k in (
        "only_allow_merge_if_pipeline_succeeds", "allow_merge_on_skipped_pipeline",
        "only_allow_merge_if_all_discussions_are_resolved", "merge_method", "squash_option",
        "remove_source_branch_after_merge", "merge_pipelines_enabled", "ci_config_path",
    )} == {
        "only_allow_merge_if_pipeline_succeeds": False, "allow_merge_on_skipped_pipeline": False,
        "only_allow_merge_if_all_discussions_are_resolved": False, "merge_method": "merge",
        "squash_option": "default_off", "remove_source_branch_after_merge": True,
        "merge_pipelines_enabled": False, "ci_config_path": None,
    }  # fmt: skip
    maintainer_only = (
        "restrict_user_defined_variables",
        "ci_pipeline_variables_minimum_override_role",
        "ci_allow_fork_pipelines_to_run_in_parent_project",
    )
    assert not set(maintainer_only) & set(seen)
    as_maintainer = sandbox.api("GET", "/projects/2", as_user="maintainer")
    assert [as_maintainer[k] for k in maintainer_only] == [False, "maintainer", True]
    edited = put_project(sandbox, restrict_user_defined_variables=True)
    assert edited["restrict_user_defined_variables"] is True


def test_forking_access_level_is_shown_and_set(sandbox: RunningSandbox) -> None:
    assert (
        sandbox.api("GET", "/projects/2", as_user="reporter")["forking_access_level"] == "enabled"
    )
    assert (
        put_project(sandbox, forking_access_level="disabled")["forking_access_level"] == "disabled"
    )
    bad = sandbox.request("PUT", "/projects/2", "maintainer", json={"forking_access_level": "on"})
    assert (bad.status_code, bad.json()) == (
        400,
        {"error": "forking_access_level does not have a valid value"},
    )


def test_pipelines_must_succeed_blocks_a_merge_without_a_green_head(
    sandbox: RunningSandbox, mr: dict
) -> None:
    put_project(sandbox, only_allow_merge_if_pipeline_succeeds=True)
    got = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert got["detailed_merge_status"] == "ci_must_pass"  # no pipeline at all
    refused = sandbox.request("PUT", "/projects/2/merge_requests/1/merge", "agents")
    assert (refused.status_code, refused.json()) == (405, {"message": "405 Method Not Allowed"})
    sandbox.pipeline("acme/app", "feature", [{"name": "gate", "status": "skipped"}])
    status = sandbox.api("GET", "/projects/2/merge_requests/1")["detailed_merge_status"]
    assert status == "ci_must_pass"  # a skipped pipeline is no success...
    put_project(sandbox, allow_merge_on_skipped_pipeline=True)
    status = sandbox.api("GET", "/projects/2/merge_requests/1")["detailed_merge_status"]
    assert status == "mergeable"  # ...unless the project counts it as one


def test_the_switch_seeds_the_setting(sandbox: RunningSandbox) -> None:
    sandbox.set_options(pipelines_must_succeed=True)
    assert sandbox.api("GET", "/projects/2")["only_allow_merge_if_pipeline_succeeds"] is True
    sandbox.reset()
    assert sandbox.api("GET", "/projects/2")["only_allow_merge_if_pipeline_succeeds"] is False


def test_fast_forward_merge_needs_a_rebased_head(sandbox: RunningSandbox, mr: dict) -> None:
    put_project(sandbox, merge_method="ff")
    merged = sandbox.api("PUT", "/projects/2/merge_requests/1/merge", json={"sha": mr["sha"]})
    assert merged["state"] == "merged" and merged["merge_commit_sha"] is None
    main = sandbox.api("GET", "/projects/2/repository/branches/main")["commit"]["id"]
    assert main == mr["sha"]  # fast-forwarded: no merge commit
    sandbox.commit("main", {"other.txt": "x\n"})
    sandbox.commit("behind", {"b.txt": "b\n"}, start_branch=mr["sha"])
    behind = sandbox.create_mr("behind")
    assert behind["detailed_merge_status"] == "need_rebase"
    refused = sandbox.request("PUT", f"/projects/2/merge_requests/{behind['iid']}/merge")
    assert refused.status_code == 405


# -- protected branches ----------------------------------------------------------------------

MAIN_RULE = {
    "id": 301,
    "name": "main",
    "push_access_levels": [
        {"id": 8004, "access_level": 40, "access_level_description": "Maintainers"}
    ],
    "merge_access_levels": [
        {"id": 8005, "access_level": 30, "access_level_description": "Developers + Maintainers"}
    ],
    "unprotect_access_levels": [
        {"id": 8006, "access_level": 40, "access_level_description": "Maintainers"}
    ],
    "allow_force_push": False,
    "code_owner_approval_required": False,
}


def test_main_is_protected_as_gitlab_protects_a_default_branch(sandbox: RunningSandbox) -> None:
    rules = sandbox.api("GET", "/projects/acme%2Fapp/protected_branches", as_user="maintainer")
    assert rules == [MAIN_RULE | {"id": 302}]  # project 2's rule, ids in creation order
    one = sandbox.api("GET", "/projects/1/protected_branches/main", as_user="maintainer")
    assert one["id"] == 301 and one["push_access_levels"][0]["access_level"] == 40
    branch = sandbox.api("GET", "/projects/2/repository/branches/main")
    assert (branch["protected"], branch["developers_can_push"], branch["developers_can_merge"]) == (
        True,
        False,
        True,
    )
    assert branch["can_push"] is False  # the agents are Developers
    assert sandbox.api("GET", "/projects/2/repository/branches/main", as_user="maintainer")[
        "can_push"
    ]


def test_protected_branch_refusals(sandbox: RunningSandbox) -> None:
    developer = sandbox.request("GET", "/projects/2/protected_branches", "agents")
    assert (developer.status_code, developer.json()) == (403, {"message": "403 Forbidden"})
    unknown = sandbox.request("GET", "/projects/2/protected_branches/nope", "maintainer")
    assert (unknown.status_code, unknown.json()) == (404, {"message": "404 Not found"})
    taken = sandbox.request("POST", "/projects/2/protected_branches", "maintainer",
                            json={"name": "main"})  # fmt: skip
    assert (taken.status_code, taken.json()) == (
        409,
        {"message": "Protected branch 'main' already exists"},
    )
    level = sandbox.request("POST", "/projects/2/protected_branches", "maintainer",
                            json={"name": "x", "push_access_level": 20})  # fmt: skip
    assert level.json() == {"error": "push_access_level does not have a valid value"}
    nameless = sandbox.request("POST", "/projects/2/protected_branches", "maintainer", json={})
    assert nameless.json() == {"error": "name is missing"}
    by_developer = sandbox.request("POST", "/projects/2/protected_branches", "agents",
                                   json={"name": "x"})  # fmt: skip
    assert by_developer.status_code == 403
    gone = sandbox.request("DELETE", "/projects/2/protected_branches/nope", "maintainer")
    assert gone.status_code == 404
    bad = requests.get(sandbox.api_url + "/projects/2/protected_branches",
                       headers={"PRIVATE-TOKEN": "nope"}, timeout=5)  # fmt: skip
    assert bad.status_code == 401


def test_a_wildcard_rule_keeps_developers_off_matching_branches(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("maintainer").projects.get(2, lazy=True)
    rule = project.protectedbranches.create(
        {"name": "release/*", "push_access_level": 0, "merge_access_level": 40}
    )
    assert rule.push_access_levels[0]["access_level_description"] == "No one"
    assert rule.merge_access_levels[0]["access_level"] == 40
    assert [r.name for r in project.protectedbranches.list()] == ["main", "release/*"]
    refused = sandbox.request(
        "POST", "/projects/2/repository/branches", "agents",
        json={"branch": "release/1.0", "ref": "main"},
    )  # fmt: skip
    assert refused.json() == {
        "message": "403 Forbidden - You are not allowed to push into this branch"
    }
    also = sandbox.request(
        "POST", "/projects/2/repository/branches", "maintainer",
        json={"branch": "release/1.0", "ref": "main"},
    )  # fmt: skip
    assert also.status_code == 403  # No one means no one
    sandbox.create_branch("release-notes")  # the wildcard matches whole names only
    project.protectedbranches.delete("release/*")
    assert sandbox.create_branch("release/1.0")["protected"] is False


def test_unprotecting_main_lets_developers_push(sandbox: RunningSandbox) -> None:
    sandbox.api("DELETE", "/projects/2/protected_branches/main", as_user="maintainer")
    pushed = sandbox.commit("main", {"x.txt": "x\n"}, as_user="agents")
    assert pushed["id"]
    branch = sandbox.api("GET", "/projects/2/repository/branches/main")
    assert (branch["protected"], branch["developers_can_push"], branch["can_push"]) == (
        False,
        False,  # GitLab: only a rule granting Developers exactly says true
        True,
    )


def test_merge_access_level_decides_who_merges(sandbox: RunningSandbox, mr: dict) -> None:
    sandbox.set_options(developers_can_merge=False)
    rule = sandbox.api("GET", "/projects/2/protected_branches/main", as_user="maintainer")
    assert rule["merge_access_levels"][0]["access_level"] == 40
    refused = sandbox.request("PUT", "/projects/2/merge_requests/1/merge", "agents")
    assert (refused.status_code, refused.json()) == (401, {"message": "401 Unauthorized"})
    got = sandbox.api("GET", "/projects/2/merge_requests/1")
    assert got["user"]["can_merge"] is False
    merged = sandbox.api("PUT", "/projects/2/merge_requests/1/merge", as_user="maintainer")
    assert merged["state"] == "merged"
    assert sandbox.api("GET", "/projects/2/repository/branches/feature")["merged"] is True


# -- members ---------------------------------------------------------------------------------


def test_project_members_direct_and_all(sandbox: RunningSandbox) -> None:
    assert sandbox.api("GET", "/projects/2/members") == []
    every = sandbox.api("GET", "/projects/2/members/all")
    assert [(m["username"], m["access_level"]) for m in every] == [
        ("agents", 30),
        ("review-bot", 30),
        ("renovate-bot", 30),
        ("maintainer", 40),
        ("reporter", 20),
    ]
    assert set(every[0]) >= {"id", "username", "name", "state", "avatar_url", "web_url",
                             "access_level", "created_at", "expires_at", "membership_state"}  # fmt: skip
    assert "bot" not in every[0]
    one = sandbox.api("GET", "/projects/acme%2Fapp/members/all/13")
    assert (one["username"], one["access_level"]) == ("maintainer", 40)
    direct = sandbox.request("GET", "/projects/2/members/13", "agents")
    assert (direct.status_code, direct.json()) == (404, {"message": "404 Not found"})


def test_shared_project_members_are_capped_by_the_share(sandbox: RunningSandbox) -> None:
    every = {m["username"]: m["access_level"]
             for m in sandbox.api("GET", "/projects/3/members/all", params={"per_page": 100})}  # fmt: skip
    # the maintainer is a Maintainer of partner itself; acme's members come in at most Developer
    assert every == {"agents": 30, "review-bot": 30, "renovate-bot": 30, "maintainer": 40,
                     "reporter": 20}  # fmt: skip
    filtered = sandbox.api("GET", "/projects/3/members/all", params={"user_ids": "10,14"})
    assert [m["id"] for m in filtered] == [10, 14]
    queried = sandbox.api("GET", "/projects/3/members/all", params={"query": "bot"})
    assert [m["username"] for m in queried] == ["review-bot", "renovate-bot"]


def test_group_members(sandbox: RunningSandbox) -> None:
    gl = sandbox.gitlab("agents")
    group = gl.groups.get(100)
    assert len(group.members.list(get_all=True)) == 5
    assert group.members_all.get(11).access_level == 30
    assert group.members.get(14).access_level == 20
    assert sandbox.api("GET", "/groups/partner/members", as_user="maintainer")[0]["id"] == 13
    hidden = sandbox.request("GET", "/groups/102/members", "agents")
    assert hidden.json() == {"message": "404 Group Not Found"}


def test_adding_and_editing_members(sandbox: RunningSandbox) -> None:
    gl = sandbox.gitlab("maintainer")
    added = gl.projects.get(2).members.create({"user_id": 10, "access_level": 40})
    assert (added.username, added.access_level) == ("agents", 40)
    assert sandbox.api("GET", "/projects/2/members/all/10")["access_level"] == 40  # the highest
    again = sandbox.request("POST", "/projects/2/members", "maintainer",
                            json={"user_id": 10, "access_level": 30})  # fmt: skip
    assert (again.status_code, again.json()) == (409, {"message": "Member already exists"})
    edited = sandbox.api("PUT", "/projects/2/members/10", as_user="maintainer",
                         json={"access_level": 20})  # fmt: skip
    assert edited["access_level"] == 20
    assert sandbox.api("GET", "/projects/2/members/all/10")["access_level"] == 30  # via acme
    sandbox.set_member("maintainer", 50)  # an administrator makes acme's first Owner
    group = sandbox.api("PUT", "/groups/100/members/11", as_user="maintainer",
                        json={"access_level": 50})  # fmt: skip
    assert group["access_level"] == 50
    assert sandbox.api("GET", "/projects/2/members/all/11")["access_level"] == 50
    by_a_developer = sandbox.request("POST", "/projects/2/members", "agents",
                                     json={"user_id": 14, "access_level": 40})  # fmt: skip
    assert (by_a_developer.status_code, by_a_developer.json()) == (
        403,
        {"message": "403 Forbidden"},
    )
    bad = sandbox.request("POST", "/projects/2/members", "maintainer",
                          json={"user_id": 14, "access_level": 41})  # fmt: skip
    assert bad.json() == {"error": "access_level does not have a valid value"}
    missing = sandbox.request("POST", "/groups/100/members", "maintainer", json={"user_id": 14})
    assert missing.json() == {"error": "access_level is missing"}


FORBIDDEN = (403, {"message": "403 Forbidden"})


def test_a_group_maintainer_manages_no_group_member_and_cannot_make_itself_owner(
    sandbox: RunningSandbox,
) -> None:
    """GroupPolicy gives admin_group_member to Owners alone."""
    calls = [
        ("PUT", "/groups/100/members/13", {"access_level": 50}),  # itself, to Owner
        ("PUT", "/groups/100/members/14", {"access_level": 10}),
        ("POST", "/groups/100/members", {"user_id": 12, "access_level": 30}),
    ]
    for method, path, body in calls:
        refused = sandbox.request(method, path, "maintainer", json=body)
        assert (refused.status_code, refused.json()) == FORBIDDEN, path
    assert sandbox.api("GET", "/groups/100/members/13")["access_level"] == 40
    sandbox.set_member("maintainer", 50)
    made = sandbox.api("PUT", "/groups/100/members/14", as_user="maintainer",
                       json={"access_level": 10})  # fmt: skip
    assert made["access_level"] == 10


def test_only_a_projects_owner_makes_changes_or_removes_an_owner(sandbox: RunningSandbox) -> None:
    """Members::CreateService and UpdateService refuse a Maintainer any change that makes an
    Owner or touches one (manage_owners); everything below Owner it may do."""
    as_owner = sandbox.request("POST", "/projects/2/members", "maintainer",
                               json={"user_id": 14, "access_level": 50})  # fmt: skip
    assert (as_owner.status_code, as_owner.json()) == FORBIDDEN
    sandbox.api("POST", "/projects/2/members", as_user="maintainer",
                json={"user_id": 14, "access_level": 40})  # fmt: skip
    promoted = sandbox.request("PUT", "/projects/2/members/14", "maintainer",
                               json={"access_level": 50})  # fmt: skip
    assert (promoted.status_code, promoted.json()) == FORBIDDEN
    sandbox.set_member("reporter", 50, group="acme")  # an Owner of acme, so of acme/app
    sandbox.api("PUT", "/projects/2/members/14", as_user="reporter", json={"access_level": 50})
    demoted = sandbox.request("PUT", "/projects/2/members/14", "maintainer",
                              json={"access_level": 30})  # fmt: skip
    assert (demoted.status_code, demoted.json()) == FORBIDDEN
    assert sandbox.api("GET", "/projects/2/members/14")["access_level"] == 50


def test_members_refusals(sandbox: RunningSandbox) -> None:
    anonymous = requests.get(sandbox.api_url + "/projects/2/members/all", timeout=5)
    assert (anonymous.status_code, anonymous.json()) == (401, {"message": "401 Unauthorized"})
    bad = sandbox.request("GET", "/projects/2/members/all/me", "agents")
    assert (bad.status_code, bad.json()) == (400, {"error": "user_id is invalid"})
    outside = sandbox.request("GET", "/projects/4/members/all", "agents")
    assert outside.json() == {"message": "404 Project Not Found"}


def test_python_gitlab_lists_members(sandbox: RunningSandbox) -> None:
    project = sandbox.gitlab("reporter").projects.get(2, lazy=True)
    assert [m.access_level for m in project.members_all.list(get_all=True)] == [30, 30, 30, 40, 20]
    assert project.members.list(get_all=True) == []


# -- personal access tokens ------------------------------------------------------------------


def test_token_self(sandbox: RunningSandbox) -> None:
    mine = sandbox.api("GET", "/personal_access_tokens/self")
    assert {k: mine[k] for k in ("id", "scopes", "user_id", "active", "revoked", "expires_at")} == {
        "id": 1, "scopes": ["api"], "user_id": 10, "active": True, "revoked": False,
        "expires_at": None,
    }  # fmt: skip
    assert mine["last_used_at"] and set(mine) == {
        "id", "name", "revoked", "created_at", "description", "scopes", "user_id",
        "last_used_at", "active", "expires_at",
    }  # fmt: skip
    read = requests.get(
        sandbox.api_url + "/personal_access_tokens/self",
        headers={"PRIVATE-TOKEN": sandbox.users["review_bot"]["read_token"]},
        timeout=5,
    ).json()
    assert (read["scopes"], read["user_id"]) == (["read_api"], 11)
    assert sandbox.api("GET", "/personal_access_tokens/1")["id"] == 1
    other = sandbox.request("GET", "/personal_access_tokens/3", "agents")  # the review bot's
    assert (other.status_code, other.json()) == (401, {"message": "401 Unauthorized"})
    token = sandbox.gitlab("maintainer").personal_access_tokens.get("self")
    assert token.user_id == 13 and token.scopes == ["api"]


def test_token_self_refusals(sandbox: RunningSandbox) -> None:
    url = sandbox.api_url + "/personal_access_tokens/self"
    assert requests.get(url, timeout=5).status_code == 401
    assert requests.get(url, headers={"PRIVATE-TOKEN": "nope"}, timeout=5).status_code == 401
    sandbox.commit("feature", {"a": "a\n"})
    job = sandbox.pipeline("acme/app", "feature", [{"name": "gate", "status": "running"}])
    by_job = requests.get(url, headers={"JOB-TOKEN": job["jobs"][0]["token"]}, timeout=5)
    assert (by_job.status_code, by_job.json()) == (401, {"message": "401 Unauthorized"})


def test_issued_tokens_revoked_and_expired(sandbox: RunningSandbox) -> None:
    revoked = sandbox.control("POST", "tokens", json={"user": "agents", "revoked": True})
    answer = requests.get(sandbox.api_url + "/user", headers={"PRIVATE-TOKEN": revoked["token"]},
                          timeout=5)  # fmt: skip
    assert (answer.status_code, answer.json()) == (401, {
        "error": "invalid_token",
        "error_description": "Token was revoked. You have to re-authorize from the user.",
    })  # fmt: skip
    expired = sandbox.control(
        "POST", "tokens", json={"user": 11, "scopes": ["read_api"], "expires_at": "2000-01-01"}
    )
    assert expired["active"] is False and expired["scopes"] == ["read_api"]
    answer = requests.get(sandbox.api_url + "/user", headers={"PRIVATE-TOKEN": expired["token"]},
                          timeout=5)  # fmt: skip
    assert answer.json()["error_description"].startswith("Token is expired.")
    fresh = sandbox.control("POST", "tokens", json={"user": "maintainer", "name": "doctor"})
    who = gitlab.Gitlab(sandbox.url, private_token=fresh["token"]).personal_access_tokens.get(
        "self"
    )
    assert (who.name, who.user_id, who.id) == ("doctor", 13, fresh["id"])
    for bad in ({"user": "nobody"}, {"user": 10, "scopes": ["sudo"]},
                {"user": 10, "expires_at": "soon"}):  # fmt: skip
        assert requests.post(sandbox.sandbox_api + "/tokens", json=bad, timeout=5).status_code in (
            400,
            404,
        )
