"""Worlds for the board's tests: rounds played with the real verbs against the sandbox, the CLI
run at an injected time, and a note tampered with behind the ledger's back."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Any

from pairgate.main import main
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.errors import Context
from tests.conftest import Result, agent_env
from tests.suite_configuration import read_back, swapped

LEAD, REVIEW = "acme-lead", "acme-review"
APP = "acme/app"
APP_ID = "acme%2Fapp"
TRACKER_ID = "acme%2Ftracker"


def run_at(argv: list[str], env: dict[str, str], *, now: float | None = None) -> Result:
    """The CLI in-process, with the clock at ``now`` (the real time when None)."""
    out, err = io.StringIO(), io.StringIO()
    clock = (lambda: now) if now is not None else time.time
    run_env = swapped(env)
    ctx = Context(env=run_env, now=clock, stdout=out, stderr=err)
    code = main(argv, ctx=ctx)
    return Result(int(code), *read_back(run_env, out.getvalue(), err.getvalue()))


def ok(argv: list[str], env: dict[str, str], **kw: Any) -> Result:
    result = run_at(argv, env, **kw)
    assert result.code == 0, f"{argv}: {result.err}"
    return result


@dataclass
class Round:
    """One issue with its merge request in acme/app."""

    sandbox: RunningSandbox
    issue: int
    mr: int
    sha: str
    branch: str

    @property
    def lead(self) -> dict[str, str]:
        return agent_env(self.sandbox, LEAD)

    @property
    def review(self) -> dict[str, str]:
        return agent_env(self.sandbox, REVIEW)

    def push(self) -> str:
        """One more commit on the branch: the head moves."""
        self.sha = self.sandbox.commit(self.branch, {"more.txt": str(time.time())})["id"]
        return self.sha

    def claim(self) -> Round:
        ok(["claim", str(self.issue), "--role", "lead"], self.lead)
        return self

    def offer(self) -> Round:
        argv = ["handoff", str(self.issue), "--to", REVIEW, "--role", "review", "--sha", self.sha]
        ok(argv, self.lead)
        return self

    def accept(self, env: dict[str, str]) -> Round:
        ok(["accept", str(self.issue)], env)
        return self

    def approve(self, *, to: str = LEAD, env: dict[str, str] | None = None) -> Round:
        argv = ["approve", str(self.issue), "--mr", str(self.mr), "--mr-project", APP]
        ok([*argv, "--sha", self.sha, "--to", to], env or self.review)
        return self

    def approved(self) -> Round:
        """claim, offer, accept, approve, accept: the lead holds it with an approval at head."""
        return self.claim().offer().accept(self.review).approve().accept(self.lead)

    def merge(self) -> None:
        path = f"/projects/{APP_ID}/merge_requests/{self.mr}/merge"
        self.sandbox.api("PUT", path, as_user="maintainer", json={"sha": self.sha})


def new_round(sandbox: RunningSandbox, title: str = "work") -> Round:
    issue = int(sandbox.create_issue(title)["iid"])
    branch = f"issue-{issue}"
    sha = sandbox.commit(branch, {f"f{issue}.txt": title})["id"]
    mr = sandbox.create_mr(branch, title=title, description=f"Related to acme/tracker#{issue}")
    return Round(sandbox, issue, int(mr["iid"]), sha, branch)


def notes(sandbox: RunningSandbox, issue: int) -> list[dict[str, Any]]:
    path = f"/projects/{TRACKER_ID}/issues/{issue}/notes"
    return list(sandbox.api("GET", path, params={"sort": "asc", "per_page": 100}))


def tamper(sandbox: RunningSandbox, issue: int, note_id: int, old: str, new: str) -> None:
    """Rewrite a ledger note's text as its author could, leaving the marker as it was."""
    note = next(n for n in notes(sandbox, issue) if n["id"] == note_id)
    assert old in note["body"]
    path = f"/projects/{TRACKER_ID}/issues/{issue}/notes/{note_id}"
    sandbox.api("PUT", path, json={"body": note["body"].replace(old, new, 1)})


def labels(sandbox: RunningSandbox, issue: int) -> list[str]:
    return list(sandbox.api("GET", f"/projects/{TRACKER_ID}/issues/{issue}")["labels"])
