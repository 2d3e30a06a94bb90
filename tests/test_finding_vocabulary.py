"""The findings-vocabulary guard, run flat by path as CI and pre-commit run it."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.kit.names import ROOT
from tests.kit.run import Result, run_program

GUARD = ROOT / "validators" / "validate-handoff-finding-vocabulary.py"
DEFINITIONS = (
    "OBSERVED: something found and recorded. It licenses no change.\n"
    "ASKS: a change wanted, saying what and where.\n"
    "BLOCKS: this must change before the merge.\n"
)


@pytest.fixture
def flat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The guard alone in a directory, with the shipped templates beside it as in the wheel."""
    (tmp_path / "validators").mkdir()
    shutil.copy(GUARD, tmp_path / "validators")
    shutil.copytree(ROOT / "agents", tmp_path / "agents")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"guard_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def guard(flat: Path, *args: str) -> Result:
    """The flat copy's main(), in-process (milliseconds); the end-to-end runs are below."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = load(flat / "validators" / GUARD.name).main(list(args))
    return Result(code, out.getvalue(), err.getvalue())


def check_text(flat: Path, text: str) -> Result:
    (flat / "msg.txt").write_text(text)
    return guard(flat, "msg.txt")


@pytest.mark.parametrize(
    "line",
    [
        "MUST FIX: the timeout",
        "Must-fix: the timeout",
        "Blocker: no test",
        "BLOCKER: no test",
        "Blocking: no test",
        "Blocks: no test",
        "Observed - it is slow",
        "OBSERVED - it is slow",
        "OBSERVED : it is slow",
        "observation: it is slow",
        "ask: rename it",
        "ASK: rename it",
        "Asks: rename it",
        "**BLOCKS**: bold around the word only",
        "- Blocker: in a list",
        "> Blocker: in a quote",
        "2. observed: in a numbered list",
    ],
)
def test_a_look_alike_marker_is_flagged_with_its_line(flat: Path, line: str) -> None:
    result = check_text(flat, f"Subject\n\n{line}\n")
    assert result.code == 1
    assert result.out.startswith("msg.txt:3: look-alike marker ")
    assert "write OBSERVED:" in result.out


@pytest.mark.parametrize(
    "line",
    [
        "OBSERVED: the retry loop sleeps 30 s (time ./run, 3 runs)",
        "- ASKS: rename --force to --yes in cli.py:40",
        "**BLOCKS:** the migration drops a column",
        "`OBSERVED:` mentioned in backticks",
        "fix: a conventional-commit subject",
        "Blocked-by: #3",
        "NOTE: something else",
        "The review OBSERVED: mid-sentence is prose",
        "Asking around: not a marker",
        "Observers: not a marker",
        "Blockchain: not a marker",
        "# Blocker: a git comment line",
    ],
)
def test_markers_and_other_words_pass(flat: Path, line: str) -> None:
    result = check_text(flat, f"Subject\n\n{line}\n")
    assert (result.code, result.out) == (0, "")


def test_a_marker_with_no_finding_is_flagged(flat: Path) -> None:
    result = check_text(flat, "x\nBLOCKS:\n")
    assert (result.code, result.out) == (1, "msg.txt:2: BLOCKS: with no finding after it\n")


@pytest.mark.parametrize(
    ("relay", "line", "demand"),
    [
        ("> OBSERVED: slow (acme-review)\n\nFix this.\n", 3, "'Fix this'"),
        ("> OBSERVED: slow (acme-review)\nPlease fix before merging.\n", 2, "'before merging'"),
        ("> OBSERVED: slow (acme-review)\nThis should be changed.\n", 2, "'should be changed'"),
        ("> OBSERVED: slow (acme-review)\nASKS: make it fast\n", 2, "to ASKS:"),
        ("> OBSERVED: slow (acme-review)\n\nBLOCKS: make it fast\n", 3, "to BLOCKS:"),
        ("> ASKS: rename it (acme-review)\n\nThis must change.\n", 3, "'must change'"),
        ("> ASKS: rename it (acme-review)\nIt is a blocker.\n", 2, "'blocker'"),
        ("> ASKS: rename it (acme-review)\nBLOCKS: rename it\n", 2, "to BLOCKS:"),
        ("    > OBSERVED: in an indented block\n\n    Do not merge yet.\n", 3, "'Do not merge'"),
        ("> OBSERVED: a\n> more of the quote\n\nok so far\nand then fix it.\n", 5, "'fix it'"),
    ],
)
def test_a_relay_that_promotes_a_finding_is_flagged(
    flat: Path, relay: str, line: int, demand: str
) -> None:
    result = check_text(flat, relay)
    assert result.code == 1
    assert result.out.startswith(f"msg.txt:{line}: a relay promotes the ")
    assert demand in result.out


@pytest.mark.parametrize(
    "relay",
    [
        "> OBSERVED: slow (acme-review)\n\nRecorded in the changelog; no change made.\n",
        "> ASKS: rename it (acme-review)\n\nPlease fix: done in a1b2c3d.\n",
        "> BLOCKS: the migration drops a column (acme-review)\n\nMust fix, and fixed in a1b2c3d.\n",
        "> OBSERVED: slow (acme-review)\n\n## My own findings\n\nASKS: make it fast in io.py\n",
        "> OBSERVED: slow (acme-review)\n\nNoted.\n\nThis must change, for my own reason: a1b2.\n",
        "> a quote with no marker\n\nFix this.\n",
    ],
)
def test_a_faithful_relay_passes(flat: Path, relay: str) -> None:
    result = check_text(flat, relay)
    assert (result.code, result.out) == (0, "")


def test_everything_below_the_scissors_line_is_ignored(flat: Path) -> None:
    message = "Subject\n# ------------------------ >8 ------------------------\n+Blocker: in a diff\nBlocker: x\n"
    assert check_text(flat, message).code == 0


def test_crlf_and_undecodable_bytes_do_not_hide_a_problem(flat: Path) -> None:
    (flat / "msg.txt").write_bytes(b"caf\xe9\r\n\r\nBlocker: x\r\n")
    result = guard(flat, "msg.txt")
    assert result.code == 1 and result.out.startswith("msg.txt:3: look-alike marker 'Blocker:'")


def test_every_file_named_is_checked(flat: Path) -> None:
    (flat / "a.md").write_text("OBSERVED: fine\n")
    (flat / "b.md").write_text("ok\nask: no\n")
    result = guard(flat, "a.md", "b.md")
    assert result.code == 1
    assert result.out.splitlines()[0].startswith("b.md:2: look-alike marker 'ask:'")


def test_usage_errors_exit_2(flat: Path) -> None:
    assert guard(flat).code == 2
    result = guard(flat, "absent.txt")
    assert result.code == 2 and "cannot read" in result.err
    assert guard(flat, "--bogus").code == 2


# --- --root: the protocol document and the templates -------------------------------------


def test_this_repository_s_document_and_templates_pass_and_agree() -> None:
    result = run_program([sys.executable, "-B", str(GUARD), "--root", str(ROOT)], env={})
    assert (result.code, result.out, result.err) == (0, "", "")


def write_doc(root: Path, text: str) -> None:
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "agent-handoff.md").write_text(text)


def test_root_reads_only_the_protocol_document(flat: Path) -> None:
    write_doc(flat, f"# Card\n\n{DEFINITIONS}")
    (flat / "README.md").write_text("Blocker: not read under --root\n")
    assert guard(flat, "--root", ".").code == 0


def test_a_template_that_defines_a_marker_differently_is_flagged(flat: Path) -> None:
    write_doc(flat, f"# Card\n\n{DEFINITIONS}")
    lead = flat / "agents" / "lead.md"
    lead.write_text(
        lead.read_text().replace("ASKS: a change wanted, saying what and where.", "ASKS: anything.")
    )
    result = guard(flat, "--root", ".")
    assert result.code == 1
    assert "agents/lead.md:" in result.out
    assert "defines ASKS: differently from docs/agent-handoff.md:4" in result.out


def test_a_document_or_template_missing_a_definition_is_flagged(flat: Path) -> None:
    write_doc(flat, "# Card\n\nOBSERVED: something found and recorded. It licenses no change.\n")
    result = guard(flat, "--root", ".")
    assert result.code == 1
    assert "docs/agent-handoff.md: defines no ASKS:" in result.out
    write_doc(flat, f"# Card\n\n{DEFINITIONS}")
    (flat / "agents" / "extra.md").write_text(
        "OBSERVED: something found and recorded. It licenses no change.\n"
    )
    result = guard(flat, "--root", ".")
    assert "agents/extra.md: defines no BLOCKS:; docs/agent-handoff.md:5 defines it" in result.out


def test_root_checks_the_templates_by_the_line_rules(flat: Path) -> None:
    write_doc(flat, f"# Card\n\n{DEFINITIONS}")
    (flat / "agents" / "finder.md").write_text(DEFINITIONS + "MUST FIX: x\n")
    result = guard(flat, "--root", ".")
    assert result.code == 1 and "agents/finder.md:4: look-alike marker 'MUST FIX:'" in result.out


def test_root_needs_the_document_and_the_templates(flat: Path) -> None:
    result = guard(flat, "--root", ".")
    assert result.code == 2 and "agent-handoff.md" in result.err
    write_doc(flat, DEFINITIONS)
    shutil.rmtree(flat / "agents")
    result = guard(flat, "--root", ".")
    assert result.code == 2 and "no agent templates" in result.err


def test_the_guard_runs_flat_by_path(flat: Path) -> None:
    (flat / "msg.txt").write_text("x\n\nBlocker: y\n")
    script = flat / "validators" / GUARD.name
    # No PYTHONPATH: the guard needs nothing but the standard library.
    result = run_program(
        [sys.executable, "-B", "-S", str(script), "msg.txt"], cwd=flat, env={"PYTHONPATH": ""}
    )
    assert result.code == 1 and result.out.startswith("msg.txt:3: look-alike marker 'Blocker:'")


def test_the_console_script_runs_the_same_guard(flat: Path) -> None:
    (flat / "msg.txt").write_text("x\n\nBlocker: y\n")
    entry = "from pairgate.finding_vocabulary import console_main; console_main()"
    result = run_program([sys.executable, "-B", "-c", entry, "msg.txt"], cwd=flat)
    assert result.code == 1 and result.out.startswith("msg.txt:3: look-alike marker 'Blocker:'")
