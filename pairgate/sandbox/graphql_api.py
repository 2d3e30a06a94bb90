"""GitLab's GraphQL API (POST /api/graphql), as far as pairgate reads it: a project by full path,
an issue by iid, and the issue's notes as a connection, each note with the fields of GitLab's
``Note`` type that say who wrote it and when it was last edited (``lastEditedAt``, which REST
notes do not carry); and a project's merge requests by iids, with their ``diffRefs`` (which a
REST listing leaves out, so the audit reads a hundred at a time here). Queries run through
graphql-core against that schema, so any query of its shape is answered as GitLab would, and
anything else gets GitLab's error shape."""

from __future__ import annotations

import base64
import json
from functools import lru_cache
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    build_schema,
    execute,
    parse,
    validate,
)

from pairgate.sandbox import repo
from pairgate.sandbox.httpd import Reply, Request
from pairgate.sandbox.records import REPORTER, Note

# The subset of GitLab's schema the sandbox serves. Names and nullability follow GitLab's
# reference (doc/api/graphql/reference): Note.id is a global id (gid://gitlab/Note/123),
# Issue.iid a String, connections carry nodes, edges and pageInfo, and at most 100 per page.
SDL = """
scalar Time

type Query {
  project(fullPath: ID!): Project
}

type Project {
  id: ID!
  fullPath: ID!
  issue(iid: String): Issue
  mergeRequests(iids: [String!], first: Int, after: String): MergeRequestConnection
}

type DiffRefs {
  baseSha: String
  headSha: String!
  startSha: String!
}

type MergeRequest {
  id: ID!
  iid: String!
  state: String!
  sourceBranch: String!
  targetBranch: String!
  diffRefs: DiffRefs
}

type MergeRequestConnection {
  count: Int!
  nodes: [MergeRequest]
  pageInfo: PageInfo!
}

type Issue {
  id: ID!
  iid: String!
  title: String!
  notes(first: Int, last: Int, after: String, before: String): NoteConnection!
}

type UserCore {
  id: ID!
  username: String!
}

type Note {
  id: ID!
  body: String!
  author: UserCore
  createdAt: Time!
  updatedAt: Time!
  lastEditedAt: Time
  lastEditedBy: UserCore
  system: Boolean!
  internal: Boolean
}

type NoteEdge {
  cursor: String!
  node: Note
}

type PageInfo {
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
  endCursor: String
}

type NoteConnection {
  count: Int!
  nodes: [Note]
  edges: [NoteEdge]
  pageInfo: PageInfo!
}
"""
SCHEMA = build_schema(SDL)
MAX_PAGE = 100  # GitLab's max_page_size


def _cursor(note_id: int) -> str:
    return base64.b64encode(json.dumps({"id": str(note_id)}).encode()).decode()


def _cursor_id(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    try:
        return int(json.loads(base64.b64decode(cursor))["id"])
    except (ValueError, KeyError, TypeError):
        raise GraphQLError(f"Invalid cursor: {cursor!r}") from None


def _user(world: Any, user_id: int | None) -> dict[str, Any] | None:
    user = world.users.get(user_id) if user_id else None
    return (
        None if user is None else {"id": f"gid://gitlab/User/{user.id}", "username": user.username}
    )


def _note(world: Any, note: Note) -> dict[str, Any]:
    return {
        "id": f"gid://gitlab/Note/{note.id}",
        "body": note.body,
        "author": _user(world, note.author_id),
        "createdAt": note.created_at,
        "updatedAt": note.updated_at,
        "lastEditedAt": note.last_edited_at,
        "lastEditedBy": _user(world, note.last_edited_by_id),
        "system": note.system,
        "internal": note.internal,
    }


def _merge_request(world: Any, mr: Any) -> dict[str, Any]:
    head = repo.current_sha(world, mr)
    return {
        "id": f"gid://gitlab/MergeRequest/{mr.id}",
        "iid": str(mr.iid),
        "state": mr.state,
        "sourceBranch": mr.source_branch,
        "targetBranch": mr.target_branch,
        "diffRefs": {
            "baseSha": mr.base_sha,
            "headSha": head,
            "startSha": mr.start_sha or mr.base_sha,
        },
    }


def _page(items: list[Note], args: dict[str, Any]) -> tuple[list[Note], bool, bool]:
    """Relay pagination over notes in id order: (window, has next page, has previous page)."""
    after, before = _cursor_id(args.get("after")), _cursor_id(args.get("before"))
    window = [
        n for n in items if (after is None or n.id > after) and (before is None or n.id < before)
    ]
    first, last = args.get("first"), args.get("last")
    for name, value in (("first", first), ("last", last)):
        if value is not None and value < 0:
            raise GraphQLError(f"Argument '{name}' on Field 'notes' has an invalid value.")
    size = min(v for v in (first, last, MAX_PAGE) if v is not None)
    has_next = has_previous = False
    if last is not None and first is None:
        has_previous = len(window) > size
        window = window[max(0, len(window) - size) :] if size else []
    else:
        has_next = len(window) > size
        window = window[:size]
    has_next = has_next or (before is not None and any(n.id >= before for n in items))
    has_previous = has_previous or (after is not None and any(n.id <= after for n in items))
    return window, has_next, has_previous


class _Root:
    """The resolvers, bound to one request (its world and its reader)."""

    def __init__(self, req: Request) -> None:
        self.req = req

    def project(self, info: Any, fullPath: str) -> dict[str, Any] | None:
        world = self.req.world
        project = world.project_by_ref(fullPath) if not fullPath.isdigit() else None
        if project is None or not world.can_read(self.req.user, project):
            return None  # GitLab answers an unknown or hidden project with null, not an error
        reader = world.access_level(self.req.user, project) >= REPORTER

        def issue(info: Any, iid: str | None = None) -> dict[str, Any] | None:
            found = world.issue(project, int(iid)) if iid and iid.isdigit() else None
            if found is None:
                return None

            def notes(info: Any, **args: Any) -> dict[str, Any]:
                mine = sorted(
                    (
                        n
                        for n in world.notes.values()
                        if n.noteable_type == "Issue"
                        and n.noteable_id == found.id
                        and (reader or not n.internal)
                    ),
                    key=lambda n: n.id,
                )
                window, has_next, has_previous = _page(mine, args)
                nodes = [_note(world, n) for n in window]
                return {
                    "count": len(mine),
                    "nodes": nodes,
                    "edges": [
                        {"cursor": _cursor(n.id), "node": d}
                        for n, d in zip(window, nodes, strict=True)
                    ],
                    "pageInfo": {
                        "hasNextPage": has_next,
                        "hasPreviousPage": has_previous,
                        "startCursor": _cursor(window[0].id) if window else None,
                        "endCursor": _cursor(window[-1].id) if window else None,
                    },
                }

            return {
                "id": f"gid://gitlab/Issue/{found.id}",
                "iid": str(found.iid),
                "title": found.title,
                "notes": notes,
            }

        def merge_requests(
            info: Any,
            iids: list[str] | None = None,
            first: int | None = None,
            after: str | None = None,
        ) -> dict[str, Any]:
            if first is not None and first < 0:
                raise GraphQLError(
                    "Argument 'first' on Field 'mergeRequests' has an invalid value."
                )
            wanted = None if iids is None else {int(i) for i in iids if i.isdigit()}
            # GitLab's default order is newest first; the cursor is the last one given.
            mine = sorted(
                (
                    m
                    for m in world.merge_requests.values()
                    if m.project_id == project.id and (wanted is None or m.iid in wanted)
                ),
                key=lambda m: -m.id,
            )
            start = _cursor_id(after)
            window = [m for m in mine if start is None or m.id < start]
            size = min(v for v in (first, MAX_PAGE) if v is not None)
            page = window[:size]
            return {
                "count": len(mine),
                "nodes": [_merge_request(world, m) for m in page],
                "pageInfo": {
                    "hasNextPage": len(window) > size,
                    "hasPreviousPage": len(window) < len(mine),
                    "startCursor": _cursor(page[0].id) if page else None,
                    "endCursor": _cursor(page[-1].id) if page else None,
                },
            }

        return {
            "id": f"gid://gitlab/Project/{project.id}",
            "fullPath": world.full_path(project),
            "issue": issue,
            "mergeRequests": merge_requests,
        }


def _resolve(source: Any, info: Any, **args: Any) -> Any:
    """graphql-core's field resolver: a callable value is a field with arguments."""
    value = (
        source.get(info.field_name)
        if isinstance(source, dict)
        else getattr(source, info.field_name, None)
    )
    return value(info, **args) if callable(value) else value


@lru_cache(maxsize=64)
def _checked(query: str) -> tuple[DocumentNode | None, tuple[GraphQLError, ...]]:
    """A query parsed and validated against SCHEMA, as graphql_sync does before it executes
    one: what that finds depends on the text alone, and validating took 85% of each answer
    (the reader sends one query text, again and again)."""
    try:
        document = parse(query)
    except GraphQLError as error:
        return None, (error,)
    return document, tuple(validate(SCHEMA, document))


def serve(req: Request) -> Reply:
    """POST /api/graphql with {"query", "variables", "operationName"}: HTTP 200 with ``data``
    and, when the query cannot run, ``errors`` (GitLab's shape), as GitLab answers."""
    query = req.params.get("query")
    if not isinstance(query, str) or not query.strip():
        return Reply(200, {"errors": [{"message": "No query string was present"}]})
    variables = req.params.get("variables")
    if isinstance(variables, str):
        variables = json.loads(variables or "{}")
    document, problems = _checked(query)
    result: Any = ExecutionResult(data=None, errors=list(problems))
    if document is not None and not problems:
        result = execute(  # synchronous: no resolver here is a coroutine
            SCHEMA,
            document,
            root_value=_Root(req),
            variable_values=variables if isinstance(variables, dict) else None,
            operation_name=req.params.get("operationName"),
            field_resolver=_resolve,
        )
    body: dict[str, Any] = {}
    if result.errors:
        body["errors"] = [e.formatted for e in result.errors]
    if result.data is not None or not result.errors:
        body["data"] = result.data
    return Reply(200, body)
