"""gate_merge: the one function of the gate that reads GitLab, then decides."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairgate.standalone.approvals import edit_candidates
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import mr_freeze, read_last_edited, read_ledger
from pairgate.standalone.scope import (
    AutomationFamily,
    _under,
    cited_issues,
    decide_scope,
    load_automation_families,
    roster_path,
)
from pairgate.standalone.verdict import GateVerdict, decide


def project_in_group(client: GitLab, config: Config, project: str) -> bool:
    """Is the project in the group's listing? A project under group_path is, by its path;
    only a project elsewhere costs the read of the listing (shared-in projects included)."""
    if _under(project, config["group_path"]):
        return True
    listing = client.get_all(
        f"groups/{config['group_id']}/projects",
        with_shared="true",
        include_subgroups="true",
        simple="true",
        per_page=100,
    )
    return any(
        str(p.get("path_with_namespace", "")).casefold() == project.casefold() for p in listing
    )


def gate_merge(
    client: GitLab,
    config: Config,
    project: str,
    iid: int,
    *,
    families: Sequence[AutomationFamily] | None = None,
    now: float,
) -> GateVerdict:
    """The merge gate's one verdict for ``project!iid``: reads, then decides.

    Reads the group listing when the path alone does not settle it, then (in the group) the MR
    and the ledger of every cited tracker issue, and, for the approvals that would pass, whether
    GitLab reports their notes as edited (GraphQL). Any read error propagates as a PairgateError:
    the gate fails closed, it never passes what it could not read. ``families`` defaults to the
    roster found beside ownership.py or the configuration; ``now`` is the run context's clock
    (freeze windows end by it).
    """
    if families is None:
        families = load_automation_families(roster_path(config))
    mr_path = f"projects/{encode_project(project)}/merge_requests/{int(iid)}"
    data: Mapping[str, Any] | None = None
    path = project
    if project.isdigit():  # a numeric id: the MR says which path it names
        data = client.get(mr_path)
        path = MergeRequestFacts.from_api(data, project).project
    elif not _under(project, config["group_path"]):
        # GitLab answers a moved project's old path too: the MR says which project it is in.
        # One the reader cannot see is judged by the path it was named by.
        try:
            data = client.get(mr_path)
            path = MergeRequestFacts.from_api(data, project).project
        except GitLabError as exc:
            if exc.status != 404:
                raise
    # Outside the group nothing else matters, and the reader may not even see the project.
    if not project_in_group(client, config, path):
        outside = MergeRequestFacts(path, int(iid), "", "", None, "", (), None)
        scope = decide_scope(outside, cited=(), in_group=False, config=config, families=())
        return decide(outside, scope=scope, cited=(), ledgers={}, config=config, edits={})
    mr = MergeRequestFacts.from_api(data or client.get(mr_path), project)
    tracker = config["tracker_project"]
    cited = cited_issues(mr.text, mr_project=mr.project, tracker=tracker)
    scope = decide_scope(mr, cited=cited, in_group=True, config=config, families=families)
    ledgers: dict[int, Ledger] = {}
    frozen = None
    edits: dict[int, str | None] = {}
    if scope.in_scope:
        generic = config["generic_tracking_issue"]
        for issue in cited:
            if issue != generic:
                ledgers[issue] = read_ledger(client, config, issue)
        frozen = mr_freeze(client, config, MrRef(mr.project, mr.iid), known=ledgers, now=now)
        edits = read_last_edited(client, config, edit_candidates(mr, ledgers, config=config))
    return decide(
        mr, scope=scope, cited=cited, ledgers=ledgers, config=config, edits=edits, frozen=frozen
    )
