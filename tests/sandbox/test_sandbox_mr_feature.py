"""A project's merge requests feature (``merge_requests_access_level``, and the older boolean
``merge_requests_enabled``): set with PUT /projects/:id, shown by GET, honoured by the group
project listings' ``with_merge_requests_enabled`` and by the merge request routes (403), through
python-gitlab and plain requests."""

from __future__ import annotations

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox

SHARED = "partner/shared-lib"
SHARED_MRS = "/projects/partner%2Fshared-lib/merge_requests"
FORBIDDEN = (403, {"message": "403 Forbidden"})


def paths(listed: list) -> set[str]:
    return {p.path_with_namespace for p in listed}


def test_disabled_merge_requests_leave_the_listings_and_answer_403(
    sandbox: RunningSandbox,
) -> None:
    sandbox.commit("feature", {"lib.py": "x = 1\n"}, project=SHARED)
    made = sandbox.create_mr("feature", project=SHARED, title="A shared change")
    owner = sandbox.gitlab("maintainer").projects.get(SHARED)
    assert (owner.merge_requests_access_level, owner.merge_requests_enabled) == ("enabled", True)
    owner.merge_requests_access_level = "disabled"
    owner.save()

    gl = sandbox.gitlab()  # agents: a Developer there through the share
    project = gl.projects.get(SHARED)
    assert (project.merge_requests_access_level, project.merge_requests_enabled) == (
        "disabled",
        False,
    )
    group = gl.groups.get(100)
    assert group.shared_projects.list(get_all=True, with_merge_requests_enabled=True) == []
    assert paths(group.shared_projects.list(get_all=True)) == {SHARED}
    kept = group.projects.list(get_all=True, with_merge_requests_enabled=True)
    assert paths(kept) == {"acme/tracker", "acme/app"}
    assert paths(group.projects.list(get_all=True)) == {"acme/tracker", "acme/app", SHARED}

    with pytest.raises(gitlab.GitlabListError) as listed:
        project.mergerequests.list()
    assert listed.value.response_code == 403
    with pytest.raises(gitlab.GitlabGetError) as read:
        project.mergerequests.get(made["iid"])
    assert read.value.response_code == 403
    for path in ("", f"/{made['iid']}", f"/{made['iid']}/commits", f"/{made['iid']}/pipelines"):
        answer = sandbox.request("GET", SHARED_MRS + path, params={"state": "opened"})
        assert (answer.status_code, answer.json()) == FORBIDDEN, path
    unknown = sandbox.request("GET", f"{SHARED_MRS}/99")  # looked up before the check
    assert (unknown.status_code, unknown.json()) == (404, {"message": "404 Not found"})
    created = sandbox.request(
        "POST",
        SHARED_MRS,
        json={"source_branch": "feature", "target_branch": "main", "title": "Another"},
    )
    assert (created.status_code, created.json()) == FORBIDDEN
    edited = sandbox.request("PUT", f"{SHARED_MRS}/{made['iid']}", json={"title": "Renamed"})
    assert (edited.status_code, edited.json()) == FORBIDDEN

    owner.merge_requests_access_level = "enabled"
    owner.save()
    assert [(m.iid, m.title) for m in project.mergerequests.list(state="opened")] == [
        (made["iid"], "A shared change")
    ]
    assert paths(group.shared_projects.list(with_merge_requests_enabled=True)) == {SHARED}


def test_the_group_merge_request_listing_leaves_a_disabled_project_out(
    sandbox: RunningSandbox,
) -> None:
    sandbox.commit("feature", {"src/app.py": "print('hi')\n"})
    sandbox.create_mr("feature", title="In acme/app")
    group = sandbox.gitlab().groups.get(100)
    assert [m.title for m in group.mergerequests.list(get_all=True)] == ["In acme/app"]
    sandbox.settings("acme/app", merge_requests_access_level="disabled")
    assert group.mergerequests.list(get_all=True) == []


def test_private_merge_requests_are_listed_and_need_reporter(sandbox: RunningSandbox) -> None:
    """private is "enabled" for with_merge_requests_enabled ("not disabled"), and its merge
    requests are for Reporter and above: a Guest is refused (403)."""
    sandbox.api(
        "POST",
        "/projects/4/members",
        as_user="maintainer",
        json={"user_id": sandbox.users["reporter"]["id"], "access_level": 10},
    )
    sandbox.settings("outside/app", merge_requests_access_level="private")
    guest = sandbox.gitlab("reporter").projects.get("outside/app")
    assert (guest.merge_requests_access_level, guest.merge_requests_enabled) == ("private", False)
    with pytest.raises(gitlab.GitlabListError) as refused:
        guest.mergerequests.list()
    assert refused.value.response_code == 403
    owner = sandbox.gitlab("maintainer").projects.get("outside/app")
    assert owner.merge_requests_enabled is True and owner.mergerequests.list() == []
    sandbox.settings(SHARED, merge_requests_access_level="private")
    shared = sandbox.gitlab().groups.get(100).shared_projects.list(with_merge_requests_enabled=True)
    assert paths(shared) == {SHARED}


def test_the_older_boolean_and_the_checks(sandbox: RunningSandbox) -> None:
    """merge_requests_enabled sets the level (false: disabled, true: enabled); sent with the
    level, the level wins. Bad values are Grape's 400, before anything is looked up."""
    level = "merge_requests_access_level"
    assert sandbox.settings(SHARED, merge_requests_enabled=False)[level] == "disabled"
    assert sandbox.settings(SHARED, merge_requests_enabled=True)[level] == "enabled"
    both = sandbox.settings(SHARED, merge_requests_enabled=False, **{level: "private"})
    assert (both[level], both["merge_requests_enabled"]) == ("private", True)  # a Maintainer
    bad = sandbox.request("PUT", "/projects/999", "maintainer", json={level: "on"})
    assert (bad.status_code, bad.json()) == (400, {"error": f"{level} does not have a valid value"})
    bad = sandbox.request("PUT", "/projects/3", "maintainer", json={"merge_requests_enabled": "x"})
    assert (bad.status_code, bad.json()) == (400, {"error": "merge_requests_enabled is invalid"})
    listing = sandbox.request(
        "GET", "/groups/100/projects/shared", params={"with_merge_requests_enabled": "maybe"}
    )
    assert (listing.status_code, listing.json()) == (
        400,
        {"error": "with_merge_requests_enabled is invalid"},
    )
    refused = sandbox.request("PUT", "/projects/3", json={level: "disabled"})  # a Developer
    assert (refused.status_code, refused.json()) == FORBIDDEN
