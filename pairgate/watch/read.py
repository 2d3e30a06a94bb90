"""One poll's reads from GitLab: the I/O edge of the watcher.

An idle poll costs three listings, each asking only for what changed since the newest change the
last poll saw (``updated_after``, looking back OVERLAP seconds for writes that committed late):
the group's merge requests, the tracker's issues, and each watched project's pipelines (GitLab
does not move a merge request's ``updated_at`` when its pipeline changes). Only what those
listings name as changed is read in full: a merge request's own page (its head and head
pipeline), its discussions and its approvals; an issue's notes (its ledger).

GitLab does not move ``updated_at`` when a note is deleted either, so every SWEEP seconds the poll
lists every open merge request and compares their comment counts too. Whatever a read failed on
keeps its old snapshot and holds the listing's mark back, so the next poll reads it again:
nothing is marked seen that was not read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pairgate.output import epoch, iso
from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import cited_issues
from pairgate.tracker import mr_path, pooled
from pairgate.watch.diff import pipeline_commit
from pairgate.watch.records import (
    IssueSnap,
    MrSnap,
    NoteSnap,
    PipelineSnap,
    mr_subject,
)

OVERLAP = 120.0  # seconds a listing looks back before the newest change the last one saw
SWEEP = 1800.0  # seconds between full listings of the open merge requests


@dataclass(frozen=True)
class Marks:
    """The newest ``updated_at`` each listing has shown (GitLab's clock, never ours)."""

    mrs: str | None = None
    issues: str | None = None
    pipelines: Mapping[str, str] = field(default_factory=dict)  # project id -> newest
    swept_at: float | None = None  # our clock: when the open merge requests were last all listed


@dataclass
class Reading:
    mrs: dict[str, MrSnap] = field(default_factory=dict)  # read in full this poll
    pipelines: dict[str, list[PipelineSnap]] = field(default_factory=dict)  # from the listings
    issues: dict[str, IssueSnap] = field(default_factory=dict)
    marks: Marks = field(default_factory=Marks)
    swept: bool = False
    errors: list[str] = field(default_factory=list)


def look_back(mark: str) -> str:
    seconds = epoch(mark)
    return mark if seconds is None else str(iso(seconds - OVERLAP))


def next_mark(mark: str | None, stamps: Sequence[str], held: Sequence[str]) -> str | None:
    """The next mark: the newest stamp listed, but no later than the oldest one whose read
    failed (so it is listed again)."""
    pool = [s for s in (mark, *stamps) if s and epoch(s) is not None]
    best = max(pool, key=lambda s: epoch(s) or 0.0, default=None)
    if held:
        oldest = min(held, key=lambda s: epoch(s) or 0.0)
        if best is None or (epoch(oldest) or 0.0) < (epoch(best) or 0.0):
            return oldest
    return best


def cites(mr: Mapping[str, Any], config: Config) -> tuple[int, ...]:
    """The tracker issues an MR cites (the gate's reading), without the generic tracking issue."""
    text = f"{mr.get('title', '')}\n{mr.get('description') or ''}"
    found = cited_issues(
        text, mr_project=MergeRequestFacts.from_api(mr).project, tracker=config.tracker_project
    )
    return tuple(i for i in found if i != config.generic_tracking_issue)


def _jobs_path(p: Mapping[str, Any]) -> str:
    return f"projects/{p.get('project_id')}/pipelines/{p['id']}/jobs"


def failed_jobs(client: GitLab, pipelines: Sequence[Mapping[str, Any]]) -> dict[int, list[Any]]:
    """The failed jobs of each failed pipeline, read concurrently (one request each)."""
    failed = {int(p["id"]): p for p in pipelines if p.get("status") == "failed"}
    answers = pooled(
        lambda p: client.get_all(_jobs_path(p), **{"scope[]": "failed"}), list(failed.values())
    )
    return dict(zip(failed, answers, strict=True))


def _pipeline(p: Mapping[str, Any], sha: str, jobs: Mapping[int, list[Any]]) -> PipelineSnap:
    found = jobs.get(int(p["id"]), [])
    return PipelineSnap(
        int(p["id"]),
        sha,
        str(p.get("status") or ""),
        str(p.get("updated_at") or ""),
        str(p.get("web_url") or ""),
        tuple(sorted({j["name"] for j in found if not j.get("allow_failure")})),
        tuple(sorted({j["name"] for j in found if j.get("allow_failure")})),
    )


def _notes(discussions: Sequence[Mapping[str, Any]]) -> tuple[NoteSnap, ...]:
    out = []
    for d in discussions:
        for n in d.get("notes") or ():
            if n.get("system"):
                continue
            pos = n.get("position") or None
            where = (
                f"{pos.get('new_path') or pos.get('old_path')}:{pos.get('new_line') or pos.get('old_line')}"
                if pos
                else None
            )
            out.append(
                NoteSnap(
                    int(n["id"]),
                    str((n.get("author") or {}).get("username", "?")),
                    str(n.get("body") or ""),
                    str(n.get("created_at") or ""),
                    str(n.get("updated_at") or ""),
                    False,
                    str(d.get("id") or ""),
                    not d.get("individual_note", True),
                    where,
                )
            )
    return tuple(sorted(out, key=lambda n: n.id))


def read_mr(client: GitLab, config: Config, listed: Mapping[str, Any]) -> MrSnap:
    """A merge request in full: its page, and while it is open its discussions, approvals and
    head pipeline (with the failed jobs' names when it failed)."""
    project, iid = MergeRequestFacts.from_api(listed).project, int(listed["iid"])
    path = mr_path(project, iid)
    mr = client.get(path)
    snap = MrSnap(
        project=project,
        iid=iid,
        project_id=int(mr.get("project_id") or 0),
        source_project_id=int(mr.get("source_project_id") or mr.get("project_id") or 0),
        source_branch=str(mr.get("source_branch") or ""),
        title=str(mr.get("title") or ""),
        web_url=str(mr.get("web_url") or ""),
        state=str(mr.get("state") or ""),
        sha=MergeRequestFacts.from_api(mr).head_sha,
        updated_at=str(mr.get("updated_at") or ""),
        user_notes_count=int(mr.get("user_notes_count") or 0),
        cites=cites(mr, config),
        merge_commit_sha=mr.get("merge_commit_sha"),
    )
    if snap.state != "opened":
        return snap
    discussions = client.get_all(f"{path}/discussions")
    approvals = client.get(f"{path}/approvals") or {}
    approved = tuple(
        str((a.get("user") or {}).get("username", "?")) for a in approvals.get("approved_by") or ()
    )
    pipelines: tuple[PipelineSnap, ...] = ()
    head = mr.get("head_pipeline")
    sha = pipeline_commit(head, snap) if head else None
    if head and sha:
        head = {"project_id": snap.project_id, **head}
        pipelines = (_pipeline(head, sha, failed_jobs(client, [head])),)
    return dataclasses.replace(
        snap, notes=_notes(discussions), approved_by=approved, pipelines=pipelines
    )


def guarded(func: Any, *args: Any) -> tuple[Any, str | None]:
    try:
        return func(*args), None
    except PairgateError as exc:
        return None, exc.message


def read_mrs(
    client: GitLab,
    config: Config,
    *,
    marks: Marks,
    known: Mapping[str, tuple[str | None, int | None, str | None]],
    watched: Mapping[str, MrSnap],
    now: float,
    reading: Reading,
) -> Marks:
    """List the group's merge requests (all open ones on a sweep, else those changed since the
    mark), read in full the watched ones that changed, and return the MR marks to keep."""
    group = f"groups/{config.group_id}/merge_requests"
    sweep = marks.mrs is None or marks.swept_at is None or now - marks.swept_at >= SWEEP
    try:
        if sweep:
            listed = client.get_all(group, state="opened")
        else:
            assert marks.mrs is not None
            listed = client.get_all(group, state="all", updated_after=look_back(marks.mrs))
    except PairgateError as exc:
        reading.errors.append(exc.message)
        return marks
    todo: dict[str, Mapping[str, Any]] = {}
    for item in listed:
        subject = mr_subject(MergeRequestFacts.from_api(item).project, int(item["iid"]))
        before = known.get(subject)
        wanted = subject in watched or (item.get("state") == "opened" and cites(item, config))
        fresh = (item.get("updated_at"), item.get("user_notes_count"), item.get("state"))
        if wanted and (before is None or tuple(before) != fresh):
            todo[subject] = item
    if sweep:  # an open MR the full listing no longer shows: read it to learn what became of it
        seen = {mr_subject(MergeRequestFacts.from_api(i).project, int(i["iid"])) for i in listed}
        for subject, snap in watched.items():
            if subject not in seen and snap.state == "opened":
                todo[subject] = {
                    "iid": snap.iid,
                    "references": {"full": f"{snap.project}!{snap.iid}"},
                }
    results = pooled(lambda item: guarded(read_mr, client, config, item), list(todo.values()))
    held = []
    for (subject, item), (snap, error) in zip(todo.items(), results, strict=True):
        if snap is None:
            reading.errors.append(f"{subject.split(':', 1)[1]}: {error}")
            held.append(str(item.get("updated_at") or marks.mrs or ""))
        else:
            reading.mrs[subject] = snap
    stamps = [str(i.get("updated_at") or "") for i in listed]
    reading.swept = sweep
    return Marks(
        mrs=next_mark(marks.mrs, stamps, [h for h in held if h]),
        issues=marks.issues,
        pipelines=marks.pipelines,
        swept_at=now if sweep else marks.swept_at,
    )


def read_pipelines(
    client: GitLab, *, marks: Marks, mrs: Mapping[str, MrSnap], reading: Reading
) -> dict[str, str]:
    """Each watched project's pipelines changed since its mark (the first time: the newest
    page), matched to the merge requests' commits. Returns the pipeline marks to keep."""
    projects = sorted({str(p) for m in mrs.values() for p in (m.project_id, m.source_project_id)})

    def one(pid: str) -> list[Any]:
        path = f"projects/{encode_project(pid)}/pipelines"
        mark = marks.pipelines.get(pid)
        if mark is None:  # the first time: the newest page is enough to start from
            return list(next(iter(client.pages(path, order_by="updated_at", sort="desc")), []))
        return client.get_all(path, updated_after=look_back(mark), order_by="updated_at")

    out = dict(marks.pipelines)
    answers = pooled(lambda p: guarded(one, p), projects)
    for pid, (listed, error) in zip(projects, answers, strict=True):
        if listed is None:
            reading.errors.append(f"pipelines of project {pid}: {error}")
            continue
        found = []
        for item in sorted(listed, key=lambda p: int(p["id"])):
            for subject, mr in mrs.items():
                sha = pipeline_commit(item, mr) if mr.state == "opened" else None
                have = mr.pipeline_for(sha) if sha else None
                if have and (have.id, have.updated_at) == (item["id"], item.get("updated_at")):
                    continue  # seen as it is (the listing looks back OVERLAP seconds)
                if sha:
                    found.append((subject, item, sha))
        jobs, error = guarded(failed_jobs, client, [item for _, item, _ in found])
        if jobs is None:
            reading.errors.append(f"pipelines of project {pid}: {error}")
            continue
        for subject, item, sha in found:
            reading.pipelines.setdefault(subject, []).append(_pipeline(item, sha, jobs))
        newest = next_mark(out.get(pid), [str(p.get("updated_at") or "") for p in listed], [])
        if newest:
            out[pid] = newest
    return out


def read_named(
    client: GitLab, config: Config, named: Mapping[str, tuple[str, int]], reading: Reading
) -> None:
    """These merge requests (subject -> (project path, iid)) read in full into ``reading``: a
    webhook named them, or another watcher committed a snapshot of them while they were read."""
    items = [{"iid": iid, "references": {"full": f"{p}!{iid}"}} for p, iid in named.values()]
    results = pooled(lambda item: guarded(read_mr, client, config, item), items)
    for subject, (snap, error) in zip(named, results, strict=True):
        if snap is None:
            reading.errors.append(f"{subject.split(':', 1)[1]}: {error}")
        else:
            reading.mrs[subject] = snap


def read_pipelines_by_id(
    client: GitLab,
    wanted: Sequence[tuple[int, int]],
    mrs: Mapping[str, MrSnap],
    reading: Reading,
) -> None:
    """These pipelines ((project id, pipeline id), a webhook's), matched to the merge
    requests' commits as a listed pipeline is, into ``reading.pipelines``."""
    answers = pooled(
        lambda w: guarded(client.get, f"projects/{w[0]}/pipelines/{w[1]}"), list(wanted)
    )
    found = []
    for (project_id, pipeline_id), (item, error) in zip(wanted, answers, strict=True):
        if item is None:
            reading.errors.append(f"pipeline {pipeline_id} of project {project_id}: {error}")
            continue
        item = {"project_id": project_id, **item}
        for subject, mr in mrs.items():
            sha = pipeline_commit(item, mr) if mr.state == "opened" else None
            if sha:
                found.append((subject, item, sha))
    jobs, error = guarded(failed_jobs, client, [item for _, item, _ in found])
    if jobs is None:
        reading.errors.append(f"failed jobs: {error}")
        return
    for subject, item, sha in found:
        reading.pipelines.setdefault(subject, []).append(_pipeline(item, sha, jobs))
