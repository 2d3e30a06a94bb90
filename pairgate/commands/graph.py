"""graph: the issue's round as a diagram.

Mermaid by default (a sequence diagram; GitLab renders it inside a ```mermaid block in a note or
description), or Graphviz dot. Every record on the trail appears in order: who claimed, offered,
accepted, approved at which commit, with self-approvals, stale approvals (the merge request's
head moved on) and void records marked, and every skipped record and chain break shown too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pairgate.output import clip, dump, short
from pairgate.standalone.approvals import independence
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Event, Ledger, MrRef
from pairgate.standalone.reads import read_ledger
from pairgate.tracker import MrState, read_issue, read_mr_states


@dataclass(frozen=True)
class Step:
    """One line of the diagram: from an agent (to another, or to itself), and what it says."""

    note_id: int
    actor: str
    target: str | None  # None: a note over the actor
    text: str
    mark: str | None = None  # "self" | "stale" | "void" | "damage"


def _approval_mark(
    ledger: Ledger,
    event: Event,
    mrs: dict[MrRef, MrState],
    judged: tuple[Config, int] | None,
) -> tuple[str, str | None]:
    approval = next((a for a in ledger.approvals if a.note_id == event.note_id), None)
    if approval is None:
        return "", None
    if approval.withdrawn_by is not None:
        return f", WITHDRAWN (note {approval.withdrawn_by})", "stale"
    if judged is not None:  # the independence rule, over this issue's ledger: one issue's round
        config, issue = judged
        reasons = independence(issue, approval, {issue: ledger}, config=config)
    else:
        reasons = (approval.self_because or "a self-approval",) if approval.self_approval else ()
    if reasons:
        return f", SELF-APPROVAL ({'; '.join(r for r in reasons if r)})", "self"
    head = mrs.get(approval.mr, MrState(None, None)).head
    if head is None:
        return ", head unknown", None
    if head != approval.sha:
        return f", STALE: the head is now {short(head)}", "stale"
    return ", independent, at the head", None


def steps(
    ledger: Ledger, mrs: dict[MrRef, MrState], judged: tuple[Config, int] | None = None
) -> list[Step]:
    """The diagram's lines, in note order. Pure. With ``judged`` (the configuration and the
    issue), an approval is judged by the independence rule over this issue's ledger; without,
    by the fold's two rules."""
    out: list[Step] = []
    for e in ledger.trail:
        r, n = e.record, e.note_id
        mark: str | None = None
        if e.event == "claim":
            step = Step(n, e.agent, None, f"claims as {r['role']}")
        elif e.event in ("handoff", "approve"):
            at = f"{r['mr']['project']}!{r['mr']['iid']} at {short(r['sha'])}"
            if e.event == "handoff":
                text = f"offers as {r['role']}, {at}"
            else:
                extra, mark = _approval_mark(ledger, e, mrs, judged)
                text = f"approves {at}{extra}; offers back as {r['role']}"
            step = Step(n, e.agent, r["to"], text)
        elif e.event in ("accept", "decline"):
            step = Step(n, e.agent, r["from"], f"{e.event}s the offer of note {r['offer']}")
        elif e.event == "freeze":
            step = Step(
                n,
                e.agent,
                None,
                f"freezes {r['scope']} for {r['minutes']} min: {clip(r['reason'], 60)}",
            )
        elif e.event == "thaw":
            step = Step(n, e.agent, None, f"thaws the freeze of note {r['freeze']}")
        elif e.event == "withdraw":
            step = Step(n, e.agent, None, f"withdraws its approval in note {r['approval']}")
        elif e.event == "impose":
            step = Step(n, e.agent, None, f"imposes constraint {r['id']}: {clip(r['text'], 60)}")
        else:  # release, close
            step = Step(n, e.agent, None, f"{e.event}s the issue")
        if e.void is not None:
            step = Step(n, step.actor, step.target, f"{step.text} (VOID: {e.void})", "void")
        elif mark:
            step = Step(n, step.actor, step.target, step.text, mark)
        out.append(step)
    anchor = out[0].actor if out else None
    for s in ledger.skipped:
        out.append(
            Step(s.note_id, anchor or "?", None, f"skipped ({s.kind}): {s.reason}", "damage")
        )
    for b in ledger.breaks:
        out.append(Step(b.note_id, anchor or "?", None, f"breaks the chain: {b.reason}", "damage"))
    return sorted(out, key=lambda s: s.note_id)


_MERMAID_ESCAPES = str.maketrans({"#": "#35;", ";": "#59;", "<": "#60;", ">": "#62;"})


def _mermaid_text(text: str) -> str:
    """Mermaid message text: one line; ``;`` ends a statement, ``#`` starts an entity code, and
    ``<``/``>`` would reach the rendered HTML."""
    return " ".join(text.split()).translate(_MERMAID_ESCAPES)


def mermaid(title: str, lines: list[Step]) -> str:
    actors = list(dict.fromkeys([s.actor for s in lines] + [s.target for s in lines if s.target]))
    alias = {name: f"A{i}" for i, name in enumerate(actors, 1)}
    # Mermaid writes a title as it is, entity codes too: only a ';' or a '#' that would open
    # one is escaped there ("acme/tracker#2" stays so).
    title = " ".join(title.split())
    if ";" in title or "<" in title or ">" in title:
        title = _mermaid_text(title)
    out = ["sequenceDiagram", f"    title {title}"]
    out += [f"    participant {alias[name]} as {_mermaid_text(name)}" for name in actors]
    if not lines:
        out.append("    Note over ledger: no ledger records on this issue")
    for s in lines:
        text = _mermaid_text(f"{s.note_id}: {s.text}")
        if s.target is None or s.target == s.actor:
            out.append(f"    Note over {alias[s.actor]}: {text}")
        else:
            arrow = {"void": "-x", "self": "--)", "stale": "--)"}.get(s.mark or "", "->>")
            out.append(f"    {alias[s.actor]}{arrow}{alias[s.target]}: {text}")
    return "\n".join(out)


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


_DOT_STYLE = {
    "self": 'color="red", fontcolor="red"',
    "stale": 'color="orange", fontcolor="orange"',
    "void": 'color="gray", fontcolor="gray", style="dashed"',
    "damage": 'color="red", style="dashed"',
}


def dot(title: str, lines: list[Step]) -> str:
    out = [
        f'digraph "{_dot_text(title)}" {{',
        "    rankdir=TB;",
        '    node [shape=box, fontname="Helvetica"];',
    ]
    for s in lines:
        who = s.actor if s.target is None or s.target == s.actor else f"{s.actor} -> {s.target}"
        label = _dot_text(f"{s.note_id}: {who}") + "\\n" + _dot_text(clip(s.text, 90))
        style = _DOT_STYLE.get(s.mark or "")
        out.append(f'    n{s.note_id} [label="{label}"' + (f", {style}" if style else "") + "];")
    if len(lines) > 1:
        out.append("    " + " -> ".join(f"n{s.note_id}" for s in lines) + ";")
    out.append("}")
    return "\n".join(out)


def graph_doc(title: str, issue: int, lines: list[Step]) -> dict[str, Any]:
    """What ``graph --json`` prints: the diagram's lines as data (keys: issue, title,
    participants, steps; each step: note_id, actor, target, text, mark)."""
    actors = [s.actor for s in lines] + [s.target for s in lines if s.target]
    return {
        "issue": issue,
        "title": title,
        "participants": list(dict.fromkeys(actors)),
        "steps": [
            {
                "note_id": s.note_id,
                "actor": s.actor,
                "target": s.target,
                "text": s.text,
                "mark": s.mark,
            }
            for s in lines
        ],
    }


def graph(
    *, ctx: Context, config: Config, client: GitLab, issue: int, format: str, json: bool
) -> int:
    read_issue(client, config, issue)  # a missing issue is an error, not an empty diagram
    ledger = read_ledger(client, config, issue)
    mrs = read_mr_states(client, (a.mr for a in ledger.approvals))
    lines = steps(ledger, mrs, (config, issue))
    title = f"{config.tracker_project}#{issue}"
    if json:
        dump(graph_doc(title, issue, lines), ctx.stdout)
    else:
        print(dot(title, lines) if format == "dot" else mermaid(title, lines), file=ctx.stdout)
    return Exit.OK
