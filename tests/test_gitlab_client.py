"""The GitLab client: HTTPS against the sandbox (retries, pages, writes never repeated), and
the glab transport's argv and output forms with pytest-subprocess."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import (
    GitLab,
    GitLabError,
    WriteUncertain,
    encode_project,
    read_retry,
)
from pairgate.standalone.gitlab_env import api_url_from_env, gitlab_from_env
from tests.kit.run import agent_env

NOTES = "projects/acme%2Ftracker/issues/1/notes"
FAST = read_retry(backoff_factor=0)


def client_for(sandbox: Any, config: Config, **env: str) -> GitLab:
    return gitlab_from_env(config, agent_env(sandbox, **env), retry=FAST)


def posts(sandbox: Any) -> list[dict[str, Any]]:
    return [r for r in sandbox.requests() if r["method"] == "POST" and "/notes" in r["path"]]


def test_encode_project() -> None:
    assert encode_project("acme/sub/app") == "acme%2Fsub%2Fapp"


def test_get_all_follows_every_page_in_order(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    for i in range(250):
        sandbox.note(1, f"note {i}")
    sandbox.clear_requests()
    notes = client.get_all(NOTES, sort="asc", order_by="created_at")
    assert [n["body"] for n in notes] == [f"note {i}" for i in range(250)]
    assert len(sandbox.requests()) == 3  # per_page=100


@pytest.mark.parametrize(
    "fault",
    [
        {"status": 500},
        {"status": 503},
        {"status": 429, "retry_after": 0},
        {"drop": True},
    ],
)
def test_a_read_is_retried(sandbox: Any, config: Config, fault: dict[str, Any]) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="GET", path="/issues/1$", count=2, **fault)
    assert client.get("projects/acme%2Ftracker/issues/1")["iid"] == 1
    assert len(sandbox.requests()) == 3


def test_retry_after_is_honoured(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="GET", path="/issues/1$", status=429, retry_after=1)
    started = time.monotonic()
    client.get("projects/acme%2Ftracker/issues/1")
    assert time.monotonic() - started >= 0.9


def test_a_read_that_keeps_failing_says_so(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="GET", path="/issues/1$", status=500, count=10)
    with pytest.raises(GitLabError, match=r"GET /projects/acme%2Ftracker/issues/1: HTTP 500"):
        client.get("projects/acme%2Ftracker/issues/1")


@pytest.mark.parametrize("fault", [{"status": 500}, {"drop": True}, {"status": 429}])
def test_a_write_is_never_retried(sandbox: Any, config: Config, fault: dict[str, Any]) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="POST", path="/notes$", **fault)
    with pytest.raises(WriteUncertain):
        client.write("POST", NOTES, {"body": "hello"})
    assert len(posts(sandbox)) == 1


def test_a_refused_write_is_certain(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    with pytest.raises(GitLabError) as refused:
        client.write("POST", "projects/acme%2Ftracker/issues/999/notes", {"body": "x"})
    assert refused.value.status == 404 and not isinstance(refused.value, WriteUncertain)


def test_the_token_never_appears_in_a_repr(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    assert sandbox.token("agents") not in repr(client)
    assert "<hidden>" in repr(client)


def test_describe_says_where_the_url_came_from(sandbox: Any, config: Config) -> None:
    text = client_for(sandbox, config).describe()
    assert text == (
        f"GitLab API {sandbox.url}/api/v4 (from PAIRGATE_TEST_GITLAB_URL); "
        "reads via HTTPS, writes via HTTPS"
    )


def test_the_api_url_sources(config: Config) -> None:
    url = api_url_from_env
    assert url(config, {"PAIRGATE_TEST_GITLAB_URL": "https://gl.example/"}) == (
        "https://gl.example/api/v4",
        "PAIRGATE_TEST_GITLAB_URL",
    )
    assert url(config, {"CI_API_V4_URL": "https://ci.example/api/v4"}) == (
        "https://ci.example/api/v4",
        "CI_API_V4_URL",
    )
    assert url(config, {}) == (None, "glab's configured host")


def test_glab_host_is_asked_when_https_has_no_url(config: Config, fp: Any) -> None:
    fp.register(["glab", "config", "get", "host"], stdout="gitlab.example.com\n")
    client = gitlab_from_env(config, {"PAIRGATE_TEST_TASK_API_TOKEN": "t"})
    assert client.api_url == "https://gitlab.example.com/api/v4"


def test_plain_http_is_refused_off_loopback(config: Config) -> None:
    env = {"PAIRGATE_TEST_GITLAB_URL": "http://gl.example", "PAIRGATE_TEST_TASK_API_TOKEN": "t"}
    with pytest.raises(PairgateError, match="refusing to send a token over plain http"):
        gitlab_from_env(config, env)


# -- glab api ------------------------------------------------------------------------------


@pytest.fixture
def glab(config: Config) -> GitLab:
    """Reads and writes through glab, pointed at an instance by URL."""
    return gitlab_from_env(config, {"PAIRGATE_TEST_GITLAB_URL": "https://gl.example"})


def test_glab_get(glab: GitLab, fp: Any) -> None:
    fp.register(
        ["glab", "api", "projects/a%2Fb/issues/1?with_x=true", "--hostname", "gl.example"],
        stdout='{"iid": 1}',
    )
    assert glab.get("projects/a%2Fb/issues/1", with_x=True) == {"iid": 1}


def test_glab_paginate_prints_pages_back_to_back(glab: GitLab, fp: Any) -> None:
    argv = ["glab", "api", f"{NOTES}?sort=asc&per_page=100", "--paginate"]
    fp.register([*argv, "--hostname", "gl.example"], stdout='[{"id": 1}][]\n[{"id": 2},{"id": 3}]')
    assert [n["id"] for n in glab.get_all(NOTES, sort="asc")] == [1, 2, 3]


def test_glab_write_sends_json_on_stdin(glab: GitLab, fp: Any) -> None:
    seen: list[Any] = []
    argv = ["glab", "api", NOTES, "-X", "POST", "--input", "-"]
    fp.register(
        [*argv, "-H", "Content-Type: application/json", "--hostname", "gl.example"],
        stdout='{"id": 9}',
        stdin_callable=lambda data: seen.append(data),
    )
    body = "[a, b]\n/close"  # glab would turn a -f value like "[a, b]" into an array
    assert glab.write("POST", NOTES, {"body": body}) == {"id": 9}
    assert json.loads(seen[0]) == {"body": body}


def test_glab_http_errors(glab: GitLab, fp: Any) -> None:
    fp.register(
        ["glab", fp.any()],
        stdout='{"message":"404 Not found"}',
        stderr="glab: 404 Not found (HTTP 404)\n",
        returncode=1,
    )
    with pytest.raises(GitLabError) as failed:
        glab.get("projects/a%2Fb/issues/9")
    assert failed.value.status == 404 and "HTTP 404" in failed.value.message


@pytest.mark.parametrize("stderr", ["glab: HTTP 502\n", "dial tcp: connection refused\n"])
def test_glab_write_without_a_certain_answer(glab: GitLab, fp: Any, stderr: str) -> None:
    fp.register(["glab", fp.any()], stderr=stderr, returncode=1)
    with pytest.raises(WriteUncertain):
        glab.write("POST", NOTES, {"body": "x"})


def test_glab_missing(glab: GitLab, fp: Any) -> None:
    def missing(process: Any) -> None:
        raise FileNotFoundError("glab")

    fp.register(["glab", fp.any()], callback=missing)
    with pytest.raises(GitLabError, match="glab is not installed"):
        glab.get("user")


# -- GraphQL: a POST that reads ----------------------------------------------------------------

QUERY = "query($path: ID!) { project(fullPath: $path) { fullPath } }"


@pytest.mark.parametrize(
    "fault", [{"status": 502}, {"status": 503}, {"status": 429, "retry_after": 0}, {"drop": True}]
)
def test_a_graphql_query_is_retried_as_a_read(
    sandbox: Any, config: Config, fault: dict[str, Any]
) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="POST", path="^/api/graphql$", count=2, **fault)
    data = client.graphql(QUERY, {"path": "acme/tracker"})
    assert data == {"project": {"fullPath": "acme/tracker"}}
    assert [r["path"] for r in sandbox.requests()] == ["/api/graphql"] * 3


def test_a_graphql_query_that_keeps_failing_fails_closed_as_a_read(
    sandbox: Any, config: Config
) -> None:
    client = client_for(sandbox, config)
    sandbox.fault(method="POST", path="^/api/graphql$", status=500, count=10)
    with pytest.raises(GitLabError) as failed:
        client.graphql(QUERY, {"path": "acme/tracker"})
    assert not isinstance(failed.value, WriteUncertain)  # nothing was written, nothing landed
    assert "HTTP 500" in failed.value.message


def test_the_graphql_retry_leaves_rest_writes_unretried(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    client.graphql(QUERY, {"path": "acme/tracker"})  # the GraphQL adapter is in place
    sandbox.fault(method="POST", path="/notes$", status=502)
    with pytest.raises(WriteUncertain):
        client.write("POST", NOTES, {"body": "hello"})
    assert len(posts(sandbox)) == 1


def test_graphql_errors_in_a_200_answer_fail_closed(sandbox: Any, config: Config) -> None:
    client = client_for(sandbox, config)
    with pytest.raises(GitLabError, match=r"GraphQL query failed: .*Cannot query field 'nope'"):
        client.graphql('{ project(fullPath: "acme/tracker") { nope } }')


def test_the_ci_read_token_may_query(sandbox: Any, config: Config) -> None:
    read_token = sandbox.info["users"]["agents"]["read_token"]
    client = client_for(sandbox, config, PAIRGATE_TEST_TASK_API_TOKEN=read_token)
    assert client.graphql(QUERY, {"path": "acme/tracker"})["project"]["fullPath"]


def test_glab_graphql_posts_the_query_on_stdin(glab: GitLab, fp: Any) -> None:
    seen: list[Any] = []
    argv = ["glab", "api", "graphql", "-X", "POST", "--input", "-"]
    fp.register(
        [*argv, "-H", "Content-Type: application/json", "--hostname", "gl.example"],
        stdout='{"data": {"project": null}}',
        stdin_callable=lambda data: seen.append(data),
    )
    assert glab.graphql(QUERY, {"path": "a/b"}) == {"project": None}
    assert json.loads(seen[0]) == {"query": QUERY, "variables": {"path": "a/b"}}


def test_glab_graphql_failure_is_a_read_failure(glab: GitLab, fp: Any) -> None:
    fp.register(["glab", fp.any()], stderr="glab: HTTP 502\n", returncode=1)
    with pytest.raises(GitLabError) as failed:
        glab.graphql(QUERY, {"path": "a/b"})
    assert not isinstance(failed.value, WriteUncertain)
