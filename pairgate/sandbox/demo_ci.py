"""``pairgate demo --ci``: the round through the CI door. The sandbox runs every pipeline with
gitlab-ci-local (pairgate/sandbox/runner.py), the tracker-held pipeline is deployed as the
README says, and each merge is an attempt through GitLab's merge API with "Pipelines must
succeed" on: the unapproved merge request's pipeline fails on the gate job and the merge is
refused; approve starts a green pipeline and the merge goes through.
"""

from __future__ import annotations

import io
import json
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pairgate.resources import package_file, resource_dir
from pairgate.sandbox import gcl
from pairgate.sandbox.defaults import pairgate_config
from pairgate.sandbox.demo_round import LEAD, PREFIX, PROJECT, REVIEW, Dispatch, Step, _Player
from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from pairgate.standalone.errors import Context, PairgateError, UsageError

PIPELINE_FILE = "ci/pairgate-pipeline.yml"
GATE_DIR = "gate"
READ_TOKEN = "GATE_READ_TOKEN"
GATE_JOB = "validate-mr-merge-check"
VALIDATORS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)
APP_CI = "unit:\n  script:\n    - echo the project tests pass\n"


def program() -> str:
    """gitlab-ci-local, or a usage error (exit 2) naming what to install."""
    missing = gcl.missing()
    if missing:
        raise UsageError(
            "pairgate demo --ci: the round through CI runs its pipelines with gitlab-ci-local; "
            "install " + "; and ".join(missing) + ". (pairgate demo alone needs neither.)"
        )
    found = gcl.find()
    assert found is not None
    return found


def _deploy(p: _Player, sb: RunningSandbox, work: Path) -> Step:
    """deploy-pipeline's file and the gate's files on the tracker's default branch, and acme/app
    set to read it, as the README's "recommended deployment" says."""
    rendered = work / "pipeline.yml"
    argv = [
        "deploy-pipeline", "--target", str(rendered), "--image", "python:3.11-slim",
        "--runner-tag", "pairgate", "--gate-dir", GATE_DIR, "--read-token-variable", READ_TOKEN,
        "--gitlab-url", sb.url,
    ]  # fmt: skip
    out = io.StringIO()
    if p.dispatch(argv, Context(env=p.env(None), stdout=out, stderr=out)) != 0:
        raise PairgateError(f"pairgate demo --ci: deploy-pipeline failed: {out.getvalue()}")
    validators = resource_dir("validators")
    files: dict[str, str | None] = {
        PIPELINE_FILE: rendered.read_text(encoding="utf-8"),
        f"{GATE_DIR}/ownership.py": package_file("ownership.py").read_text(encoding="utf-8"),
        f"{GATE_DIR}/pairgate-config.json": p.config.read_text(encoding="utf-8"),
        f"{GATE_DIR}/automation_mr_families.py": "FAMILIES = []\n",
    }
    for name in VALIDATORS:
        files[f"{GATE_DIR}/{name}.py"] = (validators / f"{name}.py").read_text(encoding="utf-8")
    sb.commit("main", files, project="acme/tracker", message="Deploy the gate")
    sb.settings(
        PROJECT,
        ci_config_path=f"{PIPELINE_FILE}@acme/tracker",
        only_allow_merge_if_pipeline_succeeds=True,
        allow_merge_on_skipped_pipeline=False,
    )
    sb.variable(READ_TOKEN, sb.users["agents"]["read_token"], project=PROJECT, masked=True)
    sb.commit("main", {".gitlab-ci.yml": APP_CI}, project=PROJECT, message="Our CI [skip ci]")
    return Step(
        "The deployment",
        aside=(
            f"`pairgate {' '.join(argv[:3])} ...` rendered the tracker-held pipeline; it sits "
            f"on acme/tracker's main at {PIPELINE_FILE} with the gate's files in {GATE_DIR}/. "
            f"{PROJECT}'s CI/CD configuration file is {PIPELINE_FILE}@acme/tracker, Pipelines "
            f"must succeed is on, and {READ_TOKEN} is a masked CI/CD variable. The sandbox runs "
            "every pipeline with gitlab-ci-local."
        ),
    )


def _pipeline(sb: RunningSandbox, mr: int) -> Step:
    """The merge request's head pipeline, once the runner is done: its jobs, and the gate
    job's verdict from its log."""
    sb.wait_for_pipelines()
    head = sb.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr}")["head_pipeline"]
    jobs = sb.api("GET", f"/projects/acme%2Fapp/pipelines/{head['id']}/jobs")
    (bridge,) = sb.api("GET", f"/projects/acme%2Fapp/pipelines/{head['id']}/bridges")
    lines = [f"{j['name']}: {j['status']}" for j in sorted(jobs, key=lambda j: j["name"])]
    lines.append(f"{bridge['name']} (the project's own .gitlab-ci.yml): {bridge['status']}")
    gate = next(j for j in jobs if j["name"] == GATE_JOB)
    trace = sb.request("GET", f"/projects/acme%2Fapp/jobs/{gate['id']}/trace").text
    said = [line for line in trace.splitlines() if line.strip() and not line.startswith("$ ")]
    lines += [f"{GATE_JOB}'s log ends:", *(f"  | {line}" for line in said[-3:])]
    return Step(f"Merge request pipeline {head['id']}: {head['status']}", aside="\n".join(lines))


def _merge(sb: RunningSandbox, mr: int, sha: str) -> Step:
    path = f"/projects/acme%2Fapp/merge_requests/{mr}/merge"
    answer = sb.request("PUT", path, "agents", json={"sha": sha})
    body: Any = answer.json()
    said = (
        f"{body.get('state')}, merge commit {body.get('merge_commit_sha')}" if answer.ok else body
    )
    return Step(
        f"The merge button (PUT {path}): HTTP {answer.status_code}",
        aside=f"GitLab answers {json.dumps(said) if not answer.ok else said}.",
    )


def play(sb: RunningSandbox, config: Path, dispatch: Dispatch) -> Iterator[Step]:
    p = _Player(sb, config, dispatch)
    p.issue = int(sb.create_issue("Round prices half-up in the widget")["iid"])
    issue = p.issue
    yield _deploy(p, sb, config.parent)
    yield p.run(f"{LEAD} claims the issue", LEAD, "claim", issue, "--role", "lead")
    head = secrets.token_hex(20)  # a commit as git would name it, pushed to the sandbox
    files = {"widget.py": "def price(x):\n    return round(x + 0.0)\n"}
    sb.mirror_commit(head, "fix-rounding", files, project=PROJECT, push_options=["ci.skip"])
    mr = int(
        sb.create_mr(
            "fix-rounding",
            project=PROJECT,
            title="Round prices half-up",
            description=f"Related to acme/tracker#{issue}",
        )["iid"]
    )
    yield Step(
        "The merge request",
        aside=(
            f"{PROJECT}!{mr} (head {head[:12]}) cites acme/tracker#{issue}; opening it starts "
            "a merge request pipeline, which runs the tracker's gate jobs."
        ),
    )
    yield _pipeline(sb, mr)
    yield _merge(sb, mr, head)
    yield p.run(
        f"{LEAD} offers it to {REVIEW}, bound to the head commit", LEAD, "handoff", issue,
        "--to", REVIEW, "--role", "review", "--sha", head, "--reason", "Ready for review.",
    )  # fmt: skip
    yield p.run(f"{REVIEW} accepts the offer", REVIEW, "accept", issue)
    yield p.run(
        f"{REVIEW} approves that exact commit, which starts a new pipeline", REVIEW, "approve",
        issue, "--mr", mr, "--mr-project", PROJECT, "--sha", head, "--to", LEAD,
        "--reason", "Read the change: price(2.5) rounds to 3.",
    )  # fmt: skip
    yield _pipeline(sb, mr)
    yield _merge(sb, mr, head)


def ci_round(dispatch: Dispatch, found: str) -> Iterator[Step]:
    """Start a sandbox whose runner is the gitlab-ci-local ``found``, write its configuration,
    play the round, stop it."""
    with (
        tempfile.TemporaryDirectory(prefix="pairgate-demo-ci-") as tmp,
        running_sandbox(runner=found) as sb,
    ):
        config = Path(tmp) / "pairgate-config.json"
        values = pairgate_config(sb.server.app.world, env_prefix=PREFIX)
        config.write_text(json.dumps(values, indent=2), encoding="utf-8")
        yield from play(sb, config, dispatch)
