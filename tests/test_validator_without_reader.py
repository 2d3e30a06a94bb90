"""A CI validator deployed without the reader beside it cannot decide: exit 2, never 1."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.kit.names import ROOT
from tests.kit.run import run_program

VALIDATORS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)
CI = {"CI_MERGE_REQUEST_PROJECT_PATH": "acme/app", "CI_MERGE_REQUEST_IID": "1"}


def alone(tmp_path: Path, name: str) -> Path:
    """The validator copied into an empty directory: no ownership.py, no package importable."""
    directory = tmp_path / "flat"
    directory.mkdir()
    shutil.copy(ROOT / "validators" / f"{name}.py", directory)
    return directory


@pytest.mark.parametrize("name", VALIDATORS)
def test_a_validator_with_no_ownership_py_beside_it_exits_2_naming_the_file(
    tmp_path: Path, name: str
) -> None:
    directory = alone(tmp_path, name)
    result = run_program(
        [sys.executable, "-B", f"{name}.py"], env={"PYTHONPATH": ""}, cwd=directory
    )
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"{name}: could not decide; this job fails closed: {directory / 'ownership.py'} is "
        "missing; deploy it beside this validator.\n"
    )


@pytest.mark.parametrize("name", VALIDATORS)
def test_a_reader_that_cannot_be_imported_is_exit_2_too(tmp_path: Path, name: str) -> None:
    directory = alone(tmp_path, name)
    (directory / "ownership.py").write_text("import no_such_module_here\n")
    result = run_program(
        [sys.executable, "-B", f"{name}.py"], env={"PYTHONPATH": ""}, cwd=directory
    )
    assert (result.code, result.out) == (2, "")
    assert result.err == (
        f"{name}: could not decide; this job fails closed: the ownership.py beside it cannot be "
        "imported (No module named 'no_such_module_here').\n"
    )
