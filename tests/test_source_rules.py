"""Two rules no behaviour test would see broken: no gate door takes an override flag, and
deploy_agents.py is the only code that reads the liveness-oracle markers."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

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


def test_deploy_agents_is_the_only_reader_of_the_oracle_markers() -> None:
    readers = [
        p for p in code_files() if MARKER.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert [p.name for p in readers] == ["deploy_agents.py"], readers
    assert len(code_files()) > 40  # the scan sees the code it is meant to
