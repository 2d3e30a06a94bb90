"""The watcher's test world: a sandbox round (an issue, its MR in acme/app), a temporary store,
an injected clock, and the real commands run in-process through pairgate.main."""

from __future__ import annotations

import io
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import FIXTURE_CONFIG, Result, agent_env

from pairgate.main import main as pairgate_main
from pairgate.main import main as watch_main
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import load_config
from pairgate.standalone.errors import Context
from pairgate.watch.store import Store

LEAD, REVIEW = "acme-lead", "acme-review"
APP = "/projects/acme%2Fapp"
STORE_NAME = "acme%2Ftracker.sqlite3"


@dataclass
class Clock:
    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class World:
    def __init__(
        self, sandbox: RunningSandbox, tmp: Path, *, title: str = "Fix the widget"
    ) -> None:
        self.sb = sandbox
        self.state = tmp / "state"
        self.clock = Clock()
        self.pushed = tmp / "pushed.jsonl"
        self.issue = int(sandbox.create_issue(title)["iid"])
        self.branch = f"fix-{self.issue}"
        self.sha = sandbox.commit(self.branch, {f"w{self.issue}.py": "x = 1\n"})["id"]
        mr = sandbox.create_mr(
            self.branch, title=title, description=f"Fixes acme/tracker#{self.issue}"
        )
        self.mr = int(mr["iid"])

    # -- commands ---------------------------------------------------------------------------

    def env(self, agent: str | None = LEAD, **extra: str) -> dict[str, str]:
        return agent_env(self.sb, agent, XDG_STATE_HOME=str(self.state), **extra)

    def _run(self, entry: Any, argv: list[str], env: dict[str, str]) -> Result:
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(env=env, now=self.clock, stdout=out, stderr=err)
        return Result(int(entry([str(a) for a in argv], ctx=ctx)), out.getvalue(), err.getvalue())

    def verb(self, agent: str, *argv: Any) -> Result:
        result = self._run(pairgate_main, [str(a) for a in argv], self.env(agent))
        assert result.code == 0, result.err
        return result

    def run(self, argv: list[str], agent: str | None) -> Result:
        return self._run(watch_main, argv, self.env(agent))

    def watch(self, *argv: Any, agent: str | None = None) -> Result:
        return self._run(watch_main, ["watch", *map(str, argv)], self.env(agent))

    def poll(self, *argv: Any) -> Result:
        """One poll that must read everything."""
        result = self.watch("--once", *argv)
        assert result.code == 0, result.err
        return result

    def push_poll(self) -> Result:
        """A poll that pushes to a command appending each batch to ``pushed``."""
        command = f"{sys.executable} -c \"import sys; open({str(self.pushed)!r}, 'a').write(sys.stdin.read() + chr(10))\""
        return self.poll("--deliver-command", command)

    def pushes(self) -> list[dict[str, Any]]:
        if not self.pushed.exists():
            return []
        return [json.loads(line) for line in self.pushed.read_text().splitlines() if line]

    def inbox(self, agent: str = LEAD, *argv: Any) -> Result:
        """``inbox`` run by ``agent`` itself: showing its batches is a delivery attempt."""
        return self._run(watch_main, ["inbox", *map(str, argv)], self.env(agent))

    def batches(self, agent: str = LEAD) -> list[dict[str, Any]]:
        """The agent's live batches, looked at by nobody in particular (no attempt recorded)."""
        result = self._run(watch_main, ["inbox", "--agent", agent, "--json"], self.env(None))
        assert result.code == 0, result.err
        return list(json.loads(result.out)["batches"])

    def ack(self, batch: str, agent: str = LEAD, *argv: Any) -> Result:
        return self._run(watch_main, ["inbox", "ack", batch, *map(str, argv)], self.env(agent))

    # -- the world --------------------------------------------------------------------------

    @property
    def mr_path(self) -> str:
        return f"{APP}/merge_requests/{self.mr}"

    def push(self) -> str:
        self.sha = self.sb.commit(self.branch, {f"w{self.issue}.py": f"x = {time.time()}\n"})["id"]
        return self.sha

    def comment(self, body: str, as_user: str = "review_bot") -> dict[str, Any]:
        return dict(
            self.sb.api("POST", f"{self.mr_path}/notes", json={"body": body}, as_user=as_user)
        )

    def pipeline(self, *jobs: tuple[str, str], allow: tuple[str, ...] = ()) -> dict[str, Any]:
        specs = [{"name": n, "status": s, "allow_failure": n in allow} for n, s in jobs]
        return self.sb.pipeline("acme/app", self.branch, specs)

    def claim(self, agent: str = LEAD) -> None:
        self.verb(agent, "claim", self.issue, "--role", "lead")

    def offer(self, to: str = REVIEW) -> None:
        self.verb(LEAD, "handoff", self.issue, "--to", to, "--role", "review", "--sha", self.sha)

    def store(self) -> Store:
        config = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
        return Store.open(self.state / "pairgate" / STORE_NAME, tracker=config.tracker_project)


def kinds(batch: dict[str, Any]) -> list[str]:
    return [e["kind"] for e in batch["events"]]
