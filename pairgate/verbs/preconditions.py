"""The refusals the ownership verbs share: each says what is wrong and the exact command that
fixes it, spelled with cli_command."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from pairgate.standalone.errors import Refusal
from pairgate.standalone.fold import is_finder
from pairgate.standalone.ledger import Offer
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.records import ROLES
from pairgate.tracker import read_mr
from pairgate.verbs.merge_requests import citing_mrs, has_commits, pipeline_problem
from pairgate.verbs.turn import Turn

# A command line with some flags changed: again(sha="...") -> "pairgate handoff 4 ... --sha ..."
Again = Callable[..., str]
ROLE_WORDS = (*ROLES, "solo", "finder")


def command(cli: str, verb: str, issue: int | None, **flags: Any) -> str:
    """``<cli> <verb> <issue> --flag value ...``; None and False flags are left out."""
    words = [cli, verb] + ([str(issue)] if issue is not None else [])
    for name, value in flags.items():
        flag = "--" + name.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            words.append(flag)
        elif isinstance(value, list):
            words += [w for item in value for w in (flag, shlex.quote(str(item)))]
        elif str(value).startswith("<") and str(value).endswith(">"):
            words += [flag, str(value)]  # a placeholder for the reader to fill in
        else:
            words += [flag, shlex.quote(str(value))]
    return " ".join(words)


def describe_offer(offer: Offer) -> str:
    what = "an approval's offer back" if offer.event == "approve" else "an offer"
    return (
        f"{what} in note {offer.note_id}, {offer.sender} -> {offer.to} as {offer.role}, "
        f"{offer.mr} at {offer.sha[:12]}"
    )


def must_hold(turn: Turn, verb: str) -> None:
    ledger, issue, cli = turn.ledger, turn.issue, turn.cli
    if ledger.holder == turn.agent:
        return
    if ledger.offer and ledger.offer.to == turn.agent:
        fix = f"An offer to you is pending (note {ledger.offer.note_id}); take it first: " + (
            command(cli, "accept", issue)
        )
    elif ledger.holder is None:
        fix = f"Nobody holds it; take it first: {command(cli, 'claim', issue, role='lead')}"
    else:
        fix = (
            f"Only {ledger.holder} can {verb} it now. Ask {ledger.holder} to offer it to you; "
            f"{ledger.holder} runs:\n"
            f"  {command(cli, 'handoff', issue, to=turn.agent, role='<role>', sha='<head>')}"
        )
    holder = f"{ledger.holder} holds it" if ledger.holder else "nobody holds it"
    raise Refusal(f"{cli} {verb}: {turn.agent} does not hold #{issue} ({holder}).\n{fix}")


def check_receiver(
    turn: Turn, verb: str, to: str, again: Again, *, new_identity: bool | None
) -> None:
    """--to names an identity: not a role word, not a finder, and known (the grammar or the
    trail) unless --new-identity says so. ``new_identity`` None: the verb has no such flag."""
    cli, prefix = turn.cli, turn.config.agent_identity_prefix
    if to in ROLE_WORDS:
        raise Refusal(
            f"{cli} {verb}: --to {to} is a role, not an identity; --to takes the name the "
            f"receiver runs as.\nDid you mean: {again(to=f'{prefix}-{to}')}"
        )
    if is_finder(to, turn.config):
        raise Refusal(
            f"{cli} {verb}: {to} is a finder, and a finder never holds an issue (it files "
            f"evidence only).\nOffer it to a lead or a review: {again(to=f'{prefix}-lead')}"
        )
    if not turn.known_name(to) and not new_identity:
        fix = (
            f"if {to} is right, say so:\n  {again(new_identity=True)}"
            if new_identity is not None
            else f"names on the trail: {', '.join(sorted(turn.ledger.names)) or 'none'}"
        )
        raise Refusal(
            f"{cli} {verb}: --to {to} matches neither the identity grammar ({prefix}-lead, "
            f"-review, -solo, -finder, optionally with a suffix) nor a name on #{turn.issue}'s "
            f"trail. Check the spelling; {fix}"
        )


def check_offer_slot(turn: Turn, verb: str, supersede: int | None, again: Again) -> None:
    """One live offer per issue: replacing the pending one takes --supersede <its note id>."""
    offer, cli = turn.ledger.offer, turn.cli
    if offer is None and supersede is None:
        return
    if offer is None:
        raise Refusal(
            f"{cli} {verb}: --supersede {supersede}: no offer is pending on #{turn.issue}, so "
            f"there is nothing to replace.\nRun it without --supersede: {again(supersede=None)}"
        )
    if supersede == offer.note_id:
        return
    said = "" if supersede is None else f"--supersede {supersede} names no pending offer; "
    raise Refusal(
        f"{cli} {verb}: {said}#{turn.issue} already has a pending offer: "
        f"{describe_offer(offer)}. An issue holds one live offer.\n"
        f"To replace it: {again(supersede=offer.note_id)}\n"
        f"Or let {offer.to} answer it; {offer.to} runs: {command(cli, 'accept', turn.issue)} "
        f"(or {command(cli, 'decline', turn.issue)})"
    )


def resolve_mr(
    turn: Turn, verb: str, mr: int | None, mr_project: str | None, again: Again
) -> tuple[str, MergeRequestFacts]:
    """--mr (in --mr-project, default the tracker), else the one open MR citing the issue."""
    cli, issue = turn.cli, turn.issue
    if mr is None:
        found = citing_mrs(turn.client, turn.config, issue)
        if mr_project:
            found = [m for m in found if m.project == mr_project]
        if len(found) != 1:
            listing = "".join(f"\n  {again(mr=m.iid, mr_project=m.project)}" for m in found)
            if not found:
                tracker = turn.config.tracker_project
                raise Refusal(
                    f"{cli} {verb}: no open merge request in the group or a project shared "
                    f"into it cites #{issue} ({tracker}#{issue}, its URL, or #{issue} inside "
                    f"{tracker}). Cite it in the merge request's description, or name the merge "
                    "request:\n"
                    f"  {again(mr='<iid>', mr_project='<project>')}"
                )
            raise Refusal(
                f"{cli} {verb}: {len(found)} open merge requests cite #{issue}; name one:{listing}"
            )
        return found[0].project, found[0]
    project = mr_project or turn.config.tracker_project
    return project, read_mr(turn.client, project, mr, defaulted=not mr_project, cli=turn.cli)


def check_offerable(
    turn: Turn, verb: str, project: str, mr: MergeRequestFacts, sha: str, again: Again
) -> None:
    """The MR is open, has commits, --sha is its head, and its head pipeline did not fail
    (except for the approval-at-head job)."""
    cli, name = turn.cli, mr.ref
    if mr.state != "opened":
        raise Refusal(
            f"{cli} {verb}: {name} is {mr.state}; an offer binds to an open merge "
            f"request's head.\nName an open one: {again(mr='<iid>')}"
        )
    if not has_commits(turn.client, mr.project, mr.iid):
        raise Refusal(
            f"{cli} {verb}: {name} has no commits, so there is nothing to offer. Push the work, "
            f"then offer its head:\n  {again(sha='<head>')}"
        )
    head = mr.head_sha
    if sha != head:
        raise Refusal(
            f"{cli} {verb}: --sha {sha} is not the head of {name}; its head is {head}.\n"
            f"If {str(head)[:12]} is what you mean to offer: {again(sha=head)}"
        )
    problem = pipeline_problem(turn.client, mr, sha)
    if problem:
        raise Refusal(
            f"{cli} {verb}: {name} cannot be offered: its {problem}. Fix it, push, and offer the "
            f"new head:\n  {again(sha='<new head>')}"
        )


def read_mr_of(turn: Turn, offer: Offer) -> MergeRequestFacts:
    assert offer.mr is not None
    return read_mr(turn.client, offer.mr.project, offer.mr.iid, cli=turn.cli)
