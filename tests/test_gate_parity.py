"""One verdict, five doors: for every state in gate_world.CASES, ``pairgate merge-check``, the
three validators and ``python3 ownership.py merge-check`` (the last four copied flat into an
empty directory, no package importable) give the same verdict against the sandbox. The
validators run as a gate job of a merge request pipeline does: their merge request is what
their job token proves (GET /job)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.conftest import FIXTURE_CONFIG, FIXTURES, ROOT, clean_env, run_cli
from tests.gate_world import CASES, GATE_JOBS, GateCase, World, ci_variables

pytestmark = pytest.mark.slow

VALIDATORS = GATE_JOBS


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The deployed shape: ownership.py, the validators, the configuration and the roster in
    one directory, nothing else."""
    directory = tmp_path_factory.mktemp("flat")
    shutil.copy(ROOT / "pairgate" / "ownership.py", directory)
    for name in VALIDATORS:
        shutil.copy(ROOT / "validators" / f"{name}.py", directory)
    shutil.copy(FIXTURE_CONFIG, directory / "pairgate-config.json")
    shutil.copy(FIXTURES / "automation_mr_families.py", directory)
    return directory


def flat_runs(
    flat: Path, sandbox: RunningSandbox, project: str, iid: int
) -> dict[str, subprocess.Popen[str]]:
    read_token = sandbox.info["users"]["agents"]["read_token"]
    ci = clean_env(
        CI="true",
        GITLAB_CI="true",
        PAIRGATE_CONFIG=str(flat / "pairgate-config.json"),
        GATE_READ_TOKEN=read_token,
        **ci_variables(sandbox, (project, iid)),
    )
    # Compiled once for the module's cases, outside the flat directory (-B would compile the
    # 3,900-line reader in every program of every case).
    python = [sys.executable, "-X", f"pycache_prefix={flat.parent / 'pycache'}"]
    runs = {
        name: [*python, f"{name}.py", "--read-token-variable", "GATE_READ_TOKEN"]
        for name in VALIDATORS
    }
    runs["ownership.py"] = [
        *python,
        "ownership.py",
        "merge-check",
        "--mr",
        str(iid),
        "--mr-project",
        project,
        "--json",
    ]
    standalone = clean_env(
        PAIRGATE_TEST_GITLAB_URL=sandbox.url, PAIRGATE_TEST_TASK_API_TOKEN=read_token
    )
    return {
        name: subprocess.Popen(
            argv,
            cwd=flat,
            env=standalone if name == "ownership.py" else ci,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv in runs.items()
    }


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_door_gives_the_same_verdict(
    case: GateCase, sandbox: RunningSandbox, flat: Path
) -> None:
    project, iid = case.build(World(sandbox))
    processes = flat_runs(flat, sandbox, project, iid)  # they run while the CLI does
    cli = run_cli(
        ["merge-check", "--mr", str(iid), "--mr-project", project, "--json"],
        {
            "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
            "PAIRGATE_TEST_GITLAB_URL": sandbox.url,
            "PAIRGATE_TEST_TASK_API_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        },
    )
    results = {name: (p.wait(timeout=60), *p.communicate()) for name, p in processes.items()}
    got = {name: code for name, (code, _, _) in results.items()}
    got["merge-check"] = cli.code
    expected = {
        "merge-check": case.merge_check,
        "ownership.py": case.merge_check,
        VALIDATORS[0]: case.record,
        VALIDATORS[1]: case.approval,
        VALIDATORS[2]: case.merge_check,
    }
    assert got == expected, {name: out + err for name, (_, out, err) in results.items()} | {
        "merge-check": cli.out + cli.err
    }
    if case.merge_check != 2:
        assert json.loads(cli.out) == json.loads(results["ownership.py"][1])
    if case.verdict is not None:
        assert json.loads(cli.out)["verdict"] == case.verdict, cli.out
    for name in VALIDATORS:
        code, out, err = results[name]
        if code == 1:
            assert out.rstrip().endswith("Background: docs/agent-handoff.md.")
        if code == 2:
            assert "could not decide; this job fails closed" in err
