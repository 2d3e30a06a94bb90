"""POST /api/graphql: GitLab's GraphQL for a project's issue's notes (lastEditedAt and the
fields around it), its global ids, Relay pagination, its error shape and its token rules."""

from __future__ import annotations

from typing import Any

import requests

from pairgate.sandbox.testing import RunningSandbox

NOTES_QUERY = """
query($path: ID!, $iid: String!, $first: Int, $last: Int, $after: String, $before: String) {
  project(fullPath: $path) {
    fullPath
    issue(iid: $iid) {
      iid
      notes(first: $first, last: $last, after: $after, before: $before) {
        count
        nodes { id body lastEditedAt updatedAt system author { username } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
}
"""


def graphql(
    sandbox: RunningSandbox, query: str, variables: dict[str, Any], token: str | None = None
) -> requests.Response:
    headers = {"PRIVATE-TOKEN": token} if token else {}
    return requests.post(
        f"{sandbox.url}/api/graphql",
        json={"query": query, "variables": variables},
        headers=headers,
        timeout=10,
    )


def notes(sandbox: RunningSandbox, issue: int, token: str | None = None, **page: Any) -> Any:
    answer = graphql(
        sandbox, NOTES_QUERY, {"path": "acme/tracker", "iid": str(issue), **page}, token
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_notes_with_global_ids_and_last_edited_at(sandbox: RunningSandbox) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    a = sandbox.note(issue, "one")
    b = sandbox.note(issue, "two")
    sandbox.advance_clock(5)
    path = f"/projects/acme%2Ftracker/issues/{issue}/notes/{b['id']}"
    sandbox.api("PUT", path, json={"body": "two, edited"})
    data = notes(sandbox, issue, sandbox.token())["data"]
    assert data["project"]["fullPath"] == "acme/tracker"
    connection = data["project"]["issue"]["notes"]
    assert connection["count"] == 2
    first, second = connection["nodes"]
    assert first["id"] == f"gid://gitlab/Note/{a['id']}" and first["lastEditedAt"] is None
    assert second["id"] == f"gid://gitlab/Note/{b['id']}" and second["body"] == "two, edited"
    assert second["lastEditedAt"] == second["updatedAt"]
    assert first["author"] == {"username": "agents"} and first["system"] is False


def test_relay_pages_backwards_from_the_newest(sandbox: RunningSandbox) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    ids = [sandbox.note(issue, f"n{i}")["id"] for i in range(5)]
    token = sandbox.token()
    last = notes(sandbox, issue, token, last=2)["data"]["project"]["issue"]["notes"]
    assert [n["body"] for n in last["nodes"]] == ["n3", "n4"]
    assert last["pageInfo"]["hasPreviousPage"] and not last["pageInfo"]["hasNextPage"]
    before = notes(sandbox, issue, token, last=2, before=last["pageInfo"]["startCursor"])
    page = before["data"]["project"]["issue"]["notes"]
    assert [n["body"] for n in page["nodes"]] == ["n1", "n2"] and page["pageInfo"]["hasNextPage"]
    first = notes(sandbox, issue, token, first=3)["data"]["project"]["issue"]["notes"]
    assert [n["id"] for n in first["nodes"]] == [f"gid://gitlab/Note/{i}" for i in ids[:3]]
    rest = notes(sandbox, issue, token, first=3, after=first["pageInfo"]["endCursor"])
    assert [n["body"] for n in rest["data"]["project"]["issue"]["notes"]["nodes"]] == ["n3", "n4"]
    big = notes(sandbox, issue, token, first=500)["data"]["project"]["issue"]["notes"]
    assert len(big["nodes"]) == 5  # at most 100 a page, as GitLab's max_page_size
    fewer = notes(sandbox, issue, token, last=3, before=last["pageInfo"]["endCursor"])
    page = fewer["data"]["project"]["issue"]["notes"]  # only 4 before the cursor: a short page
    assert [n["body"] for n in page["nodes"]] == ["n1", "n2", "n3"]
    few = notes(sandbox, issue, token, last=10, before=last["pageInfo"]["startCursor"])
    page = few["data"]["project"]["issue"]["notes"]
    assert [n["body"] for n in page["nodes"]] == ["n0", "n1", "n2"]
    assert not page["pageInfo"]["hasPreviousPage"]


def test_a_read_api_token_may_query_and_nobody_sees_a_private_project(
    sandbox: RunningSandbox,
) -> None:
    issue = int(sandbox.create_issue("t")["iid"])
    sandbox.note(issue, "x")
    read_token = sandbox.info["users"]["agents"]["read_token"]
    assert notes(sandbox, issue, read_token)["data"]["project"]["issue"]["notes"]["count"] == 1
    assert notes(sandbox, issue)["data"] == {"project": None}  # anonymous: hidden, not an error
    assert notes(sandbox, 999, read_token)["data"]["project"]["issue"] is None
    bad = graphql(sandbox, NOTES_QUERY, {"path": "acme/tracker", "iid": "1"}, "nope")
    assert bad.status_code == 401


def test_a_query_the_schema_cannot_run_answers_errors(sandbox: RunningSandbox) -> None:
    token = sandbox.token()
    wrong = graphql(sandbox, '{ project(fullPath: "acme/tracker") { secret } }', {}, token)
    assert wrong.status_code == 200
    assert "Cannot query field 'secret'" in wrong.json()["errors"][0]["message"]
    mutation = graphql(sandbox, "mutation { updateNote(input: {}) { errors } }", {}, token)
    assert mutation.json()["errors"]
    empty = graphql(sandbox, "", {}, token)
    assert empty.json() == {"errors": [{"message": "No query string was present"}]}


MRS_QUERY = """
query($path: ID!, $iids: [String!], $first: Int, $after: String) {
  project(fullPath: $path) {
    mergeRequests(iids: $iids, first: $first, after: $after) {
      count
      nodes { id iid state targetBranch diffRefs { baseSha headSha startSha } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""


def test_merge_requests_by_iids_carry_the_diff_refs_rest_gives(sandbox: RunningSandbox) -> None:
    token = sandbox.token()
    made = []
    for n in range(3):
        sandbox.commit(f"topic-{n}", {f"f{n}": "x"})
        made.append(sandbox.create_mr(f"topic-{n}"))
    asked = {"path": "acme/app", "iids": [str(m["iid"]) for m in made[:2]] + ["999"]}
    answer = graphql(sandbox, MRS_QUERY, asked, token).json()
    listing = answer["data"]["project"]["mergeRequests"]
    assert listing["count"] == 2 and not listing["pageInfo"]["hasNextPage"]
    for node in listing["nodes"]:
        rest = sandbox.api("GET", f"/projects/acme%2Fapp/merge_requests/{node['iid']}")
        assert node["id"] == f"gid://gitlab/MergeRequest/{rest['id']}"
        assert (node["state"], node["targetBranch"]) == (rest["state"], rest["target_branch"])
        refs = rest["diff_refs"]
        assert node["diffRefs"] == {
            "baseSha": refs["base_sha"],
            "headSha": refs["head_sha"],
            "startSha": refs["start_sha"],
        }
    # Newest first, as GitLab lists them, a page at a time.
    first = graphql(sandbox, MRS_QUERY, {"path": "acme/app", "first": 2}, token).json()
    page = first["data"]["project"]["mergeRequests"]
    newest = sorted((m["iid"] for m in made), reverse=True)
    assert [int(n["iid"]) for n in page["nodes"]][:2] == newest[:2]
    assert page["pageInfo"]["hasNextPage"]
    after = page["pageInfo"]["endCursor"]
    rest_page = graphql(sandbox, MRS_QUERY, {"path": "acme/app", "first": 2, "after": after}, token)
    later = [int(n["iid"]) for n in rest_page.json()["data"]["project"]["mergeRequests"]["nodes"]]
    assert newest[2] in later and not set(later) & set(newest[:2])
    # Anonymous: the project is hidden, as the notes are.
    assert graphql(sandbox, MRS_QUERY, asked).json()["data"] == {"project": None}
