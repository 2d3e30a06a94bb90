"""docs/sandbox.md's whole deployment, run exactly as written: from an empty sandbox with its
runner, init, the hooks and agents, the published pipeline, doctor --fix and doctor (exit 0);
then an unapproved merge request refused by the sandbox's own merge API because the gate job
failed on the real runner, the watcher and the inbox, an offer backed by evidence, the
approval, the merge, and the audit. One runner world; the blocks come from the document.

With PAIRGATE_DOC_ROUND_WITH (an installed pairgate, as scripts/test gives the round) the
evidence step needs pytest in that installation's Python, as the document says; scripts/test
runs only the round that way."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest
import requests

from tests.kit.gcl import gitlab_ci_local
from tests.kit.names import ROOT
from tests.kit.run import clean_env
from tests.sandbox.test_sandbox_round import DOC, INSTALLED, block, free_port, play, serving

pytestmark = [pytest.mark.slow]
DOC_PORT = "8766"


def test_the_documented_deployment_runs(tmp_path: Path) -> None:
    found = gitlab_ci_local()
    port = free_port()  # the doc's fixed port may be taken on a shared machine
    serve, play_block = (
        block(m).replace(DOC_PORT, port) for m in ("deploy-sandbox", "deploy-play")
    )
    # The jobs run in the runner's shell: its python3 is this one (requests, jsonschema, pyyaml,
    # pytest), and gitlab-ci-local is found on PATH as the document's "Running it" says.
    path = f"{Path(found).parent}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    if INSTALLED:
        program = shlex.quote(INSTALLED)
        env = clean_env(HOME=str(tmp_path), PATH=path)
    else:
        # Without -B (as tests/kit/run.py's programs): the first of the round's two dozen
        # starts compiles the package into __pycache__, and the rest load it.
        program = f"{shlex.quote(sys.executable)} -m pairgate"
        env = clean_env(PYTHONPATH=str(ROOT), HOME=str(tmp_path), PATH=path)
    with serving(program, serve, env, stops_within=30) as line:
        assert line["url"] == f"http://127.0.0.1:{port}"
        assert line["example"]["issue"] == {"project": "acme/tracker", "id": 502, "iid": 2}
        played = play(program, play_block, env, timeout=600)
        out = played.stdout
        assert played.returncode == 0, out + played.stderr
        # The deployment: init wrote it, --publish put the gate on the tracker, --fix set the
        # projects, and doctor passes every check with the exit code.
        assert "wrote a deployment for acme/tracker into deploy:" in out
        assert "published: commit" in out
        assert "set each gated project's CI/CD configuration file" in out
        assert "changed: acme/app: ci_config_path: null -> 'gate/pipeline.yml@acme/tracker'" in out
        assert "acme/app: CI/CD variable PAIRGATE_TRACKER_READ_TOKEN added, masked" in out
        assert re.search(
            r"^doctor: \d+ checks .*: (\d+) pass, 0 hole\(s\), 0 cannot read$", out, re.M
        )
        # The summary the document quotes is the one doctor printed (its read-token-variable
        # check included: the block adds the variable to every gated project).
        quoted = re.search(r"\(`(doctor: \d+ checks over [^`]+)`\)", DOC.read_text())
        assert quoted and re.search(rf"^{re.escape(quoted.group(1))}$", out, re.M), out
        assert (
            out.count("pass         read-token-variable") == 2 * 3
        )  # --fix's checks, then doctor's
        assert "doctor passes (exit 0)" in out
        assert "HOLE" not in out
        # The unapproved merge request: the merge API refuses it, its pipeline failed on the
        # gate job the runner ran.
        refused = re.search(r"^refused: HTTP 405 .*head pipeline (\d+): failed\)$", out, re.M)
        assert refused, out
        assert "the sandbox refuses the merge (exit 1)" in out
        pipeline = refused.group(1)
        api = f"{line['api_url']}/projects/acme%2Fapp"
        read = {"PRIVATE-TOKEN": line["users"]["maintainer"]["read_token"]}
        jobs = requests.get(f"{api}/pipelines/{pipeline}/jobs", headers=read, timeout=5).json()
        statuses = {j["name"]: j["status"] for j in jobs}
        assert statuses["validate-mr-merge-check"] == "failed", statuses
        gate = next(j for j in jobs if j["name"] == "validate-mr-merge-check")
        trace = requests.get(f"{api}/jobs/{gate['id']}/trace", headers=read, timeout=5).text
        assert "no approval in acme/tracker#2 names acme/app!1" in trace, trace
        # The offer carried its evidence; the watcher gave the reviewer a batch.
        assert "Mutation evidence: 1/1 killed" in out
        assert re.search(r"pairgate watch: [1-9]\d* new event\(s\), [1-9]\d* new batch", out), out
        assert "pairgate watch: batch b1 for acme-review: 1 event on acme/tracker#2" in out
        assert re.search(r"^\d+\. pipeline \d+ failed$", out, re.M), out  # b2, on acme/app!1
        assert 'failed jobs: "validate-mr-merge-check"' in out  # GitLab's name, quoted
        assert "acknowledged b1 (acme/tracker#2, 1 event(s)) as acme-review" in out
        assert "acknowledged b2 (acme/app!1, 2 event(s)) as acme-review" in out
        # The approval started a green pipeline, and the merge went through; the audit finds
        # the merge gated and approved at its head.
        assert re.search(r"^acme/app!1 may merge: acme-review approved its head", out, re.M)
        assert re.search(r"^merged [0-9a-f]{40} \(head pipeline \d+: success\)$", out, re.M), out
        assert re.search(
            r"^audit: 1 merge\(s\) .*1 approved at the head .*; 0 finding\(s\)$", out, re.M
        )
        # The publish was a push to the tracker's main without a merge request; acme/app has none.
        assert re.search(
            r"^FINDING acme/tracker main [0-9a-f]{12} \[pushed-without-mr\]$", out, re.M
        )
        assert re.search(r"was pushed to main by maintainer at \S+; no merged merge request", out)
        assert "audit of acme/tracker: exit 1" in out
        assert "audit: 0 commit(s) pushed to a default branch without a merge request" in out
        unserved = requests.get(line["sandbox_api"] + "/unserved", timeout=5).json()
        assert unserved == []  # the deployment used only routes the sandbox serves
