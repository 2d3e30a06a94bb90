"""Notes on issues and merge requests: order, permissions, system notes and quick actions."""

from __future__ import annotations

import re
from typing import Any

from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.approvals import record_approval
from pairgate.sandbox.httpd import ApiError, Reply, Request, bad_request, forbidden, paginate
from pairgate.sandbox.httpd import record_not_found as note_not_found
from pairgate.sandbox.issues import (
    apply_labels,
    can_update,
    issue_for,
    record_label_events,
    set_state,
)
from pairgate.sandbox.merge_requests import mr_for, set_mr_state
from pairgate.sandbox.records import MAINTAINER, REPORTER, Issue, MergeRequest, Note, Project, User

KINDS = {"issues": "Issue", "merge_requests": "MergeRequest"}
ISSUE_COMMANDS = {"close", "reopen", "label", "unlabel", "relabel", "title", "assign", "unassign"}
MR_COMMANDS = ISSUE_COMMANDS | {"approve", "unapprove"}
_COMMAND_LINE = re.compile(r"^/([a-z_]+)(?:[ \t]+(.*))?$")
_LABEL = re.compile(r'~"([^"]+)"|~(\S+)|(\S+)')


def _noteable(req: Request, project: Project, kind: str, iid: str) -> Issue | MergeRequest:
    return issue_for(req, project, iid) if kind == "issues" else mr_for(req, project, iid)


def _note_for(req: Request, noteable: Issue | MergeRequest, note_id: str) -> Note:
    note = req.world.notes.get(int(note_id)) if note_id.isdigit() else None
    kind = "Issue" if isinstance(noteable, Issue) else "MergeRequest"
    if note is None or (note.noteable_type, note.noteable_id) != (kind, noteable.id):
        raise note_not_found()
    return note


for _kind in KINDS:
    _base = f"/projects/{{project_id}}/{_kind}/{{iid}}/notes"

    @API.route("GET", _base, job_token=_kind == "merge_requests")
    def list_notes(req: Request, project_id: str, iid: str, _kind: str = _kind) -> Any:
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        order = req.choice("order_by", ("created_at", "updated_at"), "created_at")
        desc = req.choice("sort", ("asc", "desc"), "desc") == "desc"
        activity = req.choice(
            "activity_filter", ("all_notes", "only_comments", "only_activity"), "all_notes"
        )
        found = req.world.notes_on(noteable)
        if activity != "all_notes":
            found = [n for n in found if n.system == (activity == "only_activity")]
        # created_at orders by id, as GitLab's tie-breaker does
        found.sort(
            key=lambda n: (n.updated_at, n.id) if order == "updated_at" else (n.id,), reverse=desc
        )
        reply = paginate(req, found)
        # As on GitLab, unreadable (internal) notes are dropped AFTER paging: a page may be
        # short, or empty, while X-Next-Page still names the next one.
        reader = req.world.access_level(req.user, project) >= REPORTER
        reply.body = [renderer(req).note(n) for n in reply.body if reader or not n.internal]
        return reply

    @API.route("GET", _base + "/{note_id}", job_token=_kind == "merge_requests")
    def get_note(req: Request, project_id: str, iid: str, note_id: str, _kind: str = _kind) -> Any:
        project = project_for(req, project_id)
        note = _note_for(req, _noteable(req, project, _kind, iid), note_id)
        if note.internal and req.world.access_level(req.user, project) < REPORTER:
            raise note_not_found()
        return renderer(req).note(note)

    @API.route("POST", _base)
    def create_note(req: Request, project_id: str, iid: str, _kind: str = _kind) -> Any:
        user = current_user(req)
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        body = req.required("body")
        world = req.world
        locked = isinstance(noteable, Issue) and noteable.discussion_locked
        if locked and world.access_level(user, project) < REPORTER:
            raise forbidden()
        text, changes, summary = run_quick_actions(req, project, noteable, user, body)
        if changes and not text.strip():
            return Reply(202, {"commands_changes": changes, "summary": summary})
        internal = req.flag("internal", req.flag("confidential"))
        note = world.add_note(noteable, user, text if changes else body, internal=internal)
        noteable.updated_at = note.created_at
        return renderer(req).note(note) | {"commands_changes": changes}

    @API.route("PUT", _base + "/{note_id}")
    def edit_note(req: Request, project_id: str, iid: str, note_id: str, _kind: str = _kind) -> Any:
        user = current_user(req)
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        note = _note_for(req, noteable, note_id)
        _may_change(req, project, note, user)
        body = req.required("body")
        now = req.world.stamp()
        if body != note.body:  # an edit GitLab records (GraphQL lastEditedAt)
            note.last_edited_at, note.last_edited_by_id = now, user.id
        note.body = body
        # Saving a note touches what it is on (GitLab's Note after_save :touch_noteable); a
        # delete does not, so a removed comment leaves the MR's updated_at where it was.
        note.updated_at = noteable.updated_at = now
        return renderer(req).note(note)

    @API.route("DELETE", _base + "/{note_id}")
    def delete_note(
        req: Request, project_id: str, iid: str, note_id: str, _kind: str = _kind
    ) -> Any:
        user = current_user(req)
        project = project_for(req, project_id)
        note = _note_for(req, _noteable(req, project, _kind, iid), note_id)
        _may_change(req, project, note, user)
        req.world.delete_note(note)
        return Reply(204)


# Emoji reactions on an issue's notes. A reaction bumps the note's updated_at and nothing else
# (GitLab's AwardEmoji callback, Note#bump_updated_at): it is not an edit, so lastEditedAt stays.
_AWARDS = "/projects/{project_id}/issues/{iid}/notes/{note_id}/award_emoji"


def _award_entity(req: Request, note: Note, award: list[Any]) -> dict[str, Any]:
    award_id, name, user_id, at = award
    return {
        "id": award_id,
        "name": name,
        "user": renderer(req).user_by_id(user_id),
        "created_at": at,
        "updated_at": at,
        "awardable_id": note.id,
        "awardable_type": "Note",
    }


@API.route("GET", _AWARDS)
def list_note_awards(req: Request, project_id: str, iid: str, note_id: str) -> Any:
    project = project_for(req, project_id)
    note = _note_for(req, issue_for(req, project, iid), note_id)
    return paginate(req, note.awards, lambda a: _award_entity(req, note, a))


@API.route("POST", _AWARDS)
def award_note(req: Request, project_id: str, iid: str, note_id: str) -> Any:
    user = current_user(req)
    project = project_for(req, project_id)
    note = _note_for(req, issue_for(req, project, iid), note_id)
    name = req.required("name")
    if any(a[1] == name and a[2] == user.id for a in note.awards):
        raise ApiError(404, {"message": "404 Award Emoji Name has already been taken Not Found"})
    now = req.world.stamp()
    award: list[Any] = [req.world.next_id("award_emoji"), name, user.id, now]
    note.awards.append(award)
    note.updated_at = now
    return _award_entity(req, note, award)


def _may_change(req: Request, project: Project, note: Note, user: User) -> None:
    """The author, or a Maintainer and above (GitLab's admin_note); system notes never."""
    if note.system:
        raise forbidden()
    if note.author_id != user.id and req.world.access_level(user, project) < MAINTAINER:
        raise forbidden()


def run_quick_actions(
    req: Request, project: Project, noteable: Issue | MergeRequest, user: User, body: str
) -> tuple[str, dict[str, Any], list[str]]:
    """Execute the quick-action lines the user may run; return the body without them, the
    changes and the summary. Lines inside code fences are text, as are unknown commands."""
    world = req.world
    if not can_update(world, user, project, noteable.author_id):
        return body, {}, []
    known = ISSUE_COMMANDS if isinstance(noteable, Issue) else MR_COMMANDS
    kept: list[str] = []
    changes: dict[str, Any] = {}
    summary: list[str] = []
    fenced = False
    for line in body.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        found = None if fenced else _COMMAND_LINE.match(line.rstrip("\r"))
        if not found or found.group(1) not in known:
            kept.append(line)
            continue
        before = list(noteable.labels)
        _execute(
            req, noteable, user, found.group(1), (found.group(2) or "").strip(), changes, summary
        )
        if isinstance(noteable, Issue):
            record_label_events(world, noteable, user, before)
    if changes:
        noteable.updated_at = world.stamp()
    return "\n".join(kept).strip("\n"), changes, summary


def _execute(
    req: Request,
    noteable: Issue | MergeRequest,
    user: User,
    command: str,
    arg: str,
    changes: dict[str, Any],
    summary: list[str],
) -> None:
    world = req.world
    thing = "issue" if isinstance(noteable, Issue) else "merge request"
    labels = [a or b or c for a, b, c in _LABEL.findall(arg)]
    if command in ("close", "reopen"):
        if isinstance(noteable, MergeRequest):
            set_mr_state(world, noteable, command, user)
        else:
            set_state(world, noteable, command, user)
        changes["state_event"] = command
        summary.append(f"{'Closed' if command == 'close' else 'Reopened'} this {thing}.")
    elif command == "label" and labels:
        noteable.labels = apply_labels(world, noteable.labels, add=labels)
        changes["add_label_ids"] = [world.label_id(lb) for lb in labels]
        summary.append(f"Added {_names(labels)} label{'s' if len(labels) > 1 else ''}.")
    elif command == "unlabel":
        gone = labels or list(noteable.labels)
        noteable.labels = apply_labels(world, noteable.labels, remove=gone)
        changes["remove_label_ids"] = [world.label_id(lb) for lb in gone]
        summary.append(f"Removed {_names(gone)} label{'s' if len(gone) > 1 else ''}.")
    elif command == "relabel" and labels:
        noteable.labels = apply_labels(world, noteable.labels, labels=labels)
        changes["label_ids"] = [world.label_id(lb) for lb in labels]
        summary.append(f"Replaced all labels with {_names(labels)} label.")
    elif command == "title" and arg:
        noteable.title = arg
        changes["title"] = arg
        summary.append(f'Changed the title to "{arg}".')
    elif command in ("assign", "unassign"):
        names = [n.lstrip("@") for n in arg.split()] or ([user.username] if arg == "" else [])
        ids = [u.id for u in world.users.values() if u.username in names]
        if command == "assign":
            noteable.assignee_ids = list(dict.fromkeys([*noteable.assignee_ids, *ids]))
        else:
            noteable.assignee_ids = [a for a in noteable.assignee_ids if arg and a not in ids]
        changes["assignee_ids"] = noteable.assignee_ids
        summary.append(
            f"{'Assigned' if command == 'assign' else 'Removed assignee'} "
            + " ".join(f"@{n}" for n in names)
            + "."
        )
    elif command in ("approve", "unapprove") and isinstance(noteable, MergeRequest):
        if record_approval(world, noteable, user, approve=command == "approve"):
            changes[command] = True
            summary.append(f"{command.capitalize()}d the current merge request.")
    else:
        raise bad_request(f"Could not apply {command} command.")


def _names(labels: list[str]) -> str:
    return " ".join(f'~"{lb}"' for lb in labels)
