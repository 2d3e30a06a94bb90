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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def python_of(flat: Path) -> list[str]:
    """The doors' interpreter, before the door's script (argv[3]). The reader is compiled once
    for the module's cases, outside the flat directory (-B would compile the 10,000-line reader
    in every program of every case)."""
    return [sys.executable, "-X", f"pycache_prefix={flat.parent / 'pycache'}"]


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
    python = python_of(flat)
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


# Forks the flat doors for many cases from one interpreter that has loaded them already, so a
# case does not pay four Python starts, four imports of the reader and a compile of the
# 10,000-line ownership.py (a script's own code is never cached) before it decides anything.
# Each request (a JSON line: the doors' argv and environment) is answered with a JSON line of
# each door's exit code, stdout and stderr. A forked door runs as `python3 SCRIPT ARGS` in the
# flat directory would: the script's code as a fresh __main__ module, sys.argv, sys.path[0]
# and the environment its own, stdin empty, its exit as the interpreter's; the reader module
# is shared with the validators only, as their `import ownership` would load it. The doors'
# start itself is what PER_PROCESS and the test below it run as real programs.
PRELOADED = """import json, os, signal, sys, types
import ownership
answers_in, scripts = sys.argv[1], {}
for name in sys.argv[2:]:
    with open(name, encoding="utf-8") as source:
        scripts[name] = compile(source.read(), os.path.abspath(name), "exec", dont_inherit=True)
home = list(sys.path[1:])


def serve():
    for line in sys.stdin:
        runs, children = json.loads(line), {}
        for door, (argv, env) in runs.items():
            out, err = (os.path.join(answers_in, f"{door}.{end}") for end in ("out", "err"))
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                return argv, env, out, err
            children[door] = (pid, out, err)
        answers = {}
        for door, (pid, out, err) in children.items():
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
                answers[door] = [code, o.read(), e.read()]
            os.unlink(out)
            os.unlink(err)
        print(json.dumps(answers), flush=True)
    return None


door = serve()
if door is not None:
    argv, env, out, err = door
    signal.alarm(60)  # as the test's wait(timeout=60) of a program: a door that hangs fails
    for fd, path, mode in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_CREAT),
                           (2, err, os.O_WRONLY | os.O_CREAT)):
        os.dup2(os.open(path, mode, 0o600), fd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = list(argv)
    path = os.path.abspath(argv[0])
    sys.path[:] = [os.path.dirname(path), *home]
    if argv[0] == "ownership.py":
        del sys.modules["ownership"]  # the script is __main__; nothing imported it
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    del door, serve
    exec(scripts[argv[0]], main.__dict__)
"""


class Preloaded:
    """One interpreter with the flat doors loaded, forking them case by case (PRELOADED)."""

    def __init__(self, flat: Path, python: list[str], scripts: list[str], answers: Path) -> None:
        self.process = subprocess.Popen(
            [*python, "-c", PRELOADED, str(answers), *scripts],
            cwd=flat,
            env=clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.answers: dict[str, Any] | None = None
        self.started = False

    def start(self, runs: dict[str, tuple[list[str], dict[str, str]]]) -> None:
        """Fork each door of ``runs`` (name: argv from the script on, environment)."""
        assert self.process.stdin is not None
        if self.started:
            self._answers()  # read, if a test failed before it read its doors' answers
        self.process.stdin.write(json.dumps(runs) + "\n")
        self.process.stdin.flush()
        self.answers, self.started = None, True

    def answer(self, door: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of ``door`` of the runs started last."""
        code, out, err = self._answers()[door]
        return int(code), str(out), str(err)

    def _answers(self) -> dict[str, Any]:
        if self.answers is None:
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            assert line, f"the preloaded doors ended ({self.process.poll()})"
            self.answers = dict(json.loads(line))
        return self.answers

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def preloaded(flat: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Preloaded]:
    scripts = [f"{name}.py" for name in VALIDATORS] + ["ownership.py"]
    doors = Preloaded(flat, python_of(flat), scripts, tmp_path_factory.mktemp("answers"))
    yield doors
    doors.close()


class Forked:
    """A door forked from ``Preloaded``, read as the test reads a Popen's."""

    def __init__(self, preloaded: Preloaded, door: str) -> None:
        self.preloaded, self.door = preloaded, door

    def wait(self, timeout: float) -> int:
        return self.preloaded.answer(self.door)[0]

    def communicate(self) -> tuple[str, str]:
        return self.preloaded.answer(self.door)[1:]


def flat_runs(
    flat: Path,
    sandbox: RunningSandbox,
    project: str,
    iid: int,
    preloaded: Preloaded | None = None,
) -> dict[str, Any]:
    """The flat doors, started: as programs of their own, or forked from ``preloaded``."""
    commands = flat_commands(flat, sandbox, project, iid)
    if preloaded is not None:
        preloaded.start({name: (argv[3:], env) for name, (argv, env) in commands.items()})
        return {name: Forked(preloaded, name) for name in commands}
    return {
        name: subprocess.Popen(
            argv, cwd=flat, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, (argv, env) in commands.items()
    }


# Every door's own start, case by case: the first case of each combination of verdicts runs
# the flat doors as programs of their own, as a job or an operator starts them.
PER_PROCESS = {
    next(c.name for c in CASES if (c.merge_check, c.record, c.approval) == verdicts)
    for verdicts in {(c.merge_check, c.record, c.approval) for c in CASES}
}


def test_every_combination_of_verdicts_runs_the_doors_as_programs() -> None:
    assert len(PER_PROCESS) >= 5
    assert {"approved-at-head", "never-approved", "missing-merge-request"} <= PER_PROCESS


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_door_gives_the_same_verdict(
    case: GateCase, sandbox: RunningSandbox, flat: Path, preloaded: Preloaded
) -> None:
    project, iid = case.build(World(sandbox))
    forked = None if case.name in PER_PROCESS else preloaded
    processes = flat_runs(flat, sandbox, project, iid, forked)  # they run while the CLI does
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
