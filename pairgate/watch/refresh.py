"""Webhooks into observations: read again what the hooks name (``webhook.targets``), exactly as
a poll reads it, and commit it as a poll commits (``runner.settle``). The same merge request
gives the same events whether a hook or a poll brought the watcher to read it, so routing,
batching and framing cannot tell them apart, and a hook and a poll racing on one change store
it once (the second compares with the snapshot the first committed).

A merge request is read when the hook showed it citing a tracker issue or the store already
watches it; a pipeline or a push only for the merge requests the store watches. A hook's reads
cost what a poll's reads of the same merge request cost (its page, discussions, approvals, and
a failed pipeline's jobs); there is no listing.
"""

from __future__ import annotations

from collections.abc import Callable

from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab
from pairgate.watch.read import Reading, read_named, read_pipelines_by_id
from pairgate.watch.read_ledgers import read_some
from pairgate.watch.records import MrSnap, issue_subject, mr_subject
from pairgate.watch.runner import Outcome, settle
from pairgate.watch.store import Store
from pairgate.watch.webhook import Targets


def refresh(
    client: GitLab,
    config: Config,
    store: Store,
    targets: Targets,
    *,
    now: float,
    finish: Callable[[bool], None],
) -> Outcome:
    """Read ``targets`` and commit what changed; ``finish`` runs inside the commit."""
    tracker = config.tracker_project
    known = store.known()
    versions = store.versions()
    watched: dict[str, MrSnap] = {}
    if targets.pipelines or targets.branches:
        open_mrs = [s for s, k in known.items() if s.startswith("mr:") and k[2] == "opened"]
        watched = {s: m for s, m in store.subjects(open_mrs).items() if isinstance(m, MrSnap)}
    reading = Reading()
    named: dict[str, tuple[str, int]] = {}
    for (project, iid), cites in sorted(targets.mrs.items()):
        subject = mr_subject(project, iid)
        if cites or subject in known:
            named[subject] = (project, iid)
    for project_id, branch in targets.branches:
        for subject, mr in watched.items():
            if mr.source_project_id == project_id and mr.source_branch == branch:
                named[subject] = (mr.project, mr.iid)
    read_pipelines_by_id(client, sorted(targets.pipelines), watched, reading)
    read_named(client, config, named, reading)
    cited = {
        i
        for m in reading.mrs.values()
        for i in m.cites
        if m.state == "opened" and issue_subject(tracker, i) not in known
    }
    issues = set(targets.issues) | cited
    if issues:
        read_some(client, config, sorted(issues), reading)
    counts = (len(reading.mrs), len(reading.issues))
    events, created = settle(client, config, store, reading, versions, now=now, finish=finish)
    return Outcome(tuple(events), tuple(created), tuple(reading.errors), False, *counts)
