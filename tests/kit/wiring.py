"""The source repository's wiring tests (tests/source-repository-wiring-tests.txt): the tests
about this repository's own wiring, which only its pipeline runs."""

from __future__ import annotations

from pathlib import Path

from tests.kit.names import ROOT

WIRING_TESTS = ROOT / "tests" / "source-repository-wiring-tests.txt"
WIRING_ENV = "PAIRGATE_WIRING_TESTS"


def wiring_tests() -> list[str]:
    """The entries of source-repository-wiring-tests.txt: ``tests/<file>.py[::<test>]``."""
    lines = (line.strip() for line in WIRING_TESTS.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def is_wiring_test(path: Path, name: str, entries: list[str]) -> bool:
    resolved = path.resolve()
    if not resolved.is_relative_to(ROOT):  # a test file a test wrote elsewhere
        return False
    where = resolved.relative_to(ROOT).as_posix()
    test = f"{where}::{name.split('[', 1)[0]}"
    return any(entry in (where, test) for entry in entries)
