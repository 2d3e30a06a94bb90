"""What one run of the test command showed, and what that makes a mutant. Pure functions.

pytest (the runner is pytest when the command names it, or when a junit report was written):
the report tells a test's assertion failure from a crash. A ``failure`` element is an assertion
failure when its exception is an AssertionError (pytest's message starts ``assert``,
``AssertionError``, or ``Failed:`` for ``pytest.fail`` and an unmet ``pytest.raises``, or its
``type`` attribute names one) AND the failing frame of its traceback (the last location the
report's text names) is in a test file: an ``assert False`` or ``raise AssertionError`` added to
the code under test fails a test too, but in the code, not in the test. Any other ``failure`` is a
crash; an ``error`` element (collection, fixture set-up or tear-down) is an error; exit codes 2 to
5 (interrupted, internal error, usage error, no tests collected) are errors. A mutant is killed
only when pytest exits 1, at least one test failed on an assertion and no test errored.

Any other runner: the exit code alone. 0 passed, 1 a test failure (the mutant is killed, but the
evidence is weak: nothing says a test judged it), anything else (a signal, 2, 127 command not
found, ...) an error.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_ASSERTION_MESSAGE = re.compile(r"^(assert\b|(\w+\.)*AssertionError\b|Failed\b)")
_PYTEST_EXIT = {
    2: "pytest was interrupted (a collection error, or -x / Ctrl-C)",
    3: "pytest hit an internal error",
    4: "pytest was misused (a usage error)",
    5: "pytest collected no tests",
}
_PYTEST_WORD = re.compile(r"(^|/)(pytest|py\.test)(-?3)?$")
_MESSAGE_MAX = 300


# A traceback location line, in pytest's long and short styles (``path:12: AssertionError``,
# ``path:12: in test_x``) and in Python's own (``File "path", line 12, in f``).
_LOCATION = re.compile(
    r"^(?:(?!E\s|>\s|_ _)(?P<path>\S[^\n]*?):(?P<line>\d+):(?: |$)"
    r'|\s*File "(?P<native>[^"\n]+)", line (?P<nline>\d+))',
    re.MULTILINE,
)


@dataclass(frozen=True)
class FailedTest:
    id: str
    kind: str  # assertion | crash | error
    message: str
    frame: str = ""  # path:line of the failing frame, when the report names one


@dataclass(frozen=True)
class Outcome:
    outcome: str  # passed | assertion-failed | failed | crashed | timed-out | error
    detail: str
    failed_tests: tuple[FailedTest, ...] = ()


def names_pytest(command: str) -> bool:
    """Whether the command runs pytest by name (``pytest``, ``python -m pytest``, ``py.test``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return any(_PYTEST_WORD.search(w) for w in words)


def failing_frame(text: str) -> str:
    """``path:line`` of the last frame a traceback's text names ("" when it names none)."""
    found = list(_LOCATION.finditer(text))
    if not found:
        return ""
    last = found[-1]
    if last.group("native") is not None:
        return f"{last.group('native')}:{last.group('nline')}"
    return f"{last.group('path')}:{last.group('line')}"


def in_test_file(frame: str, is_test: Callable[[str], bool], roots: Sequence[str] = ()) -> bool:
    """Whether the frame ``path:line`` is in a test file of the clone (an absolute path counts
    only under one of ``roots``, the clone as the run saw it)."""
    path = frame.rpartition(":")[0]
    if not path:
        return False
    if path.startswith("/"):
        inner = next((path[len(r) :].lstrip("/") for r in roots if path.startswith(r + "/")), None)
        if inner is None:
            return False
        path = inner
    while path.startswith("./"):
        path = path[2:]
    return bool(path) and ".." not in path.split("/") and is_test(path)


def _is_assertion(element: ET.Element) -> bool:
    kind = element.get("type")
    if kind:
        return kind.rsplit(".", 1)[-1] in ("AssertionError", "Failed")
    return bool(_ASSERTION_MESSAGE.match(element.get("message") or ""))


def read_junit(
    path: Path, is_test: Callable[[str], bool], roots: Sequence[str] = ()
) -> tuple[FailedTest, ...] | None:
    """The failed and errored tests of a junit report; None when there is no readable report.
    ``is_test`` says whether a path of the clone is a test file, ``roots`` where the run saw
    the clone. (xml.etree with expat >= 2.4 refuses entity expansion bombs and resolves no
    external entities; the report is written by code under test, so it is read as
    untrusted.)"""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    found: list[FailedTest] = []
    for case in root.iter("testcase"):
        test_id = "::".join(p for p in (case.get("classname"), case.get("name")) if p)
        for child in case:
            frame = failing_frame(child.text or "")
            if child.tag == "failure":
                honest = _is_assertion(child) and in_test_file(frame, is_test, roots)
                kind = "assertion" if honest else "crash"
            elif child.tag == "error":
                kind = "error"
            else:
                continue
            message = " ".join((child.get("message") or "").split())[:_MESSAGE_MAX]
            found.append(FailedTest(test_id or "?", kind, message, frame))
    return tuple(found)


def classify(
    *,
    runner: str,
    exit_code: int | None,
    timed_out: bool,
    timeout: float,
    junit: tuple[FailedTest, ...] | None,
) -> Outcome:
    """One run's outcome from its exit code and (for pytest) its junit report."""
    if timed_out:
        return Outcome("timed-out", f"timed out after {timeout:g} s; its process tree was killed")
    if exit_code is None:
        return Outcome("error", "the command did not start")
    if runner == "exit-code":
        if exit_code == 0:
            return Outcome("passed", "exit 0")
        if exit_code == 1:
            return Outcome("failed", "exit 1: a test failure, by the exit-code rule")
        return Outcome(
            "error", f"exit {exit_code}: the exit-code rule counts only exit 1 as a test failure"
        )
    if junit is None:
        return Outcome(
            "error",
            f"exit {exit_code}, and pytest wrote no junit report (the command must not replace "
            "--junitxml), so an assertion failure cannot be told from a crash",
        )
    tests = junit
    errors = [t for t in tests if t.kind == "error"]
    asserts = [t for t in tests if t.kind == "assertion"]
    crashes = [t for t in tests if t.kind == "crash"]
    if exit_code == 0 and not tests:
        return Outcome("passed", "exit 0: every test passed")
    if errors:
        return Outcome(
            "error",
            f"exit {exit_code}: {len(errors)} test error(s) (collection or fixture), which are "
            f"not assertion failures: {errors[0].id}: {errors[0].message}",
            tests,
        )
    if exit_code == 1 and asserts:
        more = f", and {len(crashes)} crashed" if crashes else ""
        return Outcome(
            "assertion-failed",
            f"exit 1: {len(asserts)} test(s) failed on an assertion{more}: {asserts[0].id}",
            tests,
        )
    if exit_code == 1 and crashes:
        where = f" (at {crashes[0].frame})" if crashes[0].frame else ""
        return Outcome(
            "crashed",
            f"exit 1: {len(crashes)} test(s) failed, none on an assertion in a test file: "
            f"{crashes[0].id}: {crashes[0].message}{where}",
            tests,
        )
    if exit_code == 0:
        return Outcome("error", "exit 0, yet the junit report lists failed tests", tests)
    meaning = _PYTEST_EXIT.get(exit_code, "not a pytest test failure")
    return Outcome("error", f"exit {exit_code}: {meaning}", tests)


def mutant_verdict(outcome: Outcome) -> tuple[str, str]:
    """(verdict, reason) for a mutant that applied and ran."""
    if outcome.outcome == "passed":
        return "survived", "the command passed with the mutant applied: no test noticed it"
    if outcome.outcome in ("assertion-failed", "failed"):
        return "killed", outcome.detail
    return "error", outcome.detail


def killed_by(outcome: Outcome) -> list[str]:
    """The tests whose assertions caught the mutant (empty under the exit-code rule)."""
    return [t.id for t in outcome.failed_tests if t.kind == "assertion"]
