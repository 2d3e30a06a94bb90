"""Mutants that are refused before they run, because whatever kills them proves nothing. Pure.

- A mutant that adds a way to fail on purpose to the code under test: ``assert``, ``raise``, a
  call of ``exit``, ``_exit``, ``abort``, ``quit``, ``kill`` or ``fail`` (Python, read by its
  syntax tree), or ``assert``, ``raise``, ``throw``, ``panic``, ``abort``, ``exit``, ``die`` and
  the like as words of the added lines (other languages). A test that then fails was not
  judging behaviour: the code stopped itself.
- A mutant that changes only comments or blank space (Python: the same syntax tree; other
  files: the same lines once whitespace and whole-line comments are left out). It changes no
  behaviour, so a command that "kills" it (``test -z "$(git status --porcelain)"``) kills
  everything.

Test files are left to the files-that-judge rule (``sensitive.py``): a mutant changes the code
under test, not the tests.
"""

from __future__ import annotations

import ast
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence

_STOP_CALLS = frozenset(
    {"exit", "_exit", "abort", "quit", "kill", "killpg", "fail", "raise_signal"}
)
_STOP_WORDS = re.compile(
    r"\b(assert\w*|raise|throw|panic!?|abort|exit|_exit|die|unreachable!|unimplemented!|todo!)\b"
)
_LINE_COMMENT = re.compile(r"^\s*(#|//|--|;|\*|/\*)")


def _stops_py(tree: ast.AST) -> Counter[str]:
    found: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            found["assert"] += 1
        elif isinstance(node, ast.Raise):
            found["raise"] += 1
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name in _STOP_CALLS:
                found[f"{name}()"] += 1
    return found


# One ast.parse at a time: CPython 3.11 keeps the AST constructor's recursion depth in state the
# threads share, so two mutants checked at once (evidence run --jobs) can fail with "SystemError:
# AST constructor recursion depth mismatch" (python/cpython#106905).
_PARSING = threading.Lock()


def _parse(text: str | None) -> ast.AST | None:
    with _PARSING:
        if text is None:
            return ast.parse("")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError):
            return None


def _code_lines(text: str | None) -> list[str]:
    lines = (text or "").splitlines()
    return [
        "".join(line.split()) for line in lines if line.strip() and not _LINE_COMMENT.match(line)
    ]


def _stops_text(text: str | None) -> Counter[str]:
    found: Counter[str] = Counter()
    for line in (text or "").splitlines():
        if not _LINE_COMMENT.match(line):
            found.update(m.group(1) for m in _STOP_WORDS.finditer(line))
    return found


def refusal(
    files: Sequence[str],
    *,
    before: Callable[[str], str | None],
    after: Callable[[str], str | None],
    is_test: Callable[[str], bool],
) -> str | None:
    """Why this mutant is refused, or None. ``before`` and ``after`` give a file's text at the
    SHA and with the mutant applied (None: absent, or not text)."""
    same = True
    for path in files:
        old, new = before(path), after(path)
        if is_test(path):
            same = same and old == new
            continue
        old_tree = _parse(old) if path.endswith(".py") else None
        new_tree = _parse(new) if path.endswith(".py") else None
        if old_tree is not None and new_tree is not None:
            added = _stops_py(new_tree) - _stops_py(old_tree)
            unchanged = ast.dump(old_tree) == ast.dump(new_tree)
        else:
            added = _stops_text(new) - _stops_text(old)
            unchanged = _code_lines(old) == _code_lines(new)
        if added:
            what = ", ".join(f"`{w}`" for w in sorted(added))
            return (
                f"it adds {what} to {path}, code under test: a test that then fails was stopped "
                "by the code, not judging its behaviour; a mutant changes what the code does "
                "(remove the fix, alter a value or a condition), it does not fail on purpose"
            )
        same = same and unchanged
    if same:
        return (
            "it changes only comments or blank space: it changes no behaviour, so whatever "
            "kills it does not judge the code"
        )
    return None
