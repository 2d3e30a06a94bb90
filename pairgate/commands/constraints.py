"""impose and lift-check: standing constraints, and who may lift one.

impose renders a clause: the constraint's text, its stable id (the hash of that text, see
ownership.constraint_id) and the ``constraint`` marker recording who imposed it. An agent relays
the clause wherever it must stand (a note, a prompt, a file). lift-check reads such a clause and
says whether a lift relayed from ``--lift-from`` may stand: only whoever imposed it may lift it.

The marker's digest covers the clause text impose rendered (not the text around it), so a clause
can be quoted inside other text and still be checked, and an edited imposer or text is caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate.output import dump
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, Refusal, UsageError
from pairgate.standalone.records import MalformedRecord, compose_note, constraint_id, parse_marker
from pairgate.verbs.note_text import quoted
from pairgate.verbs.turn import identity, session_id


def clause_text(record: Mapping[str, Any]) -> str:
    """The human text of a clause. It names no deployment value (not even cli_command), so a
    clause reads and checks the same in every deployment."""
    agent = record["agent"]
    return (
        f"**Standing constraint {record['id']}**, imposed by **{agent}**:\n\n"
        f"{quoted(record['text'])}\n\n"
        f"Only {agent} may lift it. A lift relayed by anyone else does not stand: check a relayed "
        f"lift with lift-check before acting on it."
    )


def impose(
    *,
    ctx: Context,
    config: Config,
    text: str | None,
    text_file: Path | None,
    as_agent: str | None,
) -> int:
    agent = identity(ctx, config, as_agent)
    if text_file is not None:
        try:
            text = text_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{config.cli} impose: cannot read --text-file {text_file}: {exc}"
            ) from None
    clause = (text or "").strip()
    if not clause:
        raise UsageError(f"{config.cli} impose: the text is empty; a constraint says something")
    record = {
        "event": "impose",
        "agent": agent,
        "write_id": ctx.new_id(),
        "session": session_id(ctx, config),
        "prev": None,
        "id": constraint_id(clause),
        "text": clause,
    }
    body, _ = compose_note("constraint", record, clause_text(record))
    print(body, end="", file=ctx.stdout)
    return Exit.OK


def _read(cli: str, constraint_file: Path | None, constraint_text: str | None) -> str:
    if constraint_file is not None:
        try:
            return constraint_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{cli} lift-check: cannot read {constraint_file}: {exc}") from None
    if constraint_text is None:
        raise UsageError(
            f"{cli} lift-check: give the clause impose rendered: --constraint-file F or "
            "--constraint-text T"
        )
    return constraint_text


def lift_verdict(cli: str, lift_from: str, source: str) -> dict[str, Any]:
    """Whether a lift relayed from ``lift_from`` stands for the clause in ``source``: the
    document ``--json`` prints (keys: stands, verdict, constraint, imposer, lift_from, message).
    No clause to read is an error, not a verdict."""
    try:
        kind, record, _ = parse_marker(source)
    except MalformedRecord as exc:
        raise PairgateError(
            f"{cli} lift-check: cannot read a constraint ({exc}); pass the whole clause impose "
            f"rendered, its marker line included. Without it nobody can say who imposed it, so "
            f"no lift stands."
        ) from None
    if kind != "constraint":
        raise PairgateError(f"{cli} lift-check: the marker is a {kind} record, not a constraint")
    cid, imposer = record["id"], record["agent"]
    _, sealed = compose_note("constraint", record, clause_text(record))
    if cid != constraint_id(record["text"]) or sealed["digest"] != record["digest"]:
        verdict = "altered"
        message = (
            f"{cli} lift-check: refused: the clause {cid} was altered after it was imposed (its "
            f"marker does not match its content), so it cannot say who imposed it. No lift of "
            f"it stands; ask whoever imposed it to render it again with `{cli} impose`."
        )
    elif lift_from != imposer:
        verdict = "not-the-imposer"
        message = (
            f"{cli} lift-check: refused: constraint {cid} was imposed by {imposer}; a lift "
            f"relayed from {lift_from} does not stand. Only {imposer} can lift it: ask "
            f"{imposer} directly, and keep to the constraint until then."
        )
    else:
        verdict = "stands"
        message = (
            f"the lift stands: {imposer} imposed constraint {cid} and the lift comes from "
            f"{imposer}."
        )
    return {
        "stands": verdict == "stands",
        "verdict": verdict,
        "constraint": cid,
        "imposer": imposer,
        "lift_from": lift_from,
        "message": message,
    }


def lift_check(
    *,
    ctx: Context,
    config: Config,
    lift_from: str,
    constraint_file: Path | None,
    constraint_text: str | None,
    json: bool,
) -> int:
    """Exit 0 the lift stands, 1 it does not (or the clause was altered), 2 no clause."""
    doc = lift_verdict(config.cli, lift_from, _read(config.cli, constraint_file, constraint_text))
    if json:
        dump(doc, ctx.stdout)
        return Exit.OK if doc["stands"] else Exit.REFUSED
    if not doc["stands"]:
        raise Refusal(doc["message"])
    print(doc["message"], file=ctx.stdout)
    return Exit.OK
