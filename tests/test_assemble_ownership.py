"""scripts/assemble-ownership.py: ownership.py is what pairgate/standalone/ assembles to, and the
assembler refuses what would make a broken or ambiguous file."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.kit.names import ROOT

SCRIPT = ROOT / "scripts" / "assemble-ownership.py"


def _assembler() -> ModuleType:
    spec = importlib.util.spec_from_file_location("assemble_ownership", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def copy_of_the_tree(tmp_path: Path) -> Path:
    """The script, the sources and the generated file, laid out as in the checkout."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts")
    shutil.copytree(
        ROOT / "pairgate" / "standalone",
        tmp_path / "pairgate" / "standalone",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path / "pairgate")
    return tmp_path


def run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-B", str(tree / "scripts" / "assemble-ownership.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_committed_file_is_what_the_sources_assemble_to() -> None:
    result = run(ROOT, "--check")
    assert result.returncode == 0, result.stderr
    assert "is current" in result.stdout


def test_a_hand_edit_of_the_generated_file_is_drift(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    target = tree / "pairgate" / "ownership.py"
    target.write_text(target.read_text().replace("def fold(", "def fold(  # edited", 1))
    result = run(tree, "--check")
    assert result.returncode == 1
    assert "is not what pairgate/standalone/ assembles to" in result.stderr
    assert "never edit the generated file" in result.stderr
    assert run(tree).returncode == 0  # regenerating mends it
    assert run(tree, "--check").returncode == 0


def test_a_name_defined_in_two_modules_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    records = tree / "pairgate" / "standalone" / "records.py"
    records.write_text(records.read_text() + "\n\ndef fold() -> None:\n    pass\n")
    before = (tree / "pairgate" / "ownership.py").read_bytes()
    result = run(tree)
    assert result.returncode == 2
    assert "top-level name 'fold' is defined in both records.py and fold.py" in result.stderr
    assert (tree / "pairgate" / "ownership.py").read_bytes() == before  # nothing written


@pytest.mark.parametrize(
    "line",
    ["import pairgate.main", "from pairgate.verbs.turn import begin", "from . import fold"],
)
def test_an_import_of_the_package_is_refused(tmp_path: Path, line: str) -> None:
    tree = copy_of_the_tree(tmp_path)
    gate = tree / "pairgate" / "standalone" / "gate.py"
    text = gate.read_text().replace(
        "from __future__ import annotations\n", f"from __future__ import annotations\n{line}\n", 1
    )
    gate.write_text(text)
    result = run(tree)
    assert result.returncode == 2
    assert "gate.py:" in result.stderr
    assert "import" in result.stderr


def add_line(module: Path, line: str) -> int:
    """``line`` among the module's imports; its line number."""
    text = module.read_text()
    future = "from __future__ import annotations\n"
    module.write_text(text.replace(future, f"{future}{line}\n", 1))
    return text[: text.index(future)].count("\n") + 2


def test_a_module_without_an_all_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    (tree / "pairgate" / "standalone" / "extra.py").write_text('"""An extra module."""\n')
    before = (tree / "pairgate" / "ownership.py").read_bytes()
    result = run(tree)
    assert result.returncode == 2
    assert "extra.py: no __all__: list the names its sibling modules may import" in result.stderr
    assert (tree / "pairgate" / "ownership.py").read_bytes() == before  # nothing written


def test_an_all_that_names_what_the_module_does_not_define_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    extra = tree / "pairgate" / "standalone" / "extra.py"
    extra.write_text('"""An extra module."""\n\n__all__ = ["missing"]\n')
    result = run(tree)
    assert result.returncode == 2
    assert "extra.py: __all__ names 'missing', which the module does not define" in result.stderr


def test_a_sibling_import_of_an_underscored_name_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    gate = tree / "pairgate" / "standalone" / "gate.py"
    at = add_line(gate, "from pairgate.standalone.scope import _NUMBER")
    result = run(tree)
    assert result.returncode == 2
    assert f"gate.py:{at}: imports _NUMBER from scope.py: an underscored name is private " in (
        result.stderr
    )
    assert "add it to the __all__ of scope.py" in result.stderr


def test_a_sibling_import_of_a_name_outside_the_all_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    gate = tree / "pairgate" / "standalone" / "gate.py"
    at = add_line(gate, "from pairgate.standalone.verdict import Check, decide")
    verdict = tree / "pairgate" / "standalone" / "verdict.py"
    text = verdict.read_text()
    assert '"decide"' in text
    verdict.write_text(text.replace('"decide", ', "").replace(', "decide"', ""))
    result = run(tree)
    assert result.returncode == 2
    assert f"gate.py:{at}: imports decide from verdict.py, which is not in its __all__" in (
        result.stderr
    )


def test_an_import_of_a_module_that_is_not_there_is_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    at = add_line(
        tree / "pairgate" / "standalone" / "gate.py", "from pairgate.standalone.nowhere import x"
    )
    result = run(tree)
    assert result.returncode == 2
    assert f"gate.py:{at}: imports from nowhere.py, which is not a module of pairgate/" in (
        result.stderr
    )


def test_modules_that_import_each_other_in_a_circle_are_refused(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    add_line(
        tree / "pairgate" / "standalone" / "errors.py",
        "from pairgate.standalone.entry import standalone_main",
    )
    result = run(tree)
    assert result.returncode == 2
    circle = result.stderr.split("modules import each other in a circle: ", 1)[1].split()
    assert circle[0] == circle[-1] and "errors.py -> entry.py" in " ".join(circle), circle


def test_a_type_only_circle_is_no_circle(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    errors = tree / "pairgate" / "standalone" / "errors.py"
    add_line(
        errors,
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pairgate.standalone.entry import standalone_main",
    )
    result = run(tree)
    assert result.returncode == 0, result.stderr


def write_modules(into: Path, modules: dict[str, list[str]]) -> None:
    """Modules that each import one name from each module listed, and define their own."""
    for name, imports in modules.items():
        lines = [f'"""{name}."""', "", "from __future__ import annotations", ""]
        lines += [f"from pairgate.standalone.{m} import {m}_name" for m in imports]
        lines += ["", f'__all__ = ["{name}_name"]', "", f"{name}_name = 1", ""]
        (into / f"{name}.py").write_text("\n".join(lines))


def test_the_order_is_the_import_graph_depth_first_by_path(tmp_path: Path) -> None:
    assembler = _assembler()
    write_modules(
        tmp_path,
        {
            "top": ["b_mid", "a_mid"],
            "a_mid": ["base"],
            "b_mid": ["base", "c_leaf"],
            "c_leaf": [],
            "base": [],
            "alone": [],
        },
    )
    text = assembler.assemble(tmp_path)
    begins = [line.split("/")[-1] for line in text.splitlines() if line.startswith("# begin ")]
    # each module after its imports; the roots (no module imports them) by path, and each
    # module's imports by path: a new module moves only itself into the order
    assert begins == ["alone.py", "base.py", "a_mid.py", "c_leaf.py", "b_mid.py", "top.py"]
    assert assembler.assemble(tmp_path) == text  # deterministic


def test_the_committed_order_puts_every_module_after_what_it_imports() -> None:
    assembler = _assembler()
    text = (ROOT / "pairgate" / "ownership.py").read_text()
    begins = [
        line.removeprefix("# begin pairgate/standalone/")
        for line in text.splitlines()
        if line.startswith("# begin ")
    ]
    sources = assembler.SOURCES
    assert sorted(begins) == sorted(
        p.relative_to(sources).as_posix() for p in sources.rglob("*.py") if p.name != "__init__.py"
    )
    for name in begins:
        source = assembler.read_source(name, (sources / name).read_text())
        for imported in source.siblings:
            if not imported.type_only:
                assert begins.index(imported.module) < begins.index(name), (name, imported)


def test_the_generated_file_says_it_is_generated_and_names_every_source() -> None:
    text = (ROOT / "pairgate" / "ownership.py").read_text()
    sources = ROOT / "pairgate" / "standalone"
    modules = [p.relative_to(sources).as_posix() for p in sources.rglob("*.py")]
    modules = [name for name in modules if not name.endswith("__init__.py")]
    assert "GENERATED by scripts/assemble-ownership.py" in text.split("\n\n", 2)[1]
    for name in modules:
        assert f"# begin pairgate/standalone/{name}\n" in text
        assert f"# end pairgate/standalone/{name}\n" in text
    # The table of contents names the line each module begins on.
    lines = text.splitlines()
    for name in modules:
        entry = next(
            line for line in lines if line.strip().endswith(f"{name}:") or f" {name}: " in line
        )
        start = int(entry.split()[1])
        assert lines[start - 1] == f"# begin pairgate/standalone/{name}"
    assert "import pairgate" not in text and "from pairgate" not in text


def underscored_names_crossing_files(sources: Path) -> list[str]:
    """Each use, in one module of ``sources``, of an underscored name another module defines:
    imported from a sibling, or reached as ``thing._name`` (``self``'s and ``cls``' own
    aside)."""
    trees = {
        p.relative_to(sources).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(sources.rglob("*.py"))
    }
    defined: dict[str, set[str]] = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.setdefault(node.name, set()).add(name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.setdefault(node.id, set()).add(name)
    found = []
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pairgate."):
                found += [f"{name}: imports {a.name}" for a in node.names if a.name[0] == "_"]
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and defined.get(node.attr, {name}) - {name}
            ):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_underscored_name_crosses_files_in_the_sources() -> None:
    """The assembled file is one namespace, so only the sources keep a module's private names
    its own: the assembler refuses a sibling import of one, and nothing reaches one through an
    object either."""
    sources = ROOT / "pairgate" / "standalone"
    assert underscored_names_crossing_files(sources) == []


def test_the_crossing_count_sees_both_kinds_of_crossing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def _private() -> None:\n    pass\n")
    (tmp_path / "b.py").write_text(
        "from pairgate.standalone.a import _private\nimport a\n\na._private()\n"
    )
    assert underscored_names_crossing_files(tmp_path) == [
        "b.py: imports _private",
        "b.py:4: a._private",
    ]


def test_a_type_checking_flag_of_its_own_becomes_typing_s_in_the_one_file(tmp_path: Path) -> None:
    assembler = _assembler()
    for name in ("first", "second"):  # each module spells it: no name defined twice
        (tmp_path / f"{name}.py").write_text(
            f'"""{name}."""\n\nfrom __future__ import annotations\n\n'
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from decimal import Decimal\n\n"
            f'__all__ = ["{name}"]\n\n\ndef {name}(x: Decimal) -> None:\n    return None\n'
        )
    text = assembler.assemble(tmp_path)
    assert "TYPE_CHECKING = False" not in text
    assert text.count("from typing import TYPE_CHECKING") == 1
    assert "if TYPE_CHECKING:\n    from decimal import Decimal" in text
    compiled = compile(text, "ownership.py", "exec")
    namespace: dict[str, object] = {}
    exec(compiled, namespace)
    assert namespace["TYPE_CHECKING"] is False and "Decimal" not in namespace


def test_importing_the_reader_builds_no_dataclass(tmp_path: Path) -> None:
    """Every hook decision and gate job imports the reader: dataclasses (inspect, ast and dis
    behind it) and their generated methods would cost each a third of its import. Run as
    deployed: the one file, alone in a directory."""
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path / "ownership.py")
    code = (
        "import sys; sys.path.insert(0, '.'); import ownership; "
        "print(sorted({'dataclasses', 'inspect', 'ast'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def test_every_value_type_of_the_reader_has_a_docstring() -> None:
    """A NamedTuple without one gets ``Name(field, ...)``, which says nothing the fields do not."""
    from pairgate import ownership

    types = [
        v
        for v in vars(ownership).values()
        if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, "_fields")
    ]
    assert len(types) >= 35  # the ledger's, the gate's, the audit's and the command reader's
    written = [t.__name__ for t in types if (t.__doc__ or "").startswith(f"{t.__name__}(")]
    assert written == []
