"""What happened, as GitLab keeps it apart from the records: a project's push events
(doc/api/events.md, ``action=pushed``) and an issue's resource label events
(doc/api/resource_label_events.md). The audit reads both: who pushed a commit that no merge
request brought, and whether a freeze label held at a merge."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pairgate.sandbox.access import API, project_for, renderer
from pairgate.sandbox.httpd import Request, paginate, param_error
from pairgate.sandbox.issues import issue_for
from pairgate.sandbox.records import LabelEvent, PushEvent

# The events API's filters the sandbox serves; any other is refused rather than ignored, so a
# test never passes on a filter that did nothing.
_EVENT_PARAMS = {"action", "after", "before", "sort", "page", "per_page"}


def _day(req: Request, name: str) -> date | None:
    text = req.text(name)
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise param_error(f"{name} is invalid") from None


@API.route("GET", "/projects/{project_id}/events")
def list_project_events(req: Request, project_id: str) -> Any:
    """Newest first (``sort=asc`` oldest first); ``after``/``before`` are dates, both ends left
    out, as GitLab's EventFilter compares them with the event's day."""
    project = project_for(req, project_id)
    unserved = sorted(set(req.params) - _EVENT_PARAMS)
    if unserved:
        raise param_error(f"{', '.join(unserved)} is not served by the sandbox's events API")
    if req.text("action") != "pushed":
        raise param_error("the sandbox's events API serves action=pushed only")
    after, before = _day(req, "after"), _day(req, "before")
    sort = req.choice("sort", ("asc", "desc"), "desc")
    found = [e for e in req.world.push_events.values() if e.project_id == project.id]

    def day(event: PushEvent) -> date:
        return datetime.fromisoformat(event.created_at.replace("Z", "+00:00")).date()

    found = [
        e
        for e in found
        if (after is None or day(e) > after) and (before is None or day(e) < before)
    ]
    found.sort(key=lambda e: e.id, reverse=sort == "desc")
    return paginate(req, found, lambda e: push_event(req, e))


def push_event(req: Request, event: PushEvent) -> dict[str, Any]:
    r = renderer(req)
    author = req.world.users.get(event.author_id)
    return {
        "id": event.id,
        "project_id": event.project_id,
        "action_name": "pushed to" if event.commit_from else "pushed new",
        "target_id": None,
        "target_iid": None,
        "target_type": None,
        "author_id": event.author_id,
        "target_title": None,
        "created_at": event.created_at,
        "author": r.user_basic(author),
        "imported": False,
        "imported_from": "none",
        "push_data": {
            "commit_count": event.commit_count,
            "action": "pushed" if event.commit_from else "created",
            "ref_type": "branch",
            "commit_from": event.commit_from,
            "commit_to": event.commit_to,
            "ref": event.ref,
            "commit_title": event.commit_title,
            "ref_count": None,
        },
        "author_username": author.username if author else None,
    }


@API.route("GET", "/projects/{project_id}/issues/{iid}/resource_label_events")
def list_issue_label_events(req: Request, project_id: str, iid: str) -> Any:
    """Oldest first, as GitLab's finder orders them (by id)."""
    project = project_for(req, project_id)
    issue = issue_for(req, project, iid)
    found = sorted(
        (e for e in req.world.label_events.values() if e.issue_id == issue.id),
        key=lambda e: e.id,
    )
    return paginate(req, found, lambda e: label_event(req, e))


def label_event(req: Request, event: LabelEvent) -> dict[str, Any]:
    world = req.world
    return {
        "id": event.id,
        "user": renderer(req).user_basic(world.users.get(event.user_id)),
        "created_at": event.created_at,
        "resource_type": "Issue",
        "resource_id": event.issue_id,
        "label": {
            "id": world.label_id(event.label),
            "name": event.label,
            "color": "#6699cc",
            "description": None,
        },
        "action": event.action,
    }
