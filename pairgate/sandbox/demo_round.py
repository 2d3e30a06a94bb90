"""One whole round against a sandbox, played through the real CLI: what ``pairgate demo``
prints and what examples/render_trail.py renders. The ids are deterministic, so two plays of
the same round give the same notes."""

from __future__ import annotations

import io
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate.resources import resource_dir
from pairgate.sandbox.defaults import pairgate_config
from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from pairgate.standalone.errors import Context, PairgateError
from pairgate.standalone.records import MalformedRecord, parse_marker

PREFIX = "PAIRGATE_DEMO"
LEAD, REVIEW = "acme-lead", "acme-review"
PROJECT = "acme/app"


@dataclass
class Note:
    id: int
    author: str
    text: str  # what GitLab renders: the body without its marker
    marker: str | None
    where: str = "the issue"


@dataclass
class Step:
    title: str
    agent: str | None = None
    argv: list[str] = field(default_factory=list)
    code: int | None = None
    output: str = ""
    notes: list[Note] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    aside: str = ""  # for a step that is not a pairgate command
    hook: bool = False  # argv is one Bash command the merge hook decided on, not pairgate's

    @property
    def command_line(self) -> str:
        """How the step's command is shown: a pairgate command line, or the Bash command the
        agent asked for and the hook decided on."""
        if self.hook:
            return f"{self.argv[0]}   (the agent's Bash tool; the merge hook decides)"
        return f"pairgate {shlex.join(self.argv)}"


# The CLI's dispatcher, given by the caller (main.run without its currency check): the round
# writes only to its own sandbox, so whether this copy is current is beside the point, and its
# note would make the rendered trail depend on the machine.
Dispatch = Callable[[list[str], Context], int]


class _Player:
    def __init__(self, sb: RunningSandbox, config: Path, dispatch: Dispatch) -> None:
        self.sb = sb
        self.config = config
        self.dispatch = dispatch
        self.ids = (f"{n:032x}" for n in itertools.count(1))
        self.issue = 0
        self.mr = 0
        self.seen = 0

    def env(self, agent: str | None) -> dict[str, str]:
        env = {
            "PAIRGATE_CONFIG": str(self.config),
            f"{PREFIX}_GITLAB_URL": self.sb.url,
            f"{PREFIX}_TASK_API_TOKEN": self.sb.token("agents"),
            f"{PREFIX}_TASK_WRITE_TOKEN": self.sb.token("agents"),
            f"{PREFIX}_REVIEW_BOT_TOKEN": self.sb.token("review_bot"),
        }
        if agent:
            env[f"{PREFIX}_AGENT_ID"] = agent
            env[f"{PREFIX}_SESSION_ID"] = f"demo-session-{agent}"
        return env

    def run(self, title: str, agent: str | None, *argv: Any) -> Step:
        words = [str(a) for a in argv]
        out = io.StringIO()
        ctx = Context(env=self.env(agent), stdout=out, stderr=out, new_id=lambda: next(self.ids))
        code = self.dispatch(words, ctx)
        step = Step(title, agent, words, code, out.getvalue().rstrip())
        step.notes = self.new_notes()
        step.labels = self.labels()
        return step

    def _notes(self, path: str) -> list[dict[str, Any]]:
        return list(self.sb.api("GET", path, params={"sort": "asc", "per_page": 100}))

    def new_notes(self) -> list[Note]:
        """The notes written since the last look: the ledger's on the issue, and GitLab's own
        on the merge request (an approval, a push), so no note id goes by unexplained."""
        raw = self._notes(f"/projects/acme%2Ftracker/issues/{self.issue}/notes")
        on_mr = (
            self._notes(f"/projects/acme%2Fapp/merge_requests/{self.mr}/notes") if self.mr else []
        )
        fresh = [(n, "the issue") for n in raw if n["id"] > self.seen and not n["system"]]
        fresh += [(n, f"{PROJECT}!{self.mr}") for n in on_mr if n["id"] > self.seen and n["system"]]
        self.seen = max([self.seen, *(n["id"] for n in raw + on_mr)])
        notes = []
        for n, where in sorted(fresh, key=lambda pair: pair[0]["id"]):
            try:
                _, _, text = parse_marker(n["body"])
                marker = n["body"].strip().splitlines()[-1]
            except MalformedRecord:
                text, marker = n["body"], None
            author = n["author"]["username"] + (
                " (a system note GitLab writes)" if n["system"] else ""
            )
            notes.append(Note(n["id"], author, text.strip(), marker, where))
        return notes

    def labels(self) -> list[str]:
        issue = self.sb.api("GET", f"/projects/acme%2Ftracker/issues/{self.issue}")
        return list(issue["labels"])

    def hook(self, title: str, command: str) -> Step:
        """The real merge hook, deployed flat beside the deployment's files, deciding on one Bash
        command as Claude Code would hand it over."""
        hooks = self.config.parent / "hooks"
        if not hooks.is_dir():
            hooks.mkdir()
            out = io.StringIO()
            ctx = Context(env=self.env(None), stdout=out, stderr=out)
            if self.dispatch(["deploy-hooks", "--target", str(hooks)], ctx) != 0:
                raise PairgateError(f"pairgate demo: deploy-hooks failed: {out.getvalue()}")
            shutil.copy(self.config, hooks / "pairgate-config.json")
            shutil.copy(resource_dir("hooks") / "_hooklib.sh", hooks / "_hooklib.sh")
            (hooks / "automation_mr_families.py").write_text("FAMILIES = []\n", encoding="utf-8")
        payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": command}})
        # The hook runs python3 from PATH: this interpreter, which has pairgate's dependencies.
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', os.defpath)}"
        done = subprocess.run(
            ["bash", str(hooks / "block-unapproved-merge.sh")],
            input=payload,
            capture_output=True,
            text=True,
            env={**self.env(None), "PATH": path, "HOME": str(self.config.parent)},
            timeout=60,
            check=False,
        )
        # Its currency note says only that the demo's hooks directory is in no checkout.
        said = [line for line in done.stderr.splitlines() if "merge hook: note:" not in line]
        verdict = "allowed: the gate passes it" if done.returncode == 0 else "blocked"
        output = "\n".join(said).strip() or f"merge hook: {verdict}"
        return Step(title, None, [command], done.returncode, output, hook=True)

    def head(self, mr: int) -> str:
        return str(self.sb.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr}")["sha"])


def _review(
    p: _Player, mr: int, sha: str, *, offer: tuple[str, str], approval: tuple[str, str | None]
) -> Iterator[Step]:
    """One review of ``sha``: the lead offers it, the review accepts and approves it, and the
    lead takes the issue back. ``offer`` and ``approval`` are (the step's title, the reason)."""
    issue = p.issue
    yield p.run(
        offer[0], LEAD, "handoff", issue, "--to", REVIEW, "--role", "review", "--sha", sha,
        "--reason", offer[1],
    )  # fmt: skip
    yield p.run(f"{REVIEW} accepts the offer", REVIEW, "accept", issue)
    reason = ("--reason", approval[1]) if approval[1] else ()
    yield p.run(
        approval[0], REVIEW, "approve", issue, "--mr", mr, "--mr-project", PROJECT, "--sha", sha,
        "--to", LEAD, *reason,
    )  # fmt: skip
    yield p.run(f"{LEAD} accepts the issue back", LEAD, "accept", issue)


def play(sb: RunningSandbox, config: Path, dispatch: Dispatch) -> Iterator[Step]:
    """The round, one step at a time."""
    p = _Player(sb, config, dispatch)
    p.issue = int(sb.create_issue("Round prices half-up in the widget")["iid"])
    issue = p.issue
    # The project's merge request pipelines run the gate's merge-check job (no runner plays it
    # here, so a pipeline approve starts stays pending).
    sb.set_ci(PROJECT, [{"name": "validate-mr-merge-check"}])
    sb.commit(
        "fix-rounding",
        {"widget.py": "def price(x):\n    return round(x + 0.0)\n"},
        project=PROJECT,
        message="Round prices half-up",
    )
    mr = int(
        sb.create_mr(
            "fix-rounding",
            project=PROJECT,
            title="Round prices half-up",
            description=f"Related to acme/tracker#{issue}",
        )["iid"]
    )
    p.mr = mr
    p.seen = max(
        [0, *(n["id"] for n in sb.api("GET", f"/projects/acme%2Ftracker/issues/{issue}/notes"))]
    )
    head = p.head(mr)
    yield Step(
        "The world",
        aside=(
            f"Issue acme/tracker#{issue} asks for a fix; merge request {PROJECT}!{mr} "
            f"(head {head[:12]}) cites it as acme/tracker#{issue}. Two agents post as the "
            f"same GitLab account, agents: {LEAD} implements, {REVIEW} reviews. The "
            f"project's merge request pipelines run the gate's validate-mr-merge-check job; no "
            f"runner plays it here."
        ),
    )
    yield p.run(f"{LEAD} claims the issue", LEAD, "claim", issue, "--role", "lead")
    yield from _review(
        p,
        mr,
        head,
        offer=(
            f"{LEAD} offers it to {REVIEW}, bound to the head commit",
            "Ready for review: price() rounds half-up now, and test_half_up covers it.",
        ),
        approval=(
            f"{REVIEW} approves that exact commit and offers the issue back",
            "Read the change and ran the tests at this commit: test_half_up passes.",
        ),
    )
    check = p.run(
        "merge-check at the approved head", None, "merge-check", "--mr", mr, "--mr-project", PROJECT
    )
    yield check
    merge = f"glab mr merge {mr} -R {PROJECT} --sha {head}"
    yield p.hook("The merge hook allows the approved merge, bound to the head", merge)
    sb.commit(
        "fix-rounding",
        {"widget.py": "def price(x):\n    # half-up\n    return round(x + 0.0)\n"},
        project=PROJECT,
        message="Comment the rounding",
    )
    pushed = p.head(mr)
    yield Step(
        "One more push: a comment, nothing else",
        aside=f"The head of {PROJECT}!{mr} is now {pushed[:12]}.",
        notes=p.new_notes(),
    )
    yield p.run(
        "merge-check after the push", None, "merge-check", "--mr", mr, "--mr-project", PROJECT
    )
    yield p.hook(
        "The merge hook blocks the merge of the unreviewed head",
        f"glab mr merge {mr} -R {PROJECT} --sha {pushed}",
    )
    yield p.run("status", None, "status", issue)
    # The new head gets its own review; then the merge, and the issue is closed.
    yield from _review(
        p,
        mr,
        pushed,
        offer=(f"{LEAD} offers the new head for review", "Only a comment changed."),
        approval=(f"{REVIEW} approves the new head", None),
    )
    sb.api(
        "PUT",
        f"/projects/acme%2Fapp/merge_requests/{mr}/merge",
        as_user="agents",
        json={"sha": pushed},
    )
    yield Step(
        "The merge",
        aside=(
            f"{PROJECT}!{mr} merges at {pushed[:12]}, exactly the approved head (what "
            f"`glab mr merge {mr} -R {PROJECT} --sha {pushed[:12]}...` asks GitLab for)."
        ),
    )
    yield p.run(f"{LEAD} closes the issue", LEAD, "close", issue)
    yield Step(
        "What to try next",
        aside=(
            "Play a round yourself: pairgate sandbox --config-out DIR/pairgate-config.json "
            "--with-example serves this GitLab stand-in with a whole deployment in DIR, and "
            "docs/sandbox.md in pairgate's repository plays a round there command by command. "
            "For your own GitLab, pairgate init writes a deployment (docs/agent-handoff.md, "
            "the operator card, says what each agent runs)."
        ),
    )


def sandboxed_round(dispatch: Dispatch) -> Iterator[Step]:
    """Start a sandbox, write its configuration, play the round, stop it."""
    with tempfile.TemporaryDirectory(prefix="pairgate-demo-") as tmp, running_sandbox() as sb:
        config = Path(tmp) / "pairgate-config.json"
        values = pairgate_config(sb.server.app.world, env_prefix=PREFIX)
        config.write_text(json.dumps(values, indent=2), encoding="utf-8")
        yield from play(sb, config, dispatch)
