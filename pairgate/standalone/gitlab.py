"""The GitLab client: reads over HTTPS (requests + urllib3 Retry) or glab, writes never retried."""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from pairgate.standalone.errors import PairgateError

if TYPE_CHECKING:
    import requests
    from urllib3.util.retry import Retry

__all__ = [
    "GLAB_HOST",
    "PER_PAGE",
    "POOL_SIZE",
    "TIMEOUT",
    "GitLab",
    "GitLabError",
    "Glab",
    "Https",
    "WriteUncertain",
    "encode_project",
    "graphql_url",
    "query_params",
    "read_retry",
    "request_error",
]


# Every call has a timeout: (connect, read) seconds for HTTPS, one bound for a glab process.
TIMEOUT: tuple[float, float] = (5.0, 30.0)
GLAB_TIMEOUT = 120.0
PER_PAGE = 100  # GitLab's maximum; it clamps larger values rather than refusing them
# Connections kept per host (REST, and GraphQL apart): one for each of the board's 16 readers
# and 3 label listings (pairgate/tracker.py) and the audit's 16, so none is opened and dropped
# for want of room.
POOL_SIZE = 20
# A read is retried on these. A write never is: see GitLab.write.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Where the URL comes from when no variable names one: glab's own configuration.
GLAB_HOST = "glab's configured host"


class GitLabError(PairgateError):
    """A GitLab call failed: ``status`` is the HTTP status, or None when no answer came back."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class WriteUncertain(GitLabError):
    """A write whose outcome is unknown (no answer, 429 or 5xx): it may have landed. Whoever
    wrote re-reads before writing again; nothing repeats a write blindly."""


def encode_project(project: str) -> str:
    """``group/proj`` -> ``group%2Fproj``: GitLab takes a project path as ONE URL segment, and an
    unencoded slash matches no route at all (404 ``{"error": ...}``)."""
    return quote(str(project), safe="")


@functools.cache
def _retry_class() -> type[Retry]:
    from urllib3.util.retry import Retry

    class _Retry(Retry):
        """urllib3's Retry with Retry-After capped, so one answer cannot park a reader for
        hours."""

        MAX_RETRY_AFTER = 60.0

        def get_retry_after(self, response: Any) -> float | None:
            seconds = super().get_retry_after(response)
            return None if seconds is None else min(seconds, self.MAX_RETRY_AFTER)

    return _Retry


class _LeavesOrigin(Exception):
    """A redirect off the API's origin (scheme, host and port), which is not followed."""

    def __init__(self, status: int, location: str) -> None:
        super().__init__(location)
        self.status, self.location = status, location


@functools.cache
def _session_class() -> type[requests.Session]:
    import requests

    class _Session(requests.Session):
        """requests' Session, following a redirect only within one origin: GitLab redirects a
        GET of a moved project to its new path, and the token goes with every request, so a
        redirect anywhere else stops the call before it is sent."""

        origin: tuple[str, str] = ("", "")

        def rebuild_auth(self, prepared_request: Any, response: Any) -> None:
            if urlsplit(prepared_request.url)[:2] != self.origin:
                raise _LeavesOrigin(response.status_code, str(prepared_request.url))
            # types-requests leaves rebuild_auth unannotated.
            super().rebuild_auth(prepared_request, response)  # type: ignore[no-untyped-call]

    return _Session


def read_retry(*, attempts: int = 4, backoff_factor: float = 0.5) -> Retry:
    """The retry policy: GET is retried on a dropped answer, 429 and 5xx (Retry-After honoured
    on 429 and 503, exponential backoff otherwise). A connection that cannot be made is not
    retried (it fails within the connect timeout), and no other method is retried."""
    return _retry_class()(
        total=attempts,
        other=0,
        allowed_methods=frozenset({"GET", "HEAD"}),
        status_forcelist=RETRY_STATUSES,
        connect=0,  # a refused connection fails at once: nothing answers, waiting cannot help
        backoff_factor=backoff_factor,
        backoff_max=30.0,
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def query_params(params: Mapping[str, Any]) -> dict[str, str]:
    # GitLab wants true/false; requests would send True/False.
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items()}


def _uncertain(status: int | None) -> bool:
    return status is None or status == 429 or status >= 500


def request_error(
    method: str, what: str, status: int | None, detail: str, *, read: bool = False
) -> GitLabError:
    """A failed call as an error; a write (not a read: a GraphQL query is a POST that reads)
    whose outcome is unknown is WriteUncertain."""
    write = method != "GET" and not read
    cls = WriteUncertain if write and _uncertain(status) else GitLabError
    answer = f"HTTP {status}" if status is not None else "no answer"
    return cls(f"pairgate: GitLab {method} {what}: {answer}: {detail}".rstrip(": "), status=status)


def _error_detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        return str(body.get("message", body.get("error", body)))[:200]
    return str(body)[:200]


def graphql_url(api_url: str) -> str:
    """GitLab's GraphQL endpoint beside its REST root: ``.../api/v4`` -> ``.../api/graphql``."""
    root = api_url.rstrip("/")
    return root.removesuffix("/v4") + "/graphql" if root.endswith("/api/v4") else f"{root}/graphql"


class Https:
    """One token, one session: requests with urllib3 Retry and a timeout on every call."""

    name = "HTTPS"

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        retry: Retry | None = None,
        timeout: Any,
        token_source: str = "the token",
        url_source: str = "the GitLab URL",
        scope: str = "read_api",
    ) -> None:
        from requests.adapters import HTTPAdapter

        retry = retry if retry is not None else read_retry()
        self.api_url = api_url.rstrip("/")
        # Named in errors: which variable gave the token and the URL, so a refusal says what
        # to set rather than only that something was refused.
        self.token_source, self.url_source, self.scope = token_source, url_source, scope
        self.graphql_url = graphql_url(self.api_url)
        self._origin = urlsplit(self.api_url)[:2]
        self._timeout = timeout
        self._session = _session_class()()
        self._session.origin = self._origin  # type: ignore[attr-defined]
        self._session.headers.update({"PRIVATE-TOKEN": token, "User-Agent": "pairgate"})
        adapter = HTTPAdapter(max_retries=retry, pool_maxsize=POOL_SIZE)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        # A GraphQL query is a POST that only reads: retried as a read, on its own adapter
        # (requests picks the longest matching prefix), so no REST write is ever retried.
        methods = frozenset(retry.allowed_methods or ()) | {"POST"}
        self._session.mount(
            self.graphql_url,
            HTTPAdapter(max_retries=retry.new(allowed_methods=methods), pool_maxsize=POOL_SIZE),
        )
        self._resolve_environment()

    def _resolve_environment(self) -> None:
        """What requests reads from the environment on every call (the proxy variables and
        no_proxy, the CA bundle variables, ~/.netrc), read once for this API's origin, as
        requests itself reads it; then the session stops reading it. Every URL this transport
        calls is on that origin (a next-page link elsewhere is refused)."""
        import requests

        session = self._session
        settings = session.merge_environment_settings(self.api_url, {}, None, None, None)
        session.proxies.update(settings["proxies"])
        session.verify = settings["verify"]
        session.auth = requests.utils.get_netrc_auth(self.api_url)
        session.trust_env = False

    def __repr__(self) -> str:  # the token never appears in a repr or a traceback
        return f"Https({self.api_url!r}, token=<hidden>)"

    def _call(
        self, method: str, url: str, *, params: Any = None, body: Any = None, read: bool = False
    ) -> requests.Response:
        import requests

        what = urlsplit(url).path.removeprefix(urlsplit(self.api_url).path)
        try:
            response = self._session.request(
                method, url, params=params, json=body, timeout=self._timeout
            )
        except _LeavesOrigin as left:
            detail = (
                f"a redirect to {left.location}, off {self.api_url}'s origin, which pairgate "
                f"does not follow (its token would go with it): set {self.url_source} to the "
                f"GitLab it points at"
            )
            raise request_error(method, what, left.status, detail, read=read) from None
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise request_error(method, what, None, self._unreachable(exc), read=read) from None
        except requests.RequestException as exc:
            raise request_error(method, what, None, type(exc).__name__, read=read) from None
        if response.status_code >= 400:
            detail = _error_detail(response)
            if response.status_code in (401, 403):
                detail += self._refused_token(response.status_code)
            raise request_error(method, what, response.status_code, detail, read=read)
        return response

    def _unreachable(self, exc: Exception) -> str:
        # A refused or unresolvable connection is not retried (only 429, 5xx and a dropped
        # answer are): say where the URL came from, since that is what to fix. A timeout is
        # said as one: a GitLab that took the connection and never answered was reached.
        cause = " ".join(str(exc).split())
        if "timed out" in cause.lower():  # urllib3's words for either timeout
            connect, read = (
                self._timeout if isinstance(self._timeout, tuple) else (self._timeout,) * 2
            )
            limit = connect if "connect timeout" in cause.lower() else read
            return (
                f"GitLab at {self.api_url} did not answer within {limit:g} s (the URL is from "
                f"{self.url_source})"
            )
        reason = "connection refused" if "refused" in cause.lower() else type(exc).__name__
        return (
            f"cannot reach GitLab at {self.api_url} ({reason}; the URL is from "
            f"{self.url_source}): check that variable, or that GitLab is up"
        )

    def _refused_token(self, status: int) -> str:
        what = "was refused" if status == 401 else "may not do this"
        return (
            f". The token in {self.token_source} {what}: set {self.token_source} to a token of "
            f"an account that can read the tracker and the merge requests (scope {self.scope})"
        )

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        return _decoded(self._call("GET", f"{self.api_url}/{path}", params=query_params(params)))

    def get_text(self, path: str, params: Mapping[str, Any]) -> str:
        response = self._call("GET", f"{self.api_url}/{path}", params=query_params(params))
        return response.content.decode("utf-8", errors="replace")

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        url: str | None = f"{self.api_url}/{path}"
        query: dict[str, str] | None = query_params({**params, "per_page": PER_PAGE})
        seen: set[str] = set()
        while url:
            response = self._call("GET", url, params=query)
            page = _decoded(response)
            if not isinstance(page, list):
                raise GitLabError(f"pairgate: GitLab GET {path}: expected a list, got {page!r:.80}")
            yield page
            # Follow rel="next" until it is absent: a page may be short, even empty, while more
            # exist. The link carries every parameter, and must stay on this instance (it is
            # sent our token).
            url = response.links.get("next", {}).get("url")
            if url and (urlsplit(url)[:2] != self._origin or url in seen):
                raise GitLabError(f"pairgate: GitLab GET {path}: refusing next-page link {url}")
            seen.add(url or "")
            query = None

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        return _decoded(self._call(method, f"{self.api_url}/{path}", body=dict(data)))

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        body = {"query": query, "variables": dict(variables)}
        return _decoded(self._call("POST", self.graphql_url, body=body, read=True))


def _decoded(response: requests.Response) -> Any:
    if response.status_code in (202, 204, 304) and not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise GitLabError(f"pairgate: GitLab answered {response.url} with non-JSON") from None


def decode_pages(text: str) -> list[Any]:
    """Parse ``glab api --paginate`` output: each page's JSON array printed back to back
    (``[..][..]``), with no separator."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return items
        page, at = decoder.raw_decode(text, at)
        if not isinstance(page, list):
            raise GitLabError(
                f"pairgate: glab api --paginate printed a non-list page: {page!r:.80}"
            )
        items.extend(page)


class Glab:
    """``glab api``, as the account glab is logged in as. Fields travel as a JSON body on
    stdin (``--input -``), because glab turns a -f value that looks like ``[a, b]`` into an
    array."""

    name = "glab api"

    def __init__(self, hostname: str | None, env: Mapping[str, str], *, instead: str = "") -> None:
        self.hostname = hostname
        self._env = {"PATH": os.environ.get("PATH", os.defpath), **env}
        self._instead = instead  # the token variable(s) that would replace glab, for errors

    def __repr__(self) -> str:
        return f"Glab(hostname={self.hostname!r})"

    def argv(self, endpoint: str, *flags: str) -> list[str]:
        host = ["--hostname", self.hostname] if self.hostname else []
        return ["glab", "api", endpoint, *flags, *host]

    def _run(
        self, method: str, argv: list[str], stdin: str | None = None, *, read: bool = False
    ) -> str:
        import subprocess  # only here: every import of the reader would pay for it

        try:
            proc = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                text=True,
                env=self._env,
                timeout=GLAB_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise GitLabError(
                f"pairgate: glab is not installed, and it is how pairgate reaches GitLab when "
                f"no token is set: set {self._instead or 'the token variables'} (and the "
                f"GitLab URL), or install glab and log in (see docs/agent-handoff-reference.md, "
                f"The GitLab client)"
            ) from None
        except subprocess.TimeoutExpired:
            late = f"glab ran past {GLAB_TIMEOUT:.0f}s"
            raise request_error(method, argv[2], None, late, read=read) from None
        if proc.returncode != 0:
            match = re.search(r"\(HTTP (\d{3})\)|HTTP (\d{3})", proc.stderr)
            status = int(match.group(1) or match.group(2)) if match else None
            detail = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "glab failed"
            raise request_error(method, argv[2], status, detail, read=read)
        return proc.stdout

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        out = self._run("GET", self.argv(_with_query(path, params)))
        return json.loads(out) if out.strip() else None

    def get_text(self, path: str, params: Mapping[str, Any]) -> str:
        return self._run("GET", self.argv(_with_query(path, params)))

    def pages(self, path: str, params: Mapping[str, Any]) -> Iterator[list[Any]]:
        # glab prints every page before it exits: they arrive as one.
        endpoint = _with_query(path, {**params, "per_page": PER_PAGE})
        yield decode_pages(self._run("GET", self.argv(endpoint, "--paginate")))

    def send(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        flags = ("-X", method, "--input", "-", "-H", "Content-Type: application/json")
        out = self._run(method, self.argv(path, *flags), stdin=json.dumps(dict(data)))
        return json.loads(out) if out.strip() else None

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        # ``glab api graphql`` posts to the instance's /api/graphql; the body travels on stdin.
        flags = ("-X", "POST", "--input", "-", "-H", "Content-Type: application/json")
        body = json.dumps({"query": query, "variables": dict(variables)})
        out = self._run("POST", self.argv("graphql", *flags), stdin=body, read=True)
        return json.loads(out) if out.strip() else None


def _with_query(path: str, params: Mapping[str, Any]) -> str:
    return f"{path}?{urlencode(query_params(params))}" if params else path


class GitLab:
    """The narrow door to GitLab: reads through one transport, writes through another.

    Paths are relative to ``/api/v4`` (``projects/acme%2Ftracker/issues/4/notes``).
    """

    def __init__(self, *, reader: Any, writer: Any, api_url: str | None, origin: str) -> None:
        self._reader = reader
        self._writer = writer
        self.api_url = api_url
        self.origin = origin  # where api_url came from, for --verbose

    def __repr__(self) -> str:
        return f"GitLab(api_url={self.api_url!r}, reader={self._reader!r}, writer={self._writer!r})"

    def get(self, path: str, **params: Any) -> Any:
        """One GET. Retried on 429/5xx/dropped connections (HTTPS); raises GitLabError."""
        return self._reader.get(path, params)

    def get_text(self, path: str, **params: Any) -> str:
        """One GET of a plain-text answer (a job's log), retried as ``get`` is."""
        return str(self._reader.get_text(path, params))

    def get_all(self, path: str, **params: Any) -> list[Any]:
        """Every page of a list, following the next-page link until there is none."""
        return [item for page in self._reader.pages(path, params) for item in page]

    def pages(self, path: str, **params: Any) -> Iterator[list[Any]]:
        """The pages of a list as they arrive, so a reader can start on the first while the
        next is read."""
        pages: Iterator[list[Any]] = self._reader.pages(path, params)
        return pages

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> Any:
        """One GraphQL query (POST /api/graphql) through the reader: a read, retried as GETs
        are. Returns ``data``; GitLab answers a query it cannot run with HTTP 200 and
        ``errors``, which raises GitLabError here (a reader fails closed, never guesses)."""
        answer = self._reader.graphql(query, variables or {})
        errors = answer.get("errors") if isinstance(answer, dict) else None
        if errors or not isinstance(answer, dict) or not isinstance(answer.get("data"), dict):
            first = errors[0].get("message") if errors and isinstance(errors[0], dict) else None
            detail = first or f"no data in the answer: {answer!r:.120}"
            raise GitLabError(f"pairgate: GitLab GraphQL query failed: {detail}")
        return answer["data"]

    def write(self, method: str, path: str, data: Mapping[str, Any]) -> Any:
        """ONE attempt at a write. Raises WriteUncertain when it may have landed, GitLabError
        when GitLab refused it. It is never retried here: a retry could post twice."""
        return self._writer.send(method, path, data)

    def describe(self) -> str:
        where = self.api_url or GLAB_HOST
        return (
            f"GitLab API {where} (from {self.origin}); reads via {self._reader.name}, "
            f"writes via {self._writer.name}"
        )
