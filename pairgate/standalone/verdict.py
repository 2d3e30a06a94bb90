"""The merge gate's verdict: pure functions from facts already read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pairgate.standalone.config import Config
from pairgate.standalone.ledger import Approval, Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import Scope


@dataclass(frozen=True)
class Check:
    """One validator's answer: the record job's or the approval job's."""

    ok: bool
    code: str
    message: str


@dataclass(frozen=True)
class GateVerdict:
    """The gate's one verdict. merge-check passes on ``allowed``; the record job on
    ``record.ok``; the approval job on ``approval.ok`` (a never-approved MR is ok there)."""

    allowed: bool
    in_scope: bool
    message: str
    code: str
    project: str
    iid: int
    head_sha: str | None
    cited_issues: tuple[int, ...]
    scope: str
    scope_detail: str
    record: Check
    approval: Check
    approved_by: str | None = None
    approval_issue: int | None = None
    approval_note: int | None = None
    approved_sha: str | None = None  # the commit the counting approval names (the head)
    warnings: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """merge-check --json: stable keys, documented in docs/agent-handoff-reference.md."""
        return {
            "allowed": self.allowed,
            "in_scope": self.in_scope,
            "verdict": self.code,
            "message": self.message,
            "mr": {"project": self.project, "iid": self.iid},
            "head_sha": self.head_sha,
            "cited_issues": list(self.cited_issues),
            "scope": self.scope,
            "scope_detail": self.scope_detail,
            "record": {"ok": self.record.ok, "code": self.record.code},
            "approval": {"ok": self.approval.ok, "code": self.approval.code},
            "approved_by": self.approved_by,
            "approval_issue": self.approval_issue,
            "approval_note": self.approval_note,
            "approved_sha": self.approved_sha,
            "warnings": list(self.warnings),
        }


def _same_mr(ref: MrRef, mr: MergeRequestFacts) -> bool:
    return ref.iid == mr.iid and ref.project.casefold() == mr.project.casefold()


def ledger_warnings(tracker: str, ledgers: Mapping[int, Ledger]) -> tuple[str, ...]:
    """What every surface must show about the ledgers it read: skipped records and breaks."""
    lines = []
    for issue, ledger in ledgers.items():
        for skipped in ledger.skipped:
            lines.append(
                f"{tracker}#{issue}: note {skipped.note_id} skipped ({skipped.kind}): "
                f"{skipped.reason}"
            )
        for chain_break in ledger.breaks:
            lines.append(
                f"{tracker}#{issue}: the record chain is broken at note {chain_break.note_id}: "
                f"{chain_break.reason}"
            )
    return tuple(lines)


def decide(
    mr: MergeRequestFacts,
    *,
    scope: Scope,
    cited: Sequence[int],
    ledgers: Mapping[int, Ledger],
    config: Config,
    frozen: str | None = None,
) -> GateVerdict:
    """The verdict, from facts already read. ``ledgers`` holds the fold of every cited issue
    except the generic tracking issue; ``frozen`` says why a live freeze window holds the MR
    back (section 5b), if one does."""
    cli, tracker = config.cli, config["tracker_project"]

    def verdict(**fields: Any) -> GateVerdict:
        return GateVerdict(
            project=mr.project,
            iid=mr.iid,
            head_sha=mr.head_sha,
            cited_issues=tuple(cited),
            scope=scope.code,
            scope_detail=scope.detail,
            **fields,
        )

    if not scope.in_scope:
        passed = Check(True, "out-of-scope", f"not gated: {scope.detail}")
        return verdict(
            allowed=True,
            in_scope=False,
            message=f"{mr.ref} is not gated: {scope.detail}.",
            code="out-of-scope",
            record=passed,
            approval=passed,
        )
    warnings = ledger_warnings(tracker, ledgers)
    record = _record_check(mr, ledgers, tracker, cli)
    approval, found = _approval_check(mr, ledgers, tracker, cli)
    if not ledgers:
        problems = [
            (
                "no-citation",
                f"{mr.ref} cites no issue of {tracker}, so no ledger can carry an approval for "
                f"it. Cite the issue it works on in its description ({tracker}#NN), then have "
                f"its head reviewed: {_approve_command(cli, 'NN', mr, None)}",
            )
        ]
    else:
        problems = [] if record.ok else [(record.code, record.message)]
        if found is None:
            problems.append((approval.code, approval.message))
    if frozen is not None:
        problems.insert(0, ("frozen", f"{mr.ref} is frozen: {frozen}"))
    code = problems[0][0] if problems else "approved"
    message = "\n".join(m for _, m in problems) or approval.message
    return verdict(
        allowed=code == "approved",
        in_scope=True,
        message=message,
        code=code,
        record=record,
        approval=approval,
        approved_by=found[1].approver if found else None,
        approval_issue=found[0] if found else None,
        approval_note=found[1].note_id if found else None,
        approved_sha=found[1].sha if found else None,
        warnings=warnings,
    )


def _approve_command(cli: str, issue: object, mr: MergeRequestFacts, lead: str | None) -> str:
    sha = mr.head_sha or "<head>"
    return (
        f"{cli} approve {issue} --mr {mr.iid} --mr-project {mr.project} --sha {sha} "
        f"--to {lead or '<lead>'}"
    )


def _review_steps(
    cli: str, issue: object, mr: MergeRequestFacts, reviewer: str | None, lead: str | None
) -> str:
    """The way to a review of the current head. Only the holder in the review role may approve,
    and after a round the lead holds the issue, so the head is offered for review first."""
    sha = mr.head_sha or "<head>"
    return (
        f"The lead offers the head for review: {cli} handoff {issue} --to "
        f"{reviewer or '<reviewer>'} --role review --sha {sha} --mr {mr.iid} --mr-project "
        f"{mr.project}; the reviewer accepts ({cli} accept {issue}) and approves it: "
        f"{_approve_command(cli, issue, mr, lead)}"
    )


def _lead_of(ledger: Ledger) -> str | None:
    """The lead an approval would offer the issue back to, when the ledger says who it is."""
    return ledger.holder if ledger.role == "lead" else ledger.accepted_from


def _record_check(
    mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], tracker: str, cli: str
) -> Check:
    if not ledgers:
        return Check(True, "no-citation", f"{mr.ref} cites no issue of {tracker}")
    unclaimed = [issue for issue, ledger in ledgers.items() if ledger.holder is None]
    if unclaimed:
        names = ", ".join(f"{tracker}#{i}" for i in unclaimed)
        return Check(
            False,
            "unclaimed",
            f"{mr.ref} cites {names}, which nobody holds: the work has no ownership record. "
            f"The agent doing it claims the issue: {cli} claim {unclaimed[0]} --role lead",
        )
    holders = ", ".join(f"{tracker}#{i} held by {ledger.holder}" for i, ledger in ledgers.items())
    return Check(True, "claimed", f"{mr.ref} carries an ownership record: {holders}")


def _approval_check(
    mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], tracker: str, cli: str
) -> tuple[Check, tuple[int, Approval] | None]:
    """Approval at head: an independent approval naming this MR and its head, in the ledger
    of a cited issue. Returns the check and the (issue, approval) that passes, if any."""
    naming = [
        (issue, approval)
        for issue, ledger in ledgers.items()
        for approval in ledger.approvals
        if _same_mr(approval.mr, mr)
    ]
    at_head = [(i, a) for i, a in naming if mr.head_sha is not None and a.sha == mr.head_sha]
    independent = [(i, a) for i, a in at_head if not a.self_approval]
    if independent:
        issue, approval = independent[-1]
        covering = (
            f" It does not cover: {', '.join(approval.not_covering)}."
            if approval.not_covering
            else ""
        )
        return Check(
            True,
            "approved",
            f"{mr.ref} may merge: {approval.approver} approved its head {mr.head_sha} in "
            f"{tracker}#{issue} (note {approval.note_id}).{covering} Merge exactly that commit, "
            f"so GitLab refuses a head that moved: glab mr merge {mr.iid} -R {mr.project} "
            f"--sha {mr.head_sha}",
        ), (issue, approval)
    if not naming:
        first = next(iter(ledgers), None)
        lead = _lead_of(ledgers[first]) if first is not None else None
        issues = ", ".join(f"{tracker}#{i}" for i in ledgers) or f"any issue of {tracker}"
        return Check(
            True,
            "never-approved",
            f"no approval in {issues} names {mr.ref}. "
            f"{_review_steps(cli, first or 'NN', mr, None, lead)}",
        ), None
    if at_head:
        issue, approval = at_head[-1]
        return Check(
            False,
            "self-approval-only",
            f"the only approval of {mr.ref} at its head is a self-approval by "
            f"{approval.approver} ({tracker}#{issue}, note {approval.note_id}: "
            f"{approval.self_because}); the gate counts "
            f"only an approval by a different agent. Offer it for review: {cli} handoff "
            f"{issue} --to <reviewer> --role review --sha {mr.head_sha} --mr {mr.iid} "
            f"--mr-project {mr.project}",
        ), None
    issue, approval = naming[-1]
    head = mr.head_sha or "nothing (the merge request has no commits)"
    return Check(
        False,
        "not-at-head",
        f"the approval of {mr.ref} by {approval.approver} ({tracker}#{issue}, note "
        f"{approval.note_id}) names {approval.sha}, but the head is now {head}: a push after "
        f"an approval voids it, and the new head needs its own review. "
        f"{_review_steps(cli, issue, mr, approval.approver, approval.to)}",
    ), None
