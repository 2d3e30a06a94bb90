"""Reads that make their first attempt through http.client, with requests behind it: the merge
hook's (one attempt a call) and the gate jobs' (requests' retry policy behind it)."""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from pairgate.standalone.gitlab import (
    PER_PAGE,
    Https,
    graphql_url,
    query_params,
    read_retry,
    request_error,
)

if TYPE_CHECKING:
    import http.client
    import socket
    import ssl

    from urllib3.util.retry import Retry

__all__ = [
    "OneAttempt",
    "first_attempt_per_thread",
    "first_attempt_transport",
    "one_attempt_transport",
    "plain_route",
    "proxied",
    "wait_as_requests_would",
]


def plain_route(
    api_url: str, *, trust_env: bool = True, bundle: str | None = None
) -> tuple[bool, ssl.SSLContext | None]:
    """Whether requests would call ``api_url`` with nothing but a connection (no proxy, no
    .netrc signing), and the TLS context it would verify with (None for loopback http): where
    OneAttempt stands in for it exactly. Read from the environment as requests reads it: a
    proxy is urllib's getproxies() (no_proxy is not weighed: any proxy at all leaves the call
    to requests), .netrc is $NETRC or ~/.netrc or ~/_netrc, the CA bundle is
    $REQUESTS_CA_BUNDLE, then $CURL_CA_BUNDLE, then certifi's. A URL with a user or password
    in it (requests signs with them) or with anything but ASCII in it (requests encodes its
    host and path its own way) is left to requests too, as is a bundle that does not load.
    ``trust_env=False``: as a requests session that does not read the environment (no proxy,
    no .netrc) and verifies with ``bundle``, else certifi's, which ``GET /job`` uses."""
    if trust_env:
        if proxied():
            return False, None
        netrc = os.environ.get("NETRC")
        for name in [netrc] if netrc else ["~/.netrc", "~/_netrc"]:
            try:
                if os.path.exists(os.path.expanduser(name)):
                    return False, None
            except KeyError:  # no home directory to expand, as requests allows
                continue
    parts = urlsplit(api_url)
    if parts.username is not None or parts.password is not None or not api_url.isascii():
        return False, None  # requests adds Basic auth, or encodes IDNA 2008 / the path itself
    if parts.scheme != "https":
        return True, None
    import ssl

    if trust_env:
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if not bundle:
        import certifi

        bundle = certifi.where()
    try:
        if os.path.isdir(bundle):
            context = ssl.create_default_context(capath=bundle)
        else:
            context = ssl.create_default_context(cafile=bundle)
    except OSError:  # a missing or unreadable bundle: requests says so in its own words
        return False, None
    context.hostname_checks_common_name = False  # as urllib3's context: a SAN, or no match
    return True, context


def proxied() -> bool:
    """Does urllib's getproxies(), which requests reads, name any proxy? Where getproxies reads
    the environment alone (neither macOS nor Windows), a process with no variable whose name
    ends in ``_proxy``, in any case, has none: then urllib.request, which costs every start
    5 ms (it imports tempfile, and that shutil), is not imported to say so."""
    if sys.platform != "darwin" and os.name != "nt":
        if not any(name.lower()[-6:] == "_proxy" for name in os.environ):  # as urllib reads
            return False
    import urllib.request

    return any(scheme != "no" for scheme in urllib.request.getproxies())


def _quiet(connection: http.client.HTTPConnection) -> bool:
    """No bytes wait on a kept connection (urllib3's is_connection_dropped, inverted)."""
    import select

    sock = connection.sock
    if sock is None:
        return False
    if getattr(sock, "pending", lambda: 0)():
        return False
    return not select.select([sock], [], [], 0)[0]


def _as_requests_reads(response: http.client.HTTPResponse) -> bool:
    """Whether requests would read this body as it stands: no content coding, one framing,
    and JSON it decodes as UTF-8 (application/json, no other charset)."""
    headers = response.msg
    if (headers.get("Content-Encoding") or "identity").strip().lower() != "identity":
        return False
    if len(set(headers.get_all("Content-Length") or [])) > 1:
        return False
    coding = headers.get("Transfer-Encoding")
    if coding is not None and coding.strip().lower() != "chunked":
        return False
    if len(headers.get_all("Content-Type") or []) != 1:  # requests reads two as one, joined
        return False
    media = headers.get_content_type()
    charset = headers.get_content_charset()
    return media == "application/json" and charset in (None, "utf-8")


# A header value requests sends (requests.utils._validate_header_part): http.client takes more
# (a folded line, a leading space), and raises on less with the value in its message.
_SENDABLE = re.compile(r"\S[^\r\n]*|")


def _sendable(token: str) -> bool:
    try:
        token.encode("latin-1")  # as http.client encodes a header
    except UnicodeEncodeError:
        return False
    return _SENDABLE.fullmatch(token) is not None


def wait_as_requests_would(refused: tuple[int, str | None] | None, policy: Retry) -> None:
    """Before requests asks again what a first attempt was refused ((status, Retry-After)):
    wait what ``policy`` would have waited before its first retry. That is the Retry-After of
    any status it retries, as urllib3 honours it (its first retry has no backoff), so a GitLab
    that asked for time is not asked again sooner."""
    if refused is None:
        return
    status, after = refused
    if after is None or not policy.respect_retry_after_header:
        return
    if not policy.is_retry("GET", status, has_retry_after=True):
        return
    try:
        seconds = policy.get_retry_after(_RetryAfter(after))  # type: ignore[arg-type]
    except Exception:  # a Retry-After urllib3 cannot read: requests will say so, or not wait
        return
    if seconds:
        time.sleep(seconds)


class _RetryAfter:
    """What Retry.get_retry_after reads of a response: its Retry-After header."""

    def __init__(self, value: str) -> None:
        self.headers = {"Retry-After": value}


class OneAttempt:
    """Reads whose first attempt goes through the standard library's http.client: importing
    requests and urllib3 would cost a run that reads a few answers more than the rest of its
    work. The merge hook makes one attempt a call (one_attempt_transport); a gate job has
    requests' retry policy behind the first (first_attempt_transport).

    It answers only what it can answer exactly as ``library()`` (requests) would: a 2xx JSON
    answer that is all of what was asked. Anything else (an error status, a redirect, a
    dropped or refused connection, a list with a next page) is asked again of the library,
    whose answer or error is the call's; so is every write. A timeout is asked again only with
    ``ask_again_after_timeout``, and not while connecting (urllib3 retries a read timeout, a
    TLS handshake's included, never a connect timeout); otherwise it fails at once, naming the
    URL, rather than waiting as long a second time. ``wait_before_library`` is given the
    refused answer's (status, Retry-After) before the library asks again. A GraphQL query is a
    POST that reads, answered here as a GET is (errors in a 200 answer are GitLab.graphql's to
    refuse). A failure thus costs one more request, and never reads differently. Where
    plain_route says requests would add to the call (a proxy, .netrc), or the token is not a
    header value requests would send, every call is the library's. ``header`` carries the
    token (``JOB-TOKEN`` for a job's own); ``trust_env=False`` stands in for a session that
    does not read the environment and verifies with ``bundle``. One connection, kept open: not
    for threads."""

    name = "HTTPS"

    def __init__(
        self,
        library: Callable[[], Https],
        api_url: str,
        token: str,
        *,
        timeout: tuple[float, float],
        url_source: str = "the GitLab URL",
        header: str = "PRIVATE-TOKEN",
        trust_env: bool = True,
        ask_again_after_timeout: bool = False,
        wait_before_library: Callable[[tuple[int, str | None] | None], None] | None = None,
        bundle: str | None = None,
    ) -> None:
        self._build = library
        self._url_source = url_source  # named when GitLab does not answer in time
        self._library: Https | None = None
        parts = urlsplit(api_url.rstrip("/"))
        self._parts, self._base = parts, parts.path
        self._graphql_url = graphql_url(parts.geturl())
        self._headers = {header: token, "User-Agent": "pairgate"}
        self._trust_env, self._ask_again_after_timeout = trust_env, ask_again_after_timeout
        self._bundle = bundle  # the CA bundle, where the environment is not read
        self._sendable = _sendable(token)
        self._wait = wait_before_library
        self.refused: tuple[int, str | None] | None = None  # the last answer, when not 2xx
        self._timeout = timeout
        self._route: tuple[bool, ssl.SSLContext | None] | None = None  # plain_route's, once
        self._connection: http.client.HTTPConnection | None = None

    def __repr__(self) -> str:  # the token never appears in a repr or a traceback
        return f"OneAttempt({self._parts.geturl()!r}, token=<hidden>)"

    def library(self) -> Https:
        """The requests transport every call it does not answer goes to, built on first use."""
        if self._library is None:
            self._library = self._build()
        return self._library

    def _asked_again(self) -> Https:
        """The library, for a call this transport did not answer: after the wait for what the
        first attempt was told, when there was one."""
        if self._wait is not None:
            self._wait(self.refused)
        return self.library()

    def stands_in(self) -> bool:
        """Whether calls are tried here first (plain_route's answer, read once)."""
        if self._route is None:
            self._route = plain_route(
                self._parts.geturl(), trust_env=self._trust_env, bundle=self._bundle
            )
        return self._route[0] and self._sendable

    def _socket(self) -> socket.socket:
        """A TCP connection to the host, within the connect timeout."""
        import errno
        import socket

        host, port = self._parts.hostname, self._parts.port
        assert host is not None
        port = port or (443 if self._parts.scheme == "https" else 80)
        sock = socket.create_connection((host, port), timeout=self._timeout[0])
        try:  # as http.client's own connect: a request is not held back for an ACK
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            if exc.errno != errno.ENOPROTOOPT:
                sock.close()
                raise
        return sock

    def _over(self, sock: socket.socket) -> http.client.HTTPConnection:
        """An http.client connection over ``sock``, its TLS handshake made (within the connect
        timeout, as urllib3 makes it); then the read timeout, as requests takes (connect,
        read)."""
        import http.client

        host, port = self._parts.hostname, self._parts.port
        assert host is not None and self._route is not None
        connection: http.client.HTTPConnection
        if self._parts.scheme == "https":
            context = self._route[1]
            assert context is not None
            try:
                sock = context.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
            connection = http.client.HTTPSConnection(host, port, context=context)
        else:
            connection = http.client.HTTPConnection(host, port)
        sock.settimeout(self._timeout[1])
        connection.sock = sock
        connection.auto_open = 0  # never reconnected behind this class's back, untimed
        return connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _answer(
        self, target: str, body: Mapping[str, Any] | None = None
    ) -> tuple[Any, bool, int] | None:
        """(the decoded JSON, whether GitLab says more pages follow, the status) of one GET of
        ``target`` (a path and query on this host), or one POST of ``body`` as JSON; None when
        the library must ask instead (``refused`` then holds a non-2xx status)."""
        import http.client

        self.refused = None
        if not self.stands_in():
            return None
        method, headers, data = "GET", self._headers, None
        if body is not None:
            method, headers = "POST", {**headers, "Content-Type": "application/json"}
            data = json.dumps(body, allow_nan=False).encode("utf-8")  # as requests sends json=
        connect, read = self._timeout
        if self._connection is not None and not _quiet(self._connection):
            # Bytes nobody has asked for yet would be read as this call's answer: urllib3
            # drops such a connection too.
            self._close()
        connecting, limit = False, read
        try:
            if self._connection is None:
                connecting, limit = True, connect
                sock = self._socket()
                connecting = False  # a handshake that times out is a read timeout to urllib3
                self._connection = self._over(sock)
                limit = read
            self._connection.request(method, target, body=data, headers=headers)
            response = self._connection.getresponse()
            if not 200 <= response.status < 300:  # whatever its body: requests asks again
                self.refused = (response.status, response.getheader("Retry-After"))
                self._close()
                return None
            if not _as_requests_reads(response):  # before reading: its framing may be another's
                self._close()
                return None
            raw = response.read()
        except TimeoutError:
            # Asked again only where requests would retry it; the merge hook's would wait as
            # long once more, past its own bound.
            self._close()
            if self._ask_again_after_timeout and not connecting:
                return None
            what = urlsplit(target).path.removeprefix(self._base)
            late = (
                f"GitLab at {self._parts.geturl()} did not answer within {limit:g} s (the URL is "
                f"from {self._url_source})"
            )
            raise request_error(method, what, None, late, read=True) from None
        except (OSError, ValueError, http.client.HTTPException):
            self._close()
            return None
        if response.will_close:
            self._close()
        if not raw:
            return None
        try:
            value = json.loads(raw.decode("utf-8"))  # requests: utf-8 for application/json
        except ValueError:
            return None
        # X-Next-Page names the next page of GitLab's offset pagination, and a Link header
        # carries rel="next" in every pagination it has: either one hands the listing over.
        more = (
            bool(response.getheader("X-Next-Page"))
            or "next" in (response.getheader("Link") or "").lower()
        )
        return value, more, response.status

    def _target(self, path: str, params: Mapping[str, Any]) -> str:
        query = query_params(params)
        return f"{self._base}/{path}" + (f"?{urlencode(query)}" if query else "")

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        answer = self._answer(self._target(path, params))
        if answer is None:
            return self._asked_again().get(path, params)
        return answer[0]

    def answered(self, path: str, params: Mapping[str, Any]) -> tuple[Any, int] | None:
        """(the decoded answer, its status) of one GET of ``path``, when this transport gives
        it exactly as requests would; None when requests must ask (``get`` without the
        library; ``refused`` then holds a non-2xx status and its Retry-After)."""
        answer = self._answer(self._target(path, params))
        return None if answer is None else (answer[0], answer[2])

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        answer = self._answer(self._target(path, {**params, "per_page": PER_PAGE}))
        if answer is None or answer[1] or not isinstance(answer[0], list):
            yield from self._asked_again().pages(path, params)
            return
        yield answer[0]

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        body = {"query": query, "variables": dict(variables)}
        answer = self._answer(urlsplit(self._graphql_url).path, body)
        if answer is None:
            return self._asked_again().graphql(query, variables)
        return answer[0]

    def get_text(self, path: str, params: Mapping[str, Any]) -> str:
        """A body that is no JSON (a job's log): requests reads it, as it reads every answer
        this transport does not give exactly."""
        return self.library().get_text(path, params)

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        return self.library().send(method, path, data)


def one_attempt_transport(
    api_url: str, token: str, *, retry: Any, timeout: Any, **names: str
) -> OneAttempt:
    """The transport gitlab_from_env builds for a run that never retries (``transport=`` this):
    OneAttempt, which asks plain_route on its first call and leaves every call to requests (no
    retry) where it does not stand in exactly. Nothing is imported or read before a call, so a
    writer that never writes costs nothing."""
    if retry is not None:
        raise ValueError("a one-attempt transport takes no retry policy")

    def library() -> Https:
        return Https(api_url, token, retry=read_retry(attempts=0), timeout=timeout, **names)

    source = names.get("url_source", "the GitLab URL")
    return OneAttempt(library, api_url, token, timeout=timeout, url_source=source)


def first_attempt_transport(
    api_url: str, token: str, *, retry: Retry | None, timeout: Any, **names: str
) -> OneAttempt:
    """The transport gitlab_from_env builds for a gate job's reads (``transport=`` this): each
    call's first attempt is OneAttempt's, and what it does not answer (a read timeout
    included) goes to requests with ``retry`` (read_retry's by default), after waiting any
    Retry-After the first attempt was given as ``retry`` would. So a failing read costs one
    request more than requests alone, never a retry less. Single-threaded runs only
    (OneAttempt keeps one connection): first_attempt_per_thread is for threads."""
    return _first_attempts(api_url, token, retry=retry, timeout=timeout, names=names)()


def first_attempt_per_thread(
    api_url: str, token: str, *, retry: Retry | None, timeout: Any, **names: str
) -> _PerThread:
    """first_attempt_transport for the CLI, whose readers run in threads (board, status,
    audit): each thread's first attempts go through http.client on a connection of its own,
    and what they do not answer goes to one shared requests transport. So a command that
    reads a few answers never imports requests, and one that fails costs one request more,
    never a retry less."""
    return _PerThread(_first_attempts(api_url, token, retry=retry, timeout=timeout, names=names))


def _first_attempts(
    api_url: str, token: str, *, retry: Retry | None, timeout: Any, names: Mapping[str, str]
) -> Callable[[], OneAttempt]:
    """A maker of first-attempt transports that share one requests transport."""

    @functools.cache  # built (urllib3 imported) only when requests is asked
    def rules() -> Retry:
        return retry if retry is not None else read_retry()

    # Built once, under a lock: two threads refused at the same first moment would otherwise
    # each build a requests session of their own, and the CLI's threads share one.
    import threading

    lock = threading.Lock()
    built: list[Https] = []

    def library() -> Https:
        with lock:
            if not built:
                built.append(Https(api_url, token, retry=rules(), timeout=timeout, **names))
            return built[0]

    def wait(refused: tuple[int, str | None] | None) -> None:
        wait_as_requests_would(refused, rules())

    def one() -> OneAttempt:
        return OneAttempt(
            library,
            api_url,
            token,
            timeout=timeout,
            url_source=names.get("url_source", "the GitLab URL"),
            ask_again_after_timeout=True,
            wait_before_library=wait,
        )

    return one


class _PerThread:
    """Calls made from any thread, each thread's through a OneAttempt of its own (one kept
    connection each), all of them behind one requests transport."""

    name = "HTTPS"

    def __init__(self, build: Callable[[], OneAttempt]) -> None:
        import threading

        self._build = build
        self._local = threading.local()

    def _mine(self) -> OneAttempt:
        mine: OneAttempt | None = getattr(self._local, "transport", None)
        if mine is None:
            mine = self._local.transport = self._build()
        return mine

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        return self._mine().get(path, params)

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        return self._mine().pages(path, params)

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        return self._mine().graphql(query, variables)

    def get_text(self, path: str, params: Mapping[str, Any]) -> str:
        return self._mine().get_text(path, params)

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        return self._mine().send(method, path, data)
