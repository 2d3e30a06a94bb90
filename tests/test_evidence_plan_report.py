"""``evidence plan`` (what a run would do, without running the tests) and ``evidence report``
(the last document kept under the state directory, by repository and SHA), through main."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kit.evidence_repos import PYTEST, Package, make_package
from tests.kit.gitrepos import commit
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.run import Result, run_cli


@pytest.fixture
def pkg(tmp_path: Path) -> Package:
    return make_package(tmp_path)


def evidence(state: Path, *argv: object) -> Result:
    env = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG), "XDG_STATE_HOME": str(state)}
    return run_cli(["evidence", *(str(a) for a in argv)], env)


def test_a_plan_says_what_would_run_and_runs_nothing(pkg: Package, tmp_path: Path) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    loud = pkg.calc("loud.patch", "return a + b", "raise SystemExit(1)")
    stale = pkg.mutant("stale.patch", {"calc/__init__.py": "x = 1\n"})
    stale.write_text(stale.read_text().replace("def add", "def plus"))
    witness = tmp_path / "ran"  # the test command would make it: the plan must not run it
    test = f"touch {witness}; {PYTEST}"
    argv = ["plan", "--test", test, "--repo", pkg.repo, "--pids", 64]
    argv += ["--mutant", kill, "--mutant", loud, "--mutant", stale]
    result = evidence(tmp_path / "state", *argv)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"Plan of mutation evidence at {pkg.sha()} of {pkg.repo} (nothing was run)"
    assert lines[1] == f"Test: {test} (timeout 300 s, runner pytest)"
    assert lines[2].startswith("Isolation: ") and "at most 64 processes" in lines[2]
    assert lines[3].startswith("Copies: on ") and lines[3].endswith(
        "4 runs (the baseline, then each mutant)"
    )
    assert lines[4] == "Mutant 1 (kill.patch, calc/__init__.py): applies"
    assert lines[5].startswith(
        "Mutant 2 (loud.patch, calc/__init__.py): REFUSED as a mutant: it adds `raise`"
    )
    assert lines[6].startswith("Mutant 3 (stale.patch, calc/__init__.py): does NOT apply: ")
    assert not witness.exists()
    doc = json.loads(evidence(tmp_path / "state", *argv, "--json").out)
    assert (doc["runner"], doc["weak"], doc["runs"], doc["pids"]) == ("pytest", False, 4, 64)
    assert [m["applies"] for m in doc["mutants"]] == [True, True, False]
    assert not witness.exists() and not (tmp_path / "state").exists()  # nothing kept either


def test_a_plan_of_the_exit_code_rule_says_it_would_be_weak(pkg: Package, tmp_path: Path) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    result = evidence(tmp_path, "plan", "--test", "make test", "--mutant", kill, "--repo", pkg.repo)
    assert result.code == 0, result.err
    assert "\nWEAK: the command does not name pytest" in result.out


def test_the_report_prints_the_last_document_kept(pkg: Package, tmp_path: Path) -> None:
    state = tmp_path / "state"
    missing = evidence(state, "report", "--repo", pkg.repo)
    assert missing.code == 2
    assert f"pairgate evidence report: no evidence is kept for {pkg.repo}" in missing.err
    first_sha = pkg.sha()
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    ran = evidence(state, "run", "--test", PYTEST, "--mutant", kill, "--repo", pkg.repo, "--json")
    assert ran.code == 0, ran.err
    first = json.loads(ran.out)
    commit(pkg.repo, {"README": "later\n"}, "later")
    ran = evidence(state, "run", "--test", PYTEST, "--mutant", kill, "--repo", pkg.repo, "--json")
    second = json.loads(ran.out)
    assert second["sha"] != first_sha
    last = evidence(state, "report", "--repo", pkg.repo, "--json")
    assert (last.code, json.loads(last.out)) == (0, second)
    older = evidence(state, "report", "--repo", pkg.repo, "--sha", first_sha, "--json")
    assert json.loads(older.out) == first
    text = evidence(state, "report", "--repo", pkg.repo)
    assert text.out.startswith(f"Mutation evidence at {second['sha']} of {pkg.repo}: pass\n")
    kept = Path(text.out.splitlines()[-1].removeprefix("Kept in "))
    assert (
        kept.parent
        == state / "pairgate" / "evidence" / first["repository"]["root_commit"] / second["sha"]
    )
