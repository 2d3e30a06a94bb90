"""The HTTPS client reads the environment's proxy, CA-bundle and ~/.netrc settings once, when it
is built, as requests would on each call: a proxy variable sends every call through that proxy,
no_proxy exempts its hosts, and a ~/.netrc entry still signs the calls."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab, read_retry
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.gitlab_once import proxied
from tests.kit.run import agent_env

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class Recorder(ThreadingHTTPServer):
    """A stand-in proxy (or server) on loopback: answers every GET with JSON naming itself, and
    remembers each request line and its headers."""

    daemon_threads = True
    block_on_close = False  # a client's kept-alive connection does not hold the test up

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _Answer)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Answer(BaseHTTPRequestHandler):
    server: Recorder

    def do_GET(self) -> None:
        self.server.seen.append((self.path, dict(self.headers)))
        body = json.dumps({"answered_by": "recorder"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def client(sandbox: Any, config: Config) -> GitLab:
    return gitlab_from_env(config, agent_env(sandbox), retry=read_retry(attempts=0))


def test_a_proxy_variable_sends_every_call_through_that_proxy(
    sandbox: Any, config: Config, recorder: Recorder, no_proxy_variables: pytest.MonkeyPatch
) -> None:
    no_proxy_variables.setenv("http_proxy", recorder.url)
    gitlab = client(sandbox, config)
    assert gitlab.get("projects/acme%2Ftracker") == {"answered_by": "recorder"}
    (line, headers), *_ = recorder.seen
    # A proxy is sent the absolute URL, with the token, as requests sends it.
    assert line == f"{sandbox.url}/api/v4/projects/acme%2Ftracker"
    assert headers["PRIVATE-TOKEN"] == sandbox.token("agents")
    no_proxy_variables.delenv("http_proxy")  # the sandbox's own helpers read it too
    assert sandbox.requests() == []  # nothing reached GitLab itself


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"https_proxy": "http://proxy:3128"},
        {"HTTP_PROXY": "http://proxy:3128"},
        {"All_Proxy": "socks5://proxy:1080"},
        {"ftp_proxy": "http://proxy:3128"},
        {"no_proxy": "localhost"},
        {"https_proxy": ""},
        {"HTTPS_PROXY_NOT": "http://proxy:3128"},
    ],
    ids=repr,
)
def test_whether_a_proxy_is_configured_is_urllib_s_answer(
    variables: dict[str, str], no_proxy_variables: pytest.MonkeyPatch
) -> None:
    # proxied() skips importing urllib.request when no variable could name a proxy: its answer
    # must be the one requests reads, with those variables and without.
    import urllib.request

    for name, value in variables.items():
        no_proxy_variables.setenv(name, value)
    expected = any(scheme != "no" for scheme in urllib.request.getproxies())
    assert proxied() is expected
    named = [n.lower() for n, v in variables.items() if v]
    assert expected is any(n.endswith("_proxy") and n != "no_proxy" for n in named)


def test_no_proxy_exempts_its_hosts(
    sandbox: Any, config: Config, recorder: Recorder, no_proxy_variables: pytest.MonkeyPatch
) -> None:
    no_proxy_variables.setenv("http_proxy", recorder.url)
    no_proxy_variables.setenv("no_proxy", "localhost,127.0.0.1")
    assert client(sandbox, config).get("projects/acme%2Ftracker")["path_with_namespace"] == (
        "acme/tracker"
    )
    assert recorder.seen == []


def test_the_environment_is_read_once_per_client(
    sandbox: Any, config: Config, recorder: Recorder, no_proxy_variables: pytest.MonkeyPatch
) -> None:
    no_proxy_variables.setenv("http_proxy", recorder.url)
    gitlab = client(sandbox, config)
    no_proxy_variables.delenv("http_proxy")
    for _ in range(3):
        assert gitlab.get("projects/acme%2Ftracker") == {"answered_by": "recorder"}
    assert len(recorder.seen) == 3
    # A client built now reads the environment as it is now.
    assert client(sandbox, config).get("projects/acme%2Ftracker")["id"]


# What a .netrc entry for loopback signs a call with.
NETRC_SIGNATURE = "Basic " + base64.b64encode(b"someone:secret").decode()


def signing_netrc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A .netrc with an entry for loopback, named by NETRC."""
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    return netrc


def gitlab_env(config: Config, url: str, **tokens: str) -> dict[str, str]:
    """An environment whose GitLab is at ``url``, with the read token (and ``tokens``)."""
    return {
        "PAIRGATE_CONFIG": str(config.path),
        "PAIRGATE_TEST_GITLAB_URL": url,
        "PAIRGATE_TEST_TASK_API_TOKEN": "token-1",
        **tokens,
    }


def test_a_netrc_entry_still_signs_the_calls(
    config: Config,
    recorder: Recorder,
    no_proxy_variables: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    netrc = signing_netrc(tmp_path, no_proxy_variables)
    env = gitlab_env(config, recorder.url, PAIRGATE_TEST_TASK_WRITE_TOKEN="token-1")
    gitlab = gitlab_from_env(config, env, retry=read_retry(attempts=0))
    netrc.unlink()  # read when the client was built
    assert gitlab.get("projects/1") == {"answered_by": "recorder"}
    (_, headers), *_ = recorder.seen
    assert headers["Authorization"] == NETRC_SIGNATURE
    assert headers["PRIVATE-TOKEN"] == "token-1"


def test_the_pool_keeps_a_connection_for_each_board_reader_and_listing() -> None:
    from pairgate.standalone.gitlab import POOL_SIZE
    from pairgate.tracker import BOARD_LABELS, WORKERS

    assert WORKERS + len(BOARD_LABELS) <= POOL_SIZE
