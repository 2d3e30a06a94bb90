"""The sandbox's modules import one another without a circle (imports under TYPE_CHECKING
aside): a circle hides behind function-level imports until a refactor trips over it."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pairgate.sandbox

PACKAGE = "pairgate.sandbox"


def _imports(path: Path) -> set[str]:
    """Sandbox modules ``path`` imports anywhere (module or function level), except under
    ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
            found.add(str(node.module).split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith(PACKAGE + ".")}
    return found


def test_no_import_circle() -> None:
    folder = Path(pairgate.sandbox.__file__).parent
    graph = {p.stem: _imports(p) - {p.stem} for p in folder.glob("*.py")}
    assert "notes" in graph and "records" in graph["notes"]  # the scan sees the package
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import circle: {' -> '.join(error.args[1])}") from None


def test_the_check_sees_a_function_level_circle(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    from pairgate.sandbox import b\n")
    (tmp_path / "b.py").write_text("from pairgate.sandbox.a import f\n")
    graph = {p.stem: _imports(p) for p in tmp_path.glob("*.py")}
    assert graph == {"a": {"b"}, "b": {"a"}}
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pairgate.sandbox import a\n"
    )
    assert _imports(tmp_path / "c.py") == set()
