"""The ownership verbs: claim, handoff, accept, decline, release, close (approve and status
live beside this module). Each checks its refusals against the folded ledger, writes one
record, and reads the ledger back before it says what happened."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pairgate.commands.approve import approve
from pairgate.commands.status import status
from pairgate.evidence.handoff import note_table, patches_block, verify_for_handoff
from pairgate.evidence.schema import check_evidence, load_json
from pairgate.evidence.surface import NO_EVIDENCE, evidence_field, evidence_summary, record_field
from pairgate.standalone.approvals import reasons_against
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Refusal
from pairgate.standalone.fold import is_finder
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Offer
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.tracker import CLOSED_LABEL, issue_path
from pairgate.verbs import pipelines
from pairgate.verbs.merge_requests import (
    checked_sha,
    citing_mrs,
    pipeline_problem,
)
from pairgate.verbs.pipelines import holding, rejudge
from pairgate.verbs.preconditions import (
    check_offer_slot,
    check_offerable,
    check_receiver,
    command,
    describe_offer,
    must_hold,
    read_mr_of,
    resolve_mr,
)
from pairgate.verbs.turn import Turn, begin, checked_name, read_reason, refuse_void, write

__all__ = ["accept", "approve", "claim", "close", "decline", "handoff", "release", "status"]


def claim(
    *, ctx: Context, config: Config, issue: int, role: str, as_agent: str | None, client: GitLab
) -> int:
    turn = begin(ctx, config, client, issue, as_agent)
    ledger, cli, agent = turn.ledger, turn.cli, turn.agent
    if is_finder(agent, config):
        raise Refusal(
            f"{cli} claim: {agent} is a finder, and a finder never claims an issue: it files "
            f"evidence (an issue and failing tests) and a lead picks the issue up.\n"
            f"A lead claims it; a lead (such as {config.agent_identity_prefix}-lead) runs: "
            f"{command(cli, 'claim', issue, role='lead')}"
        )
    if ledger.holder == agent:
        raise Refusal(
            f"{cli} claim: {agent} already holds #{issue} as {ledger.role} "
            f"(note {ledger.holder_since}); there is nothing to claim.\n"
            f"See the ledger: {command(cli, 'status', issue)}"
        )
    if ledger.holder is not None:
        if ledger.offer and ledger.offer.to == agent:
            fix = f"An offer to you is pending; take it: {command(cli, 'accept', issue)}"
        else:
            fix = (
                f"Ask {ledger.holder} to offer it to you; {ledger.holder} runs: "
                f"{command(cli, 'handoff', issue, to=agent, role=role, sha='<head>')}"
            )
        raise Refusal(
            f"{cli} claim: #{issue} is held by {ledger.holder} as {ledger.role} "
            f"(note {ledger.holder_since}); claim takes only an issue nobody holds.\n{fix}"
        )
    event = write(turn, "ownership", "claim", {"role": role})
    refuse_void(turn, event)
    turn.say(f"{agent} holds #{issue} as {role} (note {event.note_id}).")
    if role == "review":
        hands = reasons_against(agent, {issue: turn.ledger}, mr=None, before=None, config=config)
        if hands:
            turn.warn(
                f"warning: {agent} has a hand in this work ({'; '.join(hands)}), so its "
                f"approvals of it will not count on any door: the merge needs an approval by an "
                f"agent with no hand in the work."
            )
        bound = (
            " by another GitLab account than the review account that writes its approval"
            if config.account_bound
            else ""
        )
        offer = command(cli, "handoff", issue, to=agent, role="review", sha="<head>")
        turn.say(
            f"An approval by {agent} counts only once it has accepted an offer of the merge "
            f"request for review from another agent, written in another session{bound}; this "
            f"claim is no such offer. The lead, holding #{issue}, offers it from its own session: "
            f"{offer} --mr <iid> --mr-project <project>; then {agent} runs: "
            f"{command(cli, 'accept', issue)}"
        )
    return 0


def handoff(
    *,
    ctx: Context,
    config: Config,
    issue: int,
    to: str,
    role: str,
    sha: str,
    reason: str | None,
    reason_file: Path | None,
    mr: int | None,
    mr_project: str | None,
    supersede: int | None,
    new_identity: bool,
    as_agent: str | None,
    client: GitLab,
    evidence: Path | None = None,
) -> int:
    sha = checked_sha(sha, cli=config.cli)
    checked_name(to, "--to ", cli=config.cli)
    text = read_reason(reason, reason_file, cli=config.cli)
    flags: dict[str, Any] = {
        "to": to,
        "role": role,
        "sha": sha,
        "reason_file": reason_file,
        "reason": reason if reason_file is None else None,
        "mr": mr,
        "mr_project": mr_project,
        "supersede": supersede,
        "new_identity": new_identity,
        "evidence": evidence,
    }

    def again(**changes: Any) -> str:
        return command(config.cli, "handoff", issue, **{**flags, **changes})

    # Before anything is read: evidence that cannot back this offer refuses it outright.
    doc = None if evidence is None else checked_evidence(evidence, sha, cli=config.cli, again=again)
    turn = begin(ctx, config, client, issue, as_agent)

    must_hold(turn, "handoff")
    check_receiver(turn, "handoff", to, again, new_identity=new_identity)
    check_offer_slot(turn, "handoff", supersede, again)
    project, found = resolve_mr(turn, "handoff", mr, mr_project, again)
    check_offerable(turn, "handoff", project, found, sha, again)
    # A first offer takes nothing away; a superseding one voids the offer it replaces.
    reached = [] if supersede is None else affected(turn)
    with holding(turn, reached) as holds:
        event = write(
            turn,
            "ownership",
            "handoff",
            {
                "to": to,
                "role": role,
                "sha": sha,
                "mr": {"project": project, "iid": found.iid},
                "reason": text,
                "supersedes": supersede,
                "evidence": None if doc is None else evidence_field(doc),
            },
            appendix="" if doc is None else f"{note_table(doc)}\n\n{patches_block(doc)}",
        )
        refuse_void(turn, event)
        turn.say(
            f"{turn.agent} offers #{issue} to {to} as {role} at {sha[:12]} of "
            f"{project}!{found.iid} (note {event.note_id}). {turn.agent} holds it until {to} "
            f"runs: {command(turn.cli, 'accept', issue)}"
        )
        if doc is not None:
            summary = evidence_summary(evidence_field(doc))
            turn.say(f"Mutation evidence: {summary} ({doc['digest']}).")
            if role == "review":
                start_ci_rerun(turn, project, found.iid, sha)
        elif role == "review":
            turn.say(
                f"This offer carries {NO_EVIDENCE}: the reviewer has no mutant to re-run. "
                f"Collect it with {turn.cli} evidence run, and offer again with --evidence FILE "
                f"and --supersede {event.note_id}."
            )
        if supersede is None:
            return 0
        what = f"the superseding handoff (note {event.note_id})"
        return rejudge(turn, reached, what=what, holds=holds)


def start_ci_rerun(turn: Turn, project: str, iid: int, sha: str) -> None:
    """A merge request pipeline at the offered head, so that the tracker-held pipeline's
    rerun-mr-evidence job re-runs the offer's mutants while the offer is pending (status and
    approve read its result). One that cannot be started is said; the offer stands."""
    started = pipelines.start(turn.client, project, iid, sha)
    if started.why is not None:
        turn.warn(
            f"note: no merge request pipeline was started at {sha[:12]} ({started.why}): no CI "
            f"re-run of this evidence runs until one does (a push, or approve's).{started.maybe}"
        )
        return
    number = f" {started.pipeline}" if started.pipeline else ""
    turn.say(
        f"started merge request pipeline{number} of {project}!{iid} at {sha[:12]}: where the "
        "tracker-held pipeline has the rerun-mr-evidence job, it re-runs this evidence in CI"
    )


def _answerable(turn: Turn, verb: str) -> Offer:
    """The pending offer, when it is to the caller."""
    offer, cli, issue = turn.ledger.offer, turn.cli, turn.issue
    if offer is None:
        raise Refusal(
            f"{cli} {verb}: no offer is pending on #{issue}, so there is nothing to {verb}.\n"
            f"See the ledger: {command(cli, 'status', issue)}"
        )
    if offer.to != turn.agent:
        raise Refusal(
            f"{cli} {verb}: the pending offer is to {offer.to}, not to {turn.agent} "
            f"({describe_offer(offer)}).\nOnly {offer.to} can {verb} it; {offer.to} runs: "
            f"{command(cli, verb, issue)}"
        )
    return offer


def accept(
    *, ctx: Context, config: Config, issue: int, as_agent: str | None, client: GitLab
) -> int:
    turn = begin(ctx, config, client, issue, as_agent)
    offer = _answerable(turn, "accept")
    assert offer.mr is not None
    mr = read_mr_of(turn, offer)
    head = mr.head_sha
    again = partial(_offer_again, turn, offer)
    if head != offer.sha:
        raise Refusal(
            f"{turn.cli} accept: the head of {offer.mr} moved from {offer.sha[:12]} to "
            f"{str(head)[:12]} after the offer (note {offer.note_id}); accepting would hand you "
            f"something other than what was offered.\n{offer.sender} offers again at the new "
            f"head; {offer.sender} runs:\n  {again(sha=str(head))}\nor you decline: {command(turn.cli, 'decline', issue)}"
        )
    problem = pipeline_problem(turn.client, mr, str(head))
    if problem:
        raise Refusal(
            f"{turn.cli} accept: the offer cannot be accepted: {offer.mr}'s {problem}. "
            f"{offer.sender} fixes it, pushes and offers the new head; {offer.sender} runs:\n"
            f"  {again(sha='<new head>')}\n"
            f"or you decline: {command(turn.cli, 'decline', issue)}"
        )
    event = write(
        turn,
        "ownership",
        "accept",
        {"offer": offer.note_id, "from": offer.sender, "role": offer.role},
    )
    refuse_void(turn, event)
    turn.say(
        f"{turn.agent} holds #{issue} as {offer.role} (note {event.note_id}), accepted from "
        f"{offer.sender} at {offer.sha[:12]} of {offer.mr}."
    )
    return 0


def _offer_again(turn: Turn, offer: Offer, *, sha: str) -> str:
    """The command the sender runs to make the offer again, at another head (with evidence of
    that head, when the offer carried evidence). The caller says who runs it: a command never
    carries another agent's --as, which whoever reads it could run in its own session."""
    assert offer.mr is not None
    mr = {"mr": offer.mr.iid, "mr_project": offer.mr.project, "supersede": offer.note_id}
    if offer.event == "approve":
        flags = {**mr, "sha": sha, "to": offer.to}
        return command(turn.cli, "approve", turn.issue, **flags)
    had = record_field(turn.ledger, offer.note_id, "evidence") is not None
    flags = {"to": offer.to, "role": offer.role, "sha": sha, **mr}
    flags["evidence"] = "<evidence run at that head>" if had else None
    return command(turn.cli, "handoff", turn.issue, **flags)


def checked_evidence(path: Path, sha: str, *, cli: str, again: Callable[..., str]) -> Any:
    """The evidence document in ``path`` when it backs an offer of ``sha``; a refusal (exit 1)
    listing every reason it does not, with the commands that collect it and offer again."""
    doc = load_json(path, "the evidence")
    problems = verify_for_handoff(doc, sha=sha)
    if not problems:
        return doc
    listed = "\n".join(f"  - {p}" for p in problems)
    valid = check_evidence(doc) is None
    test = doc["command"] if valid else "<test command>"
    mutants = [m["name"] for m in doc["mutants"]] if valid else ["<patch>"]
    rerun = [*shlex.split(cli), "evidence", "run", "--test", test, "--sha", sha]
    for name in mutants:
        rerun += ["--mutant", name]
    collect = shlex.join([*rerun, "--out", str(path)])
    raise Refusal(
        f"{cli} handoff: the evidence in {path} does not back an offer of {sha}:\n{listed}\n"
        f"Collect it at the offered commit, with a test killing every mutant on an assertion "
        f"(mutant patches as you named them):\n  {collect}\nthen offer again: {again()}\n"
        f"(or offer without --evidence, which every surface marks as {NO_EVIDENCE})"
    )


def decline(
    *, ctx: Context, config: Config, issue: int, as_agent: str | None, client: GitLab
) -> int:
    turn = begin(ctx, config, client, issue, as_agent)
    offer = _answerable(turn, "decline")
    reached = affected(turn)
    with holding(turn, reached) as holds:
        fields = {"offer": offer.note_id, "from": offer.sender}
        event = write(turn, "ownership", "decline", fields)
        refuse_void(turn, event)
        turn.say(
            f"{turn.agent} declines the offer in note {offer.note_id} (note {event.note_id}); "
            f"{offer.sender} keeps #{issue}."
        )
        what = f"the decline (note {event.note_id})"
        return rejudge(turn, reached, what=what, holds=holds)


def release(
    *, ctx: Context, config: Config, issue: int, as_agent: str | None, client: GitLab
) -> int:
    turn = begin(ctx, config, client, issue, as_agent)
    must_hold(turn, "release")
    offer, cli = turn.ledger.offer, turn.cli
    if offer is not None:
        raise Refusal(
            f"{cli} release: your offer is pending ({describe_offer(offer)}); release drops an "
            f"issue only when no offer is out.\n"
            f"{offer.to} declines it; {offer.to} runs: {command(cli, 'decline', issue)}\n"
            f"or you replace it: {command(cli, 'handoff', issue, to='<agent>', role='<role>', sha='<head>', supersede=offer.note_id)}"
        )
    role = turn.ledger.role
    reached = affected(turn)
    with holding(turn, reached) as holds:
        event = write(turn, "ownership", "release", {"role": role})
        refuse_void(turn, event)
        turn.say(f"{turn.agent} released #{issue} (note {event.note_id}); nobody holds it now.")
        what = f"the release (note {event.note_id})"
        return rejudge(turn, reached, what=what, holds=holds)


def close(*, ctx: Context, config: Config, issue: int, as_agent: str | None, client: GitLab) -> int:
    turn = begin(ctx, config, client, issue, as_agent)
    ledger, cli = turn.ledger, turn.cli
    if ledger.offer is not None:
        offer = ledger.offer
        raise Refusal(
            f"{cli} close: an offer is pending on #{issue} ({describe_offer(offer)}).\n"
            f"{offer.to} answers it first; {offer.to} runs: {command(cli, 'accept', issue)} "
            f"(or {command(cli, 'decline', issue)})"
        )
    if ledger.holder not in (None, turn.agent):
        raise Refusal(
            f"{cli} close: {ledger.holder} holds #{issue}; only the holder closes a held issue.\n"
            f"{ledger.holder} closes it; {ledger.holder} runs: {command(cli, 'close', issue)}"
        )
    open_mrs = citing_mrs(turn.client, config, issue)
    if open_mrs:
        listing = "".join(
            f"\n  {m.ref}: {command(cli, 'merge-check', None, mr=m.iid, mr_project=m.project)}"
            for m in open_mrs
        )
        raise Refusal(
            f"{cli} close: {len(open_mrs)} open merge request(s) cite #{issue}; merge or close "
            f"them first (merge after merge-check passes):{listing}"
        )
    # Every open merge request citing the issue refuses the close, so there is none to hold.
    event = write(turn, "ownership", "close", {})
    refuse_void(turn, event)
    turn.client.write(
        "PUT", issue_path(config, issue), {"state_event": "close", "add_labels": CLOSED_LABEL}
    )
    turn.say(f"{turn.agent} closed #{issue} (note {event.note_id}).")
    # Read again: a merge request citing the issue may have opened since the check above.
    return rejudge(turn, affected(turn), what=f"the close (note {event.note_id})")


def affected(turn: Turn) -> list[MergeRequestFacts]:
    """The open merge requests the gate judges that cite the issue (shared-in projects' too):
    the gate reads its ledger for them, so a write to it may turn their verdict to refused."""
    return citing_mrs(turn.client, turn.config, turn.issue)
