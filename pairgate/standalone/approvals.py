"""Whether an approval counts: who had a hand in the work, what the approval binds, and whether
its record can still be trusted. Pure functions over folded ledgers; every door applies them,
and ``judge`` puts them in the gate's order for one approval.

The rules (docs/agent-handoff-reference.md, "What an approval binds"):

- Independence. An approval counts only when its approver is none of the agents with a hand in
  the approved work, across every issue the merge request cites: anyone who held one of them as
  lead (or under a -solo identity) before the approval, anyone who offered this merge request
  for review before it, and anyone whose records share a session with the approver. The two
  self-approval rules of one issue's trail (the approver offers the work back to itself; it
  reviewed an offer it sent itself) are the first reasons, in their own words.
- Offered by another. It counts only when, before it, its approver accepted an offer of this
  merge request for review from another name, written in another session (and, account-bound,
  by another GitLab account): an agent alone on a trail approves nothing it wrote, whatever role
  it claimed.
- Account-bound (``review_author_user_ids`` set). It counts only in a note GitLab reports as
  written by one of those accounts, and only when no record showing a hand in the work (a lead
  hold, the accept of an offer back among them; a review offer of this merge request) was
  written by the account that wrote it. The note author is the one fact about a record no agent
  declares; without the key, independence rests on the names and sessions records declare.
- Binding. An approval names the head it read, and (v2) the target branch and the merge base
  (``diff_refs.base_sha``) GitLab reported then. The target branch changing, or the merge base
  moving, changes the change to be merged: the approval no longer covers it. ``start_sha``
  moving alone (the target branch advanced; the reviewed change base..head is the same) does
  not void it.
- The record. An approval GitLab reports as edited (GraphQL ``lastEditedAt``) does not count,
  nor one written before a break in its issue's chain that its writer had not seen: a note it
  relied on was deleted or rewritten after it was written, or it was reposted out of order.
- A withdrawn approval does not count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from pairgate.standalone.config import Config
from pairgate.standalone.fold import WRITER_SAYS, identity_pattern
from pairgate.standalone.ledger import Approval, Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts

__all__ = [
    "Independence",
    "Judged",
    "assess",
    "binding_problem",
    "chain_problem",
    "edit_candidates",
    "independence",
    "independence_basis",
    "judge",
    "offer_problem",
    "reasons_against",
    "same_mr",
    "v1_note",
]


def is_solo(agent: str, config: Config) -> bool:
    """A -solo identity writes the work and reviews it: any hold by it is a hand in the work."""
    match = identity_pattern(config).match(agent)
    return bool(match and match.group(1) == "solo")


def same_mr(a: MrRef | None, b: MrRef | None) -> bool:
    return (
        a is not None
        and b is not None
        and a.iid == b.iid
        and a.project.casefold() == b.project.casefold()
    )


class Hand(NamedTuple):
    """An agent with a hand in the work, and the record that shows it."""

    agent: str
    issue: int
    note_id: int
    what: str  # "held #12 as lead", "offered acme/app!7 for review in #12"
    author_id: int | None = None  # the GitLab account that wrote that record


def hands(
    ledgers: Mapping[int, Ledger], *, mr: MrRef | None, before: int | None, config: Config
) -> Iterator[Hand]:
    """Who had a hand in the work on the cited issues before note ``before`` (GitLab note ids
    are one sequence across issues, so "before" holds across them): each lead hold, each hold
    by a -solo identity, and each offer of ``mr`` for review."""
    for issue, ledger in ledgers.items():
        for hold in ledger.holds:
            if before is not None and hold.note_id >= before:
                continue
            if hold.role == "lead":
                what = f"held #{issue} as lead"
                yield Hand(hold.agent, issue, hold.note_id, what, hold.author_id)
            elif is_solo(hold.agent, config):
                what = f"held #{issue} as {hold.role} under a -solo identity"
                yield Hand(hold.agent, issue, hold.note_id, what, hold.author_id)
        for offer in ledger.review_offers:
            if (before is None or offer.note_id < before) and (mr is None or same_mr(offer.mr, mr)):
                what = f"offered {offer.mr} for review in #{issue}"
                yield Hand(
                    offer.sender, issue, offer.note_id, what, ledger.author_of(offer.note_id)
                )


def session_names(agent: str, ledgers: Mapping[int, Ledger]) -> dict[str, tuple[str, int, int]]:
    """Every other name that wrote in a session ``agent`` wrote in, on these issues: name ->
    (the session, the issue and the first note it wrote there in it)."""
    mine = {s for ledger in ledgers.values() for a, s, _ in ledger.sessions if a == agent}
    found: dict[str, tuple[str, int, int]] = {}
    for issue, ledger in ledgers.items():
        for name, session, note in ledger.sessions:
            if name != agent and session in mine and name not in found:
                found[name] = (session, issue, note)
    return found


def reasons_against(
    agent: str,
    ledgers: Mapping[int, Ledger],
    *,
    mr: MrRef | None,
    before: int | None,
    config: Config,
) -> tuple[str, ...]:
    """Why an approval of ``mr`` by ``agent`` written at note ``before`` would not be
    independent, by the hands in the work; () when it would be."""
    aliases = session_names(agent, ledgers)
    reasons: dict[str, None] = {}
    for hand in hands(ledgers, mr=mr, before=before, config=config):
        if hand.agent == agent:
            reasons[f"{agent} {hand.what} (note {hand.note_id})"] = None
        elif hand.agent in aliases:
            session, issue, note = aliases[hand.agent]
            reasons[
                f"{agent} writes in session {session}, as {hand.agent} does (#{issue}, note "
                f"{note}), and {hand.agent} {hand.what} (note {hand.note_id})"
            ] = None
    return tuple(reasons)


def hand_reasons(
    issue: int, approval: Approval, ledgers: Mapping[int, Ledger], *, config: Config
) -> tuple[str, ...]:
    """Why ``approval`` (recorded on ``issue``) is a self-approval: its trail's two rules, the
    hands in the work and the sessions it shares with them; () when none holds."""
    later = reasons_against(
        approval.approver, ledgers, mr=approval.mr, before=approval.note_id, config=config
    )
    said = approval.self_because
    # The writer's own flag adds nothing when the facts it was set on are named.
    first = (said,) if said and not (said == WRITER_SAYS and later) else ()
    return tuple(dict.fromkeys(first + later))


def account_reasons(
    issue: int, approval: Approval, ledgers: Mapping[int, Ledger], *, config: Config
) -> tuple[str, ...]:
    """Account-bound: why GitLab's note authors do not vouch for ``approval``; () when they
    do, or when the deployment binds no accounts."""
    if not config.account_bound:
        return ()
    author = ledgers[issue].author_of(approval.note_id)
    accounts = ", ".join(str(i) for i in config.review_author_user_ids)
    if author not in config.review_author_user_ids:
        return (
            f"GitLab reports its note as written by user {author}, which is no review account "
            f"(review_author_user_ids: {accounts})",
        )
    found = hands(ledgers, mr=approval.mr, before=approval.note_id, config=config)
    return tuple(
        dict.fromkeys(
            f"the review account that wrote it (user {author}) also wrote note {hand.note_id}, "
            f"in which {hand.agent} {hand.what}"
            for hand in found
            if hand.author_id == author
        )
    )


def offer_problem(
    approver: str,
    ledgers: Mapping[int, Ledger],
    *,
    mr: MrRef,
    before: int | None,
    sessions: frozenset[str],
    author: int | None,
    config: Config,
) -> str | None:
    """Why no offer of ``mr`` to ``approver`` for review, accepted before note ``before``, was
    written by another name in another session (none of ``sessions``, nor the accept's) and,
    account-bound, by another account than ``author``; None when one was."""
    seen: list[str] = []
    writers: set[str] = set()
    for ledger in ledgers.values():
        writers |= {e.agent for e in ledger.trail}
        offers = {o.note_id: o for o in ledger.review_offers if same_mr(o.mr, mr)}
        for e in ledger.trail:
            if e.void is not None or e.event != "accept" or e.agent != approver:
                continue
            if before is not None and e.note_id >= before:
                continue
            offer = offers.get(int(e.record["offer"]))
            if offer is None:
                continue
            made = next(x for x in ledger.trail if x.note_id == offer.note_id)
            session = str(made.record["session"])
            if offer.sender == approver:
                seen.append(f"the offer it accepted in note {e.note_id} is its own")
            elif session in sessions or session == str(e.record["session"]):
                seen.append(
                    f"the offer it accepted in note {e.note_id}, from {offer.sender}, was "
                    f"written in its own session {session}"
                )
            elif config.account_bound and made.author_id == author:
                seen.append(
                    f"the offer it accepted in note {e.note_id}, from {offer.sender}, was "
                    f"written by user {author}, the account that wrote its approval"
                )
            else:
                return None
    when = f" before its approval (note {before})" if before is not None else ""
    if writers <= {approver}:
        return f"{approver} is the only agent on the trail: nobody else offered it {mr} for review{when}"
    detail = f": {'; '.join(seen)}" if seen else ""
    return (
        f"{approver} accepted no offer of {mr} for review from another agent in another "
        f"session{when}{detail}"
    )


class Independence(NamedTuple):
    """Every reason an approval is not independent, by rule: ``hands`` (its trail's two
    self-approval rules, the hands in the work, shared sessions), ``account`` (account-bound:
    what GitLab's note authors say), ``offer`` (nobody else offered it the work)."""

    hands: tuple[str, ...] = ()
    account: tuple[str, ...] = ()
    offer: str | None = None

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.hands + self.account + ((self.offer,) if self.offer else ())

    @property
    def code(self) -> str | None:
        """The gate's code for the first rule that holds; None when it is independent."""
        if self.hands:
            return "self-approval-only"
        if self.account:
            return "not-review-account"
        return "not-offered" if self.offer else None


def assess(
    issue: int, approval: Approval, ledgers: Mapping[int, Ledger], *, config: Config
) -> Independence:
    """Every rule of independence over ``approval`` (recorded on ``issue``). ``ledgers`` are the
    folds of every issue the approved merge request cites, its own among them; a surface that
    has fewer judges by fewer (and says so)."""
    author = ledgers[issue].author_of(approval.note_id)
    return Independence(
        hand_reasons(issue, approval, ledgers, config=config),
        account_reasons(issue, approval, ledgers, config=config),
        offer_problem(
            approval.approver,
            ledgers,
            mr=approval.mr,
            before=approval.note_id,
            sessions=frozenset({approval.session}),
            author=author,
            config=config,
        ),
    )


def independence(
    issue: int, approval: Approval, ledgers: Mapping[int, Ledger], *, config: Config
) -> tuple[str, ...]:
    """Every reason ``approval`` (recorded on ``issue``) is not independent, () when it is."""
    return assess(issue, approval, ledgers, config=config).reasons


def independence_basis(config: Config) -> str:
    """What the gate's independence rests on in this deployment: said once by every surface
    that judges it."""
    if config.account_bound:
        accounts = ", ".join(str(i) for i in config.review_author_user_ids)
        return (
            f"independence is account-bound: an approval counts only in a note GitLab reports "
            f"as written by a review account (review_author_user_ids: {accounts}), and no "
            f"record of a hand in the work comes from that account"
        )
    return (
        "independence rests on names and sessions: the gate trusts the agent name and session "
        "each record declares, and any process that can write as the agents' account can "
        "declare them (set review_author_user_ids to bind the review role to GitLab accounts)"
    )


def chain_problem(approval: Approval, ledger: Ledger) -> str | None:
    """Why the chain no longer vouches for ``approval``: a break after the last record its
    writer saw (its prev). A fresh approval names the latest record, so it is after them all."""
    if not ledger.breaks:
        return None
    saw = ledger.prev_note(approval.note_id)
    late = next((b for b in ledger.breaks if b.note_id > (saw or 0)), None)
    if late is None:
        return None
    return (
        f"the record chain of its issue is broken at note {late.note_id} ({late.reason}), "
        f"after the last record its writer saw" + (f" (note {saw})" if saw else "")
    )


def binding_problem(approval: Approval, mr: MergeRequestFacts) -> tuple[str, str] | None:
    """(code, why) when the merge request is no longer what ``approval`` reviewed; None when it
    is. Head first: a push voids an approval whatever else changed."""
    if mr.head_sha is None or approval.sha != mr.head_sha:
        head = mr.head_sha or "nothing (the merge request has no commits)"
        return "not-at-head", f"it names {approval.sha}, but the head is now {head}"
    if approval.version < 2:
        return None  # a v1 record binds the head only; surfaces say so
    if approval.target_branch != mr.target_branch:
        return "retargeted", (
            f"it was given while {mr.ref} targeted {approval.target_branch}, and it now targets "
            f"{mr.target_branch or 'an unknown branch'}: the change to be merged is not the one "
            f"reviewed"
        )
    if approval.base_sha != mr.base_sha:
        return "base-moved", (
            f"it was given on the diff from merge base {approval.base_sha}, and GitLab now diffs "
            f"from {mr.base_sha or 'an unknown base'}: the change to be merged is not the one "
            f"reviewed"
        )
    return None


def v1_note(approval: Approval) -> str | None:
    """What a surface says about an approval written before records bound their issue."""
    if approval.version >= 2:
        return None
    return (
        f"note {approval.note_id} is a v1 approval: it binds the head only, not the target "
        f"branch or the merge base, and it names no issue, so it cannot be checked for replay"
    )


# -- the gate's judgement of one approval ------------------------------------------------------


class Judged(NamedTuple):
    """One approval naming the merge request, as the gate judged it: ``code`` "counts", or why
    not (not-at-head, retargeted, base-moved, withdrawn, self-approval-only,
    not-review-account, not-offered, approval-after-break, approval-edited, edit-unknown); ``reasons`` why it is not independent
    (empty when it is), whatever else is wrong with it."""

    issue: int
    note_id: int
    approver: str
    sha: str
    code: str
    why: str | None
    reasons: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "issue": self.issue,
            "note_id": self.note_id,
            "approver": self.approver,
            "sha": self.sha,
            "counts": self.code == "counts",
            "code": self.code,
            "why": self.why,
            "independent": not self.reasons,
            "independence_reasons": list(self.reasons),
        }


def judge(
    issue: int,
    approval: Approval,
    mr: MergeRequestFacts,
    ledgers: Mapping[int, Ledger],
    *,
    edits: Mapping[int, str | None] | None,
    config: Config,
) -> Judged:
    """Does ``approval`` (on ``issue``) count for ``mr`` now? Checks in this order: what it
    binds (head, target, base), its withdrawal, its independence, its chain, its edit.
    ``edits`` is GitLab's lastEditedAt per note (approvals/reads.py); None when the surface
    did not read it (status, board): then the edit is not judged."""
    assessed = assess(issue, approval, ledgers, config=config)
    reasons = assessed.reasons

    def judged(code: str, why: str | None = None) -> Judged:
        return Judged(issue, approval.note_id, approval.approver, approval.sha, code, why, reasons)

    bound = binding_problem(approval, mr)
    if bound is not None:
        return judged(*bound)
    if approval.withdrawn_by is not None:
        return judged(
            "withdrawn",
            f"{approval.approver} withdrew it (note {approval.withdrawn_by}): "
            f"{approval.withdraw_reason}",
        )
    if assessed.code is not None:
        return judged(assessed.code, "not independent: " + "; ".join(reasons))
    broken = chain_problem(approval, ledgers[issue])
    if broken is not None:
        return judged("approval-after-break", broken)
    if edits is not None:
        if approval.note_id not in edits:
            return judged("edit-unknown", "whether GitLab reports its note as edited is unknown")
        edited = edits[approval.note_id]
        if edited is not None:
            return judged("approval-edited", f"GitLab reports its note as edited at {edited}")
    return judged("counts")


def edit_candidates(
    mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], *, config: Config
) -> dict[int, list[int]]:
    """issue -> the approval notes whose edit state decides the verdict: those naming ``mr``
    that pass every other check. Only they cost a GraphQL read."""
    wanted: dict[int, list[int]] = {}
    for issue, ledger in ledgers.items():
        for approval in ledger.approvals:
            if same_mr(approval.mr, MrRef(mr.project, mr.iid)):
                judged = judge(issue, approval, mr, ledgers, edits=None, config=config)
                if judged.code == "counts":
                    wanted.setdefault(issue, []).append(approval.note_id)
    return wanted
