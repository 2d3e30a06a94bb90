"""One ownership verb's turn: who acts, what the issue and its ledger say, and the write.

A verb begins a turn (identity first, so an unset identity never reaches GitLab), checks its
refusals against the folded ledger, writes ONE record, re-reads and folds again, and only then
says what happened: a racing writer may have got there first.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError, Refusal, UsageError
from pairgate.standalone.fold import binding_freeze, fold, freeze_refusal, identity_pattern
from pairgate.standalone.gitlab import GitLab, GitLabError, WriteUncertain
from pairgate.standalone.ledger import ROLE_LABELS, Event, Freeze, Ledger, MrRef
from pairgate.standalone.reads import notes_path, read_freezes, read_notes
from pairgate.standalone.records import ISSUE_BOUND_KINDS, compose_note
from pairgate.tracker import issue_path, read_issue
from pairgate.verbs.note_text import note_text
from pairgate.views.damage import damage

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
WRITE_ATTEMPTS = 3


def identity(ctx: Context, config: Config, as_agent: str | None) -> str:
    """--as, else <env_prefix>_AGENT_ID. Unset is an error: pairgate never writes anonymously."""
    variable = config.env_name("AGENT_ID")
    name = (as_agent if as_agent is not None else ctx.env.get(variable, "")).strip()
    if not name:
        raise PairgateError(
            f"{config.cli}: no agent identity: pass --as <agent> or set {variable}. "
            "No record is ever written without a name."
        )
    return checked_name(name, "", cli=config.cli)


def checked_name(name: str, flag: str, *, cli: str) -> str:
    """A name a record can carry (the schema's agent pattern). Checked before any read, because
    no flag (not even --new-identity) can admit a name the record would refuse."""
    if not _NAME.match(name):
        raise UsageError(
            f"{cli}: {flag}{name!r} cannot be an agent identity (letters, digits, . _ -)"
        )
    return name


def session_id(ctx: Context, config: Config) -> str:
    """<env_prefix>_SESSION_ID, else this host and the process session of the shell the agent
    runs commands in: stable for one agent session, distinct between two."""
    explicit = ctx.env.get(config.env_name("SESSION_ID"), "").strip()
    if explicit:
        return explicit[:200]
    return f"{socket.gethostname()}:sid-{os.getsid(0)}"


def read_reason(reason: str | None, reason_file: Path | None, *, cli: str) -> str | None:
    if reason_file is not None:
        try:
            reason = reason_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{cli}: cannot read --reason-file {reason_file}: {exc}") from None
    return reason.strip() or None if reason is not None else None


@dataclass
class Turn:
    ctx: Context
    config: Config
    client: GitLab
    issue: int
    agent: str
    session: str
    state: dict[str, Any]  # the issue as GitLab answered it
    ledger: Ledger
    before: Ledger  # the ledger as the turn found it
    freezes: list[tuple[int, Freeze]] = field(default_factory=list)  # (issue, window) read

    @property
    def cli(self) -> str:
        return self.config.cli

    def say(self, text: str) -> None:
        print(text, file=self.ctx.stdout)

    def warn(self, text: str) -> None:
        print(text, file=self.ctx.stderr)

    def known_name(self, name: str) -> bool:
        """In the identity grammar, or already on this issue's trail."""
        return bool(identity_pattern(self.config).match(name)) or name in self.ledger.names


def begin(
    ctx: Context,
    config: Config,
    client: GitLab,
    issue: int,
    as_agent: str | None,
    *,
    check_freezes: bool = True,
) -> Turn:
    agent = identity(ctx, config, as_agent)
    state = read_issue(client, config, issue)
    ledger = fold(read_notes(client, config, issue), config=config, issue=issue)
    turn = Turn(ctx, config, client, issue, agent, session_id(ctx, config), state, ledger, ledger)
    if not turn.known_name(agent):
        prefix = config.agent_identity_prefix
        raise UsageError(
            f"{config.cli}: {agent!r} is neither an identity of this deployment "
            f"({prefix}-lead, -review, -solo or -finder, optionally with a suffix such as "
            f"{prefix}-lead-{issue}) nor a name on #{issue}'s trail"
        )
    for line in damage(ledger):
        turn.warn(f"warning: #{issue}: {line}")
    if state.get("state") != "opened":
        raise Refusal(
            f"{turn.cli}: #{issue} is closed; nothing on it can change.\n"
            f"Reopen it on GitLab first if the work goes on: "
            f"glab issue reopen {issue} -R {config.tracker_project}"
        )
    if check_freezes:  # before any side effect: another agent's window refuses the whole turn
        turn.freezes = windows_for(client, config, issue, ledger)
        refuse_if_frozen(turn, mr=None)
    return turn


def refuse_another_name(turn: Turn, verb: str, again: str) -> None:
    """A session speaks for one name: refuse ``verb`` as ``turn.agent`` when this session wrote
    records of the issue under another name (the lead's session acting ``--as`` the reviewer).
    A hand-set session id gets past this; a restarted session of the same agent is not stopped."""
    others = [(a, n) for a, s, n in turn.ledger.sessions if s == turn.session and a != turn.agent]
    if not others:
        return
    name, note = others[0]
    raise Refusal(
        f"{turn.cli} {verb}: refused: this session ({turn.session}) wrote as {name} on "
        f"#{turn.issue} (note {note}); a session speaks for one name only, so it does not act "
        f"as {turn.agent}.\n{turn.agent} runs it from its own session: {again} --as {turn.agent}"
    )


def write(
    turn: Turn,
    kind: str,
    event: str,
    fields: dict[str, Any],
    *,
    human: str | None = None,
    appendix: str = "",
) -> Event:
    """Post one record and return it as the fold now sees it (``void`` set when a racing
    writer got there first). A write whose answer is lost is re-read, never repeated blindly.
    ``human`` is the note's text when note_text does not write it (the board's kinds);
    ``appendix`` follows the text (an offer's evidence table and patches)."""
    if "mr" in fields:  # a window on the merge request refuses records about it
        refuse_if_frozen(turn, mr=MrRef(fields["mr"]["project"], fields["mr"]["iid"]))
    write_id = turn.ctx.new_id()
    record = {
        "event": event,
        "agent": turn.agent,
        "write_id": write_id,
        "session": turn.session,
        "prev": turn.ledger.head,
        **fields,
    }
    if kind in ISSUE_BOUND_KINDS:  # inside the digest: a copy on another issue is a replay
        record["issue"] = f"{turn.config.tracker_project}#{turn.issue}"
    text = human if human is not None else note_text(record, cli=turn.cli, issue=turn.issue)
    if appendix:
        text = f"{text}\n\n{appendix}"
    body, _ = compose_note(kind, record, text)
    path = notes_path(turn.config, turn.issue)
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            turn.client.write("POST", path, {"body": body})
            break
        except WriteUncertain as exc:
            if any(write_id in n.body for n in read_notes(turn.client, turn.config, turn.issue)):
                break
            if attempt == WRITE_ATTEMPTS:
                raise GitLabError(
                    f"{exc.message}\n{turn.cli}: the note is not on #{turn.issue} after "
                    f"{WRITE_ATTEMPTS} tries; nothing was recorded"
                ) from None
    notes = read_notes(turn.client, turn.config, turn.issue)
    turn.ledger = fold(notes, config=turn.config, issue=turn.issue)
    written = turn.ledger.written(write_id)
    if written is None:
        mine = next((n for n in notes if write_id in n.body), None)
        skip = next((s for s in turn.ledger.skipped if mine and s.note_id == mine.id), None)
        why = f"{skip.kind}: {skip.reason}" if skip else "it is not on the issue"
        raise PairgateError(
            f"{turn.cli}: the {event} record was posted but does not count ({why}). Check that "
            f"the write token's account is in ledger_author_user_ids."
        )
    sync_label(turn)
    return written


def sync_label(turn: Turn) -> None:
    """Make the role label follow the notes. Say so when it was out of step before this turn."""
    want = turn.ledger.label
    have = sorted(label for label in turn.state.get("labels", []) if label in ROLE_LABELS)
    if have == ([want] if want else []):
        return
    change: dict[str, str] = {}
    if want and want not in have:
        change["add_labels"] = want
    if [label for label in have if label != want]:
        change["remove_labels"] = ",".join(label for label in have if label != want)
    try:
        answer = turn.client.write("PUT", issue_path(turn.config, turn.issue), change)
        turn.state = dict(answer or turn.state)
    except GitLabError as exc:
        turn.warn(
            f"warning: the role label of #{turn.issue} could not be set ({exc.message}); the "
            f"notes are authoritative and the next writer repairs the label"
        )
        return
    expected_before = [turn.before.label] if turn.before.label else []
    if have != expected_before:
        turn.say(
            f"repaired the role label of #{turn.issue}: it was {', '.join(have) or 'none'}, "
            f"the notes say {want or 'none'}"
        )


def refuse_void(turn: Turn, event: Event) -> None:
    """The record landed but has no effect: someone else's write came first."""
    if event.void is None:
        return
    raise Refusal(
        f"{turn.cli} {event.event}: your {event.event} (note {event.note_id}) has no effect: "
        f"{event.void}. Another writer got there first.\n"
        f"See who holds #{turn.issue} now: {turn.cli} status {turn.issue}"
    )


# Freeze windows as the writing commands meet them: read once per turn, checked before anything
# is written. The records and the pure rules are the reader's (pairgate/standalone/fold.py), where
# the merge gate reads them too.


def windows_for(
    client: GitLab, config: Config, issue: int, ledger: Ledger
) -> list[tuple[int, Freeze]]:
    """Every window that can bind a write on ``issue``: its own (already folded) and those on
    the issues labelled as holding one."""
    return read_freezes(client, config, known={issue: ledger})


def refuse_if_frozen(turn: Turn, *, mr: MrRef | None) -> None:
    """Refuse the turn when another agent's live window covers its issue (or ``mr``)."""
    now = turn.ctx.now()
    found = binding_freeze(turn.freezes, now=now, agent=turn.agent, issue=turn.issue, mr=mr)
    if found is not None:
        holder, window = found
        raise Refusal(
            f"{turn.cli}: refused on #{turn.issue}: "
            + freeze_refusal(holder, window, now=now, config=turn.config)
        )
