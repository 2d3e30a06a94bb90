"""Rules no behaviour test would see broken: no gate door takes an override flag; the
agent-template renderer (pairgate/deployment/agent_templates.py) is the only code that reads the
liveness-oracle markers; and the package's layers (the command line, the commands, the domain,
the reader) import downwards only, with no circle but a type-only one."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import sys
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest
import yaml

from pairgate.commands.table import command_rows
from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import run_cli, run_program

# What would let a caller past the gate's verdict, in any spelling.
OVERRIDE = re.compile(
    r"(?i)override|force|skip|bypass|no-?verify|ignore|allow|unsafe|yes|admin|pass|dry|permit"
)
VALIDATORS = (
    "validate-mr-carries-ownership-record",
    "validate-mr-approval-at-head",
    "validate-mr-merge-check",
)
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def flags(help_text: str) -> set[str]:
    """The options a --help shows (its usage and its options list)."""
    return set(_FLAG.findall(help_text.split("\n\n", 1)[0] + help_text.rsplit("options:", 1)[-1]))


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The validators and ownership.py as CI runs them: flat, nothing else."""
    directory = tmp_path_factory.mktemp("doors")
    shutil.copy(ROOT / "pairgate" / "ownership.py", directory)
    for name in VALIDATORS:
        shutil.copy(ROOT / "validators" / f"{name}.py", directory)
    return directory


def door_flags(flat: Path) -> dict[str, set[str]]:
    doors = {"pairgate merge-check": run_cli(["merge-check", "--help"]).out}
    standalone = run_program(
        [sys.executable, "-B", "ownership.py", "merge-check", "--help"], cwd=flat
    )
    doors["ownership.py merge-check"] = standalone.out
    for name in VALIDATORS:
        doors[name] = run_program([sys.executable, "-B", f"{name}.py", "--help"], cwd=flat).out
    assert all(doors.values()), doors
    return {door: flags(text) for door, text in doors.items()}


def test_no_gate_door_takes_an_override_flag(flat: Path) -> None:
    found = door_flags(flat)
    for door, options in found.items():
        assert not [o for o in options if OVERRIDE.search(o)], door
    # Exactly these: a new flag on a door is a decision to make here, not an accident.
    assert found == {
        "pairgate merge-check": {"-h", "--help", "--verbose", "--json", "--mr", "--mr-project"},
        "ownership.py merge-check": {"-h", "--help", "--mr", "--mr-project", "--json", "--verbose"},
        **{
            # --gitlab-url pins the instance and --tokens-on-stdin moves the secrets off the
            # environment: each makes the job stricter, neither passes anything.
            name: {"-h", "--help", "--read-token-variable", "--automation-families"}
            | {"--gitlab-url", "--tokens-on-stdin"}
            for name in VALIDATORS
        },
    }


def test_the_hook_takes_no_arguments_at_all(flat: Path) -> None:
    # Claude Code starts it with none; one it does not expect is a usage error, never a switch.
    for extra in (["--force"], ["--skip"], ["allow"]):
        result = run_program(
            [sys.executable, "-B", "ownership.py", "hook", *extra],
            env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
            cwd=flat,
            stdin='{"tool_name":"Bash","tool_input":{"command":"glab mr merge 1 -R acme/app"}}',
        )
        assert result.code == 2 and "usage: python3 ownership.py" in result.err, extra
    # The bash half, given the same: tests/test_merge_hook.py.


def test_the_ci_component_has_no_override_input() -> None:
    template = ROOT / "templates" / "mr-ownership-gate" / "template.yml"
    spec = next(yaml.safe_load_all(template.read_text(encoding="utf-8")))
    names = list(spec["spec"]["inputs"])
    assert names and not [n for n in names if OVERRIDE.search(n)]


# --- the liveness-oracle markers --------------------------------------------------------------

MARKER = re.compile(r"(?i)liveness[-_ ]?oracle\s*:|\b_?ORACLE_(?:BEGIN|END|MARK)\b")
CODE = ("pairgate", "validators", "hooks", "scripts", "examples", "templates", "benchmarks")


def code_files() -> list[Path]:
    """Everything that runs: the package, the deployed files, the scripts (not tests, not docs,
    not the templates' prose: agents/ holds the markers themselves)."""
    found = [ROOT / ".gitlab-ci.yml"]
    for top in CODE:
        found += [
            p for p in (ROOT / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts
        ]
    return sorted(p for p in found if p.suffix in ("", ".py", ".sh", ".yml", ".yaml"))


def test_the_agent_template_renderer_is_the_only_reader_of_the_oracle_markers() -> None:
    readers = [
        p for p in code_files() if MARKER.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert [p.name for p in readers] == ["agent_templates.py"], readers
    assert len(code_files()) > 40  # the scan sees the code it is meant to


# --- the layers -------------------------------------------------------------------------------

# Top to bottom; a module imports from its own layer or one below. The domain is every module
# no other layer names: verbs/, views/, doctor/, deployment/, currency/, watch/, evidence/,
# sandbox/ and the modules they share at the top (tracker, output, resources, version).
COMMAND_LINE = (
    "pairgate.__main__",
    "pairgate.main",
    "pairgate.parser",
    "pairgate.finding_vocabulary",  # the guard's console script
)
COMMANDS = ("pairgate.commands",)
READER = ("pairgate.standalone", "pairgate.ownership")
# Which modules may import pairgate.commands: the table is how they reach every handler.
COMMANDS_IMPORTED_BY = {"pairgate.main", "pairgate.parser"}

Graph = dict[str, dict[str, bool]]  # module -> the pairgate modules it imports -> type-only?


def module_of(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING" and ast.unparse(test.value) == "typing"
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _imports(body: list[ast.stmt], type_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement in ``body``, at any depth (in a function, a class, a try...), and
    whether it is type-only: under ``if TYPE_CHECKING:`` (its body, not its else)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_only
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.body, True)
            yield from _imports(node.orelse, type_only)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                yield from _imports(getattr(node, field, []), type_only)


def _imported(node: ast.Import | ast.ImportFrom, here: str, is_package: bool) -> list[str]:
    """The dotted names one import statement names: ``from a import b`` names a.b (a module,
    or a name defined in a); a relative import is made absolute first."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = here.split(".") if is_package else here.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, package: str = "pairgate") -> Graph:
    """Every module of ``package`` under ``root`` and the package's modules it imports, at
    module or function level (a function-level import is as much a dependency)."""
    paths = {
        module_of(p, root): p
        for p in (root / package).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    graph: Graph = {}
    for name, path in paths.items():
        found: dict[str, bool] = {}
        for node, type_only in _imports(ast.parse(path.read_text(encoding="utf-8")).body):
            assert isinstance(node, ast.Import | ast.ImportFrom)
            for dotted in _imported(node, name, path.name == "__init__.py"):
                target = dotted
                while target and target not in paths:  # a name in a module: that module
                    target = target.rpartition(".")[0]
                if target and target not in (name, package):
                    found[target] = found.get(target, True) and type_only
        graph[name] = found
    return graph


def layer_of(module: str) -> int:
    """0 the command line, 1 the commands, 2 the domain, 3 the reader."""
    for rank, layer in ((0, COMMAND_LINE), (1, COMMANDS), (3, READER)):
        if any(module == top or module.startswith(f"{top}.") for top in layer):
            return rank
    return 2


def upward(graph: Graph) -> list[str]:
    """Every import of a module from a layer above its own."""
    return sorted(
        f"{module} -> {target}"
        for module, found in graph.items()
        for target in found
        if layer_of(target) < layer_of(module)
    )


def commands_importers(graph: Graph) -> set[str]:
    """The modules outside pairgate.commands that import from it."""
    return {
        module
        for module, found in graph.items()
        if layer_of(module) != 1 and any(layer_of(target) == 1 for target in found)
    }


def circle(graph: Graph) -> list[str] | None:
    """A circle of imports that are not type-only, or None."""
    real = {
        module: {t for t, type_only in found.items() if not type_only}
        for module, found in graph.items()
    }
    try:
        tuple(TopologicalSorter(real).static_order())
    except CycleError as error:
        return list(error.args[1])
    return None


@pytest.fixture(scope="module")
def graph() -> Graph:
    found = import_graph(ROOT)
    # The scan sees the package: main reaches the commands through the table, lazily the rest.
    assert found["pairgate.main"]["pairgate.commands.table"] is False
    assert "pairgate.currency.check" in found["pairgate.main"]  # a function-level import
    assert {layer_of(module) for module in found} == {0, 1, 2, 3}
    assert len(found) > 100
    return found


def test_only_main_and_the_parser_import_the_commands(graph: Graph) -> None:
    assert commands_importers(graph) == COMMANDS_IMPORTED_BY


def test_every_handler_the_table_names_is_a_command_module() -> None:
    """main reaches a handler by its row's "module:function", imported when it runs: each names
    a function of a module under pairgate.commands."""
    rows = [(name, row) for name, row in command_rows() if row.handler is not None]
    assert len(rows) > 25
    for name, row in rows:
        assert row.handler is not None
        module, _, function = row.handler.partition(":")
        assert module.startswith("pairgate.commands.") and function, (name, row.handler)
        assert callable(getattr(importlib.import_module(module), function)), (name, row.handler)
        if row.arguments is not None:  # the flags' functions are the commands' too
            assert row.arguments.__module__.startswith("pairgate.commands."), name


def test_no_import_runs_up_the_layers(graph: Graph) -> None:
    assert upward(graph) == []


def test_no_import_circle_but_a_type_only_one(graph: Graph) -> None:
    assert circle(graph) is None, " -> ".join(circle(graph) or ())
    # The one there is: the sandbox's server runs its control endpoints, which know its type.
    assert graph["pairgate.sandbox.server"]["pairgate.sandbox.control"] is False
    assert graph["pairgate.sandbox.control"]["pairgate.sandbox.server"] is True


def test_the_layer_checks_see_what_they_are_for(tmp_path: Path) -> None:
    package = tmp_path / "pairgate"
    (package / "commands").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "commands" / "__init__.py").write_text("")
    (package / "commands" / "verb.py").write_text("from pairgate.shared import helper\n")
    type_only = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pairgate.typed import T\n"
    )
    (package / "shared.py").write_text(
        f"{type_only}def helper():\n    from pairgate.commands import verb\n"
    )
    (package / "typed.py").write_text("from .shared import helper\n")
    found = import_graph(tmp_path)
    assert found["pairgate.shared"] == {"pairgate.typed": True, "pairgate.commands.verb": False}
    assert found["pairgate.typed"] == {"pairgate.shared": False}
    assert commands_importers(found) == {"pairgate.shared"}
    assert upward(found) == ["pairgate.shared -> pairgate.commands.verb"]
    assert set(circle(found) or ()) == {"pairgate.commands.verb", "pairgate.shared"}
    (package / "shared.py").write_text(f"{type_only}def helper():\n    pass\n")
    found = import_graph(tmp_path)
    assert found["pairgate.shared"] == {"pairgate.typed": True}
    assert circle(found) is None  # shared <-> typed: a type-only circle is no circle
    assert upward(found) == [] and commands_importers(found) == set()
