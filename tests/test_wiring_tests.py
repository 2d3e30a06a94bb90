"""tests/source-repository-wiring-tests.txt: the tests about this repository's own wiring,
deselected from the suite and run by the source repository's pipeline."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import yaml

from tests.kit.names import ROOT
from tests.kit.wiring import WIRING_ENV, WIRING_TESTS, wiring_tests


def test_every_entry_names_a_test_file_or_a_test_in_one() -> None:
    entries = wiring_tests()
    assert entries, WIRING_TESTS
    for entry in entries:
        path, _, name = entry.partition("::")
        source = ROOT / path
        assert source.is_file() and source.name.startswith("test_"), entry
        if name:
            tree = ast.parse(source.read_text(encoding="utf-8"))
            tests = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert name in tests, f"{entry}: no such test in {path}"


def collected(*, run_wiring: bool) -> set[str]:
    files = sorted({entry.partition("::")[0] for entry in wiring_tests()})
    env = {k: v for k, v in os.environ.items() if k != WIRING_ENV}
    if run_wiring:
        env[WIRING_ENV] = "run"
    argv = [sys.executable, "-B", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*argv, *files], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line for line in proc.stdout.splitlines() if "::" in line}


def listed(test: str) -> bool:
    """Is this collected test id one of the entries (a file, or a test in every parametrisation)?"""
    return any(test == e or test.startswith((f"{e}::", f"{e}[")) for e in wiring_tests())


def test_the_listed_tests_are_deselected_unless_the_source_repository_asks_for_them() -> None:
    everything, suite = collected(run_wiring=True), collected(run_wiring=False)
    for entry in wiring_tests():
        named = {t for t in everything if t == entry or t.startswith((f"{entry}::", f"{entry}["))}
        assert named, entry
        assert not named & suite, entry
    assert suite == {t for t in everything if not listed(t)}  # nothing else is left out
    assert suite < everything


def test_the_source_repositorys_pipeline_runs_them() -> None:
    pipeline = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text(encoding="utf-8"))
    assert pipeline["tests"]["variables"][WIRING_ENV] == "run"
    assert pipeline["tests"]["script"] == ["bash .ci/run"]
