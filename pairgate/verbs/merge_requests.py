"""What the ownership verbs read about merge requests: the head, the pipeline rule, and which
open merge requests cite an issue."""

from __future__ import annotations

import re

from pairgate.standalone.config import Config
from pairgate.standalone.errors import UsageError
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import cited_issues, under
from pairgate.tracker import mr_path, pooled

# The jobs whose failure does not block an offer: they fail BECAUSE no approval is at the head
# yet, which is what the offer is asking someone to fix (mr-ownership-gate's approval job, and
# mr-merge-check's job, which fails every merge request not yet approved at its head).
APPROVAL_JOB = "validate-mr-approval-at-head"
MERGE_CHECK_JOB = "validate-mr-merge-check"
AWAITING_APPROVAL = frozenset({APPROVAL_JOB, MERGE_CHECK_JOB})
SHA = re.compile(r"^[0-9a-f]{40}$")


def checked_sha(sha: str, *, cli: str) -> str:
    if not SHA.match(sha):
        raise UsageError(
            f"{cli}: --sha {sha!r} is not a full commit SHA (40 lower-case hex characters); "
            "an offer and an approval name exactly one commit"
        )
    return sha


def has_commits(client: GitLab, project: str, iid: int) -> bool:
    return bool(client.get(f"{mr_path(project, iid)}/commits", per_page=1))


def pipeline_problem(client: GitLab, mr: MergeRequestFacts, head: str) -> str | None:
    """Why the head's pipeline blocks an offer, or None. Only a failed pipeline blocks, and not
    when its only blocking failures are jobs that wait for the approval (AWAITING_APPROVAL). A
    failed pipeline with no failed job listed (a failed child pipeline's trigger job is not a
    job of the list) blocks."""
    pipeline = mr.head_pipeline
    if not pipeline or pipeline.get("sha") != head:  # absent, or stale (an older commit's)
        listed = client.get(f"{mr_path(mr.project, mr.iid)}/pipelines")
        pipeline = next((p for p in listed or [] if p.get("sha") == head), None)
    if not pipeline or pipeline.get("status") != "failed":
        return None
    jobs = client.get_all(
        f"projects/{pipeline.get('project_id') or encode_project(mr.project)}"
        f"/pipelines/{pipeline['id']}/jobs"
    )
    blocking = sorted(
        {j["name"] for j in jobs if j.get("status") == "failed" and not j.get("allow_failure")}
    )
    if blocking and set(blocking) <= AWAITING_APPROVAL:
        return None
    failed = f" (failed: {', '.join(blocking)})" if blocking else ""
    return f"head pipeline {pipeline['id']} failed{failed}"


def citing(mrs: list[MergeRequestFacts], issue: int, config: Config) -> list[MergeRequestFacts]:
    """The merge requests among ``mrs`` whose title or description cites the issue: the gate's
    own reading (cited_issues), so an offer and the merge gate agree on what an MR cites."""
    tracker = config.tracker_project
    return [m for m in mrs if issue in cited_issues(m.text, mr_project=m.project, tracker=tracker)]


def open_group_mrs(client: GitLab, config: Config) -> list[MergeRequestFacts]:
    """Every open merge request in the group and its subgroups: one group-wide read. GitLab's
    group listing leaves out the projects shared into the group; gated_open_mrs adds them."""
    listed = client.get_all(f"groups/{config.group_id}/merge_requests", state="opened")
    return [MergeRequestFacts.from_api(m) for m in listed]


def shared_in_projects(client: GitLab, config: Config) -> list[str]:
    """The projects shared into the group from outside its path whose merge requests are not
    disabled, by GitLab's own list of the group's shared projects: the same share links the
    gate's project listing adds (with_shared), read in one listing (a page per 100). A shared
    project under the group's path is left out: the group's merge request listing already holds
    it."""
    # A project with its merge requests feature disabled (a docs or wiki project shared in)
    # answers 403 to the listing of its merge requests, which would stop every verb; it has no
    # merge request that can be merged, so GitLab leaves it out here and nothing is lost.
    listed = client.get_all(
        f"groups/{config.group_id}/projects/shared",
        simple="true",
        with_merge_requests_enabled="true",
    )
    found: dict[str, str] = {}
    for item in listed:
        path = str(item.get("path_with_namespace") or "")
        if path and not under(path, config.group_path):
            found.setdefault(path.casefold(), path)
    return sorted(found.values(), key=str.casefold)


def gated_open_mrs(client: GitLab, config: Config) -> list[MergeRequestFacts]:
    """Every open merge request the gate judges, once each: the group's, then those of the
    projects shared into it, which the gate's scope takes in (group_project_paths) and GitLab's
    group-wide merge request listing leaves out. Cost: the group's listing and the listing of
    its shared projects; then one listing of open merge requests per shared-in project, none
    when there are none."""

    def project_mrs(project: str) -> list[MergeRequestFacts]:
        path = f"projects/{encode_project(project)}/merge_requests"
        return [
            MergeRequestFacts.from_api(m, project) for m in client.get_all(path, state="opened")
        ]

    found: dict[tuple[str, int], MergeRequestFacts] = {}
    listings = [
        open_group_mrs(client, config),
        *pooled(project_mrs, shared_in_projects(client, config)),
    ]
    for mr in (mr for listing in listings for mr in listing):
        found.setdefault((mr.project.casefold(), mr.iid), mr)
    return list(found.values())


def citing_mrs(client: GitLab, config: Config, issue: int) -> list[MergeRequestFacts]:
    """The open merge requests the gate judges that cite the issue, shared-in projects'
    included: what close refuses on, what handoff and `freeze --scope mr:<iid>` pick from, and
    what status lists."""
    return citing(gated_open_mrs(client, config), issue, config)
