"""What ``pairgate sandbox --config-out DIR/FILE`` writes beside the configuration, so that a
whole deployment can be tried against the sandbox (deploy-agents, deploy-hooks, every verb)
without a hand-written file, and the example round that ``--with-example`` sets up.

The configuration and the review bot's token file describe the sandbox and are written every
time; the starter texts, the liveness oracle, the automation roster and ``_hooklib.sh`` are the
operator's to edit, so a file that already exists is left as it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pairgate.deployment.file_set import files_of
from pairgate.sandbox import defaults
from pairgate.standalone.config import CONFIG_FILENAME
from pairgate.standalone.errors import PairgateError

if TYPE_CHECKING:
    from pairgate.sandbox.server import App

STARTER_TEXTS = {
    "escalation": (
        "When a refusal's remedy does not work, or the protocol seems to be in your way, stop and\n"
        "write what you ran and what it printed as an `OBSERVED:` note on the issue, then ask the\n"
        "operator. Do not retry in a loop.\n"
    ),
    "session": (
        "This deployment runs against a pairgate sandbox, a GitLab on this machine. Before the\n"
        "session starts the operator exports `PAIRGATE_SANDBOX_GITLAB_URL` (the sandbox's `url`),\n"
        "`PAIRGATE_SANDBOX_TASK_API_TOKEN`, `PAIRGATE_SANDBOX_TASK_WRITE_TOKEN` and\n"
        "`PAIRGATE_SANDBOX_AGENT_ID` (your identity). Do not change them yourself.\n"
    ),
    "testing": (
        "The sandbox's repositories hold no test suite. Say in the issue what you checked and how,\n"
        "and what would have failed had the change been wrong.\n"
    ),
}
ORACLE = (
    "A bug is live when it reproduces against the default branch of the sandbox project it was\n"
    "reported in: read the file at `main` (`GET /projects/:id/repository/files/:path/raw`) and\n"
    "show the wrong behaviour from that content. A bug that shows only on a branch is not live.\n"
)
ROSTER = '''"""The automation roster of this sandbox deployment: the unattended merge request families
the merge gate leaves alone, beside Renovate (the configuration's renovate_* keys cover it).

A merge request belongs to a family when all three hold: GitLab says its author is
``author_id``; its source branch starts with ``branch_prefix``; and the tracker issues it cites
are exactly ``cites_issue`` (``None``: it cites none). Anything else stays in the gate's scope.
The gate reads FAMILIES as a Python literal and never runs this file. The sandbox has no
automation of its own, so the list is empty; an entry looks like

    {"name": "nightly-lockfiles", "author_id": 12, "branch_prefix": "automation/lockfiles/",
     "cites_issue": None},
"""

FAMILIES: list[dict[str, object]] = []
'''
EXAMPLE_JOB = "validate-mr-merge-check"


def write_deployment(config_path: Path, config: dict[str, Any]) -> list[Path]:
    """Write the configuration, the review bot's token and the rest of the deployment set
    beside it (pairgate.deployment.file_set's, with the sandbox's own texts); return what was
    written. The configuration and the token describe the sandbox and are written every time;
    the rest is the operator's to edit, so a file that already exists is left as it is."""
    directory = config_path.parent
    files = files_of(config, texts=STARTER_TEXTS, oracle=ORACLE, roster=ROSTER)
    token = directory / config["review_bot_token_file"]
    token.write_text(defaults.token("review_bot") + "\n", encoding="utf-8")
    os.chmod(token, 0o600)
    config_path.write_text(files.pop(CONFIG_FILENAME), encoding="utf-8")
    written = [config_path, token]
    for name, text in files.items():
        path = directory / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def add_example(app: App) -> dict[str, Any]:
    """A claimable issue in the tracker and an MR in acme/app citing it, with one commit on
    its branch, made through the API as the agents account; what the ready line reports."""
    headers = {"private-token": defaults.token("agents"), "content-type": "application/json"}

    def call(method: str, path: str, body: dict[str, Any]) -> Any:
        reply = app.handle(method, f"/api/v4{path}", "", headers, json.dumps(body).encode(), "")
        if reply.status >= 300:
            raise PairgateError(f"pairgate sandbox: the example failed: {reply.body}")
        return reply.body

    issue = call("POST", "/projects/acme%2Ftracker/issues", {
        "title": "Greet by name",
        "description": "`greet()` in acme/app says hello to nobody: it should take a name.",
    })  # fmt: skip
    commit = call("POST", "/projects/acme%2Fapp/repository/commits", {
        "branch": "greet-by-name", "start_branch": "main", "commit_message": "Greet by name",
        "actions": [{"action": "create", "file_path": "greet.py",
                     "content": "def greet(name):\n    return f'hello, {name}'\n"}],
    })  # fmt: skip
    # A CI configuration with a merge request job (the gate's, as a deployment has it), so
    # approve's merge request pipeline starts; without a runner its job stays pending.
    project = app.world.project_by_ref("acme/app")
    assert project is not None
    project.ci_jobs = [{"name": EXAMPLE_JOB, "stage": "test", "allow_failure": False}]
    mr = call("POST", "/projects/acme%2Fapp/merge_requests", {
        "source_branch": "greet-by-name", "target_branch": "main", "title": "Greet by name",
        "description": f"Related to acme/tracker#{issue['iid']}",
    })  # fmt: skip
    return {
        "issue": {"project": "acme/tracker", "id": issue["id"], "iid": issue["iid"]},
        "merge_request": {
            "project": "acme/app",
            "id": mr["id"],
            "iid": mr["iid"],
            "source_branch": mr["source_branch"],
            "sha": commit["id"],
        },
    }
