"""The mr-evidence component, run by gitlab-ci-local against the sandbox: its job,
rerun-mr-evidence, re-runs the pending offer's recorded mutants at the merge request's head and
publishes the result (the job's artifact and one log line bound to its job and the SHA); given
back to the sandbox as the job's log, status, approve and evidence rerun show it, and the
approval records it.

The merge request's repository is a real git repository holding a real package (the job checks
it out, as a runner does); the sandbox's merge request is given its commit (``mirror_commit``).
The jobs run in the local shell, so this machine's python3 (with pairgate) stands for the job
image, and its bubblewrap for the image's. The whole round on the sandbox's own runner, the job
deployed in the tracker-held pipeline: tests/test_evidence_ci_door.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pairgate.evidence.ci_result import CI_JOB, parse_trace
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import write_evidence
from pairgate.sandbox.testing import RunningSandbox
from tests.kit.evidence_repos import CALC, PYTEST, TESTS
from tests.kit.gate_cases import ci_variables
from tests.kit.gcl import (
    COMMON_INPUTS,
    GATE,
    component_files,
    component_include,
    dump,
    repository,
    run,
)
from tests.kit.gcl import publish as publish_gate
from tests.kit.gitrepos import GIT_ENV
from tests.kit.world import Round

pytestmark = pytest.mark.slow

INPUTS = {
    k: COMMON_INPUTS[k]
    for k in ("image", "runner-tags", "tracker-project", "env-prefix", "read-token-variable")
}
INPUTS["config-path"] = f"{GATE}/pairgate-config.json"
FILES = {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS}


def mutant(repo: Path, name: str, old: str, new: str, into: Path) -> Path:
    (repo / "calc" / "__init__.py").write_text(CALC.replace(old, new))
    diff = subprocess.run(
        ["git", "-C", str(repo), "diff", "--no-color"],
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (repo / "calc" / "__init__.py").write_text(CALC)
    path = into / name
    path.write_text(diff)
    return path


class Offered:
    """A merge request whose head is a real package, offered to review with evidence."""

    def __init__(self, sandbox: RunningSandbox, tmp: Path) -> None:
        publish_gate(sandbox)
        ci = {"include": [component_include("mr-evidence", INPUTS)]}
        files: dict[str, str | bytes] = {
            **component_files("mr-evidence"),
            ".gitlab-ci.yml": dump(ci),
            **FILES,
        }
        self.repo = repository(tmp / "mr", sandbox, files)
        self.sha = _head(self.repo)
        self.round = Round(sandbox)
        sandbox.mirror_commit(self.sha, self.round.branch, {**files})
        assert self.round.head == self.sha
        self.round.claim()
        # The project's merge request pipelines run the job (the tracker-held pipeline's).
        sandbox.set_ci(self.round.project, [{"name": CI_JOB}])
        patches = tmp / "patches"
        patches.mkdir()
        self.mutants = [
            mutant(self.repo, "add.patch", "a + b", "a - b", patches),
            mutant(self.repo, "clamp.patch", "max(lo, min(x, hi))", "min(x, hi)", patches),
        ]
        doc = collect(
            Request(
                self.repo,
                PYTEST,
                tuple(Patch(p.name, p.read_text()) for p in self.mutants),
                jobs=2,
            )
        )
        self.evidence = tmp / "evidence.json"
        write_evidence(doc, self.evidence)
        r = self.round
        offered = r.run(
            "acme-lead",
            *("handoff", r.issue, "--to", "acme-review", "--role", "review", "--sha", self.sha),
            *("--mr", r.mr, "--mr-project", r.project, "--evidence", self.evidence),
        )
        assert offered.code == 0, offered.err
        self.handoff_out = offered.out
        self.sandbox = sandbox

    def started(self) -> tuple[int, dict[str, str]]:
        """The job of the pipeline the handoff started, running as its runner runs it, and
        what GitLab gives it (tests/kit/gate_cases.ci_variables, for that pipeline)."""
        r, sandbox = self.round, self.sandbox
        (pipeline, *_) = sandbox.api("GET", f"/projects/2/merge_requests/{r.mr}/pipelines")
        (job,) = sandbox.api("GET", f"/projects/2/pipelines/{pipeline['id']}/jobs")
        token = sandbox.set_job(job["id"], "running")["token"]
        return int(job["id"]), {
            "CI_SERVER_URL": sandbox.url,
            "CI_API_V4_URL": sandbox.api_url,
            "CI_JOB_TOKEN": str(token),
            "CI_PIPELINE_ID": str(pipeline["id"]),
            "CI_PROJECT_ID": "2",
            "CI_MERGE_REQUEST_PROJECT_ID": "2",
            "CI_MERGE_REQUEST_PROJECT_PATH": r.project,
            "CI_MERGE_REQUEST_IID": str(r.mr),
            "CI_COMMIT_SHA": self.sha,
        }


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def offered(sandbox: RunningSandbox, tmp_path: Path) -> Offered:
    return Offered(sandbox, tmp_path)


def test_the_job_reruns_the_offers_mutants_and_every_surface_shows_it(
    offered: Offered, sandbox: RunningSandbox
) -> None:
    # The offer started a merge request pipeline, whose job has not run yet.
    assert "started merge request pipeline " in offered.handoff_out
    r = offered.round
    assert "CI re-run: job " in r.run(None, "status", r.issue).out
    assert " pending" in r.run(None, "status", r.issue).out
    job, ci = offered.started()
    result = run(offered.repo, sandbox, ci, jobs=(CI_JOB,))
    assert result.job(CI_JOB) == "PASS", result.output
    said = result.lines(CI_JOB)
    line = parse_trace(said)
    assert line is not None, said
    assert (line["job"], line["pipeline"], line["sha"]) == (
        job,
        int(ci["CI_PIPELINE_ID"]),
        offered.sha,
    )
    assert (line["killed"], line["total"], line["status"], line["weak"]) == (2, 2, "pass", False)
    assert line["offer_note"] == offered.round.notes()[-1]["id"]
    assert f"{CI_JOB}: mutant 1: killed" in said and f"{CI_JOB}: mutant 2: killed" in said
    # the artifact holds the result and the whole evidence document of the run
    artifact = json.loads((offered.repo / "pairgate-evidence-ci.json").read_text())
    assert artifact["result"] == line and artifact["evidence"]["sha"] == offered.sha

    # The sandbox has no runner here: give it the job's log as a runner would.
    sandbox.set_job(job, "success", trace=said)
    words = f"CI re-run: job {job}, 2/2 killed"
    assert words in r.run(None, "status", r.issue).out
    status = json.loads(r.run(None, "status", r.issue, "--json").out)
    assert status["offer"]["ci_rerun"]["state"] == "done"
    assert r.run("acme-review", "accept", r.issue).code == 0
    reran = r.run(
        "acme-review",
        *("evidence", "rerun", r.issue, "--mutant-index", 1, "--mutant", offered.mutants[1]),
        *("--test", PYTEST, "--repo", offered.repo),
    )
    assert reran.code == 0, reran.err
    assert f"{words} (the offer's mutants, in CI)" in reran.out
    approved = r.run(
        "acme-review",
        *("approve", r.issue, "--mr", r.mr, "--mr-project", r.project, "--sha", offered.sha),
        *("--to", "acme-lead"),
    )
    assert approved.code == 0, approved.err
    assert f"{words}." in approved.out
    note = r.notes()[-1]
    assert f"{words}: the offer's mutants re-run at the merge request's head" in note["body"]
    record = json.loads(re.search(r"mochi-task:approval (\{.*\}) -->", note["body"])[1])
    assert record["ci_rerun"]["job"] == job and record["ci_rerun"]["killed"] == 2
    assert words in r.run(None, "status", r.issue).out  # the approval's line shows it too


def _unoffered_round(sandbox: RunningSandbox, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The gate published, a merge request whose repository includes the component, and no
    offer at all: the repository and the job's CI variables."""
    publish_gate(sandbox)
    files: dict[str, str | bytes] = {
        **component_files("mr-evidence"),
        ".gitlab-ci.yml": dump({"include": [component_include("mr-evidence", INPUTS)]}),
        **FILES,
    }
    repo = repository(tmp_path / "mr", sandbox, files)
    r = Round(sandbox)
    sandbox.mirror_commit(_head(repo), r.branch, {**files})
    return repo, ci_variables(sandbox, (r.project, r.mr), jobs=(CI_JOB,))


def test_with_no_offer_carrying_evidence_there_is_nothing_to_rerun(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    repo, ci = _unoffered_round(sandbox, tmp_path)
    result = run(repo, sandbox, ci)
    assert result.job(CI_JOB) == "PASS", result.output
    assert "nothing to re-run: no offer of it at its head carries mutation evidence" in (
        result.lines(CI_JOB)
    )
    assert parse_trace(result.lines(CI_JOB)) is None


def test_an_image_without_pairgate_is_a_clear_failure(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    """The image's python3 has requests, jsonschema and pyyaml (this environment's
    site-packages), but no pairgate: a virtual environment of its own that sees them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "image"], check=True)
    (site,) = (tmp_path / "image" / "lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    repo, ci = _unoffered_round(sandbox, tmp_path)
    result = run(repo, sandbox, ci, python=tmp_path / "image" / "bin")
    assert result.job(CI_JOB) == "WARN", result.output  # failed (exit 2), allowed to
    assert (
        "mr-evidence: the job image's python3 has no pairgate: install the deployment's "
        "pairgate in the image (the component's image input)"
    ) in result.lines(CI_JOB)
    assert "Traceback" not in result.output
