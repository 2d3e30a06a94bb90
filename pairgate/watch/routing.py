"""Who gets an event: the agent the ledger says owes the next move (``waiting``'s own rule,
``next_move``), with the rule that chose them written down. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from pairgate.standalone.ledger import Ledger
from pairgate.views.next_move import next_move
from pairgate.watch.records import IssueSnap, MrSnap, Route

_RULES = {
    "answer-offer": "the receiver of the pending offer",
    "take-approval": "the receiver of the approval's offer back",
    "next-step": "the holder",
    "nobody": "nobody owes a move",
}


def ledger_route(tracker: str, iid: int, ledger: Ledger) -> Route:
    """The recipient for events about tracker issue ``iid``, and the rule, in words."""
    who, owes, what, _ = next_move(ledger)
    return Route(who, f"{tracker}#{iid}: {_RULES.get(owes, owes)} ({what})")


def mr_route(mr: MrSnap, issues: Mapping[int, IssueSnap], tracker: str) -> Route | None:
    """The recipient for a merge request's events: the first issue it cites (lowest number)
    whose ledger names someone. None when no cited issue has been read: keep what is there."""
    known = [issues[i] for i in sorted(mr.cites) if i in issues]
    if not known:
        return None
    for issue in known:
        if issue.route.agent is not None:
            others = [f"#{i.iid}" for i in known if i is not issue and i.route.agent]
            also = f"; it also cites {', '.join(others)}" if others else ""
            return Route(issue.route.agent, f"{mr.project}!{mr.iid} cites {issue.route.rule}{also}")
    return Route(None, f"{mr.project}!{mr.iid} cites {known[0].route.rule}")


def routes(
    subjects: Mapping[str, MrSnap | IssueSnap], issues: Mapping[int, IssueSnap], tracker: str
) -> dict[str, Route | None]:
    """The route of every subject given: an issue by its own ledger, a merge request by the
    issues it cites."""
    out: dict[str, Route | None] = {}
    for subject, snap in subjects.items():
        if isinstance(snap, IssueSnap):
            out[subject] = snap.route
        else:
            out[subject] = mr_route(snap, issues, tracker)
    return out
