"""identity: does anyone else answer to my name, and which other names does my session use?

Every record carries the ``session`` that wrote it. identity reads every tracker issue updated in
the last RECENT_HOURS (one listing, then each issue's notes through the board's pool), and lists
each session that wrote a record under the caller's agent name in that time, and each other
name the caller's own session wrote as. Either is exit 1: two sessions under one name cannot be
told apart by the names on the records, and two names in one session are one agent to the gate
(its independence rule: an approval by a name whose session also wrote as the lead does not
count).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pairgate import output
from pairgate.output import Cell, Style
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, Refusal
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Event
from pairgate.tracker import IssueRead, fold_issues, issues_path
from pairgate.verbs.turn import identity as agent_identity
from pairgate.verbs.turn import session_id

RECENT_HOURS = 24


def _tally(
    reads: list[IssueRead],
    key: Callable[[Event], str | None],
    blank: Callable[[str], dict[str, Any]],
    *,
    now: float,
    since: float,
) -> list[dict[str, Any]]:
    """The records since ``since`` grouped by ``key`` (None leaves a record out), each group
    ``blank(key)`` plus its count, issues and latest record; latest group first. Pure."""
    found: dict[str, dict[str, Any]] = {}
    for read in reads:
        for event in read.ledger.trail if read.ledger else ():
            at = output.epoch(event.created_at)
            if at is None or at < since:
                continue
            group = key(event)
            if group is None:
                continue
            entry = found.setdefault(group, {**blank(group), "records": 0, "issues": []})
            entry["records"] += 1
            if read.iid not in entry["issues"]:
                entry["issues"].append(read.iid)
            if at >= entry.get("_last", 0):
                entry.update(_last=at, last_at=event.created_at, last_issue=read.iid)
                entry["last_note"] = event.note_id
    groups = sorted(found.values(), key=lambda e: -e["_last"])
    for entry in groups:
        del entry["_last"]
        entry["issues"].sort()
        entry["age_seconds"] = output.age_seconds(entry["last_at"], now)
    return groups


def _session(event: Event) -> str:
    return str(event.record.get("session", ""))


def sessions_doc(
    reads: list[IssueRead], *, agent: str, mine: str, now: float, since: float
) -> dict[str, Any]:
    """Each session that wrote under ``agent`` since ``since``, latest first. Pure."""
    sessions = _tally(
        reads,
        lambda event: _session(event) if event.agent == agent else None,
        lambda session: {"session": session, "mine": session == mine},
        now=now,
        since=since,
    )
    return {
        "agent": agent,
        "session": mine,
        "window_hours": RECENT_HOURS,
        "since": output.iso(since),
        "sessions": sessions,
        "others": [e["session"] for e in sessions if not e["mine"]],
        "names": other_names(reads, agent=agent, session=mine, now=now, since=since),
        "unreadable": [r.iid for r in reads if r.ledger is None],
    }


def other_names(
    reads: list[IssueRead], *, agent: str, session: str, now: float, since: float
) -> list[dict[str, Any]]:
    """Each other name that wrote a record in ``session`` since ``since``, latest first. Pure."""
    return _tally(
        reads,
        lambda event: event.agent if event.agent != agent and _session(event) == session else None,
        lambda name: {"name": name},
        now=now,
        since=since,
    )


def identity_text(doc: dict[str, Any], style: Style) -> str:
    head = f"Sessions that wrote as {doc['agent']} in the last {doc['window_hours']}h:"
    if not doc["sessions"]:
        return f"{head} none. This session is {doc['session']}.{_names_text(doc, style)}"
    rows: list[list[Cell]] = [
        [
            (e["session"] + " (this one)", "green") if e["mine"] else (e["session"], "red"),
            str(e["records"]),
            ", ".join(f"#{n}" for n in e["issues"]),
            f"note {e['last_note']} on #{e['last_issue']}, {output.duration(e['age_seconds'] or 0)} ago",
        ]
        for e in doc["sessions"]
    ]
    table = output.table(["SESSION", "RECORDS", "ISSUES", "LAST WROTE"], rows, style)
    return f"{head}\n{table}{_names_text(doc, style)}"


def _names_text(doc: dict[str, Any], style: Style) -> str:
    if not doc["names"]:
        return f"\nThis session wrote as no other name in the last {doc['window_hours']}h."
    rows: list[list[Cell]] = [
        [
            (e["name"], "red"),
            str(e["records"]),
            ", ".join(f"#{n}" for n in e["issues"]),
            f"note {e['last_note']} on #{e['last_issue']}, {output.duration(e['age_seconds'] or 0)} ago",
        ]
        for e in doc["names"]
    ]
    table = output.table(["NAME", "RECORDS", "ISSUES", "LAST WROTE"], rows, style)
    return f"\nThis session also wrote as:\n{table}"


def identity(
    *, ctx: Context, config: Config, as_agent: str | None, json: bool, client: GitLab
) -> int:
    agent = agent_identity(ctx, config, as_agent)
    mine = session_id(ctx, config)
    now = ctx.now()
    since = now - RECENT_HOURS * 3600
    listed = client.get_all(
        issues_path(config),
        state="all",
        updated_after=output.iso(since),
        order_by="updated_at",
        sort="desc",
    )
    # Filtered here as well: updated_after is a filter this client cannot check GitLab applied.
    recent = [i for i in listed if (output.epoch(i.get("updated_at")) or now) >= since]
    doc = sessions_doc(
        fold_issues(client, config, recent), agent=agent, mine=mine, now=now, since=since
    )
    if json:
        output.dump(doc, ctx.stdout)
    else:
        print(identity_text(doc, Style(output.use_colour(ctx.stdout, ctx.env))), file=ctx.stdout)
    if doc["others"]:
        other = next(e for e in doc["sessions"] if not e["mine"])
        raise Refusal(
            f"{config.cli} identity: another session answers to {agent}: {other['session']} "
            f"wrote note {other['last_note']} on #{other['last_issue']} "
            f"{output.duration(other['age_seconds'] or 0)} ago, and this session is {mine}.\n"
            f"Two sessions under one name look like one agent to the gate. Stop one of them, or "
            f"give each its own identity (--as, {config.env_name('AGENT_ID')}); if this is the "
            f"same session under a new id, set {config.env_name('SESSION_ID')} to keep it stable."
        )
    if doc["names"]:
        other = doc["names"][0]
        names = ", ".join(e["name"] for e in doc["names"])
        raise Refusal(
            f"{config.cli} identity: this session ({mine}) also wrote as {names}: "
            f"{other['name']} wrote note {other['last_note']} on #{other['last_issue']} "
            f"{output.duration(other['age_seconds'] or 0)} ago.\n"
            f"The gate treats names that share a session as one agent: an approval by one of "
            f"them of work another did counts on no door. Run each agent in its own session "
            f"(a shell of its own, or {config.env_name('SESSION_ID')} set per agent)."
        )
    if doc["unreadable"]:
        listed_issues = ", ".join(f"#{n}" for n in doc["unreadable"])
        print(f"{config.cli} identity: could not read {listed_issues}", file=ctx.stderr)
        return Exit.ERROR
    return Exit.OK
