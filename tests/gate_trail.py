"""Ledger notes for gate tests, written with ownership.py's own record functions.

``Trail(post)`` appends records to one issue's chain; ``post(body) -> note id`` either keeps the
note in memory (``Trail.local()``, for the pure tests) or posts it to the sandbox.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from pairgate.standalone.ledger import Note
from pairgate.standalone.records import compose_note

AGENTS_USER_ID = 10  # the sandbox's agents account, the suite's ledger author


class Trail:
    def __init__(self, post: Callable[[str], int]) -> None:
        self.post = post
        self.prev: str | None = None

    @classmethod
    def local(cls, *, author_id: int = AGENTS_USER_ID) -> Trail:
        notes: list[Note] = []

        def keep(body: str) -> int:
            note_id = 1000 + len(notes)
            stamp = "2026-01-01T00:00:00.000Z"
            notes.append(Note(note_id, author_id, "agents", body, stamp, stamp))
            return note_id

        trail = cls(keep)
        trail.notes = notes
        return trail

    notes: list[Note]

    def add(self, kind: str, event: str, agent: str, human: str, **fields: Any) -> int:
        record = {
            "event": event,
            "agent": agent,
            "write_id": uuid.uuid4().hex,
            "session": "gate-tests",
            "prev": self.prev,
            **fields,
        }
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

    def approve(self, agent: str, to: str, sha: str, mr: tuple[str, int]) -> int:
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
        )

    def reviewed(
        self, sha: str, mr: tuple[str, int], lead: str = "acme-lead", review: str = "acme-review"
    ) -> int:
        """A whole round up to the approval: claim, offer, accept, approve. The approval's id."""
        self.claim(lead)
        offer = self.handoff(lead, review, sha, mr, role="review")
        self.accept(review, offer, lead, role="review")
        return self.approve(review, lead, sha, mr)

    def solo(self, sha: str, mr: tuple[str, int], agent: str = "acme-solo") -> int:
        """One agent offers the work to itself and approves it: a self-approval."""
        self.claim(agent)
        offer = self.handoff(agent, agent, sha, mr, role="review")
        self.accept(agent, offer, agent, role="review")
        return self.approve(agent, agent, sha, mr)
