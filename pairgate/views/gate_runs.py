"""Has the head's pipeline run the gate since the approval? (status and board)

The answer is the newest merge request pipeline of the MR at its head (a ``refs/merge-requests/
<iid>/head`` pipeline at the head's sha, or a merged results or train pipeline) created at or
after the approval note, and the state of its ``validate-mr-merge-check`` job: the job of the
tracker-held pipeline and of the mr-merge-check component, the one that fails an in-scope merge
request without an independent approval at its head. A pipeline in a fork (its ref is a branch
name) never counts: it runs the fork's CI configuration.

States (``--json`` key ``gate.state``): ``none`` (no such pipeline: run ``approve
--server-approval-only`` to start one), ``no-gate-job`` (a pipeline without the job: the project
runs neither the tracker-held pipeline nor the component), ``pending`` (the job has not
finished), ``passed``, ``failed``, ``unknown`` (the pipelines could not be read).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import MrRef
from pairgate.tracker import mr_path
from pairgate.verbs.merge_requests import MERGE_CHECK_JOB

_FINISHED = {"success": "passed", "failed": "failed", "canceled": "failed", "skipped": "failed"}


def _stamp(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _counts(pipeline: dict[str, Any], iid: int, head: str, since: datetime | None) -> bool:
    ref = str(pipeline.get("ref") or "")
    if not ref.startswith(f"refs/merge-requests/{iid}/"):
        return False
    if ref.endswith("/head") and pipeline.get("sha") != head:
        return False
    created = _stamp(pipeline.get("created_at"))
    return since is None or (created is not None and created >= since)


def gate_run(client: GitLab, mr: MrRef, head: str, approved_at: str | None) -> dict[str, Any]:
    """The ``gate`` document of an approval at ``head`` written at ``approved_at``."""
    empty: dict[str, Any] = {
        "pipeline_id": None,
        "pipeline_status": None,
        "pipeline_web_url": None,
        "job": MERGE_CHECK_JOB,
        "job_status": None,
    }
    since = _stamp(approved_at)
    try:
        pipelines = client.get(f"{mr_path(mr.project, mr.iid)}/pipelines", per_page=100)
        pipeline = next(
            (p for p in pipelines or [] if isinstance(p, dict) and _counts(p, mr.iid, head, since)),
            None,
        )
        if pipeline is None:
            return {"state": "none", **empty}
        project = encode_project(str(pipeline.get("project_id") or mr.project))
        jobs = client.get_all(f"projects/{project}/pipelines/{int(pipeline['id'])}/jobs")
    except GitLabError as exc:
        return {"state": "unknown", **empty, "error": exc.message}
    job = next((j for j in jobs if j.get("name") == MERGE_CHECK_JOB), None)
    status = job.get("status") if job else None
    state = "no-gate-job" if job is None else _FINISHED.get(str(status), "pending")
    return {
        "state": state,
        **empty,
        "pipeline_id": pipeline["id"],
        "pipeline_status": pipeline.get("status"),
        "pipeline_web_url": pipeline.get("web_url"),
        "job_status": status,
    }


def gate_text(gate: dict[str, Any] | None) -> str:
    """One phrase for the terminal."""
    if gate is None:
        return ""
    pipeline = f"pipeline {gate['pipeline_id']}" if gate["pipeline_id"] else ""
    return {
        "none": "no pipeline at the head since the approval",
        "no-gate-job": f"{pipeline} has no {MERGE_CHECK_JOB} job",
        "pending": f"{pipeline}: {MERGE_CHECK_JOB} {gate['job_status']}",
        "passed": f"{pipeline}: {MERGE_CHECK_JOB} passed",
        "failed": f"{pipeline}: {MERGE_CHECK_JOB} {gate['job_status']}",
        "unknown": "pipelines unreadable",
    }[gate["state"]]
