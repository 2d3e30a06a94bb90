"""The merge gate's verdict: pure functions from facts already read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pairgate.standalone.approvals import Judged, independence_basis, judge, same_mr, v1_note
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import Approval, Ledger, MrRef, Offer
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.scope import Scope

__all__ = ["Check", "GateVerdict", "decide"]


class Check(NamedTuple):
    """One validator's answer: the record job's or the approval job's."""

    ok: bool
    code: str
    message: str


class GateVerdict(NamedTuple):
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
    approvals: tuple[Judged, ...] = ()  # every approval naming this MR, as the gate judged it
    author: Mapping[str, Any] | None = None  # who opened the MR, as GitLab says
    basis: str = ""  # what independence rests on here (approvals.independence_basis)
    account_bound: bool = False
    mr_state: str = ""  # opened, merged, closed, locked: as GitLab says ("" when not read)

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
            "independence": self._deciding_independence(),
            "approvals": [j.as_json() for j in self.approvals],
            "author": dict(self.author) if self.author else None,
            "independence_basis": {
                "mode": "account-bound" if self.account_bound else "names-and-sessions",
                "says": self.basis,
            },
        }

    def _deciding_independence(self) -> dict[str, Any] | None:
        """The independence verdict of the approval the gate's answer is about: the one that
        passes, else the latest at the head, else the latest; None when none names the MR."""
        if not self.approvals:
            return None
        at_head = [j for j in self.approvals if j.sha == self.head_sha]
        passing = [j for j in self.approvals if j.code == "counts"]
        judged = (passing or at_head or list(self.approvals))[-1]
        return {
            "note_id": judged.note_id,
            "issue": judged.issue,
            "independent": not judged.reasons,
            "reasons": list(judged.reasons),
        }


def _same_mr(ref: MrRef, mr: MergeRequestFacts) -> bool:
    return same_mr(ref, MrRef(mr.project, mr.iid))


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
        if ledger.unbound_notice:
            lines.append(f"{tracker}#{issue}: {ledger.unbound_notice}")
    return tuple(lines)


def decide(
    mr: MergeRequestFacts,
    *,
    scope: Scope,
    cited: Sequence[int],
    ledgers: Mapping[int, Ledger],
    config: Config,
    edits: Mapping[int, str | None],
    frozen: str | None = None,
) -> GateVerdict:
    """The verdict, from facts already read. ``ledgers`` holds the fold of every cited issue
    except the generic tracking issue; ``edits`` GitLab's lastEditedAt of the notes
    ``edit_candidates`` names (an approval whose edit state is not in it does not count);
    ``frozen`` says why a live freeze window holds the MR back, if one does."""
    cli, tracker = config.cli, config.tracker_project

    def verdict(**fields: Any) -> GateVerdict:
        return GateVerdict(
            project=mr.project,
            iid=mr.iid,
            head_sha=mr.head_sha,
            cited_issues=tuple(cited),
            scope=scope.code,
            scope_detail=scope.detail,
            author={"id": mr.author_id, "username": mr.author_username or None},
            basis=independence_basis(config),
            account_bound=config.account_bound,
            mr_state=mr.state,
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
    judged = tuple(
        judge(issue, a, mr, ledgers, edits=edits, config=config)
        for issue, ledger in ledgers.items()
        for a in ledger.approvals
        if _same_mr(a.mr, mr)
    )
    warnings = ledger_warnings(tracker, ledgers) + tuple(
        f"{tracker}#{j.issue}: {note}"
        for j in judged
        for note in [v1_note(_approval(ledgers, j))]
        if note
    )
    record = _record_check(mr, ledgers, tracker, cli)
    approval, found = _approval_check(
        mr, ledgers, judged, tracker, cli, account_bound=config.account_bound
    )
    generic = config.generic_tracking_issue
    if not ledgers and generic is not None and tuple(cited) == (generic,):
        # In scope although it cites only the generic issue: its author is no automation
        # account (scope.py), and the exemption is for unattended automation alone.
        record = Check(
            False,
            "generic-issue-non-automation",
            f"{mr.ref} cites only the generic tracking issue {tracker}#{generic}, which exempts "
            f"unattended automation alone, and {scope.detail}. Cite the issue it works on in "
            f"its description ({tracker}#NN), hold it ({cli} claim NN --role lead), and have "
            f"its head reviewed: {_approve_command(cli, 'NN', mr, None)}",
        )
        problems = [(record.code, record.message)]
    elif not ledgers:
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
        approvals=judged,
    )


def _approval(ledgers: Mapping[int, Ledger], judged: Judged) -> Approval:
    return next(a for a in ledgers[judged.issue].approvals if a.note_id == judged.note_id)


def _approve_command(cli: str, issue: object, mr: MergeRequestFacts, lead: str | None) -> str:
    sha = mr.head_sha or "<head>"
    return (
        f"{cli} approve {issue} --mr {mr.iid} --mr-project {mr.project} --sha {sha} "
        f"--to {lead or '<lead>'}"
    )


def _pipeline_state(mr: MergeRequestFacts) -> str:
    pipeline = mr.head_pipeline or {}
    status = pipeline.get("status")
    if not status or pipeline.get("sha") not in (None, mr.head_sha):
        return "no pipeline has run at its head"
    return f"its head pipeline is {status}"


def _review_steps(
    cli: str,
    issue: object,
    mr: MergeRequestFacts,
    reviewer: str | None,
    lead: str | None,
    offer: Offer | None = None,
) -> str:
    """The way to a review of the current head. Only the holder in the review role may approve,
    and after a round the lead holds the issue, so the head is offered for review first. An
    issue holds one live offer: a pending one is answered or replaced (--supersede), never
    offered over. Each step says which agent runs it, never with another agent's --as."""
    sha = mr.head_sha or "<head>"
    approve = _approve_command(cli, issue, mr, lead)
    handoff = (
        f"{cli} handoff {issue} --to {reviewer or '<reviewer>'} --role review --sha {sha} "
        f"--mr {mr.iid} --mr-project {mr.project}"
    )
    if offer is None:
        return (
            f"The lead offers the head for review: {handoff}; the reviewer accepts ({cli} "
            f"accept {issue}) and approves it: {approve}"
        )
    pending = (
        f"An offer is pending on #{issue}: note {offer.note_id}, {offer.sender} to {offer.to} as "
        f"{offer.role} at {offer.sha[:12]}; {_pipeline_state(mr)}."
    )
    offers_head = offer.mr is not None and _same_mr(offer.mr, mr) and offer.sha == mr.head_sha
    if offers_head and offer.role == "review":
        return (
            f"{pending} {offer.to} takes it; {offer.to} runs: {cli} accept {issue}; then "
            f"approves the head: {approve}"
        )
    if offer.event == "approve":
        # The reviewer still holds the issue until its offer back is accepted: it reviews the
        # head as it is now and approves again, in place of that offer.
        return (
            f"{pending} {offer.sender} still holds #{issue} as review, so it reviews the head "
            f"and approves it, replacing its offer; {offer.sender} runs: {approve} --supersede "
            f"{offer.note_id}"
        )
    return (
        f"{pending} It does not offer this head for review, so {offer.sender} replaces it; "
        f"{offer.sender} runs: {handoff} --supersede {offer.note_id}; the reviewer accepts "
        f"({cli} accept {issue}) and approves it: {approve}"
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
    mr: MergeRequestFacts,
    ledgers: Mapping[int, Ledger],
    judged: Sequence[Judged],
    tracker: str,
    cli: str,
    *,
    account_bound: bool = False,
) -> tuple[Check, tuple[int, Approval] | None]:
    """Approval at head: an approval of this MR in the ledger of a cited issue that counts
    (see ``judge``). Returns the check and the (issue, approval) that passes, if any."""
    counting = [j for j in judged if j.code == "counts"]
    if counting:
        passing = counting[-1]
        approval = _approval(ledgers, passing)
        covering = (
            f" It does not cover: {', '.join(approval.not_covering)}."
            if approval.not_covering
            else ""
        )
        return Check(
            True,
            "approved",
            f"{mr.ref} may merge: {approval.approver} approved its head {mr.head_sha} in "
            f"{tracker}#{passing.issue} (note {approval.note_id}).{covering} Merge exactly that "
            f"commit, so GitLab refuses a head that moved: glab mr merge {mr.iid} -R "
            f"{mr.project} --sha {mr.head_sha}",
        ), (passing.issue, approval)
    if not judged:
        first = next(iter(ledgers), None)
        lead = _lead_of(ledgers[first]) if first is not None else None
        offer = ledgers[first].offer if first is not None else None
        issues = ", ".join(f"{tracker}#{i}" for i in ledgers) or f"any issue of {tracker}"
        return Check(
            True,
            "never-approved",
            f"no approval in {issues} names {mr.ref}. "
            f"{_review_steps(cli, first or 'NN', mr, None, lead, offer)}",
        ), None
    at_head = [j for j in judged if j.code != "not-at-head"]
    j = (at_head or list(judged))[-1]
    approval = _approval(ledgers, j)
    where = f"{tracker}#{j.issue}, note {j.note_id}"
    offer = ledgers[j.issue].offer
    steps = _review_steps(cli, j.issue, mr, None, approval.to, offer)
    if j.code == "self-approval-only":
        message = (
            f"the only approval of {mr.ref} at its head is a self-approval by {j.approver} "
            f"({where}), not independent: {'; '.join(j.reasons)}. The gate counts only an "
            f"approval by an agent with no hand in the work (it never held a cited issue as "
            f"lead, never offered this merge request for review, and shares no session with "
            f"one that did) that accepted an offer of it from another agent. Offer it for "
            f"review to such an agent: {cli} handoff {j.issue} --to "
            f"<reviewer> --role review --sha {mr.head_sha} --mr {mr.iid} --mr-project "
            f"{mr.project}"
        )
    elif j.code == "not-review-account":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) does not count: "
            f"{'; '.join(j.reasons)}. This deployment binds the review role to GitLab "
            f"accounts (review_author_user_ids): an approval counts only in a note a review "
            f"account wrote, and only when that account wrote no record of a hand in the work. "
            f"The reviewer approves again from a session that writes with the review account's "
            f"token. {steps}"
        )
    elif j.code == "not-offered":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) does not count: "
            f"{'; '.join(j.reasons)}. An approval counts only when its approver accepted an "
            f"offer of the merge request for review from another agent, written in another "
            f"session{' by another account' if account_bound else ''}: whoever holds the work "
            f"offers it, from its own session: {cli} handoff {j.issue} --to <reviewer> --role "
            f"review --sha {mr.head_sha} --mr {mr.iid} --mr-project {mr.project}; the reviewer "
            f"accepts in a session of its own ({cli} accept {j.issue}) and approves: "
            f"{_approve_command(cli, j.issue, mr, approval.to)}"
        )
    elif j.code == "not-at-head":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) "
            f"{str(j.why).removeprefix('it ')}: a push after an "
            f"approval voids it, and the new head needs its own review. "
            f"{_review_steps(cli, j.issue, mr, j.approver, approval.to, offer)}"
        )
    elif j.code in ("retargeted", "base-moved"):
        what = "target branch" if j.code == "retargeted" else "merge base"
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) no longer covers it: {j.why}. "
            f"An approval binds the head, the target branch and the merge base it reviewed; "
            f"the {what} changed, so the head needs a review of the change as it is now "
            f"(against {mr.target_branch or 'its target'}). {steps}"
        )
    elif j.code == "withdrawn":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) does not count: {j.why}. "
            f"The head needs a fresh review. {steps}"
        )
    elif j.code == "approval-after-break":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) does not count: {j.why}. A "
            f"note it relied on was deleted or rewritten, or it was posted out of order, so the "
            f"trail cannot vouch for it. A fresh approval at the head can. {steps}"
        )
    elif j.code == "approval-edited":
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) does not count: {j.why}. An "
            f"approval that was edited after it was written counts for nothing, whatever it "
            f"says now. A fresh approval at the head does. {steps}"
        )
    else:  # edit-unknown: the gate cannot say, so it does not pass
        message = (
            f"the approval of {mr.ref} by {j.approver} ({where}) was not checked: {j.why}, and "
            f"an approval counts only when GitLab says its note was never edited. Run "
            f"{cli} merge-check --mr {mr.iid} --mr-project {mr.project} again."
        )
    return Check(False, j.code, message), None
