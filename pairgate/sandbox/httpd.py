"""HTTP plumbing: requests as values, replies, GitLab's error bodies, routing and pagination."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode

from pairgate.sandbox.model import World
from pairgate.sandbox.records import Job, Token, User

if TYPE_CHECKING:
    from pairgate.sandbox.runner import Runner


class ApiError(Exception):
    """An error reply: status plus GitLab's body for it."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status, body)
        self.status, self.body, self.headers = status, body, headers or {}


def not_found(thing: str | None = None) -> ApiError:
    """Handler 404: ``404 Project Not Found``; bare ``404 Not Found`` without a thing."""
    return ApiError(404, {"message": f"404 {thing} Not Found" if thing else "404 Not Found"})


def record_not_found() -> ApiError:
    """ActiveRecord's 404 (an unknown iid or note id): note the lower-case "found"."""
    return ApiError(404, {"message": "404 Not found"})


def unauthorized() -> ApiError:
    return ApiError(
        401, {"message": "401 Unauthorized"}, {"WWW-Authenticate": 'Bearer realm="The API"'}
    )


def forbidden(reason: str | None = None) -> ApiError:
    return ApiError(403, {"message": f"403 Forbidden - {reason}" if reason else "403 Forbidden"})


def bad_request(reason: str) -> ApiError:
    return ApiError(400, {"message": f"400 Bad request - {reason}"})


def param_error(text: str) -> ApiError:
    """Grape's parameter validation, which answers before any handler: ``{"error": ...}``."""
    return ApiError(400, {"error": text})


ROUTE_MISS = ApiError(404, {"error": "404 Not Found"})


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON-able; bytes/str are sent as text/plain
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    method: str
    path: str  # as sent, still percent-encoded, without the query
    query: list[tuple[str, str]]
    params: dict[str, Any]  # query, form and JSON body merged (Grape merges them too)
    headers: dict[str, str]
    base: str  # http://host:port as the client addressed us
    world: World
    user: User | None = None
    scope: str | None = None  # "api", "read_api", "job" for CI job tokens, None anonymous
    job_project_id: int | None = None
    job: Job | None = None  # the running job whose CI_JOB_TOKEN authenticated the request
    token: Token | None = None  # the personal access token that authenticated it
    runner: Runner | None = None  # the server's runner (runner.py), None without --runner

    # -- parameters ---------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        return name in self.params

    def text(self, name: str, default: str | None = None) -> str | None:
        value = self.params.get(name, default)
        if isinstance(value, list):
            return ",".join(str(v) for v in value)
        return None if value is None else str(value)

    def required(self, name: str) -> str:
        value = self.text(name)
        if value is None or value == "":
            raise param_error(f"{name} is missing")
        return value

    def integer(self, name: str, default: int | None = None) -> int | None:
        value = self.params.get(name)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise param_error(f"{name} is invalid") from None

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.params.get(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("true", "1", "yes", "t"):
            return True
        if text in ("false", "0", "no", "f", ""):
            return False
        raise param_error(f"{name} is invalid")

    def csv(self, name: str) -> list[str] | None:
        """A comma list or an array (``labels=a,b`` or ``labels[]=a``); None when absent."""
        value = self.params.get(name)
        if value is None:
            return None
        items = value if isinstance(value, list) else str(value).split(",")
        return [str(i).strip() for i in items if str(i).strip()]

    def choice(self, name: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.text(name) or default
        if value not in allowed:
            raise param_error(f"{name} does not have a valid value")
        return value


def parse_params(query: list[tuple[str, str]], body: bytes, content_type: str) -> dict[str, Any]:
    params: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        if key.endswith("[]"):
            params.setdefault(key[:-2], []).append(value)
        else:
            params[key] = value

    for key, value in query:
        put(key, value)
    if body:
        if "json" in content_type:
            try:
                decoded = json.loads(body)
            except ValueError:
                raise param_error("The request body is not valid JSON") from None
            if isinstance(decoded, dict):
                params.update(decoded)
        elif "x-www-form-urlencoded" in content_type:
            for key, value in parse_qsl(body.decode("utf-8"), keep_blank_values=True):
                put(key, value)
    return params


Handler = Callable[..., Any]


@dataclass
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    job_token: bool  # may a CI job token call it (GitLab's job_token_allowed, GET only)


class Router:
    """Routes on the raw path, so ``%2F`` inside a segment never splits it (GitLab's ``:id``
    must not contain a literal slash: ``acme/tracker`` unencoded matches no route)."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(
        self, method: str, template: str, *, job_token: bool = False
    ) -> Callable[[Handler], Handler]:
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)

        def register(handler: Handler) -> Handler:
            self.routes.append(Route(method, re.compile(f"^{pattern}$"), handler, job_token))
            return handler

        return register

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        for route in self.routes:
            if route.method != method:
                continue
            found = route.pattern.match(path)
            if found:
                return route, {k: unquote(v) for k, v in found.groupdict().items()}
        raise ROUTE_MISS


def paginate(req: Request, items: list[Any], render: Callable[[Any], Any] | None = None) -> Reply:
    """GitLab's offset pagination: headers of the unfiltered query, ``X-Next-Page`` empty on
    the last page, ``per_page`` clamped to 100, totals omitted above ``countless_above``."""
    page = max(req.integer("page", 1) or 1, 1)
    per_page = req.integer("per_page", 20) or 20
    per_page = 20 if per_page < 1 else min(per_page, 100)
    total = len(items)
    pages = max((total + per_page - 1) // per_page, 1)
    chunk = items[(page - 1) * per_page : page * per_page]
    has_next = page * per_page < total
    countless = total > req.world.options.countless_above
    headers = {
        "X-Page": str(page),
        "X-Per-Page": str(per_page),
        "X-Next-Page": str(page + 1) if has_next else "",
        "X-Prev-Page": str(page - 1) if page > 1 else "",
    }
    if not countless:
        headers |= {"X-Total": str(total), "X-Total-Pages": str(pages)}
    base = [(k, v) for k, v in req.query if k not in ("page", "per_page")]

    def link(number: int, rel: str) -> str:
        query = sorted([*base, ("page", str(number)), ("per_page", str(per_page))])
        return f'<{req.base}{req.path}?{urlencode(query)}>; rel="{rel}"'

    links = []
    if page > 1:
        links.append(link(page - 1, "prev"))
    if has_next:
        links.append(link(page + 1, "next"))
    links.append(link(1, "first"))
    if not countless:
        links.append(link(pages, "last"))
    headers["Link"] = ", ".join(links)
    body = [render(i) for i in chunk] if render else chunk
    return Reply(200, body, headers)


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def updated_window(req: Request, items: list[Any]) -> list[Any]:
    """``updated_after`` and ``updated_before`` (ISO 8601): the items whose ``updated_at`` lies
    inside, both ends included, as GitLab's UpdatedAtFilterable (``gteq`` / ``lteq``). A value
    that is not a time is Grape's coercion error."""
    bounds = []
    for name in ("updated_after", "updated_before"):
        text = req.text(name)
        if not text:
            continue
        moment = _moment(text)
        if moment is None:
            raise param_error(f"{name} is invalid")
        bounds.append((name, moment))
    for name, moment in bounds:
        after = name == "updated_after"
        items = [
            i
            for i in items
            if (stamp := _moment(i.updated_at)) is not None
            and (stamp >= moment if after else stamp <= moment)
        ]
    return items
