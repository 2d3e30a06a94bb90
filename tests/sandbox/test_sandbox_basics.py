"""Users, projects, groups, authentication, error bodies and pagination, through python-gitlab
and plain requests."""

from __future__ import annotations

import gitlab
import pytest
import requests

from pairgate.sandbox.testing import RunningSandbox


def get(sandbox: RunningSandbox, path: str, token: str | None = "agents", **params: object):
    headers = {"PRIVATE-TOKEN": sandbox.token(token)} if token else {}
    return requests.get(sandbox.api_url + path, headers=headers, params=params, timeout=5)


def test_current_user_and_user_by_id(sandbox: RunningSandbox) -> None:
    gl = sandbox.gitlab("review_bot")
    gl.auth()
    assert (gl.user.id, gl.user.username) == (11, "review-bot")
    renovate = gl.users.get(12)
    assert renovate.bot is True and gl.users.get(10).bot is False
    assert get(sandbox, "/users/999").json() == {"message": "404 User Not Found"}


def test_every_default_user_has_its_fixed_id_and_token(sandbox: RunningSandbox) -> None:
    expected = {
        "agents": 10,
        "review_bot": 11,
        "renovate_bot": 12,
        "maintainer": 13,
        "reporter": 14,
    }
    for key, uid in expected.items():
        user = sandbox.users[key]
        assert user["id"] == uid and user["token"] == f"sandbox-{key.replace('_', '-')}-token"
        assert get(sandbox, "/user", key).json()["id"] == uid


@pytest.mark.parametrize(
    "headers",
    [
        {"PRIVATE-TOKEN": "sandbox-agents-token"},
        {"Authorization": "Bearer sandbox-agents-token"},
    ],
)
def test_token_headers(sandbox: RunningSandbox, headers: dict[str, str]) -> None:
    response = requests.get(sandbox.api_url + "/user", headers=headers, timeout=5)
    assert response.status_code == 200 and response.json()["username"] == "agents"


def test_unauthenticated_and_bad_tokens(sandbox: RunningSandbox) -> None:
    assert get(sandbox, "/user", None).status_code == 401
    bad = requests.get(sandbox.api_url + "/user", headers={"PRIVATE-TOKEN": "nope"}, timeout=5)
    assert (bad.status_code, bad.json()) == (401, {"message": "401 Unauthorized"})
    with pytest.raises(gitlab.GitlabAuthenticationError):
        gitlab.Gitlab(sandbox.url, private_token="nope").auth()
    # a private project without credentials is hidden, not refused
    anonymous = get(sandbox, "/projects/1", None)
    assert (anonymous.status_code, anonymous.json()) == (404, {"message": "404 Project Not Found"})


def test_read_api_token_cannot_write(sandbox: RunningSandbox) -> None:
    token = sandbox.users["agents"]["read_token"]
    assert requests.get(
        sandbox.api_url + "/projects/1/issues/1", headers={"PRIVATE-TOKEN": token}, timeout=5
    ).ok
    response = requests.post(
        sandbox.api_url + "/projects/1/issues/1/notes",
        json={"body": "x"},
        headers={"PRIVATE-TOKEN": token},
        timeout=5,
    )
    assert response.status_code == 403 and response.json()["error"] == "insufficient_scope"


@pytest.mark.sandbox_unserved_ok(r"^GET /api/v4/projects/acme/tracker$")
def test_project_by_id_and_by_encoded_path(sandbox: RunningSandbox) -> None:
    by_id = get(sandbox, "/projects/1").json()
    by_path = get(sandbox, "/projects/acme%2Ftracker").json()
    assert by_id == by_path
    assert by_id["path_with_namespace"] == "acme/tracker" and by_id["default_branch"] == "main"
    assert by_id["namespace"]["id"] == 100
    # an unencoded slash matches no route: the catch-all's body shape
    miss = get(sandbox, "/projects/acme/tracker")
    assert (miss.status_code, miss.json()) == (404, {"error": "404 Not Found"})


def test_outside_project_is_hidden_from_non_members(sandbox: RunningSandbox) -> None:
    assert get(sandbox, "/projects/4").json() == {"message": "404 Project Not Found"}
    assert get(sandbox, "/projects/outside%2Fapp", "maintainer").status_code == 200


def test_group_listing_holds_shared_in_project_not_outside(sandbox: RunningSandbox) -> None:
    group = sandbox.gitlab().groups.get(100)
    paths = {p.path_with_namespace for p in group.projects.list(get_all=True)}
    assert paths == {"acme/tracker", "acme/app", "partner/shared-lib"}
    own = {p.path_with_namespace for p in group.projects.list(get_all=True, with_shared=False)}
    assert own == {"acme/tracker", "acme/app"}
    by_path = get(sandbox, "/groups/acme/projects").json()
    assert len(by_path) == 3
    assert get(sandbox, "/groups/999/projects").json() == {"message": "404 Group Not Found"}


def test_shared_projects_listing_and_unshare(sandbox: RunningSandbox) -> None:
    """GET /groups/:id/projects/shared lists only the shared-in projects; DELETE
    /projects/:id/share/:group_id takes the share away (Maintainer and above), and then neither
    listing holds the project."""
    gl = sandbox.gitlab()
    shared = gl.groups.get(100).shared_projects.list(get_all=True)
    assert [p.path_with_namespace for p in shared] == ["partner/shared-lib"]
    assert get(sandbox, "/groups/999/projects/shared").json() == {"message": "404 Group Not Found"}
    with pytest.raises(gitlab.GitlabDeleteError) as refused:  # agents is a Developer there
        gl.projects.get("partner/shared-lib").unshare(100)
    assert refused.value.response_code == 403
    bad = sandbox.request("DELETE", "/projects/3/share/acme", "maintainer")
    assert (bad.status_code, bad.json()) == (400, {"error": "group_id is invalid"})
    sandbox.gitlab("maintainer").projects.get("partner/shared-lib").unshare(100)
    assert gl.groups.get(100).shared_projects.list(get_all=True) == []
    paths = {p.path_with_namespace for p in gl.groups.get(100).projects.list(get_all=True)}
    assert paths == {"acme/tracker", "acme/app"}
    again = sandbox.request("DELETE", "/projects/3/share/100", "maintainer")
    assert (again.status_code, again.json()) == (404, {"message": "404 Group Link Not Found"})


def test_shared_in_project_is_writable_by_acme_developers(sandbox: RunningSandbox) -> None:
    issue = sandbox.create_issue("from acme", project="partner/shared-lib")
    assert issue["project_id"] == 3


def test_pagination_headers(sandbox: RunningSandbox) -> None:
    for i in range(45):
        sandbox.note(1, f"n{i}")
    first = get(sandbox, "/projects/1/issues/1/notes", per_page=20)
    h = first.headers
    assert (h["X-Page"], h["X-Per-Page"], h["X-Next-Page"], h["X-Prev-Page"]) == (
        "1",
        "20",
        "2",
        "",
    )
    assert (h["X-Total"], h["X-Total-Pages"]) == ("45", "3")
    assert first.links["next"]["url"].endswith(
        "/api/v4/projects/1/issues/1/notes?page=2&per_page=20"
    )
    assert {"next", "first", "last"} <= set(first.links) and "prev" not in first.links
    last = get(sandbox, "/projects/1/issues/1/notes", per_page=20, page=3)
    assert last.headers["X-Next-Page"] == "" and len(last.json()) == 5
    assert "next" not in last.links and "prev" in last.links
    clamped = get(sandbox, "/projects/1/issues/1/notes", per_page=500)
    assert clamped.headers["X-Per-Page"] == "100" and len(clamped.json()) == 45
    empty = get(sandbox, "/projects/1/issues", labels="nothing")
    assert (empty.json(), empty.headers["X-Total-Pages"], empty.headers["X-Next-Page"]) == (
        [],
        "1",
        "",
    )


def test_link_keeps_query_parameters_sorted(sandbox: RunningSandbox) -> None:
    for i in range(3):
        sandbox.note(1, f"n{i}")
    response = get(sandbox, "/projects/1/issues/1/notes", sort="asc", per_page=1)
    assert response.links["next"]["url"].endswith("notes?page=2&per_page=1&sort=asc")


def test_totals_are_omitted_above_the_countless_threshold(sandbox: RunningSandbox) -> None:
    sandbox.set_options(countless_above=2)
    for i in range(3):
        sandbox.note(1, f"n{i}")
    response = get(sandbox, "/projects/1/issues/1/notes", per_page=1)
    assert "X-Total" not in response.headers and "last" not in response.links
    assert response.headers["X-Next-Page"] == "2"
