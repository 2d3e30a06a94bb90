"""sync: close the issues whose merge request merged at a head an independent approval named.

A dry run unless --apply. For each issue it says why it was (or would be) closed, or why not.
The merge request is the one an approval on the issue names (the approval is the stronger tie:
it names the MR and the commit), read again now for its state and head.
"""

from __future__ import annotations

from collections.abc import Callable

from pairgate import output
from pairgate.standalone.approvals import independence
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, Refusal
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import ROLE_LABELS, Approval, Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.tracker import (
    CLOSED_LABEL,
    IssueRead,
    MrState,
    fold_issues,
    issue_path,
    read_labelled,
    read_mr_states,
)
from pairgate.tracker import read_issues as read_named
from pairgate.verbs.merge_requests import citing, gated_open_mrs
from pairgate.verbs.turn import begin, identity, refuse_void, write
from pairgate.views.approvals import scope_for, with_cited


def decide(
    ledger: Ledger,
    state: str,
    mrs: dict[MrRef, MrState],
    open_citing: list[str],
    counted: Callable[[Approval], bool] | None = None,
) -> tuple[bool, str]:
    """(close it?, why). Pure. ``counted`` says whether an approval counts (independent, not
    withdrawn); by default, the fold's two self-approval rules and the withdrawal."""
    if state != "opened":
        return False, f"it is already {state}"
    counts = counted or (lambda a: not a.self_approval and a.withdrawn_by is None)
    independent = [a for a in ledger.approvals if counts(a)]
    if not ledger.approvals:
        return False, "no approval is recorded on it"
    if not independent:
        return False, (
            "its only approvals are self-approvals or withdrawn, and neither ever counts"
        )
    unread = [(a, mrs[a.mr]) for a in independent if mrs[a.mr].error]
    if unread:
        return False, f"{unread[0][0].mr} could not be read: {unread[0][1].error}"
    merged = [(a, mrs[a.mr]) for a in reversed(independent) if mrs[a.mr].state == "merged"]
    if not merged:
        named = ", ".join(sorted({str(a.mr) for a in independent}))
        return False, f"no merge request an independent approval names has merged ({named})"
    found = next(((a, m) for a, m in merged if m.head == a.sha), None)
    if found is None:
        a, m = merged[0]
        return False, (
            f"{a.mr} merged at {output.short(m.head)}, but the independent approval (note "
            f"{a.note_id}) names {output.short(a.sha)}: what merged is not what was approved"
        )
    approval, mr = found
    what = (
        f"{approval.mr} merged at {output.short(mr.head)}, which {approval.approver} approved "
        f"independently (note {approval.note_id})"
    )
    if ledger.offer is not None:
        offer = ledger.offer
        return (
            False,
            f"{what}, but an offer is pending (note {offer.note_id}): {offer.to} answers it first",
        )
    if open_citing:
        return False, f"{what}, but {', '.join(open_citing)} citing it is still open"
    return True, what


def _counter(
    issue: int, mrs: dict[MrRef, MrState], ledgers: dict[int, Ledger], config: Config
) -> Callable[[Approval], bool]:
    """Does an approval on ``issue`` count: not withdrawn, and independent across the issues
    its merge request cites (those the sync read or could read)?"""

    def counted(a: Approval) -> bool:
        scope = scope_for(issue, mrs[a.mr].facts, ledgers, config)
        return a.withdrawn_by is None and not independence(issue, a, scope, config=config)

    return counted


def _open_citing(mrs: list[MergeRequestFacts], issue: int, config: Config) -> list[str]:
    return [m.ref for m in citing(mrs, issue, config)]


def sync(
    *,
    ctx: Context,
    config: Config,
    issues: list[int],
    apply: bool,
    as_agent: str | None,
    client: GitLab,
) -> int:
    cli = config.cli
    if apply:
        identity(ctx, config, as_agent)  # never an anonymous write: fail before any read
    reads: list[IssueRead] = (
        fold_issues(client, config, read_named(client, config, issues))
        if issues
        else read_labelled(client, config, closed=False, labels=ROLE_LABELS)
    )
    mrs = read_mr_states(client, (a.mr for r in reads if r.ledger for a in r.ledger.approvals))
    known = {r.iid: r.ledger for r in reads if r.ledger is not None}
    ledgers = with_cited(client, config, known, (m.facts for m in mrs.values()))
    open_mrs = gated_open_mrs(client, config)
    closable, refused, unreadable = [], 0, 0
    for read in reads:
        if read.ledger is None:
            print(f"#{read.iid}: not closed: could not be read: {read.error}", file=ctx.stdout)
            unreadable += 1
            continue
        counted = _counter(read.iid, mrs, ledgers, config)
        close, why = decide(
            read.ledger, read.state, mrs, _open_citing(open_mrs, read.iid, config), counted
        )
        if not close:
            print(f"#{read.iid}: not closed: {why}", file=ctx.stdout)
        elif not apply:
            print(f"#{read.iid}: would close: {why}", file=ctx.stdout)
            closable.append(read.iid)
        else:
            try:
                note = _close(ctx, config, client, read.iid, why, as_agent)
            except Refusal as exc:
                print(f"#{read.iid}: not closed: {exc.message}", file=ctx.stdout)
                refused += 1
                continue
            print(f"#{read.iid}: closed (note {note}): {why}", file=ctx.stdout)
    if not reads:
        print("No open labelled issues to sync.", file=ctx.stdout)
    if closable:
        numbers = " ".join(str(n) for n in closable)
        print(
            f"Dry run: nothing was closed. To close them: {cli} sync {numbers} --apply",
            file=ctx.stdout,
        )
    if unreadable:
        return Exit.ERROR
    return Exit.REFUSED if refused else Exit.OK


def _close(
    ctx: Context, config: Config, client: GitLab, issue: int, why: str, as_agent: str | None
) -> int:
    """One close, as a turn: the freeze check, the record, the label, then the issue's state."""
    turn = begin(ctx, config, client, issue, as_agent)
    if turn.ledger.offer is not None:  # an offer landed since the board was read
        raise Refusal(f"an offer is pending now (note {turn.ledger.offer.note_id})")
    text = f"**{turn.agent}** closes this issue (`{config.cli} sync`): {why}."
    event = write(turn, "ownership", "close", {}, human=text)
    refuse_void(turn, event)
    turn.client.write(
        "PUT", issue_path(config, issue), {"state_event": "close", "add_labels": CLOSED_LABEL}
    )
    return event.note_id
