"""Build ledger notes for tests: a trail of records written the way the verbs write them.

``Trail`` keeps the chain (each record names the previous digest), hands out note ids in
order, and lets a test forge, edit, delete or reorder notes afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pairgate.standalone.config import Config
from pairgate.standalone.errors import fresh_id
from pairgate.standalone.fold import fold
from pairgate.standalone.ledger import Ledger, Note
from pairgate.standalone.records import ISSUE_BOUND_KINDS, compose_note

AGENTS_USER = 10  # the suite configuration's ledger_author_user_ids
MAINTAINER = 13
SHA = "a" * 40
SHA2 = "b" * 40
MR = {"project": "acme/app", "iid": 7}
STAMP = "2026-01-01T00:00:00.000Z"
BASE = "c" * 40  # the merge base (diff_refs.base_sha and start_sha) an approval records
ISSUE = 4  # the tracker issue a Trail's records name, unless told otherwise


class Trail:
    """Records on one issue (``issue``). Each agent writes in its own session
    (``session-<agent>``) unless a record says otherwise, as separate agents do."""

    def __init__(self, config: Config, *, first_id: int = 100, issue: int = ISSUE) -> None:
        self.config = config
        self.issue = issue
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
            "write_id": fields.pop("write_id", None) or fresh_id(),
            "session": fields.pop("session", None) or f"session-{agent}",
            "prev": self.prev if prev is ... else prev,
            **fields,
        }
        if kind in ISSUE_BOUND_KINDS and "issue" not in record:
            record["issue"] = f"{self.config.tracker_project}#{self.issue}"
        body, sealed = compose_note(kind, record, human or f"{agent} {event}")
        self.prev = sealed["digest"]
        return self.note(body, author=author)

    def claim(self, agent: str, role: str = "lead", **kw: Any) -> Note:
        return self.record("ownership", "claim", agent, role=role, **kw)

    def handoff(self, agent: str, to: str, role: str = "review", **kw: Any) -> Note:
        fields = {"sha": SHA, "mr": MR, "reason": None, "supersedes": None, **kw}
        return self.record("ownership", "handoff", agent, to=to, role=role, **fields)

    def accept(self, agent: str, offer: Note, sender: str, role: str = "review", **kw: Any) -> Note:
        return self.record(
            "ownership", "accept", agent, offer=offer.id, role=role, **{"from": sender}, **kw
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
            "target_branch": "main",
            "base_sha": BASE,
            "start_sha": BASE,
            **kw,
        }
        return self.record("approval", "approve", agent, to=to, **fields)

    def edit(self, note: Note, body: str, *, updated_at: str = "2026-01-01T01:00:00.000Z") -> None:
        """Rewrite a note in place, as a maintainer's edit would."""
        i = self.notes.index(note)
        self.notes[i] = dataclasses.replace(note, body=body, updated_at=updated_at)

    def delete(self, note: Note) -> None:
        self.notes.remove(note)

    def withdraw(self, agent: str, approval: Note, reason: str = "a bug after all") -> Note:
        return self.record("approval", "withdraw", agent, approval=approval.id, reason=reason)

    def fold(self) -> Ledger:
        return fold(self.notes, config=self.config, issue=self.issue)


class Round:
    """A world for one round against the sandbox: a tracker issue, and a merge request in
    ``project`` whose description cites it. ``run`` runs the real CLI as an agent."""

    def __init__(
        self,
        sandbox: Any,
        *,
        project: str = "acme/app",
        branch: str = "fix",
        start_branch: str = "main",
        target_branch: str = "main",
    ) -> None:
        self.sb = sandbox
        self.project = project
        self.issue = int(sandbox.create_issue("Fix the widget")["iid"])
        sandbox.commit(branch, {"widget.py": "x = 1\n"}, project=project, start_branch=start_branch)
        self.branch = branch
        self.mr = int(
            sandbox.create_mr(
                branch,
                project=project,
                title="Fix the widget",
                description=f"Related to acme/tracker#{self.issue}",
                target_branch=target_branch,
            )["iid"]
        )

    @classmethod
    def on(cls, sandbox: Any, world: Round, issue: int) -> Round:
        """The same merge request, seen from another tracker issue it cites."""
        other = cls.__new__(cls)
        other.sb, other.project, other.branch, other.mr = (
            sandbox,
            world.project,
            world.branch,
            world.mr,
        )
        other.issue = issue
        return other

    @staticmethod
    def run_as(sandbox: Any, agent: str | None, *argv: Any, **env: str) -> Any:
        from conftest import agent_env, run_cli

        return run_cli([str(a) for a in argv], agent_env(sandbox, agent, **env))

    def ledger_notes(self) -> list[dict[str, Any]]:
        """The issue's notes that carry a record, oldest first."""
        return [n for n in self.notes() if "<!-- mochi-task:" in n["body"]]

    def run(self, agent: str | None, *argv: Any, **env: str) -> Any:
        from conftest import agent_env, run_cli

        return run_cli([str(a) for a in argv], agent_env(self.sb, agent, **env))

    @property
    def head(self) -> str:
        return str(
            self.sb.api("GET", f"/projects/{_enc(self.project)}/merge_requests/{self.mr}")["sha"]
        )

    def push(self, content: str = "x = 2\n") -> str:
        self.sb.commit(self.branch, {"widget.py": content}, project=self.project)
        return self.head

    def notes(self) -> list[dict[str, Any]]:
        return list(
            self.sb.api(
                "GET", f"/projects/acme%2Ftracker/issues/{self.issue}/notes?sort=asc&per_page=100"
            )
        )

    def issue_state(self) -> dict[str, Any]:
        return dict(self.sb.api("GET", f"/projects/acme%2Ftracker/issues/{self.issue}"))

    def ledger(self, config: Config) -> Ledger:
        return fold([Note.from_api(n) for n in self.notes()], config=config, issue=self.issue)

    # the steps of a round, each expected to pass
    def claimed(self, agent: str = "acme-lead") -> None:
        _ok(self.run(agent, "claim", self.issue, "--role", "lead"))

    def offered(self, sender: str = "acme-lead", to: str = "acme-review", *extra: Any) -> None:
        _ok(
            self.run(
                sender,
                "handoff",
                self.issue,
                "--to",
                to,
                "--role",
                "review",
                "--sha",
                self.head,
                "--mr",
                self.mr,
                "--mr-project",
                self.project,
                *extra,
            )
        )

    def accepted(self, agent: str = "acme-review") -> None:
        _ok(self.run(agent, "accept", self.issue))

    def approved(self, agent: str = "acme-review", to: str = "acme-lead", *extra: Any) -> None:
        _ok(
            self.run(
                agent,
                "approve",
                self.issue,
                "--mr",
                self.mr,
                "--mr-project",
                self.project,
                "--sha",
                self.head,
                "--to",
                to,
                *extra,
            )
        )


def _ok(result: Any) -> None:
    assert result.code == 0, result.err


def _enc(project: str) -> str:
    return project.replace("/", "%2F")
