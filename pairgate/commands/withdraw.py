"""withdraw: an approver takes its approval back. The approval stops counting on every door, the
offer back to the lead it made is voided if still pending, and the review bot's approval of the
merge request is removed on GitLab (POST .../unapprove)."""

from __future__ import annotations

from pathlib import Path

from pairgate.commands.approve import review_bot
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError, Refusal, UsageError
from pairgate.standalone.gitlab import GitLab, GitLabError
from pairgate.standalone.ledger import Approval
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.tracker import mr_path, read_mr
from pairgate.verbs.pipelines import holding, rejudge
from pairgate.verbs.preconditions import command
from pairgate.verbs.turn import (
    Turn,
    begin,
    read_reason,
    refuse_another_name,
    refuse_void,
    write,
)


def _listing(turn: Turn) -> str:
    mine = [a for a in turn.ledger.approvals if a.withdrawn_by is None]
    if not mine:
        return f"#{turn.issue} holds no approval that could be withdrawn."
    return "Its approvals: " + "; ".join(
        f"note {a.note_id} by {a.approver} ({a.mr} at {a.sha[:12]})" for a in mine
    )


def _found(turn: Turn, note: int, again: str) -> Approval:
    """The approval in ``note``, when it is the caller's to withdraw."""
    cli, issue = turn.cli, turn.issue
    approval = next((a for a in turn.ledger.approvals if a.note_id == note), None)
    if approval is None:
        void = next(
            (e for e in turn.ledger.trail if e.note_id == note and e.event == "approve"), None
        )
        if void is not None:
            raise Refusal(
                f"{cli} withdraw: note {note} is an approve record that never took effect "
                f"({void.void}), so it is already void: no door counts it.\n{_listing(turn)}"
            )
        raise Refusal(
            f"{cli} withdraw: note {note} is not an approval recorded on #{issue}.\n"
            f"{_listing(turn)} See them all: {command(cli, 'status', issue)}"
        )
    if approval.approver != turn.agent:
        raise Refusal(
            f"{cli} withdraw: the approval in note {note} is {approval.approver}'s, not "
            f"{turn.agent}'s: only its approver withdraws an approval.\n{approval.approver} "
            f"runs: {again}"
        )
    if approval.withdrawn_by is not None:
        raise Refusal(
            f"{cli} withdraw: {turn.agent} already withdrew the approval in note {note} (note "
            f"{approval.withdrawn_by}); no door counts it. See: {command(cli, 'status', issue)}"
        )
    return approval


def withdraw(
    *,
    ctx: Context,
    config: Config,
    issue: int,
    approval: int,
    reason: str | None,
    reason_file: Path | None,
    as_agent: str | None,
    client: GitLab,
) -> int:
    text = read_reason(reason, reason_file, cli=config.cli)
    if not text:
        raise UsageError(
            f"{config.cli} withdraw: say what is wrong with the approval: --reason TEXT or "
            f"--reason-file F (the note records it for the lead)"
        )
    # A freeze window holds writes back, but a withdrawal only ever takes an approval away.
    turn = begin(ctx, config, client, issue, as_agent, check_freezes=False)
    again = command(turn.cli, "withdraw", issue, approval=approval, reason_file="<file>")
    found = _found(turn, approval, again)
    refuse_another_name(turn, "withdraw", again)
    bot = review_bot(turn)  # before anything is written: the GitLab side must be removable
    # Read before the write: the hold pipeline starts before it (pipelines.holding).
    mr = read_mr(turn.client, found.mr.project, found.mr.iid, cli=turn.cli)
    opened = [mr] if mr.state == "opened" else []
    with holding(turn, opened) as holds:
        event = write(turn, "approval", "withdraw", {"approval": approval, "reason": text})
        refuse_void(turn, event)
        offer = turn.before.offer
        voided = offer is not None and offer.note_id == approval and turn.ledger.offer is None
        turn.say(
            f"{turn.agent} withdraws the approval in note {approval} of {found.mr} at "
            f"{found.sha[:12]} (note {event.note_id}); no door counts it now."
            + (
                f" Its offer back to {found.to} is void: {turn.ledger.holder} holds #{issue} "
                f"as {turn.ledger.role}."
                if voided
                else ""
            )
        )
        # First the new pipeline (the gate's verdict), then GitLab's approval: a failure to
        # remove the approval must not leave the old green pipeline standing.
        what = f"the withdrawal (note {event.note_id})"
        code = rejudge(turn, opened, what=what, holds=holds)
    _unapprove(turn, bot, found, mr, event.note_id)
    return code


def _unapprove(
    turn: Turn, bot: GitLab, approval: Approval, mr: MergeRequestFacts, note: int
) -> None:
    """Remove the review bot's GitLab approval of the merge request (it approved for every
    approver, so another approval that still counts is said out loud)."""
    if mr.state != "opened":
        turn.say(f"{mr.ref} is {mr.state}: there is no GitLab approval to remove.")
        return
    path = f"{mr_path(mr.project, mr.iid)}/unapprove"
    try:
        bot.write("POST", path, {})
        turn.say(f"removed the review bot's approval of {mr.ref} on GitLab.")
    except GitLabError as exc:
        if exc.status != 404:  # 404 (older GitLab): there was no approval to remove
            raise PairgateError(
                f"pairgate: the withdrawal is recorded (note {note}) and no door counts the "
                f"approval, but GitLab did not remove the review bot's approval of {mr.ref}: "
                f"{exc.message}\nRemove it as the review bot (POST {path} with its token), or "
                f"run this again once GitLab answers: it refuses, since the withdrawal stands, "
                f"so ask a maintainer to unapprove"
            ) from None
        turn.say(f"GitLab showed no review-bot approval of {mr.ref} to remove.")
    still = [
        a
        for a in turn.ledger.approvals
        if a.mr == approval.mr and a.withdrawn_by is None and a.sha == mr.head_sha
    ]
    if still:
        other = still[-1]
        turn.say(
            f"The approval in note {other.note_id} by {other.approver} still names the head; "
            f"its GitLab side went with this one. {other.approver} repeats it; "
            f"{other.approver} runs: "
            + command(
                turn.cli,
                "approve",
                turn.issue,
                mr=mr.iid,
                mr_project=mr.project,
                sha=other.sha,
                to=other.to,
                server_approval_only=True,
            )
        )
