"""What the ownership verbs read about merge requests: the head, the pipeline rule, and which
open merge requests cite an issue."""

from __future__ import annotations

import re
from typing import Any

from pairgate.ownership import Config, GitLab, UsageError, cited_issues, encode_project
from pairgate.turn import read_found

# The one job whose failure does not block an offer: it fails BECAUSE the approval is not at
# the head yet, which is what the offer is asking someone to fix.
APPROVAL_JOB = "validate-mr-approval-at-head"
SHA = re.compile(r"^[0-9a-f]{40}$")


def mr_path(project: str, iid: int) -> str:
    return f"projects/{encode_project(project)}/merge_requests/{iid}"


def read_mr(client: GitLab, project: str, iid: int, *, cli: str) -> dict[str, Any]:
    return read_found(client, mr_path(project, iid), f"{project}!{iid}", cli=cli)


def checked_sha(sha: str, *, cli: str) -> str:
    if not SHA.match(sha):
        raise UsageError(
            f"{cli}: --sha {sha!r} is not a full commit SHA (40 lower-case hex characters); "
            "an offer and an approval name exactly one commit"
        )
    return sha


def head_of(mr: dict[str, Any]) -> str | None:
    return mr.get("sha") or (mr.get("diff_refs") or {}).get("head_sha")


def has_commits(client: GitLab, project: str, iid: int) -> bool:
    return bool(client.get(f"{mr_path(project, iid)}/commits", per_page=1))


def pipeline_problem(client: GitLab, project: str, mr: dict[str, Any], head: str) -> str | None:
    """Why the head's pipeline blocks an offer ("head pipeline <id> failed (failed: <jobs>)",
    to follow "its " or "<mr>'s "), or None. Only a failed pipeline blocks, and not when its only
    blocking failures are the approval-at-head job."""
    pipeline = mr.get("head_pipeline")
    if not pipeline or pipeline.get("sha") != head:  # absent, or stale (an older commit's)
        listed = client.get(f"{mr_path(project, mr['iid'])}/pipelines")
        pipeline = next((p for p in listed or [] if p.get("sha") == head), None)
    if not pipeline or pipeline.get("status") != "failed":
        return None
    jobs = client.get_all(
        f"projects/{pipeline.get('project_id') or encode_project(project)}"
        f"/pipelines/{pipeline['id']}/jobs"
    )
    blocking = sorted(
        {j["name"] for j in jobs if j.get("status") == "failed" and not j.get("allow_failure")}
    )
    if blocking == [APPROVAL_JOB]:
        return None
    failed = f" (failed: {', '.join(blocking)})" if blocking else ""
    return f"head pipeline {pipeline['id']} failed{failed}"


def cites(text: str, issue: int, *, mr_project: str, config: Config) -> bool:
    """Does an MR's title or description cite tracker issue ``issue``? The gate's own reading
    (ownership.cited_issues), so an offer and the merge gate agree on what an MR cites."""
    return issue in cited_issues(text, mr_project=mr_project, tracker=config["tracker_project"])


def project_of(mr: dict[str, Any]) -> str:
    full = str((mr.get("references") or {}).get("full", ""))
    return full.rsplit("!", 1)[0]


def citing(mrs: list[dict[str, Any]], issue: int, config: Config) -> list[dict[str, Any]]:
    """The merge requests among ``mrs`` whose title or description cites the issue. Pure."""
    return [
        mr
        for mr in mrs
        if cites(
            f"{mr.get('title', '')}\n{mr.get('description') or ''}",
            issue,
            mr_project=project_of(mr),
            config=config,
        )
    ]


def open_group_mrs(client: GitLab, config: Config) -> list[dict[str, Any]]:
    """Every open merge request in the group: one group-wide read."""
    return client.get_all(f"groups/{config['group_id']}/merge_requests", state="opened")


def citing_mrs(client: GitLab, config: Config, issue: int) -> list[dict[str, Any]]:
    """The open merge requests in the group that cite the issue."""
    return citing(open_group_mrs(client, config), issue, config)
