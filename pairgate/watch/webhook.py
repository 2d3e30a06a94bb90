"""What a GitLab webhook says, as the watcher needs it. Pure.

A hook is taken as news that something changed, never as the change itself: it names what to
read again (``Targets``), and the watcher reads those through the API exactly as a poll reads
them (``refresh``), so the events, routing, batching and framing are the poll's own, and the
order GitLab delivers hooks in (none is promised) does not matter.

- Merge Request Hook: that merge request. Note Hook: the merge request commented on, or, on a
  tracker issue, that issue's ledger. Issue Hook on the tracker: that issue.
- Pipeline Hook (``object_kind: pipeline``) and Job Hook (``object_kind: build``; its
  ``commit.id`` is the pipeline's id): that pipeline, matched to the watched merge requests'
  commits as a poll's pipeline listing is.
- Push Hook: the watched merge requests whose source branch it moved.

The key that makes a redelivery a no-op (``key``): GitLab's ``Idempotency-Key`` (17.4+: the same
on a retry or a resend of one delivery); on an older GitLab, the event's own identity, its
kind, id and ``updated_at`` (a pipeline or job has no ``updated_at``: its status stands in).
``X-Gitlab-Webhook-UUID`` differs on every request and ``X-Gitlab-Event-UUID`` is shared by a
chain of hooks, so neither can be the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pairgate.standalone.scope import cited_issues

EVENTS = ("Merge Request Hook", "Note Hook", "Pipeline Hook", "Job Hook", "Push Hook")
BODY_MAX = 25 * 1024 * 1024  # GitLab sends no larger body (REQUEST_BODY_SIZE_LIMIT)


@dataclass(frozen=True)
class Targets:
    """What to read again: merge requests by (project path, iid), with whether the hook showed
    it citing a tracker issue; tracker issues by iid; pipelines by (project id, pipeline id);
    pushed branches by (project id, branch)."""

    mrs: Mapping[tuple[str, int], bool] = field(default_factory=dict)
    issues: frozenset[int] = frozenset()
    pipelines: frozenset[tuple[int, int]] = frozenset()
    branches: frozenset[tuple[int, str]] = frozenset()

    def __or__(self, other: Targets) -> Targets:
        mrs = dict(self.mrs)
        for key, cites in other.mrs.items():
            mrs[key] = mrs.get(key, False) or cites
        return Targets(
            mrs,
            self.issues | other.issues,
            self.pipelines | other.pipelines,
            self.branches | other.branches,
        )

    @property
    def empty(self) -> bool:
        return not (self.mrs or self.issues or self.pipelines or self.branches)


def key(headers: Mapping[str, str], body: Mapping[str, Any]) -> str:
    """The delivery's de-duplication key (``headers`` with lower-case names)."""
    given = headers.get("idempotency-key", "").strip()
    if given:
        return f"idempotency-key:{given}"
    kind = str(body.get("object_kind") or headers.get("x-gitlab-event") or "?")
    attrs = body.get("object_attributes") or {}
    if kind == "build":
        ident: Any = (body.get("build_id"), body.get("build_status"), body.get("build_finished_at"))
    elif kind == "pipeline":
        ident = (attrs.get("id"), attrs.get("status"), attrs.get("finished_at"))
    elif kind in ("push", "tag_push"):
        ident = (body.get("project_id"), body.get("ref"), body.get("before"), body.get("after"))
    elif attrs:
        ident = (attrs.get("id"), attrs.get("updated_at"), attrs.get("action"))
    else:  # nothing names it: the body itself
        ident = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return f"{kind}:{json.dumps(ident)}"


def _project_path(body: Mapping[str, Any]) -> str:
    return str((body.get("project") or {}).get("path_with_namespace") or "")


def _cites(title: Any, description: Any, project: str, tracker: str, generic: int | None) -> bool:
    text = f"{title or ''}\n{description or ''}"
    return any(i != generic for i in cited_issues(text, mr_project=project, tracker=tracker))


def targets(event: str, body: Mapping[str, Any], *, tracker: str, generic: int | None) -> Targets:
    """What a hook asks to read again (nothing for a hook of another kind)."""
    kind = body.get("object_kind")
    project = _project_path(body)
    attrs = body.get("object_attributes") or {}
    if kind == "merge_request" and attrs.get("iid") is not None:
        cites = _cites(attrs.get("title"), attrs.get("description"), project, tracker, generic)
        return Targets(mrs={(project, int(attrs["iid"])): cites})
    if kind == "note":
        mr = body.get("merge_request") or {}
        if mr.get("iid") is not None:
            cites = _cites(mr.get("title"), mr.get("description"), project, tracker, generic)
            return Targets(mrs={(project, int(mr["iid"])): cites})
        issue = body.get("issue") or {}
        if issue.get("iid") is not None and project.casefold() == tracker.casefold():
            return Targets(issues=frozenset({int(issue["iid"])}))
        return Targets()
    if kind == "issue" and project.casefold() == tracker.casefold() and attrs.get("iid"):
        return Targets(issues=frozenset({int(attrs["iid"])}))
    if kind == "pipeline" and attrs.get("id") is not None:
        project_id = (body.get("project") or {}).get("id")
        if project_id is not None:
            return Targets(pipelines=frozenset({(int(project_id), int(attrs["id"]))}))
        return Targets()
    if kind == "build" and body.get("pipeline_id") and body.get("project_id"):
        return Targets(pipelines=frozenset({(int(body["project_id"]), int(body["pipeline_id"]))}))
    if (
        kind == "push"
        and body.get("project_id")
        and str(body.get("ref", "")).startswith("refs/heads/")
    ):
        branch = str(body["ref"]).removeprefix("refs/heads/")
        return Targets(branches=frozenset({(int(body["project_id"]), branch)}))
    return Targets()
