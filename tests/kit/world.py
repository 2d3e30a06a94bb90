"""The sandbox world the suite's rounds are played in.

``World`` is the sandbox seen from a test: issues, merge requests, pushes, an issue's notes and
labels, a ledger trail posted to an issue. ``Round`` is one round in it: a tracker issue and a
merge request citing it, the real CLI run in-process as each agent (``run``), and the verbs'
steps, each of which must pass (``claim``, ``offer``, ``accept``, ``approve``; ``approved`` for
all of them). Given a directory, a round also keeps a watcher's state and a clock of its own,
and runs the watcher's commands (``watch``, ``poll``, ``inbox``...).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.fold import fold
from pairgate.standalone.ledger import Ledger, Note
from pairgate.watch.store import Store
from tests.kit.names import APP, LEAD, REVIEW, TRACKER, mr_path, notes_path, project_path
from tests.kit.run import Result, agent_env, ok, run_cli, suite_config
from tests.kit.trail import Trail, on_sandbox, own_session

_changes = itertools.count(1)  # distinct branch and file names across a session's worlds


class World:
    """Thin helpers over the sandbox: issues, merge requests, pushes, notes, trails."""

    def __init__(self, sandbox: RunningSandbox) -> None:
        self.sandbox = sandbox

    def issue(self, title: str = "Work") -> int:
        return int(self.sandbox.create_issue(title)["iid"])

    def trail(self, issue: int, *, session: Callable[[str], str] = own_session) -> Trail:
        """A trail whose notes are posted to ``issue``, each as the account of its author."""
        return Trail(
            suite_config(), issue=issue, post=on_sandbox(self.sandbox, issue), session=session
        )

    def mr(
        self,
        description: str = "",
        *,
        project: str = APP,
        branch: str | None = None,
        start_branch: str = "main",
        as_user: str = "agents",
        **fields: Any,
    ) -> dict[str, Any]:
        """A merge request of ``project`` from a branch with one change of its own; GitLab's
        entity, with ``project`` added."""
        branch = branch or f"work-{next(_changes)}"
        self.push(project, branch, start_branch=start_branch, as_user=as_user)
        mr = self.sandbox.create_mr(
            branch, project=project, description=description, as_user=as_user, **fields
        )
        return {**mr, "project": project}

    def push(
        self, project: str, branch: str, *, start_branch: str = "main", as_user: str = "agents"
    ) -> str:
        """One more commit on ``branch`` (made from ``start_branch`` if new); its id."""
        change = {f"change-{next(_changes)}.txt": "a change\n"}
        commit = self.sandbox.commit(
            branch, change, project=project, start_branch=start_branch, as_user=as_user
        )
        return str(commit["id"])

    def head(self, mr: dict[str, Any]) -> str:
        return str(self.sandbox.api("GET", mr_path(mr["project"], mr["iid"]))["sha"])

    def notes(self, issue: int) -> list[dict[str, Any]]:
        """The issue's notes, oldest first."""
        found = self.sandbox.api("GET", notes_path(issue), params={"sort": "asc", "per_page": 100})
        return list(found)

    def labels(self, issue: int) -> list[str]:
        return list(self.sandbox.api("GET", f"{project_path(TRACKER)}/issues/{issue}")["labels"])

    def tamper(self, issue: int, note_id: int, old: str, new: str) -> None:
        """Rewrite a ledger note's text as its author could, leaving the marker as it was."""
        note = next(n for n in self.notes(issue) if n["id"] == note_id)
        assert old in note["body"]
        path = f"{notes_path(issue)}/{note_id}"
        self.sandbox.api("PUT", path, json={"body": note["body"].replace(old, new, 1)})


@dataclass
class Clock:
    """A clock that moves only when told."""

    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Round:
    """A round against the sandbox: tracker issue ``issue`` (titled ``title``) and merge
    request ``mr`` of ``project`` from ``branch``, whose description cites the issue. ``sha`` is
    the commit the round last pushed. With ``watch_dir``, the round keeps a watcher's state
    there (``state``), and its commands read the time from ``clock``, which moves when told."""

    def __init__(
        self,
        sandbox: RunningSandbox,
        title: str = "Fix the widget",
        *,
        project: str = APP,
        branch: str | None = None,
        start_branch: str = "main",
        target_branch: str = "main",
        watch_dir: Path | None = None,
        store_url: str | None = None,
    ) -> None:
        self.sb = sandbox
        self.world = World(sandbox)
        self.project = project
        self.issue = self.world.issue(title)
        self.branch = branch or f"issue-{self.issue}"
        mr = self.world.mr(
            f"Related to {TRACKER}#{self.issue}",
            project=project,
            branch=self.branch,
            start_branch=start_branch,
            title=title,
            target_branch=target_branch,
        )
        self.mr = int(mr["iid"])
        self.sha = str(mr["sha"])
        self.watch_dir = watch_dir
        self.clock = None if watch_dir is None else Clock()
        self.state = None if watch_dir is None else watch_dir / "state"  # XDG_STATE_HOME
        # None: the default SQLite file under XDG_STATE_HOME; else the store every command of
        # this round uses (<env_prefix>_WATCH_STORE), such as a postgresql:// URL.
        self.store_url = store_url

    @classmethod
    def on(cls, other: Round, issue: int) -> Round:
        """The same merge request, seen from another tracker issue it cites."""
        seen = cls.__new__(cls)
        seen.__dict__.update(other.__dict__)
        seen.issue = issue
        return seen

    # -- the CLI, in-process ------------------------------------------------------------------

    def env(self, agent: str | None = LEAD, **extra: str) -> dict[str, str]:
        """The environment ``agent`` runs pairgate in (None: no agent identity)."""
        state = {} if self.state is None else {"XDG_STATE_HOME": str(self.state)}
        if self.store_url:
            state[suite_config().env_name("WATCH_STORE")] = self.store_url
        return agent_env(self.sb, agent, **{**state, **extra})

    @property
    def lead(self) -> dict[str, str]:
        return self.env(LEAD)

    @property
    def review(self) -> dict[str, str]:
        return self.env(REVIEW)

    def run(self, agent: str | None, *argv: Any, **env: str) -> Result:
        """``pairgate ARGV...`` as ``agent``, with ``env`` added to its environment."""
        return run_cli([str(a) for a in argv], self.env(agent, **env), now=self.clock)

    def verb(self, agent: str | None, *argv: Any, **env: str) -> Result:
        """``run``, of a command that must succeed."""
        return ok([str(a) for a in argv], self.env(agent, **env), now=self.clock)

    # -- the steps of a round, each of which must pass ----------------------------------------

    def claim(self, agent: str = LEAD, role: str = "lead") -> Round:
        self.verb(agent, "claim", self.issue, "--role", role)
        return self

    def offer(self, to: str = REVIEW, *extra: Any, sender: str = LEAD) -> Round:
        """``sender`` offers the issue to ``to`` for review, at the merge request's head."""
        self.verb(
            sender,
            *("handoff", self.issue, "--to", to, "--role", "review", "--sha", self.head),
            *("--mr", self.mr, "--mr-project", self.project, *extra),
        )
        return self

    def accept(self, agent: str = REVIEW) -> Round:
        self.verb(agent, "accept", self.issue)
        return self

    def approve(self, agent: str = REVIEW, to: str = LEAD, *extra: Any) -> Round:
        """``agent`` approves the merge request at its head and offers the issue to ``to``."""
        self.verb(
            agent,
            *("approve", self.issue, "--mr", self.mr, "--mr-project", self.project),
            *("--sha", self.head, "--to", to, *extra),
        )
        return self

    def approved(self) -> Round:
        """claim, offer, accept, approve, accept: the lead holds it with an approval at head."""
        return self.claim().offer().accept(REVIEW).approve().accept(LEAD)

    def merge(self) -> None:
        """The merge, by the maintainer, at the head."""
        path = f"{self.mr_path}/merge"
        self.sb.api("PUT", path, as_user="maintainer", json={"sha": self.head})

    # -- the world ----------------------------------------------------------------------------

    @property
    def mr_path(self) -> str:
        return mr_path(self.project, self.mr)

    @property
    def head(self) -> str:
        """The merge request's head, as GitLab says."""
        return str(self.sb.api("GET", self.mr_path)["sha"])

    def push(self) -> str:
        """One more commit on the branch: the head moves. The new head."""
        self.sha = self.world.push(self.project, self.branch)
        return self.sha

    def notes(self) -> list[dict[str, Any]]:
        return self.world.notes(self.issue)

    def trail(self) -> Trail:
        """A trail posted to the round's issue, written by hand rather than by the verbs."""
        return self.world.trail(self.issue)

    def ledger_notes(self) -> list[dict[str, Any]]:
        """The issue's notes that carry a record, oldest first."""
        return [n for n in self.notes() if "<!-- mochi-task:" in n["body"]]

    def ledger(self, config: Config) -> Ledger:
        return fold([Note.from_api(n) for n in self.notes()], config=config, issue=self.issue)

    def labels(self) -> list[str]:
        return self.world.labels(self.issue)

    def tamper(self, note_id: int, old: str, new: str) -> None:
        self.world.tamper(self.issue, note_id, old, new)

    def issue_state(self) -> dict[str, Any]:
        return dict(self.sb.api("GET", f"{project_path(TRACKER)}/issues/{self.issue}"))

    def comment(self, body: str, as_user: str = "review_bot") -> dict[str, Any]:
        """A comment on the merge request."""
        path = f"{self.mr_path}/notes"
        return dict(self.sb.api("POST", path, json={"body": body}, as_user=as_user))

    def diff_comment(
        self, body: str, path: str, line: int = 1, as_user: str = "review_bot"
    ) -> dict[str, Any]:
        """A comment on a line of the merge request's diff: a thread with a position."""
        refs = self.sb.api("GET", self.mr_path)["diff_refs"]
        position = {**refs, "position_type": "text", "new_path": path, "new_line": line}
        path_ = f"{self.mr_path}/discussions"
        return dict(
            self.sb.api("POST", path_, json={"body": body, "position": position}, as_user=as_user)
        )

    def pipeline(self, *jobs: tuple[str, str], allow: tuple[str, ...] = ()) -> dict[str, Any]:
        """A branch pipeline at the branch's head with ``jobs`` (name, status)."""
        specs = [{"name": n, "status": s, "allow_failure": n in allow} for n, s in jobs]
        return self.sb.pipeline(self.project, self.branch, specs)

    # -- the watcher (a round given a watch_dir) ------------------------------------------------

    @property
    def pushed(self) -> Path:
        """The file the pushing poll appends each batch to."""
        assert self.watch_dir is not None, "only a round given a watch_dir pushes batches"
        return self.watch_dir / "pushed.jsonl"

    def watch(self, *argv: Any, agent: str | None = None) -> Result:
        return self.run(agent, "watch", *argv)

    def poll(self, *argv: Any) -> Result:
        """One poll that must read everything."""
        result = self.watch("--once", *argv)
        assert result.code == 0, result.err
        return result

    def push_poll(self) -> Result:
        """A poll that pushes to a command appending each batch to ``pushed``."""
        write = f"open({str(self.pushed)!r}, 'a').write(sys.stdin.read() + chr(10))"
        return self.poll("--deliver-command", f'{sys.executable} -c "import sys; {write}"')

    def pushes(self) -> list[dict[str, Any]]:
        if not self.pushed.exists():
            return []
        return [json.loads(line) for line in self.pushed.read_text().splitlines() if line]

    def inbox(self, agent: str = LEAD, *argv: Any) -> Result:
        """``inbox`` run by ``agent`` itself: showing its batches is a delivery attempt."""
        return self.run(agent, "inbox", *argv)

    def batches(self, agent: str = LEAD) -> list[dict[str, Any]]:
        """The agent's live batches, looked at by nobody in particular (no attempt recorded)."""
        result = self.run(None, "inbox", "--agent", agent, "--json")
        assert result.code == 0, result.err
        return list(json.loads(result.out)["batches"])

    def ack(self, batch: str, agent: str = LEAD, *argv: Any) -> Result:
        return self.run(agent, "inbox", "ack", batch, *argv)

    def store(self) -> Store:
        assert self.state is not None, "only a round given a watch_dir keeps a watcher's store"
        where = self.store_url or self.state / "pairgate" / "acme%2Ftracker.sqlite3"
        return Store.open(where, tracker=TRACKER)


def kinds(batch: dict[str, Any]) -> list[str]:
    """The kinds of a watcher's batch's events."""
    return [e["kind"] for e in batch["events"]]
