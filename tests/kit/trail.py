"""Ledger notes written the way the verbs write them: a ``Trail`` of records on one issue.

A trail keeps the chain (each record names the digest of the one before) and hands each note to
its posting strategy, ``post``: by default it keeps the note in ``notes`` with the next id from
``first_id``, for the pure tests, which may then forge, edit, delete or reorder notes;
``on_sandbox`` posts it to an issue of the sandbox instead (``World.trail``). Each agent writes
in the session ``session`` names, its own (``session-<agent>``) unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.errors import fresh_id
from pairgate.standalone.fold import fold
from pairgate.standalone.ledger import Ledger, Note
from pairgate.standalone.records import (
    ISSUE_BOUND_KINDS,
    compose_note,
    marker,
    parse_marker,
    record_digest,
)
from tests.kit.names import AGENTS_USER, BASE, ISSUE, LEAD, MR, REVIEW, SHA, SOLO, STAMP, TRACKER

# (body, the author's user id, whether GitLab wrote it) -> the note as posted
Post = Callable[[str, int, bool], Note]
# What an approval binds besides the head: (target branch, diff_refs.base_sha, start_sha).
Binds = tuple[str, str, str]
BINDS: Binds = ("main", BASE, BASE)


def own_session(agent: str) -> str:
    """Each agent in a session of its own, as separate agents write."""
    return f"session-{agent}"


def on_sandbox(sandbox: RunningSandbox, issue: int) -> Post:
    """Post each note to tracker issue ``issue`` as the sandbox account of the author's id."""
    accounts = {int(user["id"]): key for key, user in sandbox.users.items()}

    def post(body: str, author: int, system: bool) -> Note:
        if system:
            raise ValueError("GitLab writes its system notes itself: keep the trail in memory")
        return Note.from_api(sandbox.note(issue, body, as_user=accounts[author]))

    return post


def binds_of(mr: dict[str, Any]) -> Binds:
    """What GitLab says a merge request (its single-MR entity) is reviewed against."""
    refs = mr["diff_refs"]
    return mr["target_branch"], refs["base_sha"], refs["start_sha"]


class Trail:
    """Records on tracker issue ``issue``; see the module's docstring."""

    def __init__(
        self,
        config: Config,
        *,
        issue: int = ISSUE,
        post: Post | None = None,
        first_id: int = 100,
        session: Callable[[str], str] = own_session,
    ) -> None:
        self.config = config
        self.issue = issue
        self.post = post or self._keep
        self.session = session
        self.notes: list[Note] = []  # every note this trail wrote, as posted
        self.prev: str | None = None
        self.next_id = first_id
        self.version = 2  # 1: write records as they were before records named their issue

    def _keep(self, body: str, author: int, system: bool) -> Note:
        note = Note(self.next_id, author, f"user{author}", body, STAMP, STAMP, system)
        self.next_id += 1
        return note

    def note(self, body: str, *, author: int = AGENTS_USER, system: bool = False) -> Note:
        note = self.post(body, author, system)
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
            "write_id": fields.pop("write_id", None) or fresh_id(),
            "session": fields.pop("session", None) or self.session(agent),
            "prev": self.prev if prev is ... else prev,
            **fields,
        }
        human = human or f"{agent} {event}"
        if self.version == 1:
            for name in ("target_branch", "base_sha", "start_sha"):
                record.pop(name, None)
            sealed = {"v": 1, **record}
            sealed["digest"] = record_digest(kind, sealed, human)
            body = f"{human}\n\n{marker(kind, sealed)}\n"
        else:
            if kind in ISSUE_BOUND_KINDS and "issue" not in record:
                record["issue"] = f"{TRACKER}#{self.issue}"
            body, sealed = compose_note(kind, record, human)
        self.prev = sealed["digest"]
        return self.note(body, author=author)

    def claim(self, agent: str, role: str = "lead", **kw: Any) -> Note:
        return self.record("ownership", "claim", agent, role=role, **kw)

    def handoff(
        self,
        agent: str,
        to: str,
        role: str = "review",
        *,
        sha: str = SHA,
        mr: tuple[str, int] = MR,
        **kw: Any,
    ) -> Note:
        fields = {
            "sha": sha,
            "mr": {"project": mr[0], "iid": mr[1]},
            "reason": None,
            "supersedes": None,
            **kw,
        }
        return self.record("ownership", "handoff", agent, to=to, role=role, **fields)

    def accept(self, agent: str, offer: Note, sender: str, role: str = "review", **kw: Any) -> Note:
        return self.record(
            "ownership", "accept", agent, offer=offer.id, role=role, **{"from": sender}, **kw
        )

    def decline(self, agent: str, offer: Note, sender: str) -> Note:
        return self.record("ownership", "decline", agent, offer=offer.id, **{"from": sender})

    def release(self, agent: str, role: str = "lead") -> Note:
        return self.record("ownership", "release", agent, role=role)

    def approve(
        self,
        agent: str,
        to: str,
        *,
        sha: str = SHA,
        mr: tuple[str, int] = MR,
        binds: Binds = BINDS,
        **kw: Any,
    ) -> Note:
        target, base, start = binds
        fields = {
            "sha": sha,
            "mr": {"project": mr[0], "iid": mr[1]},
            "reason": None,
            "supersedes": None,
            "not_covering": [],
            "self_approval": False,
            "role": "lead",
            "target_branch": target,
            "base_sha": base,
            "start_sha": start,
            **kw,
        }
        return self.record("approval", "approve", agent, to=to, **fields)

    def withdraw(self, agent: str, approval: Note, reason: str = "a bug after all") -> Note:
        return self.record("approval", "withdraw", agent, approval=approval.id, reason=reason)

    def reviewed(
        self,
        *,
        sha: str = SHA,
        mr: tuple[str, int] = MR,
        lead: str = LEAD,
        review: str = REVIEW,
        binds: Binds = BINDS,
    ) -> Note:
        """A whole round up to the approval: claim, offer, accept, approve. The approval."""
        self.claim(lead)
        offer = self.handoff(lead, review, sha=sha, mr=mr)
        self.accept(review, offer, lead)
        return self.approve(review, lead, sha=sha, mr=mr, binds=binds)

    def solo(
        self,
        *,
        sha: str = SHA,
        mr: tuple[str, int] = MR,
        agent: str = SOLO,
        binds: Binds = BINDS,
    ) -> Note:
        """One agent offers the work to itself and approves it: a self-approval."""
        self.claim(agent)
        offer = self.handoff(agent, agent, sha=sha, mr=mr)
        self.accept(agent, offer, agent)
        return self.approve(agent, agent, sha=sha, mr=mr, binds=binds)

    def edit(self, note: Note, body: str, *, updated_at: str = "2026-01-01T01:00:00.000Z") -> None:
        """Rewrite a kept note in place, as a maintainer's edit would."""
        i = self.notes.index(note)
        self.notes[i] = note._replace(body=body, updated_at=updated_at)

    def delete(self, note: Note) -> None:
        self.notes.remove(note)

    def fold(self) -> Ledger:
        return fold(self.notes, config=self.config, issue=self.issue)


def resealed(body: str, **changes: Any) -> tuple[str, str]:
    """A note's body with its record changed and its digest computed again, as someone who
    rewrites a note and covers the tracks would; (the new body, the new digest)."""
    kind, record, human = parse_marker(body)
    record = {k: v for k, v in record.items() if k not in ("digest", "v")} | changes
    new, sealed = compose_note(kind, record, human)
    return new, str(sealed["digest"])
