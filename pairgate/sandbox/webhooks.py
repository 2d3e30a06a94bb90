"""Project and group webhooks: ``/projects/:id/hooks`` and ``/groups/:id/hooks`` (GitLab's
doc/api/project_webhooks.md and group_webhooks.md; lib/api/project_hooks.rb): add, list, get,
edit, delete; a hook's deliveries of the last seven days (``.../hooks/:hook_id/events``, 17.3+)
and a resend of one (``.../events/:hook_event_id/resend``, 17.4+: the same body and the same
``Idempotency-Key``). What is sent, and when: webhook_events.py.

Project hooks need the Maintainer role, group hooks the Owner role (below it: 403). ``url`` is
required (a URL that is not http(s): 422 ``Invalid url given``); ``token`` is write-only, never
rendered, and reset when an edit changes the URL without giving one (as GitLab's docs say). An
event flag left out takes the database default: ``push_events`` and
``enable_ssl_verification`` on, every other flag off (send each flag you mean: the reference
could not confirm the defaults).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pairgate.sandbox.access import API, group_for, project_for
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    forbidden,
    not_found,
    paginate,
    param_error,
)
from pairgate.sandbox.records import MAINTAINER, OWNER, WebHook

PROJECT_EVENTS = (
    "push_events", "tag_push_events", "merge_requests_events", "note_events",
    "confidential_note_events", "issues_events", "confidential_issues_events", "pipeline_events",
    "job_events", "wiki_page_events", "deployment_events", "releases_events",
    "feature_flag_events", "resource_access_token_events",
)  # fmt: skip
GROUP_EVENTS = (*PROJECT_EVENTS, "subgroup_events", "member_events", "emoji_events")
DEFAULT_ON = {"push_events"}


def render(hook: WebHook) -> dict[str, Any]:
    flags = GROUP_EVENTS if hook.group_id is not None else PROJECT_EVENTS
    out: dict[str, Any] = {
        "id": hook.id,
        "url": hook.url,
        "name": hook.name,
        "description": hook.description,
        "created_at": hook.created_at,
    }
    out |= (
        {"group_id": hook.group_id}
        if hook.group_id is not None
        else {"project_id": hook.project_id}
    )
    out |= {flag: bool(hook.events.get(flag, flag in DEFAULT_ON)) for flag in flags}
    out |= {
        "enable_ssl_verification": hook.enable_ssl_verification,
        "push_events_branch_filter": hook.push_events_branch_filter,
        "branch_filter_strategy": hook.branch_filter_strategy,
        "repository_update_events": False,
        "alert_status": "executable",
        "disabled_until": None,
        "url_variables": [],
        "custom_webhook_template": None,
        "custom_headers": [],
    }
    return out


def _checked_url(req: Request, *, required: bool) -> str | None:
    if not req.has("url"):
        if required:
            raise param_error("url is missing")
        return None
    url = req.text("url") or ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ApiError(422, {"message": "Invalid url given"})
    return url


def _apply(req: Request, hook: WebHook, flags: tuple[str, ...]) -> None:
    for flag in flags:
        if req.has(flag):
            hook.events[flag] = req.flag(flag)
    if req.has("enable_ssl_verification"):
        hook.enable_ssl_verification = req.flag("enable_ssl_verification", True)
    for text in ("name", "description", "push_events_branch_filter"):
        if req.has(text):
            setattr(hook, text, req.text(text))
    if req.has("branch_filter_strategy"):
        hook.branch_filter_strategy = req.choice(
            "branch_filter_strategy", ("wildcard", "regex", "all_branches"), "wildcard"
        )


def _owner(req: Request, kind: str, ref: str) -> tuple[str, int]:
    """("project" | "group", its id), once the caller may manage its hooks."""
    if kind == "projects":
        project = project_for(req, ref, level=MAINTAINER)
        return "project", project.id
    group = group_for(req, ref)
    assert req.user is not None
    if group.members.get(req.user.id, 0) < OWNER:
        raise forbidden()
    return "group", group.id


def _hooks(req: Request, kind: str, ref: str) -> list[WebHook]:
    which, owner = _owner(req, kind, ref)
    return [
        h
        for h in sorted(req.world.hooks.values(), key=lambda h: h.id)
        if (h.project_id if which == "project" else h.group_id) == owner
    ]


def _hook(req: Request, kind: str, ref: str, hook_id: str) -> WebHook:
    found = next((h for h in _hooks(req, kind, ref) if str(h.id) == hook_id), None)
    if found is None:
        raise not_found()
    return found


for _kind in ("projects", "groups"):
    _base = f"/{_kind}/{{ref}}/hooks"
    _flags = PROJECT_EVENTS if _kind == "projects" else GROUP_EVENTS

    @API.route("GET", _base)
    def list_hooks(req: Request, ref: str, _kind: str = _kind) -> Any:
        return paginate(req, _hooks(req, _kind, ref), render)

    @API.route("GET", _base + "/{hook_id}")
    def get_hook(req: Request, ref: str, hook_id: str, _kind: str = _kind) -> Any:
        return render(_hook(req, _kind, ref, hook_id))

    @API.route("POST", _base)
    def add_hook(
        req: Request, ref: str, _kind: str = _kind, _flags: tuple[str, ...] = _flags
    ) -> Any:
        which, owner = _owner(req, _kind, ref)
        url = _checked_url(req, required=True)
        assert url is not None
        world = req.world
        hook = WebHook(world.next_id("hook"), url, world.stamp(), token=req.text("token") or None)
        if which == "project":
            hook.project_id = owner
        else:
            hook.group_id = owner
        _apply(req, hook, _flags)
        world.hooks[hook.id] = hook
        return Reply(201, render(hook))

    @API.route("PUT", _base + "/{hook_id}")
    def edit_hook(
        req: Request, ref: str, hook_id: str, _kind: str = _kind, _flags: tuple[str, ...] = _flags
    ) -> Any:
        hook = _hook(req, _kind, ref, hook_id)
        url = _checked_url(req, required=True)
        assert url is not None
        if url != hook.url:  # "the secret token is reset and not retained"
            hook.token = None
        hook.url = url
        if req.has("token"):
            hook.token = req.text("token") or None
        _apply(req, hook, _flags)
        return render(hook)

    @API.route("DELETE", _base + "/{hook_id}")
    def delete_hook(req: Request, ref: str, hook_id: str, _kind: str = _kind) -> Any:
        hook = _hook(req, _kind, ref, hook_id)
        del req.world.hooks[hook.id]
        return Reply(204)

    @API.route("GET", _base + "/{hook_id}/events")
    def hook_events(req: Request, ref: str, hook_id: str, _kind: str = _kind) -> Any:
        hook = _hook(req, _kind, ref, hook_id)
        log = req.world.webhooks.log(hook.id)
        wanted = req.text("status")
        if wanted:
            log = [e for e in log if _status_matches(e["response_status"], wanted)]
        return paginate(req, list(reversed(log)))

    @API.route("POST", _base + "/{hook_id}/events/{event_id}/resend")
    def resend(req: Request, ref: str, hook_id: str, event_id: str, _kind: str = _kind) -> Any:
        hook = _hook(req, _kind, ref, hook_id)
        entry = next((e for e in req.world.webhooks.log(hook.id) if str(e["id"]) == event_id), None)
        if entry is None:
            raise not_found()
        if entry["url"] != hook.url:
            raise ApiError(
                422, {"message": "The hook URL has changed, and this log entry cannot be retried"}
            )
        return Reply(201, {"response_status": req.world.webhooks.resend(hook, entry)})


def _status_matches(status: str, wanted: str) -> bool:
    ranges = {"successful": (200, 299), "client_failure": (400, 499), "server_failure": (500, 599)}
    if wanted in ranges:
        low, high = ranges[wanted]
        return status.isdigit() and low <= int(status) <= high
    return status == wanted
