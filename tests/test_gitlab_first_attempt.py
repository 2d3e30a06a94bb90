"""A gate job's and the CLI's reads (gitlab_once.first_attempt_transport and
first_attempt_per_thread): the first attempt through http.client, requests' retries behind it,
each answering as requests alone would (OneAttempt itself: test_gitlab_once.py)."""
# ruff: noqa: F811

from __future__ import annotations

import contextlib
import socket
import sys
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
    first_attempt_per_thread,
    first_attempt_transport,
    plain_route,
)
from tests.kit.run import agent_env, run_program

# Fixtures (plain, scripted) are imported from the sibling module, and pytest finds them here by
# name: the F811 a parameter of that name raises is what pytest means.
from tests.test_gitlab_once import (  # noqa: F401
    NOTES,
    PROJECT,
    Answer,
    Scripted,
    asked,
    both,
    http_answer,
    library,
    once,
    outcome,
    plain,
    scripted,
)

# -- a gate job's reads: the first attempt through http.client, requests' retries behind it ---

BACKOFF = read_retry(attempts=2, backoff_factor=0.5)


def first_then_library(
    sandbox: Any, config: Config, retry: Any = BACKOFF, **env: str
) -> tuple[GitLab, GitLab]:
    """A gate job's client and requests alone, with the same retry policy."""
    variables = agent_env(sandbox, **env)
    return (
        gitlab_from_env(config, variables, retry=retry, transport=first_attempt_transport),
        gitlab_from_env(config, variables, retry=retry),
    )


def test_the_first_attempt_transports_answer_every_call_requests_answers() -> None:
    from pairgate.standalone.gitlab import Https
    from pairgate.standalone.gitlab_once import OneAttempt

    calls = {n for n in vars(Https) if not n.startswith("_") and callable(getattr(Https, n))}
    per_thread = type(first_attempt_per_thread("http://x/api/v4", "t", retry=None, timeout=1))
    for transport in (OneAttempt, per_thread):
        assert calls - set(dir(transport)) == set(), transport


def test_the_cli_reads_through_http_client_from_every_thread_as_requests_would(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        sandbox.note(1, f"note {i}")
    threads = gitlab_from_env(config, agent_env(sandbox), transport=first_attempt_per_thread)
    alone = gitlab_from_env(config, agent_env(sandbox))
    sandbox.clear_requests()
    answers: dict[int, list[Any]] = {}
    transports: list[Any] = []  # held, so no finished thread's transport is freed and its id reused

    def read(n: int) -> None:
        answers[n] = threads.get_all(NOTES, sort="asc", order_by="created_at")
        transports.append(threads._reader._mine())

    workers = [threading.Thread(target=read, args=(n,)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert asked(sandbox) == [f"GET /api/v4/{NOTES}"] * 6
    assert len({id(t) for t in transports}) == 6  # a connection of its own for each thread
    expected = alone.get_all(NOTES, sort="asc", order_by="created_at")
    assert all(answer == expected for answer in answers.values()) and len(answers) == 6
    assert "requests" not in {type(t).__module__ for t in transports}


def test_the_cli_s_threads_that_fail_share_one_requests_transport(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch, slept: list[float]
) -> None:
    sandbox.fault(method="GET", path="/issues/1$", status=500, count=2)
    threads = gitlab_from_env(
        config, agent_env(sandbox), retry=BACKOFF, transport=first_attempt_per_thread
    )
    results: list[Any] = []
    workers = [
        threading.Thread(
            target=lambda: results.append(
                (threads.get("projects/acme%2Ftracker/issues/1")["iid"], threads._reader._mine())
            )
        )
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [iid for iid, _ in results] == [1, 1]  # each first attempt refused, requests read it
    first, second = (one for _, one in results)
    assert first is not second and first.library() is second.library()


def test_pairgate_status_never_imports_requests_when_gitlab_answers(
    sandbox: Any, plain: pytest.MonkeyPatch
) -> None:
    """Nor dataclasses (inspect, ast and dis behind it): the value types status reads are
    NamedTuples (ledger.py says why)."""
    code = (
        "import sys; from pairgate.main import main; code = main(['status', '1']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'requests', 'urllib3', 'dataclasses', 'inspect'})); "
        "sys.exit(code)"
    )
    env = {k: v for k, v in agent_env(sandbox).items() if k.startswith("PAIRGATE")}
    done = run_program([sys.executable, "-c", code], env=env)
    assert (done.code, done.out.splitlines()[-1]) == (0, "[]"), done.err


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait urllib3 and OneAttempt make, recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)
    return waits


def test_a_gate_job_reads_through_http_client_as_requests_would(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch
) -> None:
    sandbox.note(1, "a note")
    first, alone = first_then_library(sandbox, config)
    sandbox.clear_requests()
    answers = [first.get(PROJECT), first.get_all(NOTES, sort="asc", order_by="created_at")]
    assert asked(sandbox) == [f"GET /api/v4/{PROJECT}", f"GET /api/v4/{NOTES}"]
    assert answers == [alone.get(PROJECT), alone.get_all(NOTES, sort="asc", order_by="created_at")]
    assert first._reader._library is None  # requests never asked, nor built


@pytest.mark.parametrize(
    "fault, first_wait",
    [({"status": 500}, []), ({"status": 429, "retry_after": 3}, [3.0]), ({"drop": True}, [])],
)
def test_a_read_that_keeps_failing_costs_one_request_more_and_waits_as_requests_waits(
    sandbox: Any,
    config: Config,
    plain: pytest.MonkeyPatch,
    slept: list[float],
    fault: Any,
    first_wait: list[float],
) -> None:
    sandbox.fault(method="GET", path="/issues/1$", count=20, **fault)
    first, alone = first_then_library(sandbox, config)
    seen = []
    for client in (alone, first):
        with pytest.raises(GitLabError) as failed:
            client.get("projects/acme%2Ftracker/issues/1")
        seen.append((failed.value.message, failed.value.status, len(asked(sandbox)), [*slept]))
        slept.clear()
    (alone_message, alone_status, alone_asked, alone_waits), (message, status, count, waits) = seen
    assert (message, status) == (alone_message, alone_status)
    assert (alone_asked, count) == (3, 4)  # the policy's three attempts, and the first one's
    # requests' waits between its attempts (the backoff, or the Retry-After each answer asks
    # for), and before its first the wait the first attempt was told to make.
    assert alone_waits == (first_wait * 2 or [1.0])
    assert waits == first_wait + alone_waits


def test_a_retry_after_given_to_the_first_attempt_is_waited_before_requests_asks(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch, slept: list[float]
) -> None:
    sandbox.fault(method="GET", path="/issues/1$", status=429, retry_after=7, count=1)
    first, alone = first_then_library(sandbox, config)
    assert alone.get("projects/acme%2Ftracker/issues/1")["iid"] == 1
    assert (len(asked(sandbox)), slept) == (2, [7.0])
    slept.clear()
    sandbox.fault(method="GET", path="/issues/1$", status=429, retry_after=7, count=1)
    assert first.get("projects/acme%2Ftracker/issues/1")["iid"] == 1
    assert (len(asked(sandbox)), slept) == (2, [7.0])  # http.client's, then requests' after 7 s


@pytest.mark.parametrize(
    "refusal",
    [
        http_answer(
            b"Retry later\n",
            "Content-Type: text/plain",
            "Retry-After: 7",
            status="429 Too Many Requests",
        ),
        http_answer(
            b"<html>down</html>",
            "Content-Type: text/html",
            "Retry-After: 7",
            status="503 Service Unavailable",
        ),
        http_answer(b'{"message": "500"}', "Retry-After: 7", status="500 Internal Server Error"),
    ],
    ids=["429 in text", "503 in html", "500 with a retry-after"],
)
def test_a_retry_after_is_waited_whatever_the_refusal_says_it_in(
    config: Config,
    plain: pytest.MonkeyPatch,
    scripted: Callable[[Answer], Scripted],
    slept: list[float],
    refusal: bytes,
) -> None:
    """GitLab's own 429 is plain text, and a balancer's 503 is a page: urllib3 waits out the
    Retry-After of any status it retries, and so does the first attempt before handing over."""
    waits = []
    for transport in ({"transport": first_attempt_transport}, {}):
        server = scripted(
            lambda number, head: refusal if number == 0 else http_answer(b'{"id": 1}')
        )
        client = gitlab_from_env(config, gitlab_env(config, server.url), retry=BACKOFF, **transport)
        assert client.get("projects/1") == {"id": 1}
        waits.append([*slept])
        slept.clear()
    assert waits == [[7.0], [7.0]]


def test_a_failed_first_attempt_is_retried_by_requests(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch, slept: list[float]
) -> None:
    sandbox.fault(method="GET", path="/issues/1$", status=503, count=2)
    first, _ = first_then_library(sandbox, config)
    assert first.get("projects/acme%2Ftracker/issues/1")["iid"] == 1
    assert len(asked(sandbox)) == 3  # http.client's, then requests' and its first retry


@pytest.mark.parametrize("token", ["half\nhalf", "half\r\n folded"])
def test_a_token_requests_would_not_send_is_never_sent_nor_shown(
    sandbox: Any, config: Config, plain: pytest.MonkeyPatch, token: str
) -> None:
    """requests refuses a header value with a line break before sending anything; http.client
    sends a folded one, and raises on the rest with the value in its message."""
    first, alone = first_then_library(sandbox, config, PAIRGATE_TEST_TASK_API_TOKEN=token)
    sandbox.clear_requests()
    got = outcome(lambda: first.get(PROJECT))
    assert asked(sandbox) == []
    assert got == outcome(lambda: alone.get(PROJECT)) and got[0] == "error"
    assert "half" not in str(got)


def test_a_connect_timeout_is_not_asked_again(config: Config, plain: pytest.MonkeyPatch) -> None:
    """requests does not retry a connection that could not be made in time (connect=0)."""

    def times_out(*args: Any, **kwargs: Any) -> socket.socket:
        raise TimeoutError("timed out")

    plain.setattr(socket, "create_connection", times_out)  # OneAttempt's connect, not urllib3's
    client = gitlab_from_env(
        config,
        gitlab_env(config, "http://127.0.0.1:9"),
        timeout=(0.3, 0.3),
        transport=first_attempt_transport,
    )
    with pytest.raises(GitLabError, match=r"did not answer within 0\.3 s"):
        client.get("projects/1")
    assert client._reader._library is None


@pytest.fixture
def silent() -> Iterator[tuple[str, list[socket.socket]]]:
    """A host that takes every connection and never says a word (nor a TLS handshake)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    taken: list[socket.socket] = []

    def take() -> None:
        with contextlib.suppress(OSError):
            while True:
                taken.append(listener.accept()[0])

    threading.Thread(target=take, daemon=True).start()
    yield f"127.0.0.1:{listener.getsockname()[1]}", taken
    listener.close()
    for sock in taken:
        sock.close()


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_read_timeout_is_asked_again_as_requests_asks_again(
    config: Config, plain: pytest.MonkeyPatch, silent: tuple[str, list[Any]], scheme: str
) -> None:
    """A read timeout, and a TLS handshake that times out (a read timeout to urllib3), are
    retried by requests: the first attempt's is asked again."""
    host, taken = silent
    env = gitlab_env(config, f"{scheme}://{host}")
    retry = read_retry(attempts=1, backoff_factor=0)
    found = []
    for transport in ({"transport": first_attempt_transport}, {}):
        client = gitlab_from_env(config, env, retry=retry, timeout=(0.3, 0.3), **transport)
        with pytest.raises(GitLabError) as failed:
            client.get("projects/1")
        found.append((failed.value.message, len(taken)))
        taken.clear()
    (first_message, first_connections), (alone_message, alone_connections) = found
    assert first_message == alone_message
    assert "did not answer within" in first_message
    assert (first_connections, alone_connections) == (3, 2)  # one more: the first attempt's


def test_get_job_reads_nothing_from_the_environment(
    plain: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GET /job's session reads no proxy, .netrc or CA bundle from the environment (it is
    handed the job's bundle: tests/test_gate_job_proof.py), so neither does its first
    attempt: with none handed to it, certifi's."""
    bundle = tmp_path / "one-ca.pem"
    bundle.write_text(
        Path(certifi.where()).read_text().split("-----END CERTIFICATE-----")[0]
        + "-----END CERTIFICATE-----\n"
    )
    plain.setenv("https_proxy", "http://127.0.0.1:9")
    plain.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    (tmp_path / "netrc").write_text("machine gitlab.example.com login a password b\n")
    plain.setenv("NETRC", str(tmp_path / "netrc"))
    assert plain_route("https://gitlab.example.com/api/v4") == (False, None)
    ok, context = plain_route("https://gitlab.example.com/api/v4", trust_env=False)
    assert ok and context is not None and context.cert_store_stats()["x509_ca"] > 100
