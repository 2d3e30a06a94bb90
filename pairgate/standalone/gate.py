"""gate_merge: the one function of the gate that reads GitLab, then decides; ``judge``: the
decision alone, from facts already read (merge-check's and the audit's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairgate.standalone.approvals import edit_candidates
from pairgate.standalone.config import Config
from pairgate.standalone.fold import mr_freeze_reason
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import Freeze, Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_freezes, read_last_edited, read_ledger
from pairgate.standalone.scope import (
    AutomationFamily,
    Scope,
    cited_issues,
    decide_scope,
    load_automation_families,
    roster_path,
    under,
)
from pairgate.standalone.verdict import GateVerdict, decide

__all__ = [
    "gate_merge",
    "gate_scope",
    "group_project_paths",
    "judge_merge",
    "ledger_issues",
    "project_in_group",
]


def project_in_group(client: GitLab, config: Config, project: str) -> bool:
    """Is the project in the group's listing? A project under group_path is, by its path;
    only a project elsewhere costs the read of the listing (shared-in projects included)."""
    if under(project, config.group_path):
        return True
    return any(p.casefold() == project.casefold() for p in group_project_paths(client, config))


def group_project_paths(client: GitLab, config: Config) -> list[str]:
    """Every project in the group's listing, shared-in projects and subgroups included."""
    listing = client.get_all(
        f"groups/{config.group_id}/projects",
        with_shared="true",
        include_subgroups="true",
        simple="true",
        per_page=100,
    )
    return [str(p.get("path_with_namespace", "")) for p in listing]


def gate_scope(
    mr: MergeRequestFacts,
    *,
    in_group: bool,
    config: Config,
    families: Sequence[AutomationFamily],
) -> tuple[tuple[int, ...], Scope]:
    """The tracker issues the MR cites and whether it is gated: pure."""
    cited = (
        cited_issues(mr.text, mr_project=mr.project, tracker=config.tracker_project)
        if in_group
        else ()
    )
    scope = decide_scope(mr, cited=cited, in_group=in_group, config=config, families=families)
    return cited, scope


def ledger_issues(cited: Sequence[int], config: Config) -> tuple[int, ...]:
    """The cited issues whose ledgers the verdict needs: all but the generic tracking issue."""
    generic = config.generic_tracking_issue
    return tuple(issue for issue in cited if issue != generic)


def judge_merge(
    mr: MergeRequestFacts,
    *,
    cited: Sequence[int],
    scope: Scope,
    ledgers: Mapping[int, Ledger],
    windows: Sequence[tuple[int, Freeze]],
    edits: Mapping[int, str | None],
    config: Config,
    now: float,
) -> GateVerdict:
    """The verdict from facts already read: pure. ``ledgers`` holds the fold of every issue
    ``ledger_issues`` names (nothing, out of scope); ``windows`` every freeze window that can
    bind the MR (those of its cited issues and of the issues labelled as holding one); ``edits``
    GitLab's lastEditedAt of the approval notes that could count (an approval whose edit state
    is missing does not count); ``now`` is when the merge is judged (live windows end by it)."""
    frozen = (
        mr_freeze_reason(windows, mr=MrRef(mr.project, mr.iid), now=now, config=config)
        if scope.in_scope
        else None
    )
    return decide(
        mr, scope=scope, cited=cited, ledgers=ledgers, config=config, edits=edits, frozen=frozen
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
    """The merge gate's one verdict for ``project!iid``: reads, then ``judge_merge`` decides.

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
    elif not under(project, config.group_path):
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
        cited, scope = gate_scope(outside, in_group=False, config=config, families=())
        return judge_merge(
            outside,
            cited=cited,
            scope=scope,
            ledgers={},
            windows=(),
            edits={},
            config=config,
            now=now,
        )
    mr = MergeRequestFacts.from_api(data or client.get(mr_path), project)
    cited, scope = gate_scope(mr, in_group=True, config=config, families=families)
    ledgers: dict[int, Ledger] = {}
    windows: list[tuple[int, Freeze]] = []
    edits: dict[int, str | None] = {}
    if scope.in_scope:
        for issue in ledger_issues(cited, config):
            ledgers[issue] = read_ledger(client, config, issue)
        windows = read_freezes(client, config, known=ledgers)
        edits = read_last_edited(client, config, edit_candidates(mr, ledgers, config=config))
    return judge_merge(
        mr,
        cited=cited,
        scope=scope,
        ledgers=ledgers,
        windows=windows,
        edits=edits,
        config=config,
        now=now,
    )
