"""What counts as a kill, against a real package and real pytest: only a test's assertion in a
test file. The red team's two cases are here: the comment-only mutant that the command
``test -z "$(git status --porcelain)"`` "kills", and the ``assert False`` mutant that pytest
reports as a failed test. Neither is killed. (In the probed mode: bubblewrap where it works.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.handoff import verify_for_handoff
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect
from tests.kit.evidence_repos import PYTEST, Package, make_package
from tests.kit.gitrepos import commit

# A package whose code checks its own arguments: a mutant can make that assertion fire without
# adding one, which the mutant rules cannot see and the failing-frame rule does.
GUARDED = """\
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    assert lo <= hi, "lo above hi"
    return max(lo, min(x, hi))


def middle(x):
    return clamp(x, 0, 3)
"""
GUARDED_TESTS = """\
from calc import add, clamp, middle


def test_add():
    assert add(2, 3) == 5


def test_clamp():
    assert clamp(5, 0, 3) == 3


def test_middle():
    assert middle(9) == 3
"""
GIT_STATUS = 'test -z "$(git status --porcelain)"'


def patches(*paths: Path) -> tuple[Patch, ...]:
    return tuple(Patch(p.name, p.read_text()) for p in paths)


@pytest.fixture(scope="module")
def pkg(tmp_path_factory: pytest.TempPathFactory) -> Package:
    made = make_package(tmp_path_factory.mktemp("honest"))
    commit(made.repo, {"calc/__init__.py": GUARDED, "tests/test_calc.py": GUARDED_TESTS}, "guard")
    return made


def guarded(pkg: Package, name: str, old: str, new: str) -> Path:
    assert old in GUARDED
    return pkg.mutant(name, {"calc/__init__.py": GUARDED.replace(old, new)})


@pytest.fixture(scope="module")
def doc(pkg: Package) -> dict[str, Any]:
    mutants = [
        guarded(pkg, "real.patch", "a + b", "a - b"),
        guarded(pkg, "comment.patch", "def add(a, b):", "def add(a, b):  # adds"),
        guarded(
            pkg, "assert-false.patch", "    return a + b", "    assert False\n    return a + b"
        ),
        guarded(pkg, "raise.patch", "    return a + b", "    raise AssertionError()"),
        guarded(pkg, "exit.patch", "    return a + b", "    import sys; sys.exit(1)"),
        # no statement added: the code's own assertion fires, in the code, not in a test
        guarded(pkg, "guard-fires.patch", "clamp(x, 0, 3)", "clamp(x, 3, 0)"),
    ]
    return collect(Request(pkg.repo, PYTEST, patches(*mutants), jobs=2))


def mutant(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["mutants"] if m["name"] == name)


def test_a_real_mutant_is_killed_by_a_tests_assertion(doc: dict[str, Any]) -> None:
    m = mutant(doc, "real.patch")
    assert m["verdict"] == "killed" and m["killed_by"] == ["tests.test_calc::test_add"]
    assert m["run"]["failed_tests"][0]["frame"] == "tests/test_calc.py:5"


def test_the_comment_only_mutant_is_refused_not_killed(doc: dict[str, Any]) -> None:
    m = mutant(doc, "comment.patch")
    assert (m["verdict"], m["run"]) == ("refused", None)
    assert "changes only comments or blank space" in m["reason"]


@pytest.mark.parametrize(
    ("name", "said"),
    [("assert-false.patch", "`assert`"), ("raise.patch", "`raise`"), ("exit.patch", "`exit()`")],
)
def test_a_mutant_that_fails_on_purpose_is_refused(
    doc: dict[str, Any], name: str, said: str
) -> None:
    m = mutant(doc, name)
    assert (m["verdict"], m["run"]) == ("refused", None)
    assert m["reason"].startswith(f"not a mutant: it adds {said} to calc/__init__.py")


def test_an_assertion_that_fires_in_the_code_is_not_a_kill(doc: dict[str, Any]) -> None:
    m = mutant(doc, "guard-fires.patch")
    assert (m["verdict"], m["run"]["outcome"]) == ("error", "crashed")
    (failed,) = m["run"]["failed_tests"]
    assert (failed["kind"], failed["frame"]) == ("crash", "calc/__init__.py:6")
    assert "none on an assertion in a test file" in m["reason"]


def test_the_document_says_what_it_is(doc: dict[str, Any]) -> None:
    assert (doc["status"], doc["weak"]) == ("error", False)
    assert doc["summary"] == {"killed": 1, "survived": 0, "error": 1, "refused": 4}


def test_the_git_status_command_kills_only_by_the_exit_code_rule_and_is_weak(
    pkg: Package,
) -> None:
    """The red team's command "kills" any mutant that changes a byte. It is the exit-code rule,
    so the evidence is weak, handoff refuses it, and the comment-only mutant is refused
    before it runs anyway."""
    real = guarded(pkg, "real.patch", "a + b", "a - b")
    comment = guarded(pkg, "comment.patch", "def add(a, b):", "def add(a, b):  # adds")
    doc = collect(Request(pkg.repo, GIT_STATUS, patches(real, comment)))
    assert doc["weak"] is True
    assert [m["verdict"] for m in doc["mutants"]] == ["killed", "refused"]
    problems = verify_for_handoff(doc, sha=doc["sha"])
    assert any(p.startswith("the evidence is weak: the exit-code rule judged it") for p in problems)
    # After pytest, it kills nothing: a mutant no test notices fails the command, but pytest
    # reported no failing test, so it is an error, not a kill.
    survivor = guarded(pkg, "survivor.patch", "return a + b", "return a + b if a != 100 else 0")
    after = collect(Request(pkg.repo, f"{PYTEST} && {GIT_STATUS}", patches(survivor)))
    (m,) = after["mutants"]
    assert (m["verdict"], m["run"]["exit_code"], after["weak"]) == ("error", 1, False)
    assert m["reason"] == "exit 1: not a pytest test failure"
