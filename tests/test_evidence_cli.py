"""``evidence run`` on the command line: its parser, its handler (called directly, as main.py
will), its output, its exit codes and its refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pairgate.commands.evidence_run import run_evidence
from pairgate.evidence.schema import check_evidence, read_evidence
from pairgate.parser import parse as parse_command_line
from pairgate.standalone.config import Config, load_config
from pairgate.standalone.errors import Context, UsageError, report
from tests.kit.evidence_repos import PLAIN_PYTEST, PYTEST, Package, make_package
from tests.kit.gitrepos import commit
from tests.kit.names import FIXTURE_CONFIG


@pytest.fixture
def config() -> Config:
    """The suite's configuration, with a cli_command of its own, so a refusal that spells
    "pairgate" by hand shows."""
    loaded = load_config({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    return loaded._replace(cli_command="acme-gate")


@pytest.fixture
def pkg(tmp_path: Path) -> Package:
    return make_package(tmp_path)


def parse(argv: list[str]) -> dict[str, Any]:
    """The arguments as main.py hands them to the handler."""
    _, row, flags = parse_command_line(argv)
    assert row is not None
    assert (row.name, row.reads_config, row.writes) == ("run", True, False)
    assert row.handler == "pairgate.commands.evidence_run:run_evidence"
    return flags


STATE: list[Path] = []


@pytest.fixture(autouse=True)
def state(tmp_path: Path) -> Path:
    """Where the runs' documents are kept (XDG_STATE_HOME), for ``run`` to name."""
    STATE[:] = [tmp_path / "state"]
    return STATE[0]


def run(config: Config, *words: str) -> tuple[int, str, str]:
    """``evidence run WORDS...``: parse, call the handler, and translate an exception the way
    main.py does."""
    argv = ["evidence", "run", *words]
    out, err = io.StringIO(), io.StringIO()
    env = {"XDG_STATE_HOME": str(STATE[0])}
    ctx = Context(env=env, now=lambda: 1767225600.0, stdout=out, stderr=err)
    try:
        code = int(run_evidence(ctx=ctx, config=config, **parse(argv)))
    except Exception as exc:
        code = int(report(exc, ctx))
    return code, out.getvalue(), err.getvalue()


def test_every_flag_reaches_the_handler() -> None:
    kwargs = parse(
        [
            *("evidence", "run", "--test", "pytest -q", "--mutant", "a.patch"),
            *("--mutant", "b.patch", "--repo", "/r", "--sha", "abc", "--base", "def"),
            *("--timeout", "9.5", "--jobs", "2", "--network", "--out", "e.json", "--json"),
            *("--pids", "32", "--may-change", "build/", "--may-change", "*.log", "--logs", "L"),
        ]
    )
    assert kwargs == {
        "test": "pytest -q",
        "mutants": [Path("a.patch"), Path("b.patch")],
        "repo": Path("/r"),
        "sha": "abc",
        "base": "def",
        "timeout": 9.5,
        "jobs": 2,
        "network": True,
        "pids": 32,
        "may_change": ["build/", "*.log"],
        "logs": Path("L"),
        "out": Path("e.json"),
        "json": True,
    }
    defaults = parse(["evidence", "run", "--test", "t", "--mutant", "m"])
    assert (defaults["repo"], defaults["sha"], defaults["timeout"], defaults["jobs"]) == (
        Path("."),
        None,
        300.0,
        1,
    )
    assert (defaults["pids"], defaults["may_change"], defaults["logs"]) == (256, [], None)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["evidence"], "required"),
        (["evidence", "run", "--mutant", "m"], "--test"),
        (["evidence", "run", "--test", "t"], "--mutant"),
        (["evidence", "run", "--test", "t", "--mutant", "m", "--jobs", "two"], "--jobs"),
    ],
)
def test_a_malformed_command_line_is_a_usage_error(argv: list[str], said: str) -> None:
    with pytest.raises(UsageError, match=said) as raised:
        parse(argv)
    assert raised.value.exit_code == 2


def test_all_killed_is_exit_0_with_a_short_table(
    pkg: Package, config: Config, state: Path, tmp_path: Path
) -> None:
    # The command as a user writes it, plugins and all (the other tests turn auto-loading off).
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    argv = ["--test", PLAIN_PYTEST, "--mutant", str(kill), "--repo", str(pkg.repo)]
    code, out, err = run(config, *argv, "--logs", str(tmp_path / "logs"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"Mutation evidence at {pkg.sha()} of {pkg.repo}: pass"
    assert lines[1] == f"Test: {PLAIN_PYTEST} (timeout 300 s, runner pytest)"
    assert lines[2].startswith("Isolation: ")
    assert lines[3].startswith("Copies: on ")
    assert lines[4].startswith("Baseline: passed in ")
    assert lines[5].split() == ["#", "MUTANT", "FILES", "VERDICT", "WHY"]
    assert lines[6].split()[:4] == ["1", "kill.patch", "calc/__init__.py", "killed"]
    assert (
        lines[-3]
        == "Files that judge the change: not compared (none: no --base, and no origin/main)"
    )
    logs = Path(lines[-2].removeprefix("Logs: "))
    assert sorted(p.name for p in logs.iterdir()) == ["baseline.log", "mutant-1.log"]
    assert "2 passed" in (logs / "baseline.log").read_text()
    assert lines[-1].startswith("Digest: sha256:") and "self-reported" in lines[-1]
    # The document is kept by repository and SHA, and evidence report prints it back.
    (kept,) = state.glob(f"pairgate/evidence/*/{pkg.sha()}/*-evidence-*.json")
    assert read_evidence(kept)["mutants"][0]["verdict"] == "killed"


def test_json_and_out_carry_the_same_checked_document(
    pkg: Package, config: Config, tmp_path: Path
) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    target = tmp_path / "evidence.json"
    code, out, _ = run(
        config,
        "--test",
        PYTEST,
        "--mutant",
        str(kill),
        "--repo",
        str(pkg.repo),
        "--out",
        str(target),
        "--json",
        "--jobs",
        "2",
    )
    printed = json.loads(out)
    assert code == 0 and check_evidence(printed) is None
    assert read_evidence(target) == printed
    assert printed["created_at"] == "2026-01-01T00:00:00Z"  # the injected clock


def test_a_survivor_is_refused_with_the_command_to_run_again(pkg: Package, config: Config) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    survive = pkg.calc("survive.patch", "max(lo, min(x, hi))", "min(hi, max(x, lo))")
    code, out, err = run(
        config,
        *("--test", PYTEST, "--repo", str(pkg.repo), "--mutant", str(kill)),
        *("--mutant", str(survive), "--jobs", "2", "--timeout", "60", "--json"),
    )
    assert code == 1
    assert json.loads(out)["summary"]["survived"] == 1  # the document is printed all the same
    assert err.startswith("acme-gate evidence run: 1 of 2 mutants were not killed:\n")
    assert "  mutant 2 (survive.patch): survived: the command passed with the mutant" in err
    assert err.rstrip().endswith(
        f"acme-gate evidence run --test '{PYTEST}' --repo {pkg.repo} --sha {pkg.sha()} "
        f"--mutant {kill} --mutant {survive} --timeout 60 --jobs 2 --json"
    )


def test_a_failing_baseline_is_refused(pkg: Package, config: Config) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    commit(pkg.repo, {"tests/test_more.py": "def test_more():\n    assert 1 == 2\n"}, "red")
    code, out, err = run(
        config, "--test", PYTEST, "--mutant", str(kill), "--repo", str(pkg.repo), "--json"
    )
    assert code == 1
    assert json.loads(out)["mutants"][0]["verdict"] == "refused"
    assert json.loads(out)["status"] == "fail"
    assert err.startswith(
        f"acme-gate evidence run: the baseline did not pass at {pkg.sha()}, so every mutant is "
        "refused: exit 1: 1 test(s) failed on an assertion: tests.test_more::test_more\n"
    )


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: d / "absent.patch", "cannot read the mutant"),
        (lambda d: _write(d / "latin1.patch", b"caf\xe9\n"), "is not UTF-8 text"),
    ],
)
def test_a_mutant_file_that_cannot_be_read_is_exit_2(
    pkg: Package, config: Config, tmp_path: Path, make: Any, said: str
) -> None:
    code, out, err = run(
        config, "--test", "true", "--mutant", str(make(tmp_path)), "--repo", str(pkg.repo)
    )
    assert (code, out) == (2, "") and err.startswith("acme-gate evidence run: ") and said in err


def test_a_sha_that_is_not_a_commit_is_exit_2(pkg: Package, config: Config) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    code, _, err = run(
        config,
        "--test",
        "true",
        "--mutant",
        str(kill),
        "--repo",
        str(pkg.repo),
        "--sha",
        "HEAD^{tree}",
    )
    assert code == 2 and err.startswith("acme-gate evidence run: --sha HEAD^{tree} is a tree in ")
    assert "not a commit" in err


def test_an_unwritable_out_is_exit_2(pkg: Package, config: Config, tmp_path: Path) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    code, _, err = run(
        config,
        "--test",
        "true",
        "--mutant",
        str(kill),
        "--repo",
        str(pkg.repo),
        "--out",
        str(tmp_path / "no-such-dir" / "e.json"),
    )
    assert code == 2 and err.startswith("acme-gate evidence run: cannot write ")


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
