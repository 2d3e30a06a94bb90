"""freeze and thaw: a recorded window in which other agents' writing commands inside a scope are
refused (and, for a merge request, merge-check fails).

The window is a ``freeze`` record on the issue named on the command line, and that issue gets
the ``pairgate::frozen`` label BEFORE the record is written: a crash between the two leaves a
label over no window (harmless: readers fold and find none), never a window nobody can find.
thaw writes a ``thaw`` record next to each of the caller's live windows and removes the label
where no live window is left.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, Refusal, UsageError
from pairgate.standalone.fold import freeze_refusal
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import FROZEN_LABEL, Freeze
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.records import FREEZE_MAX_MINUTES
from pairgate.tracker import IssueRead, issue_path, read_issue, read_labelled, read_mr
from pairgate.verbs.merge_requests import citing_mrs, gated_open_mrs
from pairgate.verbs.note_text import quoted
from pairgate.verbs.pipelines import holding, rejudge
from pairgate.verbs.turn import begin, identity, read_reason, refuse_void, write

_SCOPE = re.compile(
    r"^(board|issue|issue:(?P<issue>[1-9]\d{0,9})|mr:((?P<project>[^!\s]+)!)?(?P<mr>[1-9]\d{0,9}))$"
)
SCOPE_GRAMMAR = "board, issue, issue:<iid>, mr:<iid> or mr:<project>!<iid>"


def _describe(scope: str) -> str:
    return "the board" if scope == "board" else scope


def resolve_scope(client: GitLab, config: Config, issue: int, scope: str, cli: str) -> str:
    """The scope as the record spells it: ``board``, ``issue:<iid>`` or ``mr:<project>!<iid>``.
    A bare ``mr:<iid>`` is the one open merge request with that iid citing the issue, else the
    tracker project's."""
    match = _SCOPE.match(scope.strip())
    if not match:
        raise UsageError(f"{cli} freeze: --scope {scope!r} is not one of {SCOPE_GRAMMAR}")
    if match.group(0) == "board":
        return "board"
    if match.group(0) == "issue":
        return f"issue:{issue}"
    if match.group("issue"):
        target = int(match.group("issue"))
        read_issue(client, config, target)  # refuses an issue that does not exist
        return f"issue:{target}"
    iid, project = int(match.group("mr")), match.group("project")
    if project is None:
        found = sorted({m.project for m in citing_mrs(client, config, issue) if m.iid == iid})
        if len(found) > 1:
            names = ", ".join(f"mr:{p}!{iid}" for p in found)
            raise UsageError(f"{cli} freeze: --scope mr:{iid} is ambiguous; name one: {names}")
        project = found[0] if found else config.tracker_project
    read_mr(client, project, iid, cli=cli)  # refuses a merge request that does not exist
    return f"mr:{project}!{iid}"


def freeze_text(agent: str, scope: str, minutes: int, reason: str, cli: str) -> str:
    gate = (
        f" `{cli} merge-check` fails for {scope[3:]} meanwhile." if scope.startswith("mr:") else ""
    )
    return (
        f"**{agent}** freezes **{_describe(scope)}** for {minutes} minutes: other agents' "
        f"writing commands inside it are refused until it expires or {agent} runs "
        f"`{cli} thaw`.{gate}\n\n{quoted(reason)}"
    )


def _until(window: Freeze) -> str:
    until = window.until
    return "?" if until is None else time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))


def freeze(
    *,
    ctx: Context,
    config: Config,
    issue: int,
    scope: str,
    reason: str | None,
    reason_file: Path | None,
    minutes: int,
    as_agent: str | None,
    client: GitLab,
) -> int:
    cli = config.cli
    reason = read_reason(reason, reason_file, cli=cli) or ""
    if not 1 <= minutes <= FREEZE_MAX_MINUTES:
        raise UsageError(
            f"{cli} freeze: --minutes {minutes} is outside 1..{FREEZE_MAX_MINUTES} (one week)"
        )
    if not reason.strip():
        raise UsageError(f"{cli} freeze: the reason is empty; say why others must wait")
    turn = begin(ctx, config, client, issue, as_agent)
    resolved = resolve_scope(turn.client, config, issue, scope, cli)
    reached = affected(turn.client, config, resolved)  # before the write: the holds go first
    if FROZEN_LABEL not in turn.state.get("labels", []):
        turn.state = dict(
            turn.client.write("PUT", issue_path(config, issue), {"add_labels": FROZEN_LABEL})
        )
    fields = {"scope": resolved, "reason": reason.strip(), "minutes": minutes}
    text = freeze_text(turn.agent, resolved, minutes, reason.strip(), cli)
    with holding(turn, reached) as holds:
        event = write(turn, "freeze", "freeze", fields, human=text)
        refuse_void(turn, event)
        window = next(w for w in turn.ledger.freezes if w.note_id == event.note_id)
        turn.say(
            f"{turn.agent} froze {_describe(resolved)} until {_until(window)} ({minutes} min; "
            f"note {event.note_id} on #{issue}). Other agents' writing commands inside it are "
            "refused"
            + (" and merge-check fails" if resolved.startswith("mr:") else "")
            + f". Lift it early with: {cli} thaw"
        )
        what = f"the freeze (note {event.note_id})"
        return rejudge(turn, reached, what=what, holds=holds)


def affected(client: GitLab, config: Config, scope: str) -> list[MergeRequestFacts]:
    """The open merge requests a window on ``scope`` can reach: the one it names, those citing
    its issue, or every open one the gate judges (the board), shared-in projects' included."""
    if scope == "board":
        return gated_open_mrs(client, config)
    if scope.startswith("issue:"):
        return citing_mrs(client, config, int(scope.removeprefix("issue:")))
    project, iid = scope.removeprefix("mr:").rsplit("!", 1)
    mr = read_mr(client, project, int(iid), cli=config.cli)
    return [mr] if mr.state == "opened" else []


def thaw(*, ctx: Context, config: Config, as_agent: str | None, client: GitLab) -> int:
    agent = identity(ctx, config, as_agent)
    now, cli = ctx.now(), config.cli
    reads = read_labelled(client, config, closed=True, labels=(FROZEN_LABEL,))
    mine = {
        r.iid: [w for w in r.ledger.freezes if w.agent == agent and w.live(now)]
        for r in reads
        if r.ledger
    }
    mine = {iid: windows for iid, windows in mine.items() if windows}
    if not mine and _unreadable(cli, reads, ctx):
        return Exit.ERROR
    if not mine:
        others = [
            freeze_refusal(r.iid, w, now=now, config=config)
            for r in reads
            if r.ledger
            for w in r.ledger.freezes
            if w.live(now)
        ]
        listing = "".join(f"\n  {line.splitlines()[0]}" for line in others)
        raise Refusal(
            f"{cli} thaw: {agent} has declared no live freeze window, so there is nothing to "
            f"thaw (thaw lifts only your own)."
            + (
                f"\nLive windows, each lifted only by whoever declared it:{listing}"
                if others
                else ""
            )
        )
    failed = 0
    for iid, windows in sorted(mine.items()):
        try:
            _thaw_on(ctx, config, client, iid, windows, as_agent, now)
        except Refusal as exc:  # a closed issue, say: the other windows are still lifted
            print(f"#{iid}: not thawed: {exc.message}", file=ctx.stderr)
            failed += 1
    return _unreadable(cli, reads, ctx) or (Exit.REFUSED if failed else Exit.OK)


def _thaw_on(
    ctx: Context,
    config: Config,
    client: GitLab,
    iid: int,
    windows: list[Freeze],
    as_agent: str | None,
    now: float,
) -> None:
    """Thaw each window on one issue, then drop its label when nothing live is left there."""
    turn = begin(ctx, config, client, iid, as_agent, check_freezes=False)
    for window in windows:
        text = (
            f"**{turn.agent}** thaws the freeze of note {window.note_id} "
            f"({_describe(window.scope)}); writing commands inside it are no longer refused."
        )
        event = write(turn, "freeze", "thaw", {"freeze": window.note_id}, human=text)
        refuse_void(turn, event)
        turn.say(
            f"{turn.agent} thawed {_describe(window.scope)} (the freeze of note "
            f"{window.note_id} on #{iid}; note {event.note_id})."
        )
    if not any(w.live(now) for w in turn.ledger.freezes):
        turn.client.write("PUT", issue_path(config, iid), {"remove_labels": FROZEN_LABEL})


def _unreadable(cli: str, reads: list[IssueRead], ctx: Context) -> int:
    """Exit 2 when a labelled issue could not be read: a window of the caller's may be there."""
    missed = [r.iid for r in reads if r.ledger is None]
    for iid in missed:
        print(f"{cli} thaw: could not read #{iid}; a window of yours there stays", file=ctx.stderr)
    return Exit.ERROR if missed else Exit.OK
