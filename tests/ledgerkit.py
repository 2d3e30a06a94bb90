"""Build ledger notes for tests: a trail of records written the way the verbs write them.

``Trail`` keeps the chain (each record names the previous digest), hands out note ids in
order, and lets a test forge, edit, delete or reorder notes afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pairgate.ownership import Config, Ledger, Note, compose_note, fold, new_write_id

AGENTS_USER = 10  # the suite configuration's ledger_author_user_ids
MAINTAINER = 13
SHA = "a" * 40
SHA2 = "b" * 40
MR = {"project": "acme/app", "iid": 7}
STAMP = "2026-01-01T00:00:00.000Z"


class Trail:
    def __init__(self, config: Config, *, first_id: int = 100) -> None:
        self.config = config
        self.notes: list[Note] = []
        self.prev: str | None = None
        self.next_id = first_id

    def note(self, body: str, *, author: int = AGENTS_USER, system: bool = False) -> Note:
        note = Note(self.next_id, author, f"user{author}", body, STAMP, STAMP, system)
        self.next_id += 1
        self.notes.append(note)
        return note

    def record(
        self,
        kind: str,
        event: str,
        agent: str,
        *,
        human: str = "",
        author: int = AGENTS_USER,
        prev: Any = ...,
        **fields: Any,
    ) -> Note:
        record = {
            "event": event,
            "agent": agent,
            "write_id": fields.pop("write_id", None) or new_write_id(),
            "session": "session-1",
            "prev": self.prev if prev is ... else prev,
            **fields,
        }
        body, sealed = compose_note(kind, record, human or f"{agent} {event}")
        self.prev = sealed["digest"]
        return self.note(body, author=author)

    def claim(self, agent: str, role: str = "lead", **kw: Any) -> Note:
        return self.record("ownership", "claim", agent, role=role, **kw)

    def handoff(self, agent: str, to: str, role: str = "review", **kw: Any) -> Note:
        fields = {"sha": SHA, "mr": MR, "reason": None, "supersedes": None, **kw}
        return self.record("ownership", "handoff", agent, to=to, role=role, **fields)

    def accept(self, agent: str, offer: Note, sender: str, role: str = "review") -> Note:
        return self.record(
            "ownership", "accept", agent, offer=offer.id, role=role, **{"from": sender}
        )

    def decline(self, agent: str, offer: Note, sender: str) -> Note:
        return self.record("ownership", "decline", agent, offer=offer.id, **{"from": sender})

    def release(self, agent: str, role: str = "lead") -> Note:
        return self.record("ownership", "release", agent, role=role)

    def approve(self, agent: str, to: str, **kw: Any) -> Note:
        fields = {
            "sha": SHA,
            "mr": MR,
            "reason": None,
            "supersedes": None,
            "not_covering": [],
            "self_approval": False,
            "role": "lead",
            **kw,
        }
        return self.record("approval", "approve", agent, to=to, **fields)

    def edit(self, note: Note, body: str, *, updated_at: str = "2026-01-01T01:00:00.000Z") -> None:
        """Rewrite a note in place, as a maintainer's edit would."""
        i = self.notes.index(note)
        self.notes[i] = dataclasses.replace(note, body=body, updated_at=updated_at)

    def delete(self, note: Note) -> None:
        self.notes.remove(note)

    def fold(self) -> Ledger:
        return fold(self.notes, config=self.config)
