"""Discussions (threads) on issues and merge requests: list, get one, start one, reply.

A discussion is its notes sharing one ``discussion_id``; a lone note is a discussion of one
(``individual_note``). The listing pages over discussions, ordered by their first note, as
GitLab's ``discussion_ids_relation`` does; notes inside come oldest first.
"""

from __future__ import annotations

from typing import Any

from pairgate.sandbox.access import API, current_user, project_for, renderer
from pairgate.sandbox.httpd import (
    ApiError,
    Reply,
    Request,
    bad_request,
    forbidden,
    paginate,
    param_error,
)
from pairgate.sandbox.issues import issue_for
from pairgate.sandbox.merge_requests import mr_for
from pairgate.sandbox.notes import KINDS, run_quick_actions
from pairgate.sandbox.records import REPORTER, Issue, MergeRequest, Note, Project, User

THREAD = "DiscussionNote"
DIFF = "DiffNote"
# A diff position's fields (doc/api/discussions.md, "Create a new thread in the merge request
# diff"), in the order GitLab's Position entity lists them.
_POSITION_SHAS = ("base_sha", "start_sha", "head_sha")
_POSITION_KEYS = (*_POSITION_SHAS, "old_path", "new_path", "position_type", "old_line", "new_line")


def _position(req: Request) -> dict[str, Any] | None:
    """``position`` as a JSON object or as ``position[key]`` form fields; None when absent. A
    text position needs its three SHAs, a path and a line; image positions are not served."""
    given = req.params.get("position")
    if not isinstance(given, dict):
        given = {
            key[len("position[") : -1]: value
            for key, value in req.params.items()
            if key.startswith("position[") and key.endswith("]")
        }
    if not given:
        return None
    for key in (*_POSITION_SHAS, "position_type"):
        if not given.get(key):
            raise param_error(f"position[{key}] is missing")
    if given["position_type"] != "text":
        raise param_error("position[position_type] does not have a valid value")
    if not (given.get("new_path") or given.get("old_path")):
        raise param_error("position[new_path] is missing")
    position: dict[str, Any] = {key: given.get(key) for key in _POSITION_KEYS}
    for key in ("old_line", "new_line"):
        if position[key] not in (None, ""):
            try:
                position[key] = int(position[key])
            except (TypeError, ValueError):
                raise param_error(f"position[{key}] is invalid") from None
        else:
            position[key] = None
    if position["old_line"] is None and position["new_line"] is None:
        raise param_error("position[new_line] is missing")
    position["old_path"] = position["old_path"] or position["new_path"]
    position["new_path"] = position["new_path"] or position["old_path"]
    position["line_range"] = None
    return position


def _noteable(req: Request, project: Project, kind: str, iid: str) -> Issue | MergeRequest:
    return issue_for(req, project, iid) if kind == "issues" else mr_for(req, project, iid)


def _threads(req: Request, noteable: Issue | MergeRequest) -> list[list[Note]]:
    kind = "Issue" if isinstance(noteable, Issue) else "MergeRequest"
    threads: dict[str, list[Note]] = {}
    on = req.world.index.notes_on.get((kind, noteable.id), {})
    for note in sorted(on.values(), key=lambda n: n.id):
        threads.setdefault(note.discussion, []).append(note)
    return list(threads.values())  # dicts keep insertion order: by first note


def _thread(req: Request, noteable: Issue | MergeRequest, discussion_id: str) -> list[Note]:
    found = next((t for t in _threads(req, noteable) if t[0].discussion == discussion_id), [])
    if not found:
        raise ApiError(404, {"message": "404 Discussion Not Found"})
    return found


def _entity(req: Request, thread: list[Note], reader: bool) -> dict[str, Any] | None:
    """The Discussion entity; None when the caller can read none of its notes (GitLab drops
    unreadable notes after paging, as in the notes listing)."""
    notes = [n for n in thread if reader or not n.internal]
    if not notes:
        return None
    return {
        "id": thread[0].discussion,
        "individual_note": thread[0].note_type is None,
        "notes": [renderer(req).note(n) for n in notes],
    }


def _may_comment(req: Request, project: Project, noteable: Issue | MergeRequest) -> User:
    user = current_user(req)
    locked = isinstance(noteable, Issue) and noteable.discussion_locked
    if locked and req.world.access_level(user, project) < REPORTER:
        raise forbidden()
    return user


def _post(
    req: Request,
    project: Project,
    noteable: Issue | MergeRequest,
    user: User,
    *,
    discussion_id: str | None,
    position: dict[str, Any] | None = None,
) -> Note | Reply:
    body = req.required("body")
    text, changes, summary = run_quick_actions(req, project, noteable, user, body)
    if changes and not text.strip():
        return Reply(202, {"commands_changes": changes, "summary": summary})
    note = req.world.add_note(
        noteable,
        user,
        text if changes else body,
        note_type=DIFF if position is not None else THREAD,
        discussion_id=discussion_id,
        position=position,
    )
    noteable.updated_at = note.created_at
    return note


for _kind in KINDS:
    _base = f"/projects/{{project_id}}/{_kind}/{{iid}}/discussions"

    @API.route("GET", _base)
    def list_discussions(req: Request, project_id: str, iid: str, _kind: str = _kind) -> Any:
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        reply = paginate(req, _threads(req, noteable))
        reader = req.world.access_level(req.user, project) >= REPORTER
        reply.body = [e for t in reply.body if (e := _entity(req, t, reader)) is not None]
        return reply

    @API.route("GET", _base + "/{discussion_id}")
    def get_discussion(
        req: Request, project_id: str, iid: str, discussion_id: str, _kind: str = _kind
    ) -> Any:
        project = project_for(req, project_id)
        thread = _thread(req, _noteable(req, project, _kind, iid), discussion_id)
        entity = _entity(req, thread, req.world.access_level(req.user, project) >= REPORTER)
        if entity is None:
            raise ApiError(404, {"message": "404 Discussion Not Found"})
        return entity

    @API.route("POST", _base)
    def create_discussion(req: Request, project_id: str, iid: str, _kind: str = _kind) -> Any:
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        # A thread in the diff is a merge request's; on an issue GitLab ignores a position.
        position = _position(req) if _kind == "merge_requests" else None
        note = _post(
            req,
            project,
            noteable,
            _may_comment(req, project, noteable),
            discussion_id=None,
            position=position,
        )
        if isinstance(note, Reply):
            return note
        return _entity(req, [note], reader=True)

    @API.route("POST", _base + "/{discussion_id}/notes")
    def reply_to_discussion(
        req: Request, project_id: str, iid: str, discussion_id: str, _kind: str = _kind
    ) -> Any:
        project = project_for(req, project_id)
        noteable = _noteable(req, project, _kind, iid)
        user = _may_comment(req, project, noteable)
        first = _thread(req, noteable, discussion_id)[0]
        if first.system:
            raise bad_request("Discussion can not be replied to.")
        # A reply to a lone note turns it into a thread, as GitLab converts it; a reply in a
        # diff thread is a DiffNote at the thread's position.
        if first.note_type is None:
            first.note_type = THREAD
        note = _post(
            req, project, noteable, user, discussion_id=first.discussion, position=first.position
        )
        return note if isinstance(note, Reply) else renderer(req).note(note)
