"""The bodies of the sandbox's webhooks, field for field as GitLab's
doc/user/project/integrations/webhook_events.md shows them (the fields a receiver reads; times
in the examples' forms). Built under the server's lock, from the world as the request left it.
"""

from __future__ import annotations

from typing import Any

from pairgate.sandbox import repo
from pairgate.sandbox.entities import composite_status
from pairgate.sandbox.model import World
from pairgate.sandbox.records import MergeRequest, Note, Pipeline, Project, User

ZEROS = "0" * 40  # a push's before or after when the branch is new or gone


def _utc(stamp: str | None) -> str | None:
    """A record's ISO time in the "2015-05-17 18:08:09 UTC" form of the note and pipeline
    payloads."""
    return f"{stamp[:10]} {stamp[11:19]} UTC" if stamp else None


class Payloads:
    """The JSON bodies, field for field as webhook_events.md shows them."""

    def __init__(self, world: World, base: str, user: User | None) -> None:
        self.world, self.base, self.actor = world, base, user

    def project(self, project: Project) -> dict[str, Any]:
        full = self.world.full_path(project)
        web = f"{self.base}/{full}"
        host = self.base.split("://", 1)[-1]
        group = self.world.groups[project.namespace_id]
        return {
            "id": project.id, "name": project.name, "description": "", "web_url": web,
            "avatar_url": None, "git_ssh_url": f"git@{host}:{full}.git",
            "git_http_url": f"{web}.git", "namespace": group.name,
            "visibility_level": {"private": 0, "internal": 10, "public": 20}[project.visibility],
            "path_with_namespace": full, "default_branch": project.default_branch,
            "ci_config_path": None, "homepage": web, "url": f"{web}.git",
            "ssh_url": f"git@{host}:{full}.git", "http_url": f"{web}.git",
        }  # fmt: skip

    def repository(self, project: Project) -> dict[str, Any]:
        p = self.project(project)
        return {"name": project.name, "url": p["url"], "description": "", "homepage": p["homepage"]}

    def user(self, user: User | None) -> dict[str, Any] | None:
        if user is None:
            return None
        return {
            "id": user.id, "name": user.name, "username": user.username,
            "avatar_url": None, "email": "[REDACTED]",
        }  # fmt: skip

    def _commit(self, project: Project, sha: str | None) -> dict[str, Any] | None:
        commit = self.world.commits.get(sha or "")
        if commit is None:
            return None
        return {
            "id": commit.id,
            "message": commit.message,
            "title": commit.message.split("\n", 1)[0],
            "timestamp": commit.created_at,
            "url": f"{self.base}/{self.world.full_path(project)}/-/commit/{commit.id}",
            "author": {"name": commit.author_name, "email": commit.author_email},
        }

    def mr_attrs(self, mr: MergeRequest, *, hook_times: bool) -> dict[str, Any]:
        world = self.world
        project = world.projects[mr.project_id]
        source = world.projects[mr.source_project_id]
        sha = repo.current_sha(world, mr)
        stamp = _utc if hook_times else (lambda s: s)
        from pairgate.sandbox.mr_entity import DRAFT

        return {
            "id": mr.id, "iid": mr.iid, "target_branch": mr.target_branch,
            "source_branch": mr.source_branch, "source_project_id": mr.source_project_id,
            "target_project_id": mr.project_id, "author_id": mr.author_id,
            "assignee_ids": list(mr.assignee_ids), "reviewer_ids": list(mr.reviewer_ids),
            "title": mr.title, "description": mr.description or "",
            "created_at": stamp(mr.created_at), "updated_at": stamp(mr.updated_at),
            "state": mr.state, "merge_status": "unchecked",
            "draft": bool(DRAFT.match(mr.title)), "work_in_progress": bool(DRAFT.match(mr.title)),
            "merge_commit_sha": mr.merge_commit_sha, "head_pipeline_id": mr.head_pipeline_id,
            "url": f"{self.base}/{world.full_path(project)}/-/merge_requests/{mr.iid}",
            "source": self.project(source), "target": self.project(project),
            "last_commit": self._commit(source, sha),
            "labels": [self._label(t) for t in sorted(mr.labels)],
            "detailed_merge_status": "mergeable" if mr.state == "opened" else "not_open",
        }  # fmt: skip

    def _label(self, title: str) -> dict[str, Any]:
        return {"id": self.world.label_id(title), "title": title, "type": "ProjectLabel"}

    def merge_request(
        self, mr: MergeRequest, action: str, oldrev: str | None
    ) -> tuple[Project, str, str, dict[str, Any]]:
        project = self.world.projects[mr.project_id]
        attrs = self.mr_attrs(mr, hook_times=False) | {"action": action}
        if oldrev:
            attrs["oldrev"] = oldrev
        body = {
            "object_kind": "merge_request", "event_type": "merge_request",
            "user": self.user(self.actor), "project": self.project(project),
            "repository": self.repository(project), "object_attributes": attrs,
            "labels": attrs["labels"], "changes": {},
            "assignees": [self.user(self.world.users.get(u)) for u in mr.assignee_ids],
            "reviewers": [self.user(self.world.users.get(u)) for u in mr.reviewer_ids],
        }  # fmt: skip
        return project, "merge_requests_events", "Merge Request Hook", body

    def note(self, note: Note, action: str) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[note.project_id]
        kind = "merge_requests" if note.noteable_type == "MergeRequest" else "issues"
        url = f"{self.base}/{world.full_path(project)}/-/{kind}/{note.noteable_iid}#note_{note.id}"
        body: dict[str, Any] = {
            "object_kind": "note",
            "event_type": "confidential_note" if note.internal else "note",
            "user": self.user(world.users.get(note.author_id)),
            "project_id": project.id, "project": self.project(project),
            "repository": self.repository(project),
            "object_attributes": {
                "id": note.id, "note": note.body, "noteable_type": note.noteable_type,
                "author_id": note.author_id, "created_at": _utc(note.created_at),
                "updated_at": _utc(note.updated_at), "project_id": project.id,
                "attachment": None, "line_code": None, "commit_id": "",
                "noteable_id": note.noteable_id, "system": note.system, "st_diff": None,
                "internal": note.internal, "discussion_id": note.discussion,
                "type": note.note_type, "action": action, "url": url,
            },
        }  # fmt: skip
        if note.noteable_type == "MergeRequest":
            mr = world.merge_requests[note.noteable_id]
            body["merge_request"] = self.mr_attrs(mr, hook_times=True)
        else:
            issue = world.issues[note.noteable_id]
            body["issue"] = {
                "id": issue.id, "iid": issue.iid, "title": issue.title,
                "description": issue.description, "project_id": issue.project_id,
                "author_id": issue.author_id, "assignee_ids": list(issue.assignee_ids),
                "created_at": _utc(issue.created_at), "updated_at": _utc(issue.updated_at),
                "state": issue.state, "confidential": issue.confidential,
                "labels": [self._label(t) for t in sorted(issue.labels)],
            }  # fmt: skip
        flag = "confidential_note_events" if note.internal else "note_events"
        event = "Confidential Note Hook" if note.internal else "Note Hook"
        return project, flag, event, body

    def push(
        self, project: Project, branch: str, before: str, after: str
    ) -> tuple[Project, str, str, dict[str, Any]]:
        commits: list[str] = []
        if after != ZEROS:
            have = set(repo.ancestry(self.world, before)) if before != ZEROS else set()
            for sha in repo.ancestry(self.world, after):
                if sha in have or len(commits) > 100:
                    break
                commits.append(sha)
        actor = self.actor
        body = {
            "object_kind": "push", "event_name": "push", "before": before, "after": after,
            "ref": f"refs/heads/{branch}", "ref_protected": branch == project.default_branch,
            "checkout_sha": None if after == ZEROS else after,
            "user_id": actor.id if actor else None, "user_name": actor.name if actor else None,
            "user_username": actor.username if actor else None, "user_email": "[REDACTED]",
            "user_avatar": None, "project_id": project.id, "project": self.project(project),
            "repository": self.repository(project),
            "commits": [self._commit(project, sha) for sha in commits[:20]],
            "total_commits_count": len(commits),
        }  # fmt: skip
        return project, "push_events", "Push Hook", body

    def pipeline(self, pipeline: Pipeline, status: str) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[pipeline.project_id]
        jobs = world.jobs_of(pipeline)
        mr = next(
            (
                m
                for m in world.merge_requests.values()
                if m.head_pipeline_id == pipeline.id
                or (
                    pipeline.ref == f"refs/merge-requests/{m.iid}/head"
                    and m.project_id == project.id
                )
            ),
            None,
        )
        finished = (
            pipeline.updated_at if status in ("success", "failed", "canceled", "skipped") else None
        )
        body = {
            "object_kind": "pipeline",
            "object_attributes": {
                "id": pipeline.id, "iid": pipeline.iid, "name": None, "ref": pipeline.ref,
                "tag": False, "sha": pipeline.sha, "before_sha": ZEROS, "source": pipeline.source,
                "status": status, "detailed_status": status,
                "stages": sorted({j.stage for j in jobs}),
                "created_at": _utc(pipeline.created_at), "finished_at": _utc(finished),
                "duration": None, "queued_duration": None, "variables": [],
                "url": f"{self.base}/{world.full_path(project)}/-/pipelines/{pipeline.id}",
            },
            "merge_request": None if mr is None else {
                "id": mr.id, "iid": mr.iid, "title": mr.title, "source_branch": mr.source_branch,
                "source_project_id": mr.source_project_id, "target_branch": mr.target_branch,
                "target_project_id": mr.project_id, "state": mr.state,
                "merge_status": "unchecked", "detailed_merge_status": "mergeable",
                "url": f"{self.base}/{world.full_path(project)}/-/merge_requests/{mr.iid}",
            },
            "user": self.user(world.users.get(pipeline.user_id or 0)),
            "project": self.project(project),
            "commit": self._commit(project, pipeline.sha),
            "builds": [
                {
                    "id": j.id, "stage": j.stage, "name": j.name, "status": j.status,
                    "created_at": _utc(j.created_at), "started_at": _utc(j.started_at),
                    "finished_at": _utc(j.finished_at), "duration": None,
                    "queued_duration": None, "failure_reason": None, "when": "on_success",
                    "manual": False, "allow_failure": j.allow_failure,
                    "user": self.user(world.users.get(pipeline.user_id or 0)),
                    "runner": None, "artifacts_file": {"filename": None, "size": None},
                    "environment": None,
                }
                for j in jobs
            ],
        }  # fmt: skip
        return project, "pipeline_events", "Pipeline Hook", body

    def job(self, pipeline: Pipeline, job: Any) -> tuple[Project, str, str, dict[str, Any]]:
        world = self.world
        project = world.projects[pipeline.project_id]
        commit = world.commits.get(pipeline.sha)
        body = {
            "object_kind": "build", "ref": pipeline.ref, "tag": False, "before_sha": ZEROS,
            "sha": pipeline.sha, "build_id": job.id, "build_name": job.name,
            "build_stage": job.stage, "build_status": job.status,
            "build_created_at": job.created_at, "build_started_at": job.started_at,
            "build_finished_at": job.finished_at, "build_duration": None,
            "build_queued_duration": None, "build_allow_failure": job.allow_failure,
            "build_failure_reason": "script_failure" if job.status == "failed" else "unknown_failure",
            "retries_count": 0, "pipeline_id": pipeline.id, "project_id": project.id,
            "project_name": world.full_path(project),
            "user": self.user(world.users.get(pipeline.user_id or 0)),
            "commit": {
                "id": pipeline.id, "name": None, "sha": pipeline.sha,
                "message": commit.message if commit else "",
                "author_name": commit.author_name if commit else "",
                "author_email": commit.author_email if commit else "",
                "status": composite_status(world.jobs_of(pipeline)),
                "duration": None, "started_at": None, "finished_at": None,
            },
            "repository": self.repository(project), "project": self.project(project),
            "runner": None, "environment": None,
        }  # fmt: skip
        return project, "job_events", "Job Hook", body
