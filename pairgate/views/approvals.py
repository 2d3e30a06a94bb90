"""How status, board, waiting and sync show an approval: its standing and its independence,
judged by the same pure rules the gate applies (pairgate/standalone/approvals.py) over the
ledgers of every issue the approved merge request cites. The I/O edge reads the ones missing.

The gate alone reads whether an approval's note was edited (GraphQL lastEditedAt): these
surfaces still show such an approval, as the issue shows it, and merge-check says it does not
count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pairgate.standalone.approvals import (
    binding_problem,
    chain_problem,
    independence,
    independence_basis,
    v1_note,
)
from pairgate.standalone.config import Config
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Approval, Ledger
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_ledger
from pairgate.standalone.scope import cited_issues
from pairgate.tracker import pooled


def cited_by(mr: MergeRequestFacts, config: Config) -> list[int]:
    """The tracker issues ``mr`` cites, the generic tracking issue left out (as the gate)."""
    cited = cited_issues(mr.text, mr_project=mr.project, tracker=config.tracker_project)
    return [n for n in cited if n != config.generic_tracking_issue]


def with_cited(
    client: GitLab,
    config: Config,
    known: Mapping[int, Ledger],
    mrs: Iterable[MergeRequestFacts | None],
) -> dict[int, Ledger]:
    """``known`` plus the ledger of every issue the ``mrs`` cite that is not in it, read
    concurrently: what the independence rule needs to judge approvals of those MRs."""
    wanted = sorted({n for mr in mrs if mr for n in cited_by(mr, config)} - set(known))
    read = pooled(lambda n: read_ledger(client, config, n), wanted)
    return {**known, **dict(zip(wanted, read, strict=True))}


def scope_for(
    issue: int, mr: MergeRequestFacts | None, ledgers: Mapping[int, Ledger], config: Config
) -> dict[int, Ledger]:
    """The ledgers an approval on ``issue`` of ``mr`` is judged over: its own issue's, and
    those of every issue the MR cites (when the MR could be read)."""
    cited = cited_by(mr, config) if mr else []
    return {issue: ledgers[issue], **{n: ledgers[n] for n in cited if n in ledgers}}


def approval_state(
    approval: Approval,
    ledger: Ledger,
    mr: MergeRequestFacts | None,
    reasons: tuple[str, ...],
) -> tuple[str, str | None]:
    """(status, why): withdrawn | self (not independent) | unknown (the MR could not be read)
    | stale (another head) | retargeted | base-moved | after-break | at-head."""
    if approval.withdrawn_by is not None:
        return "withdrawn", (
            f"withdrawn by {approval.approver} (note {approval.withdrawn_by}): "
            f"{approval.withdraw_reason}"
        )
    if reasons:
        return "self", "not independent: " + "; ".join(reasons)
    if mr is None or mr.head_sha is None:
        return "unknown", None
    bound = binding_problem(approval, mr)
    if bound is not None:
        code, why = bound
        return ("stale" if code == "not-at-head" else code), why
    broken = chain_problem(approval, ledger)
    if broken is not None:
        return "after-break", broken
    return "at-head", None


def approval_doc(
    issue: int,
    approval: Approval,
    ledgers: Mapping[int, Ledger],
    mr: MergeRequestFacts | None,
    config: Config,
) -> dict[str, Any]:
    """The --json entry of one approval: what it binds, its standing and its independence."""
    reasons = independence(issue, approval, scope_for(issue, mr, ledgers, config), config=config)
    status, why = approval_state(approval, ledgers[issue], mr, reasons)
    return {
        "note_id": approval.note_id,
        "approver": approval.approver,
        "to": approval.to,
        "mr": {"project": approval.mr.project, "iid": approval.mr.iid},
        "sha": approval.sha,
        "mr_head": mr.head_sha if mr else None,
        "status": status,
        "why": why,
        "self_approval": approval.self_approval,
        "self_because": approval.self_because,
        "independent": not reasons,
        "independence_reasons": list(reasons),
        "version": approval.version,
        "target_branch": approval.target_branch,
        "base_sha": approval.base_sha,
        "start_sha": approval.start_sha,
        "withdrawn_by": approval.withdrawn_by,
        "withdraw_reason": approval.withdraw_reason,
        "v1_note": v1_note(approval),
        "not_covering": list(approval.not_covering),
        "reason": approval.reason,
    }


def basis_doc(config: Config) -> dict[str, str]:
    """What independence rests on in this deployment, for every surface that judges it:
    ``mode`` (account-bound, or names-and-sessions) and what it ``says``."""
    mode = "account-bound" if config.account_bound else "names-and-sessions"
    return {"mode": mode, "says": independence_basis(config)}
