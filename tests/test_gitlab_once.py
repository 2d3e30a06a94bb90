"""The merge hook's reader (gitlab_once): OneAttempt answers a call itself only as requests with
no retry would, and leaves everything else to requests, whose answer or error is the call's.
Each pair of clients below reads the sandbox the same way; the request log shows who asked."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import certifi
import pytest
from test_gitlab_environment import (  # noqa: F401
    NETRC_SIGNATURE,
    Recorder,
    gitlab_env,
    no_proxy_variables,
    recorder,
    signing_netrc,
)

from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab, GitLabError, read_retry
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.gitlab_once import (
    one_attempt_transport,
    plain_route,
)
from pairgate.standalone.hook import HOOK_TIMEOUT
from tests.kit.run import agent_env

PROJECT = "projects/acme%2Fapp"
NOTES = "projects/acme%2Ftracker/issues/1/notes"
QUERY = "query($path: ID!) { project(fullPath: $path) { fullPath } }"


def once(sandbox: Any, config: Config, **env: str) -> GitLab:
    return gitlab_from_env(
        config, agent_env(sandbox, **env), timeout=HOOK_TIMEOUT, transport=one_attempt_transport
    )


def library(sandbox: Any, config: Config, **env: str) -> GitLab:
    return gitlab_from_env(
        config, agent_env(sandbox, **env), retry=read_retry(attempts=0), timeout=HOOK_TIMEOUT
    )


def both(
    config: Config, url: str, *, timeout: tuple[float, float] = (2.0, 2.0)
) -> tuple[GitLab, GitLab]:
    """The hook's client and requests with no retry, both reading the GitLab at ``url``."""
    env = gitlab_env(config, url)
    return (
        gitlab_from_env(config, env, timeout=timeout, transport=one_attempt_transport),
        gitlab_from_env(config, env, timeout=timeout, retry=read_retry(attempts=0)),
    )


def asked(sandbox: Any) -> list[str]:
    paths = [f"{r['method']} {r['path']}" for r in sandbox.requests()]
    sandbox.clear_requests()
    return paths


@pytest.fixture
def plain(no_proxy_variables: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:  # noqa: F811
    """No proxy and no .netrc: the route OneAttempt stands in on."""
    no_proxy_variables.setenv("NETRC", str(tmp_path / "no-netrc"))
    return no_proxy_variables


def test_it_answers_a_get_a_short_list_and_a_query_itself_as_requests_would(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        sandbox.note(1, f"note {i}")
    fast, slow = once(sandbox, config), library(sandbox, config)
    sandbox.clear_requests()
    answers = [
        fast.get(PROJECT),
        fast.get_all(NOTES, sort="asc", order_by="created_at"),
        fast.graphql(QUERY, {"path": "acme/tracker"}),
    ]
    assert asked(sandbox) == [f"GET /api/v4/{PROJECT}", f"GET /api/v4/{NOTES}", "POST /api/graphql"]
    assert answers == [
        slow.get(PROJECT),
        slow.get_all(NOTES, sort="asc", order_by="created_at"),
        slow.graphql(QUERY, {"path": "acme/tracker"}),
    ]
    assert [n["body"] for n in answers[1]] == [f"note {i}" for i in range(5)]


def test_a_list_with_a_next_page_is_read_whole_by_requests(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    for i in range(150):
        sandbox.note(1, f"note {i}")
    sandbox.clear_requests()
    notes = once(sandbox, config).get_all(NOTES, sort="asc", order_by="created_at")
    assert [n["body"] for n in notes] == [f"note {i}" for i in range(150)]
    # Its own first page, then requests' two: nothing of a page it did not finish is used.
    assert asked(sandbox) == [f"GET /api/v4/{NOTES}"] * 3


@pytest.mark.parametrize(
    "fault",
    [{"status": 500}, {"status": 429, "retry_after": 0}, {"status": 404}, {"drop": True}],
)
def test_a_failed_call_is_asked_again_and_fails_as_requests_fails(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch, fault: dict[str, Any]
) -> None:
    sandbox.fault(method="GET", path="/issues/1$", count=10, **fault)
    with pytest.raises(GitLabError) as expected:
        library(sandbox, config).get("projects/acme%2Ftracker/issues/1")
    sandbox.clear_requests()
    with pytest.raises(GitLabError) as got:
        once(sandbox, config).get("projects/acme%2Ftracker/issues/1")
    assert (type(got.value), got.value.message, got.value.status) == (
        type(expected.value),
        expected.value.message,
        expected.value.status,
    )
    assert asked(sandbox) == ["GET /api/v4/projects/acme%2Ftracker/issues/1"] * 2


def test_one_failure_is_not_retried_by_requests_either(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    """The fault covers one request: OneAttempt's. requests' one attempt then answers."""
    sandbox.fault(method="GET", path="/issues/1$", status=502, count=1)
    assert once(sandbox, config).get("projects/acme%2Ftracker/issues/1")["iid"] == 1
    assert len(asked(sandbox)) == 2


def test_a_refused_token_says_what_to_set(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    with pytest.raises(GitLabError, match="set PAIRGATE_TEST_TASK_API_TOKEN to a token") as got:
        once(sandbox, config, PAIRGATE_TEST_TASK_API_TOKEN="not-a-token").get(PROJECT)
    assert got.value.status == 401


def test_an_unreachable_gitlab_fails_as_requests_fails(
    config: Config, plain: pytest.MonkeyPatch
) -> None:
    errors = []
    for client in both(config, "http://127.0.0.1:9", timeout=HOOK_TIMEOUT):  # discard: no one
        with pytest.raises(GitLabError) as failed:
            client.get(PROJECT)
        errors.append((failed.value.message, failed.value.status))
    assert errors[0] == errors[1]
    assert "cannot reach GitLab at http://127.0.0.1:9/api/v4 (connection refused" in errors[0][0]


def test_a_proxy_leaves_every_call_to_requests(
    sandbox: Any,
    config: Config,
    recorder: Recorder,  # noqa: F811
    plain: pytest.MonkeyPatch,
) -> None:
    plain.setenv("http_proxy", recorder.url)
    assert plain_route(sandbox.url) == (False, None)
    assert once(sandbox, config).get(PROJECT) == {"answered_by": "recorder"}
    (line, _), *_ = recorder.seen
    assert line == f"{sandbox.url}/api/v4/{PROJECT}"  # through the proxy, as requests sends it
    plain.delenv("http_proxy")
    assert sandbox.requests() == []


def test_a_netrc_leaves_every_call_to_requests(
    config: Config,
    recorder: Recorder,  # noqa: F811
    plain: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    signing_netrc(tmp_path, plain)
    assert plain_route(recorder.url) == (False, None)
    env = gitlab_env(config, recorder.url)
    client = gitlab_from_env(config, env, timeout=HOOK_TIMEOUT, transport=one_attempt_transport)
    assert client.get("projects/1") == {"answered_by": "recorder"}
    (_, headers), *_ = recorder.seen
    assert headers["Authorization"] == NETRC_SIGNATURE


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", None])
def test_https_verifies_with_the_bundle_requests_would_use(
    plain: pytest.MonkeyPatch, variable: str | None, tmp_path: Path
) -> None:
    plain.delenv("REQUESTS_CA_BUNDLE", raising=False)
    plain.delenv("CURL_CA_BUNDLE", raising=False)
    bundle = tmp_path / "one-ca.pem"
    bundle.write_text(Path(certifi.where()).read_text().split("-----END CERTIFICATE-----")[0])
    bundle.write_text(bundle.read_text() + "-----END CERTIFICATE-----\n")
    if variable:
        plain.setenv(variable, str(bundle))
    ok, context = plain_route("https://gitlab.example.com/api/v4")
    assert ok and isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert not context.hostname_checks_common_name  # a name in the SAN, as urllib3 requires
    cas = context.cert_store_stats()["x509_ca"]
    assert cas == 1 if variable else cas > 100  # the one CA named, or certifi's


def test_it_takes_no_retry_policy() -> None:
    with pytest.raises(ValueError, match="no retry policy"):
        one_attempt_transport("http://127.0.0.1", "t", retry=read_retry(), timeout=(1.0, 1.0))


def test_the_token_never_appears_in_a_repr(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    client = once(sandbox, config)
    client.get(PROJECT)
    assert sandbox.token("agents") not in repr(client)


@pytest.mark.timing
def test_a_gitlab_that_does_not_answer_fails_once_naming_the_url(
    config: Config, plain: pytest.MonkeyPatch
) -> None:
    """requests would wait as long again: a timeout is not asked twice, and both transports
    say it in the same words."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)  # takes connections (the kernel does), never answers
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for client in both(config, url, timeout=(0.3, 0.3)):
        started = time.monotonic()
        with pytest.raises(GitLabError) as failed:
            client.get("projects/1")
        elapsed = time.monotonic() - started
        assert 0.25 < elapsed < 0.55, (client, elapsed)  # one read timeout, not two
        assert failed.value.status is None
        assert failed.value.message == (
            f"pairgate: GitLab GET /projects/1: no answer: GitLab at {url}/api/v4 did not answer "
            "within 0.3 s (the URL is from PAIRGATE_TEST_GITLAB_URL)"
        )
    listener.close()


# -- what a server (or anything on the path) may send that http.client reads otherwise ----------

Answer = Callable[[int, bytes], bytes]  # (request number, request head) -> the bytes sent back


class Scripted:
    """A loopback HTTP server that answers each request with what ``answer`` says, byte for
    byte, and keeps connections open; it counts the connections it was given."""

    def __init__(self, answer: Answer) -> None:
        self.answer, self.served, self.connections = answer, 0, 0
        # Sent unasked, once the answer to request N has gone: N -> the bytes, and when sent.
        self.unasked: dict[int, bytes] = {}
        self.sent_unasked = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buffer = b""
        with conn, contextlib.suppress(OSError):  # a client that hangs up ends its connection
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")[1:]
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(buffer) < length:
                    buffer += conn.recv(65536)
                buffer = buffer[length:]
                number, self.served = self.served, self.served + 1
                conn.sendall(self.answer(number, head))
                if number in self.unasked:
                    time.sleep(0.02)  # after the client has read the answer it asked for
                    conn.sendall(self.unasked[number])
                    self.sent_unasked.set()


def http_answer(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    if not any(h.lower().startswith("content-length") for h in headers):
        lines.append(f"Content-Length: {len(body)}")
    if not any(h.lower().startswith("content-type") for h in headers):
        lines.append("Content-Type: application/json")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.fixture
def scripted() -> Iterator[Callable[[Answer], Scripted]]:
    servers: list[Scripted] = []

    def start(answer: Answer) -> Scripted:
        servers.append(Scripted(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.sock.close()


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("answer", call())
    except GitLabError as exc:
        return ("error", exc.message, exc.status)


def test_bytes_nobody_asked_for_are_never_read_as_the_next_answer(
    config: Config, plain: pytest.MonkeyPatch, scripted: Callable[[Answer], Scripted]
) -> None:
    """A server (or anything on the path) that sends a second answer unasked on a kept
    connection: urllib3 drops such a connection, and so does OneAttempt."""

    def answer(number: int, head: bytes) -> bytes:
        if number == 0:
            return http_answer(b'{"sha": "abc"}')
        return http_answer(b'[{"id": 1, "body": "the real notes"}]')

    server = scripted(answer)
    server.unasked[0] = http_answer(b'[{"id": 99, "body": "FORGED approval"}]')
    fast, _ = both(config, server.url)
    assert fast.get("projects/1") == {"sha": "abc"}
    assert server.sent_unasked.wait(5)
    assert fast.get_all("projects/1/issues/1/notes") == [{"id": 1, "body": "the real notes"}]
    assert server.connections == 2


@pytest.mark.parametrize(
    "headers, body",
    [
        pytest.param(("Content-Encoding: gzip",), b"[]", id="a content coding"),
        pytest.param(("Content-Type: text/plain",), b'["caf\xc3\xa9"]', id="text/plain"),
        pytest.param(
            ("Content-Type: application/json; charset=iso-8859-1",),
            b'["caf\xc3\xa9"]',
            id="another charset",
        ),
        pytest.param((), b'\xef\xbb\xbf["bom"]', id="a byte order mark"),
        pytest.param((), b'["\xed\xa0\x80"]', id="not UTF-8"),
        pytest.param(("Content-Length: 2", "Content-Length: 40"), b"[]", id="two lengths"),
        pytest.param(
            ("Content-Type: application/json", "Content-Type: text/plain; charset=iso-8859-1"),
            b'["caf\xc3\xa9"]',
            id="two content types",
        ),
    ],
)
def test_a_body_requests_reads_otherwise_is_left_to_requests(
    config: Config,
    plain: pytest.MonkeyPatch,
    scripted: Callable[[Answer], Scripted],
    headers: tuple[str, ...],
    body: bytes,
) -> None:
    server = scripted(lambda number, head: http_answer(body, *headers))
    fast, slow = both(config, server.url)
    assert outcome(lambda: fast.get_all("projects/1/issues/1/notes")) == outcome(
        lambda: slow.get_all("projects/1/issues/1/notes")
    )


@pytest.mark.parametrize(
    "headers, fast",
    [
        pytest.param(("Content-Type: application/json",), True, id="application/json"),
        pytest.param(("Content-Type: application/json; charset=utf-8",), True, id="utf-8"),
        pytest.param(("Content-Type:  APPLICATION/JSON ",), True, id="upper case, spaced"),
        pytest.param(("Content-Type: application/json;charset=UTF-8",), True, id="UTF-8 unspaced"),
        pytest.param(('Content-Type: application/json; charset="utf-8"',), True, id="quoted"),
        pytest.param(("Content-Type: application/json; charset=latin-1",), False, id="latin-1"),
        pytest.param(("Content-Type: application/jsonx",), False, id="another type"),
        pytest.param(
            ("Content-Type: application/json", "Content-Encoding: "), True, id="coding empty"
        ),
        pytest.param(
            ("Content-Type: application/json", "Content-Encoding: Identity"), True, id="identity"
        ),
        pytest.param(
            ("Content-Type: application/json", "Transfer-Encoding: xchunked"), False, id="framing"
        ),
        pytest.param(("content-type: application/json",), True, id="a name in lower case"),
        pytest.param(("Content-Type: application/json", "X-Next-Page: 2"), False, id="a next page"),
        pytest.param(("content-type: application/json", "x-next-page: 2"), False, id="next, lower"),
        pytest.param(("Content-Type: application/json", "X-Next-Page: "), True, id="no next page"),
        pytest.param(
            ("Content-Type: application/json", 'Link: <x>; rel="NEXT"'), False, id="Link next"
        ),
        pytest.param(
            ("Content-Type: application/json", 'Link: <x>; rel="first"'), True, id="Link first"
        ),
    ],
)
def test_the_first_attempt_reads_each_header_as_requests_does_and_answers_only_what_it_would(
    config: Config,
    plain: pytest.MonkeyPatch,
    scripted: Callable[[Answer], Scripted],
    headers: tuple[str, ...],
    fast: bool,
) -> None:
    """A header's name in any case, a media type in any case and spacing, a charset quoted or
    not: the first attempt answers what requests would read as it stands, and leaves to
    requests (one more request) another charset or type, a coding, a framing, a next page."""
    server = scripted(lambda number, head: http_answer(b'[{"id": 1}]', *headers))
    first, library = both(config, server.url)
    assert outcome(lambda: first.get_all("projects/1/issues/1/notes")) == outcome(
        lambda: library.get_all("projects/1/issues/1/notes")
    )
    # The library's one request, after the first attempt's one (answered), or two (asked again).
    assert server.served == (2 if fast else 3)


def test_a_redirect_off_the_origin_is_not_followed_and_the_token_goes_nowhere_else(
    config: Config,
    plain: pytest.MonkeyPatch,
    scripted: Callable[[Answer], Scripted],
    recorder: Recorder,  # noqa: F811
) -> None:
    elsewhere = f"{recorder.url}/api/v4/projects/1"
    server = scripted(
        lambda number, head: http_answer(b"", f"Location: {elsewhere}", status="302 Found")
    )
    for client in both(config, server.url):
        with pytest.raises(GitLabError) as refused:
            client.get("projects/1")
        assert refused.value.status == 302
        assert refused.value.message == (
            f"pairgate: GitLab GET /projects/1: HTTP 302: a redirect to {elsewhere}, off "
            f"{server.url}/api/v4's origin, which pairgate does not follow (its token would go "
            f"with it): set PAIRGATE_TEST_GITLAB_URL to the GitLab it points at"
        )
    assert recorder.seen == []


def test_a_redirect_within_the_origin_is_followed_as_gitlab_moves_a_project(
    config: Config, plain: pytest.MonkeyPatch, scripted: Callable[[Answer], Scripted]
) -> None:
    """GitLab answers a GET of a moved project's old path with 301 to its id."""

    def answer(number: int, head: bytes) -> bytes:
        if b"acme%2Fold" in head.split(b"\r\n", 1)[0]:
            return http_answer(b"", "Location: /api/v4/projects/12", status="301 Moved Permanently")
        return http_answer(b'{"id": 12, "path_with_namespace": "acme/new"}')

    server = scripted(answer)
    for client in both(config, server.url):
        assert client.get("projects/acme%2Fold") == {"id": 12, "path_with_namespace": "acme/new"}


@pytest.mark.parametrize(
    "url",
    ["https://someone:secret@gitlab.example.com/api/v4", "https://gitlab.exämple.com/api/v4"],
    ids=["a user in the URL", "a name that is not ASCII"],
)
def test_a_url_requests_would_sign_or_encode_is_left_to_requests(
    plain: pytest.MonkeyPatch, url: str
) -> None:
    assert plain_route(url) == (False, None)


@pytest.mark.parametrize("bundle", ["missing.pem", "empty.pem"])
def test_a_bundle_that_does_not_load_is_left_to_requests(
    plain: pytest.MonkeyPatch, tmp_path: Path, bundle: str
) -> None:
    (tmp_path / "empty.pem").write_text("")
    plain.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / bundle))
    assert plain_route("https://gitlab.example.com/api/v4") == (False, None)
