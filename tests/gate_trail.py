"""Ledger notes for gate tests, written with ownership.py's own record functions.

``Trail(post)`` appends records to one issue's chain; ``post(body) -> note id`` either keeps the
note in memory (``Trail.local()``, for the pure tests) or posts it to the sandbox.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pairgate.standalone.ledger import Note
from pairgate.standalone.records import (
    ISSUE_BOUND_KINDS,
    compose_note,
    marker,
    parse_marker,
    record_digest,
)

AGENTS_USER_ID = 10  # the sandbox's agents account, the suite's ledger author
TRACKER = "acme/tracker"
BASE = "c" * 40
# What an approval binds besides the head: (target branch, diff_refs.base_sha, start_sha).
LOCAL_BINDS = ("main", BASE, BASE)


def binds_of(mr: dict[str, Any]) -> tuple[str, str, str]:
    """What GitLab says an MR (its single-MR entity) is reviewed against."""
    refs = mr["diff_refs"]
    return mr["target_branch"], refs["base_sha"], refs["start_sha"]


class Trail:
    """Records on tracker issue ``issue``, each agent in its own session (``gate-<agent>``)
    unless ``sessions`` maps it to another."""

    def __init__(self, post: Callable[[str], int], *, issue: int) -> None:
        self.post = post
        self.issue = issue
        self.prev: str | None = None
        self.sessions: dict[str, str] = {}

    @classmethod
    def local(cls, *, author_id: int = AGENTS_USER_ID, issue: int = 5) -> Trail:
        notes: list[Note] = []

        def keep(body: str) -> int:
            note_id = 1000 + len(notes)
            stamp = "2026-01-01T00:00:00.000Z"
            notes.append(Note(note_id, author_id, "agents", body, stamp, stamp))
            return note_id

        trail = cls(keep, issue=issue)
        trail.notes = notes
        return trail

    notes: list[Note]

    version = 2  # 1: write records as they were before records named their issue

    def add(self, kind: str, event: str, agent: str, human: str, **fields: Any) -> int:
        record = {
            "event": event,
            "agent": agent,
            "write_id": uuid.uuid4().hex,
            "session": self.sessions.get(agent, f"gate-{agent}"),
            "prev": self.prev,
            **fields,
        }
        if self.version == 1:
            for name in ("target_branch", "base_sha", "start_sha"):
                record.pop(name, None)
            sealed = {"v": 1, **record}
            sealed["digest"] = record_digest(kind, sealed, human)
            body = f"{human}\n\n{marker(kind, sealed)}\n"
        else:
            if kind in ISSUE_BOUND_KINDS:
                record["issue"] = f"{TRACKER}#{self.issue}"
            body, sealed = compose_note(kind, record, human)
        self.prev = sealed["digest"]
        return self.post(body)

    def claim(self, agent: str, role: str = "lead") -> int:
        return self.add("ownership", "claim", agent, f"{agent} claims this issue", role=role)

    def handoff(self, agent: str, to: str, sha: str, mr: tuple[str, int], role: str) -> int:
        return self.add(
            "ownership",
            "handoff",
            agent,
            f"{agent} offers this issue to {to} as {role}",
            to=to,
            role=role,
            sha=sha,
            mr={"project": mr[0], "iid": mr[1]},
            reason=None,
            supersedes=None,
        )

    def accept(self, agent: str, offer: int, sender: str, role: str) -> int:
        return self.add(
            "ownership",
            "accept",
            agent,
            f"{agent} accepts",
            offer=offer,
            role=role,
            **{"from": sender},
        )

    def release(self, agent: str, role: str = "lead") -> int:
        return self.add("ownership", "release", agent, f"{agent} releases", role=role)

    def approve(
        self,
        agent: str,
        to: str,
        sha: str,
        mr: tuple[str, int],
        binds: tuple[str, str, str] = LOCAL_BINDS,
    ) -> int:
        target, base, start = binds
        return self.add(
            "approval",
            "approve",
            agent,
            f"{agent} approves {mr[0]}!{mr[1]} at {sha}",
            to=to,
            role="lead",
            sha=sha,
            mr={"project": mr[0], "iid": mr[1]},
            reason=None,
            supersedes=None,
            not_covering=[],
            self_approval=False,
            target_branch=target,
            base_sha=base,
            start_sha=start,
        )

    def withdraw(self, agent: str, approval: int, reason: str = "found a bug after all") -> int:
        return self.add(
            "approval",
            "withdraw",
            agent,
            f"{agent} withdraws the approval in note {approval}",
            approval=approval,
            reason=reason,
        )

    def reviewed(
        self,
        sha: str,
        mr: tuple[str, int],
        lead: str = "acme-lead",
        review: str = "acme-review",
        binds: tuple[str, str, str] = LOCAL_BINDS,
    ) -> int:
        """A whole round up to the approval: claim, offer, accept, approve. The approval's id."""
        self.claim(lead)
        offer = self.handoff(lead, review, sha, mr, role="review")
        self.accept(review, offer, lead, role="review")
        return self.approve(review, lead, sha, mr, binds)

    def solo(
        self,
        sha: str,
        mr: tuple[str, int],
        agent: str = "acme-solo",
        binds: tuple[str, str, str] = LOCAL_BINDS,
    ) -> int:
        """One agent offers the work to itself and approves it: a self-approval."""
        self.claim(agent)
        offer = self.handoff(agent, agent, sha, mr, role="review")
        self.accept(agent, offer, agent, role="review")
        return self.approve(agent, agent, sha, mr, binds)


def resealed(body: str, **changes: Any) -> tuple[str, str]:
    """A note's body with its record changed and its digest computed again, as someone who
    rewrites a note and covers the tracks would; (the new body, the new digest)."""
    kind, record, human = parse_marker(body)
    record = {k: v for k, v in record.items() if k not in ("digest", "v")} | changes
    new, sealed = compose_note(kind, record, human)
    return new, str(sealed["digest"])
