"""The human text above each record's marker: what a person reading the issue sees.

Short and plain. Text pairgate does not control (reasons, not-covering items) is quoted and
escaped so it can neither render as HTML nor run as a quick action.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairgate.evidence.surface import SELF_REPORTED, ci_words, rerun_summary


def quoted(text: str) -> str:
    """A block quote of free text, with ``<`` escaped so it cannot open an HTML comment."""
    lines = text.replace("&", "&amp;").replace("<", "&lt;").splitlines() or [""]
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)


def _mr(record: Mapping[str, Any]) -> str:
    return f"{record['mr']['project']}!{record['mr']['iid']}"


def note_text(
    record: Mapping[str, Any], *, cli: str, issue: int, reasons: Sequence[str] = ()
) -> str:
    """The human text for a record about to be written. ``reasons``: why an approval is not
    independent, said on the issue by name."""
    r = record
    agent = f"**{r['agent']}**"
    event = r["event"]
    parts: list[str]
    if event == "claim":
        parts = [f"{agent} claims this issue as **{r['role']}**."]
    elif event == "handoff":
        parts = [
            f"{agent} offers this issue to **{r['to']}** as **{r['role']}**, at commit "
            f"`{r['sha']}` of {_mr(r)}.",
            f"{r['agent']} keeps it until {r['to']} runs `{cli} accept {issue}` "
            f"(or `{cli} decline {issue}`).",
        ]
        if r["supersedes"]:
            parts.append(f"This offer replaces the one in note {r['supersedes']}.")
        if r.get("evidence") is None and r["role"] == "review":
            parts.append(
                f"**This offer carries no mutation evidence** (`{cli} evidence run`, then "
                f"`{cli} handoff ... --evidence FILE`)."
            )
    elif event == "accept":
        parts = [
            f"{agent} accepts the offer in note {r['offer']} from {r['from']}, and now holds "
            f"this issue as **{r['role']}**."
        ]
    elif event == "decline":
        parts = [f"{agent} declines the offer in note {r['offer']}; {r['from']} keeps this issue."]
    elif event == "release":
        parts = [f"{agent} releases this issue (held as {r['role']}); nobody holds it now."]
    elif event == "close":
        parts = [
            f"{agent} closes this issue: no offer is pending and no merge request citing it "
            "is open."
        ]
    elif event == "approve":
        parts = [
            f"{agent} approves {_mr(r)} at commit `{r['sha']}`, and offers this issue back to "
            f"**{r['to']}** as **{r['role']}** (`{cli} accept {issue}`).",
            "Any push after this voids the approval: the new head needs its own review.",
        ]
        if r["self_approval"]:
            parts.append(
                "**This is a self-approval.** It is recorded, and merge-check does not count it."
                + "".join(f"\n\n- not independent: {why}" for why in reasons)
            )
        if r["not_covering"]:
            parts.append(
                "Not covered by this approval:\n\n"
                + "\n".join(
                    "- " + item.replace("<", "&lt;").replace("\n", " ")
                    for item in r["not_covering"]
                )
            )
        if r["supersedes"]:
            parts.append(f"This offer replaces the one in note {r['supersedes']}.")
        rerun = r.get("rerun")
        if rerun:
            parts.append(
                f"Re-run before approving, at `{rerun['sha']}`: the offer's mutant "
                f"{rerun['offered']['index']} {rerun['offered']['verdict']}, the reviewer's own "
                f"mutant {rerun['own']['verdict']} (re-run digest `{rerun['digest']}`; "
                f"{rerun_summary(rerun)}). approve ran both mutants again itself and got the "
                f"same verdicts. Like all evidence from an agent's session it is "
                f"{SELF_REPORTED}."
            )
        else:
            parts.append("Approved without a re-run of the mutation evidence.")
        if "ci_rerun" in r:
            ci = r["ci_rerun"]
            parts.append(
                f"{ci_words(ci)}: the offer's mutants re-run at the merge request's head by the "
                "tracker-held pipeline, outside the agents' sessions."
                if ci
                else "No CI re-run of the offer's evidence had finished at the approved head."
            )
    elif event == "withdraw":
        parts = [
            f"{agent} withdraws its approval in note {r['approval']}: no merge gate counts it "
            "now, and its offer back to the lead, if still pending, is void.",
        ]
    else:
        raise ValueError(f"no text for event {event!r}")
    if r.get("reason"):
        parts.append(quoted(r["reason"]))
    return "\n\n".join(parts)
