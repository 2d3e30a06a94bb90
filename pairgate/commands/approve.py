"""approve: record an approval bound to the merge request's exact head, approve it on GitLab
as the review bot, offer the issue back to the lead, and start a merge request pipeline at the
approved head (as the review bot) so the gate jobs run again and see the approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pairgate.evidence.ci_result import read_ci_rerun, state_words
from pairgate.evidence.rerun import (
    read_rerun,
    reproduction_problems,
    rerun_field,
    verify_for_approve,
)
from pairgate.evidence.surface import (
    NO_RERUN,
    SELF_REPORTED,
    accepted_offer,
    ci_words,
    record_field,
    rerun_summary,
)
from pairgate.standalone.approvals import assess, reasons_against
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError, Refusal, UsageError
from pairgate.standalone.fold import self_approval_rule
from pairgate.standalone.gitlab import GitLab, GitLabError, WriteUncertain
from pairgate.standalone.gitlab_env import gitlab_with_token
from pairgate.standalone.ledger import Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_ledger
from pairgate.standalone.scope import cited_issues
from pairgate.tracker import mr_path, pooled, read_mr, review_bot_token
from pairgate.verbs.merge_requests import checked_sha
from pairgate.verbs.note_text import note_text
from pairgate.verbs.pipelines import start
from pairgate.verbs.preconditions import (
    Again,
    check_offer_slot,
    check_receiver,
    command,
    must_hold,
)
from pairgate.verbs.turn import Turn, begin, checked_name, read_reason, refuse_void, write


def review_bot(turn: Turn) -> GitLab:
    """The review bot's client (tracker.review_bot_token says where its token is read)."""
    token, source = review_bot_token(turn.config, turn.ctx.env)
    if not token:
        variable = turn.config.env_name("REVIEW_BOT_TOKEN")
        raise PairgateError(
            f"{turn.cli} approve needs the review-bot credential to approve on GitLab: set "
            f"{variable}, or put the token in {source}. Nothing was written."
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


def start_pipeline(turn: Turn, bot: GitLab, project: str, iid: int, sha: str, retry: str) -> None:
    """A new merge request pipeline at the approved head, as the review bot: the gate jobs run
    again and see the approval. A failure to start it is reported; the approval stands."""
    o = start(bot, project, iid, sha)
    if o.why is not None:
        turn.warn(
            f"warning: the approval stands, but GitLab started no merge request pipeline of "
            f"{o.ref} at {o.sha[:12]} ({o.why}), so the gate jobs have not run since it."
            f"{o.maybe}{o.fix(turn.cli)} Start one: {retry}"
        )
        return
    number = f" {o.pipeline}" if o.pipeline else ""
    turn.say(
        f"started merge request pipeline{number} of {o.ref} at {o.sha[:12]} as the "
        "review bot, so the gate jobs run again at the approved head"
    )


def check_rerun_for(turn: Turn, doc: object, path: Path, *, sha: str, again: Again) -> None:
    """Refuse (exit 1) unless the re-run in ``path`` ran at ``sha``, answers the offer the
    approver accepted, and killed that offer's mutant again."""
    offer = accepted_offer(turn.ledger)
    problems = verify_for_approve(
        doc,
        sha=sha,
        project=turn.config.tracker_project,
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


def reproduced(turn: Turn, doc: Any, path: Path) -> dict[str, Any]:
    """approve's own run of the re-run's mutants; a refusal (exit 1) unless it gives what the
    document claims. A document is self-reported (a plain digest): this run is the check."""
    from pairgate.commands.evidence_rerun import reproduce

    again = reproduce(doc, ctx=turn.ctx, config=turn.config)
    problems = reproduction_problems(doc, again)
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise Refusal(
            f"{turn.cli} approve: approve ran the re-run's mutants again at "
            f"{again['sha'][:12]}, and its run does not give what {path} claims:\n{listed}\n"
            f"A re-run document is self-reported and checked by running it again: this one was "
            f"not made by the run it describes, or the tests are flaky. Re-run with "
            f"{turn.cli} evidence rerun, then approve with the document it writes."
        )
    return again


def ci_rerun_of(turn: Turn, ref: MrRef, sha: str) -> tuple[bool, dict[str, Any] | None, str]:
    """(whether the approved offer carries evidence, the CI re-run of it at ``sha`` when one
    finished and counts, what to say of it)."""
    offer = accepted_offer(turn.ledger)
    evidence = None if offer is None else record_field(turn.ledger, offer.note_id, "evidence")
    if offer is None or evidence is None:
        return False, None, ""
    state = read_ci_rerun(
        turn.client,
        ref,
        sha=sha,
        offer_note=offer.note_id,
        evidence_digest=str(evidence["digest"]),
    )
    if state["state"] == "done":
        return True, state["result"], f"{ci_words(state['result'])}."
    return True, None, f"{state_words(state)}; the approval records no CI re-run."


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
    project = mr_project or config.tracker_project
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

    # --server-approval-only records nothing, so it never carries --evidence (it refuses it).
    retry = again(server_approval_only=True, not_covering=[], supersede=None, evidence=None)

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
        start_pipeline(turn, bot, project, mr, sha, retry)
        return 0

    must_hold(turn, "approve")
    if ledger.role != "review":
        prefix = config.agent_identity_prefix
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
    if not (found.target_branch and found.base_sha and found.start_sha):
        raise Refusal(
            f"{cli} approve: GitLab has not computed the diff of {project}!{mr} yet (its "
            f"diff_refs are empty), and an approval binds the target branch and merge base it "
            f"reviewed. Wait a moment, then: {again()}"
        )
    observed = None
    if evidence is not None:
        check_rerun_for(turn, rerun, evidence, sha=sha, again=again)
        observed = reproduced(turn, rerun, evidence)
    ref = MrRef(project, mr)
    carries, ci_rerun, ci_said = ci_rerun_of(turn, ref, sha)
    others = cited_ledgers(turn, found)
    because = self_approval_rule(turn.agent, to, ledger.accepted_from)
    against = reasons_against(
        turn.agent, {issue: ledger, **others}, mr=ref, before=None, config=config
    )
    fields = {
        "to": to,
        "role": "lead",
        "sha": sha,
        "mr": {"project": project, "iid": mr},
        "reason": text,
        "supersedes": supersede,
        "not_covering": list(not_covering),
        "self_approval": because is not None or bool(against),
        "target_branch": found.target_branch,
        "base_sha": found.base_sha,
        "start_sha": found.start_sha,
        "rerun": None if rerun is None else rerun_field(rerun, observed),
    }
    if carries:  # the CI re-run answers an offer's evidence: none to record without one
        fields["ci_rerun"] = ci_rerun
    # The issue says why by name, as every surface does.
    said = ([because] if because else []) + list(against)
    human = note_text(
        {**fields, "agent": turn.agent, "event": "approve"}, cli=cli, issue=issue, reasons=said
    )
    approve_on_gitlab(turn, bot, project, mr, sha)
    event = write(turn, "approval", "approve", fields, human=human)
    refuse_void(turn, event)
    turn.say(
        f"{turn.agent} approves {project}!{mr} at {sha[:12]} (note {event.note_id}) and offers "
        f"#{issue} back to {to}, who takes it with: {command(cli, 'accept', issue)}"
    )
    start_pipeline(turn, bot, project, mr, sha, retry)
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
    if ci_said:
        turn.say(ci_said)
    if recorded or carries:
        turn.say(f"Evidence and re-runs from an agent's session are {SELF_REPORTED}.")
    written = next(a for a in turn.ledger.approvals if a.note_id == event.note_id)
    assessed = assess(issue, written, {issue: turn.ledger, **others}, config=config)
    reasons = "; ".join(assessed.reasons)
    doors = "no door counts it (merge-check, the CI validators, the merge hook)"
    if assessed.code == "self-approval-only":
        turn.warn(
            f"warning: this is a self-approval ({reasons}). It is recorded, and {doors}: the "
            f"merge needs an approval by an agent with no hand in the work."
        )
    elif assessed.code == "not-offered":
        turn.warn(
            f"warning: this approval does not count ({reasons}). It is recorded, and {doors}: "
            f"the merge needs an approval by an agent that accepted an offer of it from another "
            f"agent, in another session."
        )
    elif assessed.code == "not-review-account":
        turn.warn(
            f"warning: this approval does not count ({reasons}). It is recorded, and {doors}: "
            f"approve from a session that writes with the review account's token."
        )
    return 0


def cited_ledgers(turn: Turn, mr: MergeRequestFacts) -> dict[int, Ledger]:
    """The ledgers of the other tracker issues ``mr`` cites (the generic tracking issue left
    out): independence is judged across all of them, as the gate judges it."""
    config = turn.config
    cited = cited_issues(mr.text, mr_project=mr.project, tracker=config.tracker_project)
    others = [n for n in cited if n not in (turn.issue, config.generic_tracking_issue)]
    ledgers = pooled(lambda n: read_ledger(turn.client, config, n), others)
    return dict(zip(others, ledgers, strict=True))
