"""The server: authentication, dispatch, faults and the request log around the route table, and
``Sandbox``, which runs it on a loopback port in a thread."""

from __future__ import annotations

import copy
import json
import socket
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from pairgate.sandbox import defaults
from pairgate.sandbox.access import API
from pairgate.sandbox.faults import Faults
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    Router,
    parse_params,
    unauthorized,
)
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Options, Token
from pairgate.sandbox.webhook_events import Webhooks

# The resource modules register their routes on API when imported.
from pairgate.sandbox import (  # noqa: F401  isort: skip
    approvals,
    control,
    discussions,
    events,
    forks,
    issues,
    jobs,
    members,
    merge_requests,
    notes,
    pipelines,
    projects,
    protected_branches,
    repository,
    tokens,
    variables,
    webhooks,
)

if TYPE_CHECKING:
    from pairgate.sandbox.runner import Runner

DEFAULT_STATUS = {"GET": 200, "POST": 201, "PUT": 200, "DELETE": 204}


def invalid_token(description: str) -> ApiError:
    return ApiError(
        401,
        {"error": "invalid_token", "error_description": description},
        {"WWW-Authenticate": f'Bearer realm="The API", error="invalid_token", '
                             f'error_description="{description}"'},
    )  # fmt: skip


INSUFFICIENT_SCOPE = ApiError(
    403,
    {
        "error": "insufficient_scope",
        "error_description": "The request requires higher privileges than provided by the "
        "access token.",
        "scope": "api",
    },
)


class App:
    """Everything one server knows; every request runs under ``lock``, so handlers never race."""

    def __init__(
        self,
        world: World,
        *,
        options: Options,
        state: Path | None = None,
        runner: Runner | None = None,
    ) -> None:
        self.world, self.base_options, self.state = world, options, state
        self.runner = runner  # runs the pipelines the configuration makes; None: none run
        if runner is not None:
            runner.app = self
        self.lock = threading.RLock()
        self.faults = Faults()
        self.log: list[dict[str, Any]] = []
        # Requests to routes the sandbox does not serve (it answers them as GitLab answers an
        # unmatched route). Kept across resets, so a test's reset cannot hide one; the suite
        # fails a test that made one unless the test expects it (tests/conftest.py).
        self.unserved: list[dict[str, Any]] = []
        self.example: dict[str, Any] | None = None  # what --with-example made (kit.py)
        self._actor: Any = None  # the user the last request acted as
        self.webhooks = Webhooks()  # webhook_events.py: what changed goes out to the hooks
        world.webhooks = self.webhooks

    def reset(self) -> None:
        with self.lock:
            self.world = defaults.build(copy.copy(self.base_options))
            if self.runner is not None:
                self.runner.reset()
            self.world.webhooks = self.webhooks
            self.webhooks.reset()
            self.faults.clear()
            self.log.clear()

    def handle(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes, base: str
    ) -> Reply:
        pairs = parse_qsl(query, keep_blank_values=True)
        with self.lock:
            if method == "GET" or path.startswith("/-/sandbox/reset"):
                return self._handle(method, path, pairs, headers, body, base)
            mark = self.webhooks.before(self.world, method, path, headers)
            reply = self._handle(method, path, pairs, headers, body, base)
            if reply.status < 400:
                self.webhooks.after(self.world, mark, base, self._actor)
            return reply

    def _handle(
        self,
        method: str,
        path: str,
        pairs: list[tuple[str, str]],
        headers: dict[str, str],
        body: bytes,
        base: str,
    ) -> Reply:
        """One request, under the lock (``handle`` holds it)."""
        self._actor = None
        try:
            params = parse_params(pairs, body, headers.get("content-type", ""))
            req = Request(method, path, pairs, params, headers, base, self.world)
            req.runner = self.runner
            if path.startswith("/-/sandbox/"):
                return self._reply(control.ROUTER, req, path[len("/-/sandbox") :])
            if path == "/api/graphql" and method == "POST":
                # A query only reads, so a read_api token may run one (GitLab's rule);
                # the served schema has no mutations.
                self._authenticate(req, job_token_allowed=False, reads_by_post=True)
                # Imported at the first query: graphql-core is most of the sandbox's start.
                from pairgate.sandbox import graphql_api

                return graphql_api.serve(req)
            if not path.startswith("/api/v4/"):
                raise ApiError(404, {"error": "404 Not Found"})
            return self._reply(API, req, path[len("/api/v4") :], authenticate=True)
        except ApiError as error:
            return Reply(error.status, error.body, error.headers)
        except Exception:  # a sandbox bug: answer as GitLab does, and say where
            traceback.print_exc()
            return Reply(500, {"message": "500 Internal Server Error"})

    def _reply(
        self, router: Router, req: Request, path: str, *, authenticate: bool = False
    ) -> Reply:
        route, args = router.match(req.method, path)
        if authenticate:
            self._authenticate(req, job_token_allowed=route.job_token and req.method == "GET")
        result = route.handler(req, **args) if router is API else route.handler(self, req, **args)
        self._actor = req.user  # who did it, as the webhooks it fires say
        if isinstance(result, Reply):
            return result
        return Reply(DEFAULT_STATUS.get(req.method, 200), result)

    def _authenticate(
        self, req: Request, *, job_token_allowed: bool, reads_by_post: bool = False
    ) -> None:
        """GitLab's API guard: a personal access token (header, Bearer or parameter), else
        on the routes that allow one a CI job token (JOB-TOKEN, ``job_token``, or a Bearer
        token that is a job's), valid only while its job runs. Elsewhere a job token counts
        as no credentials at all. ``reads_by_post``: a POST that only reads (GraphQL), which a
        read_api token may make."""
        headers, params = req.headers, req.params
        authorization = headers.get("authorization", "")
        bearer = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
        token = headers.get("private-token") or bearer or params.get("private_token")
        job_token = headers.get("job-token") or params.get("job_token")
        grant = self.world.tokens.get(str(token)) if token else None
        if token and grant is None and token == bearer and job_token_allowed:
            job_token = bearer  # GET /job documents `Authorization: Bearer $CI_JOB_TOKEN`
        elif token:
            if grant is None:
                raise unauthorized()
            self._check_token(grant)
            req.user, req.token = self.world.users[grant.user_id], grant
            req.scope = "api" if "api" in grant.scopes else "read_api"
            if req.scope == "read_api" and req.method not in ("GET", "HEAD") and not reads_by_post:
                raise INSUFFICIENT_SCOPE
            grant.last_used_at = self.world.stamp()
        if req.user is None and job_token and job_token_allowed:
            job = self.world.job_by_token(str(job_token))
            if job is None or job.status != "running":
                raise unauthorized()
            pipeline = self.world.pipelines[job.pipeline_id]
            req.user = self.world.users.get(pipeline.user_id or 0)
            req.scope, req.job_project_id, req.job = "job", pipeline.project_id, job
        if req.user is None and req.method != "GET" and not reads_by_post:
            raise unauthorized()

    def _check_token(self, grant: Token) -> None:
        """A revoked or expired token: GitLab's OAuth-layer 401 (reference section 1.4)."""
        if grant.revoked:
            raise invalid_token("Token was revoked. You have to re-authorize from the user.")
        if grant.expires_at and grant.expires_at <= self.world.stamp()[:10]:
            raise invalid_token(
                "Token is expired. You can either do re-authorization or token refresh."
            )

    def record(self, method: str, path: str, query: str, status: int) -> None:
        with self.lock:
            self.log.append({"method": method, "path": path, "query": query, "status": status})
            if not _served(method, path):
                self.unserved.append({"method": method, "path": path, "query": query})


def _served(method: str, path: str) -> bool:
    """Does a route of the API serve this request? (The answer to one that no route serves is
    GitLab's catch-all 404, whether or not GitLab itself serves it.)"""
    if method == "POST" and path == "/api/graphql":
        return True  # GitLab's GraphQL endpoint (graphql_api.py)
    if not path.startswith("/api/v4/"):
        return False
    try:
        API.match(method, path[len("/api/v4") :])
    except ApiError:
        return False
    return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    app: App


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in separate writes; without this, Nagle and delayed ACKs
        # cost 40 ms per keep-alive request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        app = self.server.app
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        host = headers.get("host") or "{}:{}".format(*self.server.server_address[:2])
        base = f"http://{host}"
        if path.startswith("/-/sandbox/"):
            self._send(app.handle(self.command, path, query, headers, body, base))
            return
        with app.lock:
            fault = app.faults.take(self.command, path)
        if fault:
            fault.wait()
        if fault and fault.drop and not fault.after:
            return self._drop(app, path, query)
        if fault and fault.status and not fault.after:
            reply = fault.reply()
        else:
            reply = app.handle(self.command, path, query, headers, body, base)
        if fault and fault.after:
            if fault.drop:
                return self._drop(app, path, query)
            reply = fault.reply()
        app.record(self.command, path, query, reply.status)
        self._send(reply)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    def _drop(self, app: App, path: str, query: str) -> None:
        app.record(self.command, path, query, 0)
        self.close_connection = True  # no status line: the client sees the connection drop

    def _send(self, reply: Reply) -> None:
        headers = dict(reply.headers)
        if reply.status in (204, 304) or reply.body is None:
            data = b""
        elif isinstance(reply.body, (bytes, str)):
            data = reply.body.encode() if isinstance(reply.body, str) else reply.body
            headers.setdefault("Content-Type", "text/plain; charset=utf-8")
        else:
            data = json.dumps(reply.body).encode()
            headers.setdefault("Content-Type", "application/json")
        self.send_response(reply.status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log (GET /-/sandbox/requests) replaces the access log


class Sandbox:
    """One sandbox server. ``start`` binds and serves in a daemon thread; ``stop`` ends it and
    saves the world to ``state`` when one was given."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        state: Path | None = None,
        options: Options | None = None,
        runner: Runner | None = None,
    ) -> None:
        options = options or Options()
        world = (
            World.load(state) if state and state.exists() else defaults.build(copy.copy(options))
        )
        self.app = App(world, options=options, state=state, runner=runner)
        self._server = _Server((host, port), _Handler)
        self._server.app = self.app
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def info(self) -> dict[str, Any]:
        line = defaults.ready_line(self.url, self.app.world)
        if self.app.example is not None:
            line["example"] = self.app.example
        return line

    def start(self) -> Sandbox:
        # shutdown() waits for the serving loop's next poll: 50 ms, not the default 500, so
        # `pairgate sandbox` ends well within half a second of SIGTERM.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="pairgate-sandbox",
        )
        self._thread.start()
        if self.app.runner is not None:
            self.app.runner.url = self.url
        return self

    def stop(self) -> None:
        if self.app.runner is not None:
            self.app.runner.stop()
        self._server.shutdown()
        self._server.server_close()
        if self.app.state:
            with self.app.lock:
                self.app.world.save(self.app.state)
