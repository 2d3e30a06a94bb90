"""The suite's own rules (tests/kit/__init__.py): what tests share is imported one way, from
``tests.kit.<module>``, and tests/conftest.py holds fixtures and pytest's hooks only. ruff's
banned-api refuses conftest and the replaced modules; these are the rules ruff cannot say."""

from __future__ import annotations

import ast

from tests.kit.names import ROOT

TESTS = ROOT / "tests"
SOURCES = sorted(
    path
    for path in [*TESTS.rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]
    if "reference_fold" not in path.parts
)


def kit_imports_not_by_module(source: str) -> list[str]:
    """The imports of the kit in ``source`` other than ``from tests.kit.<module> import ...``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith("tests.kit")]
        elif isinstance(node, ast.ImportFrom) and node.module in ("tests", "tests.kit"):
            found.append(f"from {node.module} import {', '.join(a.name for a in node.names)}")
    return found


def test_the_kit_is_imported_from_its_modules_only() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for path in SOURCES
        for line in kit_imports_not_by_module(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_rule_sees_each_other_way() -> None:
    source = (
        "import tests.kit.world\nfrom tests.kit import world\nfrom tests import kit\n"
        "from tests.kit.world import Round\n"
    )
    assert kit_imports_not_by_module(source) == [
        "import tests.kit.world",
        "from tests.kit import world",
        "from tests import kit",
    ]


def test_conftest_holds_fixtures_and_hooks_only() -> None:
    tree = ast.parse((TESTS / "conftest.py").read_text(encoding="utf-8"))
    others = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.FunctionDef) and (
            node.name.startswith("pytest_") or any(_is_fixture(d) for d in node.decorator_list)
        ):
            continue
        others.append(getattr(node, "name", ast.unparse(node).splitlines()[0]))
    assert others == []


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) == "pytest.fixture"
