"""The CI re-run on the sandbox's runner: the tracker-held pipeline deployed with
``deploy-pipeline --evidence-image``, a real offer with evidence, and the pipeline the offer
starts run whole by the runner (gitlab-ci-local), its ``rerun-mr-evidence`` job among the gate
jobs. Nothing plays the runner here: the job's log and status are what the runner gave back.

The merge request's head is a real package's commit, mirrored into the sandbox with the
repository it comes from (``git_dir``), so the runner checks out that very commit, as a runner
fetches the pipeline's commit from GitLab, and the job's evidence runs at CI_COMMIT_SHA.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.ci_result import CI_JOB, parse_trace
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import write_evidence
from pairgate.sandbox.testing import RunningSandbox, running_sandbox
from tests.kit.evidence_repos import PYTEST, make_package
from tests.kit.gcl import TRACKER_FILES, gitlab_ci_local
from tests.kit.names import APP, FIXTURE_CONFIG, LEAD, REVIEW, mr_path, project_path
from tests.kit.run import agent_env, ok, run_cli

pytestmark = pytest.mark.slow

PIPELINE_FILE = "ci/pairgate-pipeline.yml"
OWN_CI = "unit:\n  script:\n    - echo the project tests pass\n"


@pytest.fixture(scope="module")
def runner_sandbox() -> Iterator[RunningSandbox]:
    with running_sandbox(runner=gitlab_ci_local()) as sandbox:
        yield sandbox


def deploy(sandbox: RunningSandbox, tmp: Path) -> None:
    """The README's deployment, with the mr-evidence job (this machine's python3, with
    pairgate, and its bubblewrap stand for the evidence image)."""
    rendered = tmp / "pipeline.yml"
    flags = ["--image", "python:3.11-slim", "--runner-tag", "pairgate", "--gate-dir", "gate"]
    flags += ["--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sandbox.url]
    flags += ["--evidence-image", "python:3.11-slim"]
    result = run_cli(
        ["deploy-pipeline", "--target", str(rendered), *flags],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 0, result.err
    files: dict[str, str | None] = {
        path: source.read_text(encoding="utf-8") for path, source in TRACKER_FILES.items()
    }
    files[PIPELINE_FILE] = rendered.read_text(encoding="utf-8")
    sandbox.commit("main", files, project="acme/tracker", message="Deploy the gate")
    sandbox.settings(ci_config_path=f"{PIPELINE_FILE}@acme/tracker")
    sandbox.variable("GATE_READ_TOKEN", sandbox.users["agents"]["read_token"], masked=True)
    sandbox.commit("main", {".gitlab-ci.yml": OWN_CI}, message="Our own CI [skip ci]")


def verb(issue: int, env: dict[str, str], *argv: Any) -> str:
    return ok([str(argv[0]), str(issue), *(str(a) for a in argv[1:])], env).out


def test_the_runner_reruns_a_real_offers_mutants_and_the_approval_records_it(
    runner_sandbox: RunningSandbox, tmp_path: Path
) -> None:
    sandbox = runner_sandbox
    sandbox.reset()
    deploy(sandbox, tmp_path)
    lead, review = agent_env(sandbox, LEAD), agent_env(sandbox, REVIEW)

    # The lead's work: a real package, its commit the merge request's head.
    pkg = make_package(tmp_path)
    sha = pkg.sha()
    issue = int(sandbox.create_issue("Clamp and add")["iid"])
    verb(issue, lead, "claim", "--role", "lead")
    branch = f"issue-{issue}"
    files = {
        p: (pkg.repo / p).read_text(encoding="utf-8")
        for p in ("calc/__init__.py", "tests/test_calc.py")
    }
    sandbox.mirror_commit(sha, branch, files, push_options=["ci.skip"], git_dir=pkg.repo)
    description = f"Related to acme/tracker#{issue}"
    mr = int(sandbox.create_mr(branch, title="Clamp", description=description)["iid"])
    sandbox.wait_for_pipelines()

    # Its evidence, collected as the lead collects it, and the offer that carries it.
    mutants = [
        pkg.calc("add.patch", "a + b", "a - b"),
        pkg.calc("clamp.patch", "max(lo, min(x, hi))", "min(x, hi)"),
    ]
    patches = tuple(Patch(m.name, m.read_text()) for m in mutants)
    evidence = tmp_path / "evidence.json"
    write_evidence(collect(Request(pkg.repo, PYTEST, patches, jobs=2)), evidence)
    mr_flags = ["--mr", mr, "--mr-project", APP]
    offered = verb(issue, lead, "handoff", "--to", REVIEW, "--role", "review", "--sha", sha,
                   *mr_flags, "--evidence", evidence)  # fmt: skip
    assert "started merge request pipeline " in offered

    # The runner runs the pipeline the offer started: the job re-ran both mutants at the head.
    sandbox.wait_for_pipelines()
    head = sandbox.api("GET", mr_path(APP, mr))["head_pipeline"]
    assert head["sha"] == sha, head
    jobs = sandbox.api("GET", f"{project_path()}/pipelines/{head['id']}/jobs")
    job = next(j for j in jobs if j["name"] == CI_JOB)
    trace = sandbox.request("GET", f"{project_path()}/jobs/{job['id']}/trace").text
    assert job["status"] == "success", trace
    line = parse_trace(trace)
    assert line is not None, trace
    assert (line["job"], line["pipeline"], line["sha"]) == (job["id"], head["id"], sha)
    assert (line["killed"], line["total"], line["status"], line["weak"]) == (2, 2, "pass", False)
    assert line["isolation"] == "bubblewrap", trace

    # Every surface shows it, and the approval records it.
    words = f"CI re-run: job {job['id']}, 2/2 killed"
    assert words in verb(issue, lead, "status")
    verb(issue, review, "accept")
    approved = verb(issue, review, "approve", *mr_flags, "--sha", sha, "--to", LEAD)
    assert f"{words}." in approved
    notes = sandbox.api("GET", f"/projects/1/issues/{issue}/notes?sort=asc&per_page=100")
    body = notes[-1]["body"]
    record = json.loads(re.search(r"mochi-task:approval (\{.*\}) -->", body)[1])
    assert (record["ci_rerun"]["job"], record["ci_rerun"]["killed"]) == (job["id"], 2)
    assert words in verb(issue, lead, "status")
