"""One verdict, five doors: for every state in gate_cases.CASES, ``pairgate merge-check``, the
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
from tests.kit.gate_cases import CASES, GATE_JOBS, GateCase, ci_variables
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, ROOT
from tests.kit.run import clean_env, run_cli
from tests.kit.world import World

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


def flat_commands(
    flat: Path, sandbox: RunningSandbox, project: str, iid: int
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each flat door's command line and environment, as a gate job (the validators) or an
    operator (``ownership.py merge-check``) runs it for ``project!iid``."""
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
    commands = {
        name: ([*python, f"{name}.py", "--read-token-variable", "GATE_READ_TOKEN"], ci)
        for name in VALIDATORS
    }
    standalone = clean_env(
        PAIRGATE_TEST_GITLAB_URL=sandbox.url, PAIRGATE_TEST_TASK_API_TOKEN=read_token
    )
    merge_check = ["ownership.py", "merge-check", "--mr", str(iid), "--mr-project", project]
    commands["ownership.py"] = ([*python, *merge_check, "--json"], standalone)
    return commands


def flat_runs(
    flat: Path, sandbox: RunningSandbox, project: str, iid: int
) -> dict[str, subprocess.Popen[str]]:
    return {
        name: subprocess.Popen(
            argv, cwd=flat, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, (argv, env) in flat_commands(flat, sandbox, project, iid).items()
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


# Runs a flat program as python3 does, then prints its exit code and the modules it imported.
IMPORTS_DRIVER = """import json, runpy, sys
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
    code = 0
except SystemExit as exit:
    code = exit.code
print(code)
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_the_flat_doors_decide_an_allowed_merge_without_requests(
    sandbox: RunningSandbox, flat: Path
) -> None:
    """Importing requests and urllib3 cost each gate job a third of its time: the validators
    and ``ownership.py merge-check`` make each read's first attempt through http.client
    (gitlab_once.first_attempt_transport; GET /job too), and leave to requests only what that
    does not answer as requests would."""
    case = next(c for c in CASES if c.name == "approved-at-head")
    project, iid = case.build(World(sandbox))
    for name, (argv, env) in flat_commands(flat, sandbox, project, iid).items():
        python, script = argv[:3], argv[3:]
        done = subprocess.run(
            [*python, "-c", IMPORTS_DRIVER, *script],
            cwd=flat,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        code, imported = done.stdout.splitlines()[-2:]
        assert code == "0", (name, done.stdout, done.stderr)
        assert {"requests", "urllib3"} & set(json.loads(imported)) == set(), name
