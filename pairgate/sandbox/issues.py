"""Issues, their labels (with the Free and Premium scoped-label rules) and related MRs."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import (
    Request,
    forbidden,
    paginate,
    param_error,
    record_not_found,
    updated_window,
)
from pairgate.sandbox.model import World
from pairgate.sandbox.mr_entity import render
from pairgate.sandbox.records import REPORTER, Issue, LabelEvent, MergeRequest, Project, User

EDITABLE = (
    "assignee_id", "assignee_ids", "confidential", "created_at", "description",
    "discussion_locked", "due_date", "labels", "add_labels", "remove_labels", "milestone_id",
    "state_event", "title", "issue_type",
)  # fmt: skip


def scope_key(label: str) -> str | None:
    """``a::b::c`` has key ``a::b``: everything before the last ``::``."""
    return label.rsplit("::", 1)[0] if "::" in label else None


def apply_labels(
    world: World,
    current: list[str],
    *,
    labels: list[str] | None = None,
    add: list[str] | None = None,
    remove: list[str] | None = None,
) -> list[str]:
    """The labels after an edit: ``labels`` replaces, then ``add`` joins, then ``remove`` goes.
    With Premium scoped labels, a key that gained a label keeps only the last one selected."""
    result = list(dict.fromkeys(labels if labels is not None else current))
    for label in add or []:
        if label not in result:
            result.append(label)
    gone = {r.lower() for r in remove or []}
    result = [label for label in result if label.lower() not in gone]
    if world.options.scoped_labels == "premium":
        added = [lb for lb in [*(add or []), *(labels or [])] if lb not in current]
        for key in {scope_key(lb) for lb in added} - {None}:
            chosen = [lb for lb in [*(add or []), *(labels or [])] if scope_key(lb) == key]
            keep = chosen[-1]
            result = [lb for lb in result if scope_key(lb) != key or lb == keep]
    for label in result:
        world.label_id(label)
    return result


def issue_for(req: Request, project: Project, iid: str) -> Issue:
    issue = req.world.issue(project, int(iid)) if iid.isdigit() else None
    if issue is None:
        raise record_not_found()
    if issue.confidential and req.world.access_level(req.user, project) < REPORTER:
        raise record_not_found()
    return issue


def can_update(world: World, user: User | None, project: Project, author_id: int) -> bool:
    return user is not None and (
        user.id == author_id or world.access_level(user, project) >= REPORTER
    )


def set_state(world: World, issue: Any, event: str, user: User) -> None:
    """close / reopen, for issues and MRs alike; closing a closed one changes nothing."""
    if event == "close" and issue.state == "opened":
        issue.state, issue.closed_at, issue.closed_by_id = "closed", world.stamp(), user.id
    elif event == "reopen" and issue.state == "closed":
        issue.state, issue.closed_at, issue.closed_by_id = "opened", None, None


def require_one_of(req: Request, editable: tuple[str, ...]) -> None:
    """Grape's at_least_one_of: an edit that names nothing to change is a 400."""
    if not any(req.has(name) for name in editable):
        raise param_error(
            ", ".join(editable) + " are missing, at least one parameter must be provided"
        )


def user_ids(req: Request, name: str) -> list[int]:
    return [int(a) for a in req.csv(name) or [] if a.isdigit()]


def record_label_events(world: World, issue: Issue, user: User, before: list[str]) -> None:
    """One resource label event per label the change added or removed (GitLab's
    ResourceEvents::ChangeLabelsService), each at the change's time."""
    now = world.stamp()
    changes = [(lb, "add") for lb in issue.labels if lb not in before]
    changes += [(lb, "remove") for lb in before if lb not in issue.labels]
    for label, action in changes:
        event_id = world.next_id("label_event")
        world.label_events[event_id] = LabelEvent(event_id, issue.id, user.id, now, label, action)


def edit_common(req: Request, thing: Issue | MergeRequest, user: User) -> None:
    """The edits issues and MRs share: title and description (each leaving a system note),
    labels and assignees."""
    world = req.world
    if req.has("title") and req.text("title") != thing.title:
        title = req.required("title")
        note = f"changed title from **{thing.title}** to **{title}**"
        world.add_note(thing, user, note, system=True)
        thing.title = title
    if req.has("description") and req.text("description") != thing.description:
        thing.description = req.text("description")
        world.add_note(thing, user, "changed the description", system=True)
    if any(req.has(n) for n in ("labels", "add_labels", "remove_labels")):
        before = list(thing.labels)
        thing.labels = apply_labels(
            world,
            thing.labels,
            labels=req.csv("labels"),
            add=req.csv("add_labels"),
            remove=req.csv("remove_labels"),
        )
        if isinstance(thing, Issue):
            record_label_events(world, thing, user, before)
    if req.has("assignee_ids"):
        thing.assignee_ids = user_ids(req, "assignee_ids")


@API.route("GET", "/projects/{project_id}/issues", job_token=True)
def list_issues(req: Request, project_id: str) -> Any:
    project = project_for(req, project_id)
    world = req.world
    found = [i for i in world.issues.values() if i.project_id == project.id]
    if world.access_level(req.user, project) < REPORTER:
        found = [i for i in found if not i.confidential]
    state = req.choice("state", ("opened", "closed", "all"), "all")
    if state != "all":
        found = [i for i in found if i.state == state]
    wanted = req.csv("labels")
    if wanted:
        keyword = wanted[0].lower() if len(wanted) == 1 else ""
        if keyword == "none":
            found = [i for i in found if not i.labels]
        elif keyword == "any":
            found = [i for i in found if i.labels]
        else:
            found = [i for i in found if set(wanted) <= set(i.labels)]
    iids = req.csv("iids")
    if iids:
        found = [i for i in found if str(i.iid) in iids]
    search = req.text("search")
    if search:
        needle = search.lower()
        found = [i for i in found if needle in f"{i.title}\n{i.description or ''}".lower()]
    author = req.integer("author_id")
    if author is not None:
        found = [i for i in found if i.author_id == author]
    found = updated_window(req, found)
    order = req.choice("order_by", ("created_at", "updated_at"), "created_at")
    desc = req.choice("sort", ("asc", "desc"), "desc") == "desc"
    found.sort(
        key=lambda i: (i.updated_at, i.id) if order == "updated_at" else (i.id,), reverse=desc
    )
    return paginate(req, found, renderer(req).issue)


@API.route("GET", "/projects/{project_id}/issues/{iid}", job_token=True)
def get_issue(req: Request, project_id: str, iid: str) -> Any:
    project = project_for(req, project_id)
    return renderer(req).issue(issue_for(req, project, iid))


@API.route("POST", "/projects/{project_id}/issues")
def create_issue(req: Request, project_id: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    title = req.required("title")
    world = req.world
    now = world.stamp()
    issue_id = world.next_id("issue")
    issue = Issue(
        issue_id,
        world.next_iid(project, "issue"),
        project.id,
        title,
        req.text("description"),
        user.id,
        now,
        now,
        confidential=req.flag("confidential"),
    )
    issue.labels = apply_labels(world, [], labels=req.csv("labels") or [])
    issue.assignee_ids = user_ids(req, "assignee_ids")
    world.add_issue(issue)
    record_label_events(world, issue, user, [])
    return renderer(req).issue(issue)


@API.route("PUT", "/projects/{project_id}/issues/{iid}")
def edit_issue(req: Request, project_id: str, iid: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    world = req.world
    issue = issue_for(req, project, iid)
    require_one_of(req, EDITABLE)
    if not can_update(world, user, project, issue.author_id):
        raise forbidden()
    if req.has("state_event"):
        event = req.choice("state_event", ("close", "reopen"), "")
        set_state(world, issue, event, user)
    edit_common(req, issue, user)
    if req.has("confidential"):
        issue.confidential = req.flag("confidential")
    if req.has("discussion_locked"):
        issue.discussion_locked = req.flag("discussion_locked")
    issue.updated_at = world.stamp()
    return renderer(req).issue(issue)


@API.route("GET", "/projects/{project_id}/issues/{iid}/related_merge_requests")
def related_merge_requests(req: Request, project_id: str, iid: str) -> Any:
    """MRs whose title or description mention the issue (``#7`` in its own project, the
    full ``group/project#7`` from anywhere)."""
    project = project_for(req, project_id)
    issue = issue_for(req, project, iid)
    world = req.world
    full = re.escape(world.full_path(project))
    anywhere = re.compile(rf"(?<![\w/.-]){full}#{issue.iid}(?!\d)")
    local = re.compile(rf"(?<![\w/.-])#{issue.iid}(?!\d)")
    found = []
    for mr in sorted(world.merge_requests.values(), key=lambda m: m.id):
        if not world.can_read(req.user, world.projects[mr.project_id]):
            continue
        text = f"{mr.title}\n{mr.description or ''}"
        if anywhere.search(text) or (mr.project_id == project.id and local.search(text)):
            found.append(mr)
    r = renderer(req)
    return paginate(req, found, lambda m: render(r, m, req.user, basic=True))
