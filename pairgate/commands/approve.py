"""approve: record an approval bound to the merge request's exact head, approve it on GitLab
as the review bot, and offer the issue back to the lead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pairgate.evidence.rerun import read_rerun, rerun_field, verify_for_approve
from pairgate.evidence.surface import NO_RERUN, accepted_offer, record_field, rerun_summary
from pairgate.merge_requests import checked_sha
from pairgate.preconditions import (
    Again,
    check_offer_slot,
    check_receiver,
    command,
    must_hold,
)
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError, Refusal, UsageError
from pairgate.standalone.fold import self_approval_rule
from pairgate.standalone.gitlab import GitLab, GitLabError, WriteUncertain, gitlab_with_token
from pairgate.standalone.ledger import MrRef
from pairgate.tracker import mr_path, read_mr
from pairgate.turn import Turn, begin, checked_name, read_reason, refuse_void, write


def review_bot(turn: Turn) -> GitLab:
    """The review bot's client: <env_prefix>_REVIEW_BOT_TOKEN, else review_bot_token_file
    (a relative path is read beside the configuration file)."""
    variable = turn.config.env_name("REVIEW_BOT_TOKEN")
    token = turn.ctx.env.get(variable, "").strip()
    source = variable
    if not token:
        path = Path(turn.config["review_bot_token_file"]).expanduser()
        path = path if path.is_absolute() else turn.config.path.parent / path
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError:
            token = ""
        source = f"{path} (review_bot_token_file)"
        if not token:
            raise PairgateError(
                f"{turn.cli} approve needs the review-bot credential to approve on GitLab: set "
                f"{variable}, or put the token in {path} (review_bot_token_file). Nothing was "
                "written."
            )
    return gitlab_with_token(turn.client, token, source=source)


def approve_on_gitlab(turn: Turn, bot: GitLab, project: str, iid: int, sha: str) -> None:
    """POST .../approve with ``sha``: GitLab itself refuses (409) when it is not the head."""
    path = mr_path(project, iid)
    try:
        bot.write("POST", f"{path}/approve", {"sha": sha})
        return
    except GitLabError as exc:
        if exc.status == 409:
            raise Refusal(
                f"{turn.cli} approve: GitLab refused the approval: {exc.message}. The head of "
                f"{project}!{iid} is no longer {sha[:12]}; review the new head and approve that."
            ) from None
        # 401 is how older GitLab says "already approved"; a lost answer may have landed.
        if exc.status != 401 and not isinstance(exc, WriteUncertain):
            raise
        me = bot.get("user")["id"]
        approvers = [a["user"]["id"] for a in bot.get(f"{path}/approvals").get("approved_by", [])]
        if me not in approvers:
            raise


def check_rerun_for(turn: Turn, doc: object, path: Path, *, sha: str, again: Again) -> None:
    """Refuse (exit 1) unless the re-run in ``path`` ran at ``sha``, answers the offer the
    approver accepted, and killed that offer's mutant again."""
    offer = accepted_offer(turn.ledger)
    problems = verify_for_approve(
        doc,
        sha=sha,
        project=turn.config["tracker_project"],
        issue=turn.issue,
        offer_note=None if offer is None else offer.note_id,
        offer_evidence=None
        if offer is None
        else record_field(turn.ledger, offer.note_id, "evidence"),
    )
    if not problems:
        return
    listed = "\n".join(f"  - {p}" for p in problems)
    if offer is None:
        fix = (
            f"A re-run answers the offer you accepted; you hold #{turn.issue} without one. "
            f"Approve without --evidence: {again(evidence=None)}"
        )
    elif record_field(turn.ledger, offer.note_id, "evidence") is None:
        fix = (
            f"The offer you accepted (note {offer.note_id}) carries no mutation evidence, so "
            f"there is nothing to re-run: hand the work back for evidence, or approve without "
            f"--evidence: {again(evidence=None)}"
        )
    else:
        rerun = command(
            turn.cli,
            "evidence rerun",
            turn.issue,
            mutant_index="<K>",
            mutant="<your patch>",
            test="<test command>",
            out=path,
        )
        fix = (
            f"Re-run the offer's mutant (note {offer.note_id}) at {sha[:12]}:\n  {rerun}\n"
            f"then approve: {again()}\nIf the offer's mutant is not killed, the evidence does not "
            f"hold: hand the work back with that as a BLOCKS: finding."
        )
    raise Refusal(
        f"{turn.cli} approve: the re-run in {path} does not back this approval:\n{listed}\n{fix}"
    )


def approve(
    *,
    ctx: Context,
    config: Config,
    issue: int,
    mr: int,
    sha: str,
    to: str,
    mr_project: str | None,
    reason: str | None,
    reason_file: Path | None,
    not_covering: list[str],
    server_approval_only: bool,
    supersede: int | None,
    as_agent: str | None,
    client: GitLab,
    evidence: Path | None = None,
) -> int:
    sha = checked_sha(sha, cli=config.cli)
    checked_name(to, "--to ", cli=config.cli)
    text = read_reason(reason, reason_file, cli=config.cli)
    if evidence is not None and server_approval_only:
        raise UsageError(
            f"{config.cli} approve: --evidence goes with the approval the ledger records; "
            "--server-approval-only records nothing"
        )
    rerun = None if evidence is None else read_rerun(evidence)
    project = mr_project or config["tracker_project"]
    turn = begin(ctx, config, client, issue, as_agent)
    bot = review_bot(turn)  # before anything is written: no half-done approval
    cli, ledger = turn.cli, turn.ledger
    flags: dict[str, Any] = {
        "mr": mr,
        "sha": sha,
        "to": to,
        "mr_project": mr_project,
        "not_covering": not_covering,
        "supersede": supersede,
        "evidence": evidence,
    }

    def again(**changes: Any) -> str:
        return command(cli, "approve", issue, **{**flags, **changes})

    if server_approval_only:
        ref = MrRef(project, mr)
        if not any(
            a.mr == ref and a.sha == sha and a.approver == turn.agent for a in ledger.approvals
        ):
            raise Refusal(
                f"{cli} approve: #{issue} holds no approval by {turn.agent} of {ref} at "
                f"{sha[:12]}; --server-approval-only repeats only the GitLab side of one.\n"
                f"Record the approval: {again()}"
            )
        approve_on_gitlab(turn, bot, project, mr, sha)
        turn.say(f"approved {ref} at {sha[:12]} on GitLab as the review bot; no note written.")
        return 0

    must_hold(turn, "approve")
    if ledger.role != "review":
        prefix = config["agent_identity_prefix"]
        raise Refusal(
            f"{cli} approve: {turn.agent} holds #{issue} as {ledger.role}; only the review role "
            f"approves.\nOffer it to a reviewer: "
            f"{command(cli, 'handoff', issue, to=f'{prefix}-review', role='review', sha=sha, mr=mr, mr_project=mr_project)}"
        )
    check_receiver(turn, "approve", to, again, new_identity=None)
    check_offer_slot(turn, "approve", supersede, again)
    found = read_mr(turn.client, project, mr, defaulted=not mr_project, cli=cli)
    head = found.head_sha
    if found.state != "opened":
        raise Refusal(
            f"{cli} approve: {project}!{mr} is {found.state}; an approval binds to an "
            "open merge request's head."
        )
    if head != sha:
        raise Refusal(
            f"{cli} approve: --sha {sha} is not the head of {project}!{mr}; its head is {head}. "
            f"An approval names the commit you read.\nReview {str(head)[:12]}, then: "
            f"{again(sha=head)}"
        )
    if evidence is not None:
        check_rerun_for(turn, rerun, evidence, sha=sha, again=again)
    because = self_approval_rule(turn.agent, to, ledger.accepted_from)
    approve_on_gitlab(turn, bot, project, mr, sha)
    event = write(
        turn,
        "approval",
        "approve",
        {
            "to": to,
            "role": "lead",
            "sha": sha,
            "mr": {"project": project, "iid": mr},
            "reason": text,
            "supersedes": supersede,
            "not_covering": list(not_covering),
            "self_approval": because is not None,
            "rerun": None if rerun is None else rerun_field(rerun),
        },
    )
    refuse_void(turn, event)
    turn.say(
        f"{turn.agent} approves {project}!{mr} at {sha[:12]} (note {event.note_id}) and offers "
        f"#{issue} back to {to}, who takes it with: {command(cli, 'accept', issue)}"
    )
    recorded = event.record.get("rerun")
    if recorded:
        turn.say(f"Re-run before approving: {rerun_summary(recorded)}.")
        if recorded["own"]["verdict"] != "killed":
            turn.warn(
                f"warning: your own mutant was not killed ({recorded['own']['verdict']}): the "
                "tests do not pin that behaviour, and the approval records it."
            )
    else:
        turn.say(f"The approval records {NO_RERUN} (no --evidence).")
    if because:
        turn.warn(
            f"warning: this is a self-approval ({because}). It is recorded, and merge-check "
            f"does not count it: the merge needs an approval by another agent."
        )
    return 0
