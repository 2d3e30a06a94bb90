"""GitLab's response entities, rendered from the sandbox's records (field names as GitLab's)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pairgate.sandbox import protection, repo, settings
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Commit, Issue, Job, Note, Pipeline, Project, User

TERMINAL = {"success", "failed", "canceled", "skipped"}


class Renderer:
    """Renders records for one request; ``base`` is the instance URL the client used."""

    def __init__(self, world: World, base: str) -> None:
        self.world, self.base = world, base

    # -- people and places --------------------------------------------------------------------

    def user_basic(self, user: User | None) -> dict[str, Any] | None:
        if user is None:
            return None
        return {
            "id": user.id,
            "username": user.username,
            "name": user.name,
            "state": user.state,
            "locked": False,
            "avatar_url": None,
            "web_url": f"{self.base}/{user.username}",
        }

    def user_by_id(self, user_id: int | None) -> dict[str, Any] | None:
        return self.user_basic(self.world.users.get(user_id)) if user_id else None

    def user(self, user: User, *, current: bool = False) -> dict[str, Any]:
        out = self.user_basic(user) or {}
        out |= {
            "created_at": "2024-01-01T00:00:00.000Z",
            "bio": "",
            "location": "",
            "public_email": None,
            "organization": "",
            "job_title": "",
            "pronouns": None,
            "bot": user.bot,
            "work_information": None,
            "followers": 0,
            "following": 0,
        }
        if current:
            out |= {"email": f"{user.username}@sandbox.test", "is_admin": False}
        return out

    def project(self, project: Project, viewer: User | None) -> dict[str, Any]:
        world = self.world
        group = world.groups[project.namespace_id]
        full = world.full_path(project)
        level = world.access_level(viewer, project)
        direct = project.members.get(viewer.id) if viewer else None
        via_group = group.members.get(viewer.id) if viewer else None
        return {
            "id": project.id,
            "name": project.name,
            "path": project.path,
            "name_with_namespace": f"{group.name} / {project.name}",
            "path_with_namespace": full,
            "description": "",
            "default_branch": project.default_branch if project.branches else None,
            "visibility": project.visibility,
            "archived": False,
            "web_url": f"{self.base}/{full}",
            "http_url_to_repo": f"{self.base}/{full}.git",
            "ssh_url_to_repo": f"git@sandbox.test:{full}.git",
            "namespace": {
                "id": group.id,
                "name": group.name,
                "path": group.path,
                "kind": "group",
                "full_path": group.path,
                "parent_id": None,
                "avatar_url": None,
                "web_url": f"{self.base}/groups/{group.path}",
            },
            "created_at": project.created_at,
            "last_activity_at": project.created_at,
            "shared_with_groups": [
                {
                    "group_id": gid,
                    "group_name": world.groups[gid].name,
                    "group_full_path": world.groups[gid].path,
                    "group_access_level": cap,
                }
                for gid, cap in project.shared_with.items()
            ],
            **settings.shown(project, level),
            "permissions": {
                "project_access": _access(direct),
                "group_access": _access(via_group or (level if level and not direct else None)),
            },
        } | self._forked_from(project)

    def _forked_from(self, project: Project) -> dict[str, Any]:
        """``forked_from_project`` (BasicProjectDetails), present only on a fork."""
        parent = self.world.projects.get(project.forked_from_id or 0)
        if parent is None:
            return {}
        full = self.world.full_path(parent)
        return {
            "forked_from_project": {
                "id": parent.id,
                "name": parent.name,
                "path": parent.path,
                "path_with_namespace": full,
                "default_branch": parent.default_branch,
                "web_url": f"{self.base}/{full}",
            }
        }

    # -- issues and notes ---------------------------------------------------------------------

    def issue(self, issue: Issue) -> dict[str, Any]:
        world = self.world
        project = world.projects[issue.project_id]
        full = world.full_path(project)
        assignees = [self.user_by_id(a) for a in issue.assignee_ids]
        notes = [n for n in world.notes_on(issue) if not n.system]
        return {
            "id": issue.id,
            "iid": issue.iid,
            "project_id": issue.project_id,
            "title": issue.title,
            "description": issue.description,
            "state": issue.state,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "closed_by": self.user_by_id(issue.closed_by_id),
            "labels": sorted(issue.labels),
            "milestone": None,
            "assignees": assignees,
            "assignee": assignees[0] if assignees else None,
            "author": self.user_by_id(issue.author_id),
            "type": "ISSUE",
            "issue_type": "issue",
            "user_notes_count": len(notes),
            "merge_requests_count": 0,
            "upvotes": 0,
            "downvotes": 0,
            "due_date": None,
            "confidential": issue.confidential,
            "discussion_locked": issue.discussion_locked,
            "web_url": f"{self.base}/{full}/-/issues/{issue.iid}",
            "references": {
                "short": f"#{issue.iid}",
                "relative": f"#{issue.iid}",
                "full": f"{full}#{issue.iid}",
            },
            "_links": {
                "self": f"{self.base}/api/v4/projects/{project.id}/issues/{issue.iid}",
                "notes": f"{self.base}/api/v4/projects/{project.id}/issues/{issue.iid}/notes",
                "project": f"{self.base}/api/v4/projects/{project.id}",
            },
            "moved_to_id": None,
            "subscribed": False,
        }

    def note(self, note: Note) -> dict[str, Any]:
        # A thread's notes on a merge request are resolvable; the sandbox never resolves one.
        resolvable = note.note_type in ("DiscussionNote", "DiffNote") and (
            note.noteable_type == "MergeRequest"
        )
        resolution = {"resolved": False, "resolved_by": None, "resolved_at": None}
        return {
            "id": note.id,
            "type": note.note_type,
            "body": note.body,
            "author": self.user_by_id(note.author_id),
            "created_at": note.created_at,
            "updated_at": note.updated_at,
            "system": note.system,
            "noteable_id": note.noteable_id,
            "noteable_type": note.noteable_type,
            "project_id": note.project_id,
            "resolvable": resolvable,
            **(resolution if resolvable else {}),
            "confidential": note.internal,
            "internal": note.internal,
            "imported": False,
            "imported_from": "none",
            "noteable_iid": note.noteable_iid,
            "commands_changes": {},
            **({"position": dict(note.position)} if note.position is not None else {}),
        }

    # -- repository ---------------------------------------------------------------------------

    def commit(self, commit: Commit, *, detail: bool = False) -> dict[str, Any]:
        full = self.world.full_path(self.world.projects[commit.project_id])
        title = commit.message.split("\n", 1)[0]
        out: dict[str, Any] = {
            "id": commit.id,
            "short_id": commit.id[:8],
            "created_at": commit.created_at,
            "parent_ids": list(commit.parent_ids),
            "title": title,
            "message": commit.message,
            "author_name": commit.author_name,
            "author_email": commit.author_email,
            "authored_date": commit.created_at,
            "committer_name": commit.author_name,
            "committer_email": commit.author_email,
            "committed_date": commit.created_at,
            "trailers": {},
            "extended_trailers": {},
            "web_url": f"{self.base}/{full}/-/commit/{commit.id}",
        }
        if detail:
            last = max(
                (p for p in self.world.pipelines.values() if p.sha == commit.id),
                key=lambda p: p.id,
                default=None,
            )
            out |= {
                "stats": {"additions": 0, "deletions": 0, "total": 0},
                "status": self.pipeline_status(last) if last else None,
                "last_pipeline": self.pipeline(last, basic=True) if last else None,
                "project_id": commit.project_id,
            }
        return out

    def branch(self, project: Project, name: str, viewer: User | None) -> dict[str, Any]:
        world = self.world
        full = world.full_path(project)
        head = project.branches[name]
        default_head = project.branches.get(project.default_branch, "")
        return {
            "name": name,
            "merged": name != project.default_branch and repo.contains(world, default_head, head),
            "protected": bool(protection.matching(project, name)),
            "default": name == project.default_branch,
            "developers_can_push": protection.developers_can(project, name, "push"),
            "developers_can_merge": protection.developers_can(project, name, "merge"),
            "can_push": protection.may(world, viewer, project, name, "push"),
            "web_url": f"{self.base}/{full}/-/tree/{name}",
            "commit": self.commit(self.world.commits[project.branches[name]]),
        }

    # -- CI -----------------------------------------------------------------------------------

    def pipeline_status(self, pipeline: Pipeline) -> str:
        return pipeline.status or composite_status(self.world.jobs_of(pipeline))

    def pipeline(self, pipeline: Pipeline, *, basic: bool = False) -> dict[str, Any]:
        full = self.world.full_path(self.world.projects[pipeline.project_id])
        status = self.pipeline_status(pipeline)
        out: dict[str, Any] = {
            "id": pipeline.id,
            "iid": pipeline.iid,
            "project_id": pipeline.project_id,
            "sha": pipeline.sha,
            "ref": pipeline.ref,
            "status": status,
            "source": pipeline.source,
            "created_at": pipeline.created_at,
            "updated_at": pipeline.updated_at,
            "web_url": f"{self.base}/{full}/-/pipelines/{pipeline.id}",
        }
        if basic:
            return out
        finished = pipeline.updated_at if status in TERMINAL else None
        return out | {
            "before_sha": "0" * 40,
            "tag": False,
            "yaml_errors": pipeline.yaml_errors,
            "user": self.user_by_id(pipeline.user_id),
            "started_at": pipeline.created_at,
            "finished_at": finished,
            "committed_at": None,
            "duration": 0 if finished else None,
            "queued_duration": 0,
            "coverage": None,
            "detailed_status": {
                "icon": f"status_{status}",
                "text": status,
                "label": status,
                "group": status,
                "tooltip": status,
                "has_details": True,
                "details_path": f"/{full}/-/pipelines/{pipeline.id}",
                "illustration": None,
                "favicon": f"favicon_status_{status}",
            },
        }

    def bridge(self, job: Job) -> dict[str, Any]:
        """API::Entities::Ci::Bridge (GET .../pipelines/:id/bridges): the job's fields that a
        trigger job has, and the pipeline it started."""
        kept = (
            "id", "name", "stage", "status", "allow_failure", "ref", "tag", "coverage",
            "created_at", "started_at", "finished_at", "erased_at", "duration",
            "queued_duration", "user", "commit", "pipeline", "web_url",
        )  # fmt: skip
        out = {key: value for key, value in self.job(job).items() if key in kept}
        child = self.world.pipelines.get(job.downstream_id or 0)
        return out | {"downstream_pipeline": self.pipeline(child, basic=True) if child else None}

    def job(self, job: Job) -> dict[str, Any]:
        """API::Entities::Ci::Job (the pipeline's jobs, GET /job, a retry's answer)."""
        pipeline = self.world.pipelines[job.pipeline_id]
        full = self.world.full_path(self.world.projects[pipeline.project_id])
        user = self.world.users.get(pipeline.user_id or 0)
        return {
            "id": job.id,
            "name": job.name,
            "stage": job.stage,
            "status": job.status,
            "allow_failure": job.allow_failure,
            "ref": pipeline.ref,
            "tag": False,
            "coverage": None,
            "created_at": job.created_at,
            "started_at": job.started_at,
            "finished_at": job.finished_at,
            "erased_at": None,
            "duration": _seconds(job.started_at, job.finished_at),
            "queued_duration": _seconds(job.created_at, job.started_at) or 0.0,
            "user": self.user(user) if user else None,
            "commit": self.commit(self.world.commits[pipeline.sha])
            if pipeline.sha in self.world.commits
            else None,
            "pipeline": self.pipeline(pipeline, basic=True),
            "web_url": f"{self.base}/{full}/-/jobs/{job.id}",
            "project": {"ci_job_token_scope_enabled": False},
            "artifacts": [],
            "artifacts_expire_at": None,
            "runner": None,
            "runner_manager": None,
            "archived": False,
            "source": pipeline.source,
            "tag_list": [],
        } | ({"failure_reason": "script_failure"} if job.status == "failed" else {})


def composite_status(jobs: list[Job]) -> str:
    """A pipeline's status from its jobs; an allowed failure counts as a success."""
    statuses = {"success" if j.allow_failure and j.status == "failed" else j.status for j in jobs}
    if not statuses:
        return "created"
    active = statuses & {"created", "waiting_for_resource", "preparing", "pending", "running"}
    if active:
        if "running" in statuses or statuses & TERMINAL:
            return "running"
        return "pending" if "pending" in statuses else "created"
    for status in ("failed", "canceled", "manual", "scheduled"):
        if status in statuses:
            return status
    return "skipped" if statuses == {"skipped"} else "success"


def _seconds(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    parse = datetime.fromisoformat
    return round((parse(end) - parse(start)).total_seconds(), 3)


def _access(level: int | None) -> dict[str, int] | None:
    return {"access_level": level, "notification_level": 3} if level else None
