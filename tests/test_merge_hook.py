"""The real merge hook, run the way Claude Code runs it: block-unapproved-merge.sh in a flat
directory made by ``pairgate deploy-hooks``, beside the three files a deployment supplies, with
real hook JSON on stdin. Exit 0 lets a command through; exit 2 blocks it (stderr says why)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.conftest import FIXTURE_CONFIG, FIXTURES, PAIRGATE, ROOT, agent_env, run_program
from tests.gate_world import World, approved_at_head, never_approved, outside_the_group
from tests.suite_configuration import RENAMED_CONFIG
from tests.test_command_reader import APP, ATTRIBUTED, HARMLESS

HOOK = "block-unapproved-merge.sh"
SUPPLIED = {
    "pairgate-config.json": FIXTURE_CONFIG,
    "_hooklib.sh": ROOT / "hooks" / "_hooklib.sh",
    "automation_mr_families.py": FIXTURES / "automation_mr_families.py",
}
INSTALL = "pairgate deploy-hooks --target .claude/hooks"  # the suite's hooks_install_command


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hooks directory made by deploy-hooks, plus the deployment's three files."""
    hooks = tmp_path_factory.mktemp("deployed")
    result = run_program(
        [*PAIRGATE, "deploy-hooks", "--target", str(hooks)],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 0, result.err
    for name, source in SUPPLIED.items():
        shutil.copy(source, hooks / name)
    return hooks


@pytest.fixture
def hooks(deployed: Path, tmp_path: Path) -> Path:
    """A fresh copy of the deployed directory, for a test to break."""
    copy = tmp_path / "hooks"
    shutil.copytree(deployed, copy)
    return copy


# The suite's own interpreter first: the one with the runtime dependencies (and no shim).
PYTHON_FIRST = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
HOME = Path(tempfile.gettempdir()) / "pairgate-hook-tests-home"  # where the bytecode cache goes


def hook_input(command: str, **extra: Any) -> str:
    """What Claude Code writes on a PreToolUse hook's stdin for the Bash tool."""
    return json.dumps(
        {
            "session_id": "0f6c2a4e",
            "transcript_path": "/home/agent/.claude/projects/x/0f6c2a4e.jsonl",
            "cwd": "/home/agent/work",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Run a command"},
            "tool_use_id": "toolu_01",
            **extra,
        }
    )


def run_hook(
    hooks: Path, stdin: str, env: dict[str, str] | None = None, path: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The hook as Claude Code starts it: by path, with the session's environment (no
    PYTHONPATH: the flat directory is all it has)."""
    base = {"PATH": path if path is not None else PYTHON_FIRST, "HOME": str(HOME)}
    return subprocess.run(
        [str(hooks / HOOK)],
        input=stdin,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def bash_only_path(tmp_path: Path) -> str:
    """A PATH with bash and nothing else: no python3."""
    only = tmp_path / "bash-only"
    only.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (only / "bash").symlink_to(bash)
    return str(only)


# -- the fast path ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", ["ls -la", "git status", "cd src && make test", "pytest -q tests/x.py"]
)
def test_a_command_that_cannot_name_a_merge_is_allowed_by_bash_alone(
    hooks: Path, tmp_path: Path, command: str
) -> None:
    result = run_hook(hooks, hook_input(command), path=bash_only_path(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")


# Quotes that bash removes: the text names neither glab nor merge, yet bash runs glab mr merge.
QUOTED_MERGE = "gl''ab mr me''rge {iid} -R {project}"


def test_a_quote_keeps_a_command_off_the_fast_path(hooks: Path, tmp_path: Path) -> None:
    command = QUOTED_MERGE.format(iid=1, project="acme/app")
    assert not re.search("glab|merge|accept", command, re.IGNORECASE)
    # With no python3 to go to, a command the fast path let through would exit 0.
    result = run_hook(hooks, hook_input(command), path=bash_only_path(tmp_path))
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


def test_a_quoted_merge_reaches_python_and_is_blocked(hooks: Path, sandbox: RunningSandbox) -> None:
    project, iid = never_approved(World(sandbox))
    command = QUOTED_MERGE.format(iid=iid, project=project)
    result = run_hook(hooks, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 2, result.stderr
    assert f"pairgate merge-check --mr {iid} --mr-project {project}" in result.stderr


def test_the_python_half_reads_the_configuration_beside_it_not_the_sessions(
    hooks: Path, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    """Run on its own (not through the bash half, which names the file beside it too): the
    session's PAIRGATE_CONFIG says cli_command pairgate, the file beside says acme-pg."""
    shutil.copy(RENAMED_CONFIG, hooks / "pairgate-config.json")
    project, iid = never_approved(World(sandbox))
    env = {**agent_env(sandbox), "PAIRGATE_CONFIG": str(FIXTURE_CONFIG), "HOME": str(HOME)}
    env["PATH"] = PYTHON_FIRST
    proc = subprocess.run(
        [sys.executable, "-B", str(hooks / "ownership.py"), "hook"],
        input=hook_input(f"glab mr merge {iid} -R {project}"),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"acme-pg merge-check --mr {iid} --mr-project {project}" in proc.stderr
    assert "pairgate merge-check" not in proc.stderr


@pytest.mark.parametrize("argument", ["--force", "--skip", "--override", "--allow", "allow"])
def test_no_argument_turns_the_hook_into_a_pass(hooks: Path, argument: str) -> None:
    """Claude Code starts the hook with no arguments; one given anyway changes nothing."""
    stdin = hook_input("glab mr merge 3 -R acme/app")
    proc = subprocess.run(
        [str(hooks / HOOK), argument],
        input=stdin,
        env={"PATH": PYTHON_FIRST, "HOME": str(HOME)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert run_hook(hooks, stdin).stderr == proc.stderr


def test_without_python_a_command_that_could_merge_is_blocked(hooks: Path, tmp_path: Path) -> None:
    result = run_hook(
        hooks, hook_input("glab mr merge 3 -R acme/app"), path=bash_only_path(tmp_path)
    )
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


@pytest.mark.parametrize("tail", [" && ls", " && glab mr merge 3 -R acme/app"])
def test_a_long_command_is_read_whole_and_decided_in_time(
    hooks: Path, tmp_path: Path, tail: str
) -> None:
    # The script reads stdin in 64 KiB chunks, and leaves long input to the reader: bash's own
    # regex matching is quadratic, and a hook that outlives Claude Code's timeout lets the
    # command through (run_hook's 60 s limit fails this test first).
    command = "echo " + "x" * 200_000 + tail
    result = run_hook(hooks, hook_input(command), path=bash_only_path(tmp_path))
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


def test_a_long_harmless_command_is_allowed_by_the_reader(hooks: Path) -> None:
    result = run_hook(hooks, hook_input("echo " + "x " * 100_000 + "&& ls"))
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize(
    "stdin",
    [
        # JSON escapes that spell glab, quotes and backslashes: never trusted by bash
        '{"tool_name":"Bash","tool_input":{"command":"\\u0067lab mr merge 3"}}',
        '{"tool_name":"Bash","tool_input":{"command":"gl\\\\ab mr merge 3"}}',
        '{"tool_name":"Bash","tool_input":{"command":"\\"glab\\" mr merge 3"}}',
        # two command keys: Python would read the last, so bash trusts neither
        '{"tool_name":"Bash","tool_input":{"command":"ls","command":"glab mr merge 3"}}',
        '{"tool_name":"Bash","tool_input":{"comm\\u0061nd":"glab mr merge 3"}}',
    ],
)
def test_json_the_fast_path_cannot_trust_goes_to_the_reader_and_blocks(
    hooks: Path, stdin: str
) -> None:
    result = run_hook(hooks, stdin)
    assert result.returncode == 2, result.stderr
    assert "pairgate:" in result.stderr


def test_the_command_is_tool_input_command_and_no_other_key(hooks: Path) -> None:
    stdin = '{"tool_name":"Bash","tool_input":{"command":"ls","x":{"command":"glab mr merge 3"}}}'
    assert run_hook(hooks, stdin).returncode == 0
    stdin = '{"tool_name":"Bash","x":{"command":"ls"},"tool_input":{"command":"glab mr merge 3"}}'
    assert run_hook(hooks, stdin).returncode == 2


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_name": "Bash"}'])
def test_hook_input_that_is_not_a_bash_call_blocks(hooks: Path, stdin: str) -> None:
    result = run_hook(hooks, stdin)
    assert result.returncode == 2
    assert "hook input" in result.stderr


def test_another_tool_is_not_the_hooks_business(hooks: Path) -> None:
    stdin = json.dumps({"tool_name": "Read", "tool_input": {"file_path": "glab-merge.md"}})
    assert run_hook(hooks, stdin).returncode == 0


# -- every failure blocks ----------------------------------------------------------------------------

MERGE = "glab mr merge 3 -R acme/app"


@pytest.mark.parametrize(
    "missing",
    [
        "validate-mr-carries-ownership-record.py",
        "_hooklib.sh",
        "automation_mr_families.py",
        "ownership.py",
    ],
)
def test_a_missing_file_blocks_naming_it_and_the_install_command(hooks: Path, missing: str) -> None:
    (hooks / missing).unlink()
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert missing in result.stderr
    assert INSTALL in result.stderr


def test_a_missing_configuration_is_told_in_words(hooks: Path) -> None:
    (hooks / "pairgate-config.json").unlink()
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "pairgate-config.json" in result.stderr
    assert "hooks install command" in result.stderr
    assert INSTALL not in result.stderr  # it cannot read the key


def test_a_missing_hook_script_is_named_by_the_python_half(hooks: Path) -> None:
    (hooks / HOOK).unlink()
    result = subprocess.run(
        [sys.executable, "-B", str(hooks / "ownership.py"), "hook"],
        input=hook_input(MERGE),
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert HOOK in result.stderr and INSTALL in result.stderr


def test_a_command_that_merges_nothing_passes_with_files_missing(hooks: Path) -> None:
    (hooks / "pairgate-config.json").unlink()
    (hooks / "automation_mr_families.py").unlink()
    assert run_hook(hooks, hook_input("glab mr view 3 -R acme/app")).returncode == 0
    (hooks / "ownership.py").unlink()
    assert run_hook(hooks, hook_input("make test")).returncode == 0


@pytest.mark.parametrize(
    ("config_text", "says"),
    [
        ("{not json", "not JSON"),
        ('{"tracker_project": "acme/tracker"}', "missing key"),
    ],
)
def test_a_bad_configuration_blocks(hooks: Path, config_text: str, says: str) -> None:
    (hooks / "pairgate-config.json").write_text(config_text)
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert says in result.stderr


def test_the_sessions_configuration_is_never_used(hooks: Path, tmp_path: Path) -> None:
    (hooks / "pairgate-config.json").write_text("{not json")
    result = run_hook(hooks, hook_input(MERGE), env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert result.returncode == 2
    assert "not JSON" in result.stderr


def test_an_injected_parser_failure_blocks(hooks: Path) -> None:
    # A module beside ownership.py shadows the real parser, as a broken install would.
    (hooks / "tree_sitter_bash.py").write_text("raise ImportError('the parser is broken')\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "could not decide" in result.stderr and "the parser is broken" in result.stderr


def test_a_crash_of_the_python_half_blocks(hooks: Path) -> None:
    (hooks / "ownership.py").write_text("raise SystemExit(1)\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "python3 exited 1" in result.stderr


def add_to_hooklib(hooks: Path, text: str) -> None:
    """The deployment's _hooklib.sh, with ``text`` appended."""
    with (hooks / "_hooklib.sh").open("a") as lib:
        lib.write(text)


def test_a_timeout_of_its_own_blocks(hooks: Path) -> None:
    (hooks / "ownership.py").write_text("import time\ntime.sleep(30)\n")
    add_to_hooklib(hooks, "hooklib_timeout=1\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "timed out after 1s" in result.stderr


def test_a_failing_preflight_blocks(hooks: Path) -> None:
    add_to_hooklib(hooks, "hooklib_preflight() { echo 'proxy not configured'; return 3; }\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "proxy not configured" in result.stderr


def test_a_hooklib_that_sets_errexit_cannot_turn_a_block_into_a_pass(hooks: Path) -> None:
    add_to_hooklib(hooks, "set -e\ntrap 'exit 0' EXIT\n")
    (hooks / "ownership.py").write_text("raise SystemExit(1)\n")
    assert run_hook(hooks, hook_input(MERGE)).returncode == 2


def test_gitlab_unreachable_blocks(hooks: Path, sandbox: RunningSandbox) -> None:
    env = agent_env(sandbox, PAIRGATE_TEST_GITLAB_URL="http://127.0.0.1:9")
    result = run_hook(hooks, hook_input(MERGE), env=env)
    assert result.returncode == 2
    assert "could not decide" in result.stderr


def test_gitlab_answering_errors_blocks(hooks: Path, sandbox: RunningSandbox) -> None:
    ref = approved_at_head(World(sandbox))
    sandbox.fault(path="merge_requests", status=500, count=10)
    result = run_hook(
        hooks, hook_input(f"glab mr merge {ref[1]} -R {ref[0]}"), env=agent_env(sandbox)
    )
    assert result.returncode == 2
    assert "could not decide" in result.stderr


# -- against the sandbox: the gate decides each merge found ---------------------------------------


def _aimed(template: str, project: str, iid: int, project_id: int) -> str:
    """A corpus command aimed at ``project!iid`` instead of acme/app!12."""
    text = template.replace("acme%2Fapp", project.replace("/", "%2F")).replace("acme/app", project)
    text = text.replace("projects/42/", f"projects/{project_id}/")
    return re.sub(r"(?<![\d\\x])12(?!\d)", str(iid), text)


@pytest.fixture
def approved(sandbox: RunningSandbox) -> tuple[str, int, int]:
    project, iid = approved_at_head(World(sandbox))
    project_id = int(sandbox.api("GET", "/projects/" + project.replace("/", "%2F"))["id"])
    return project, iid, project_id


ACME_APP_CORPUS = [c for c, merges in ATTRIBUTED if merges == APP]


@pytest.mark.slow
def test_disguises_of_an_approved_merge_are_allowed(
    hooks: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    # A sample: an allowed merge cannot tell a good reading from a missed one; the unapproved
    # run below is the one that proves each disguise is read.
    env = agent_env(sandbox)
    refused = {}
    sample = ACME_APP_CORPUS[::6]
    for template in [*sample, "glab api -X PUT projects/42/merge_requests/12/merge"]:
        command = _aimed(template, *approved)
        result = run_hook(hooks, hook_input(command), env=env)
        if result.returncode != 0:
            refused[command] = result.stderr
    assert refused == {}


@pytest.mark.slow
def test_every_disguise_of_an_unapproved_merge_is_blocked_naming_it(
    hooks: Path, sandbox: RunningSandbox
) -> None:
    project, iid = never_approved(World(sandbox))
    project_id = int(sandbox.api("GET", "/projects/" + project.replace("/", "%2F"))["id"])
    env = agent_env(sandbox)
    passed = []
    assert len(ACME_APP_CORPUS) >= 40
    for template in [*ACME_APP_CORPUS, "glab api -X PUT projects/42/merge_requests/12/merge"]:
        command = _aimed(template, project, iid, project_id)
        result = run_hook(hooks, hook_input(command), env=env)
        if result.returncode != 2 or f"{project}!{iid}" not in result.stderr:
            passed.append(command)
    assert passed == []


def test_the_refusal_says_what_is_wrong_and_what_to_run(
    hooks: Path, sandbox: RunningSandbox
) -> None:
    project, iid = never_approved(World(sandbox))
    result = run_hook(
        hooks, hook_input(f"glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    assert result.returncode == 2
    assert "approve" in result.stderr
    assert f"pairgate merge-check --mr {iid} --mr-project {project}" in result.stderr
    assert "Background: docs/agent-handoff.md." in result.stderr


def test_an_approved_merge_next_to_an_unapproved_one_is_blocked_naming_the_unapproved(
    hooks: Path, sandbox: RunningSandbox
) -> None:
    world = World(sandbox)
    good, bad = approved_at_head(world), never_approved(world)
    command = f"glab mr merge {good[1]} -R {good[0]} && glab mr merge {bad[1]} -R {bad[0]}"
    result = run_hook(hooks, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 2
    assert f"{bad[0]}!{bad[1]}" in result.stderr
    assert f"{good[0]}!{good[1]} may merge" not in result.stderr


def test_a_merge_outside_the_group_is_allowed(hooks: Path, sandbox: RunningSandbox) -> None:
    project, iid = outside_the_group(World(sandbox))
    result = run_hook(
        hooks, hook_input(f"glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_commands_are_allowed(hooks: Path, command: str) -> None:
    # No GitLab is configured at all: nothing here needs a verdict.
    result = run_hook(hooks, hook_input(command))
    assert result.returncode == 0, result.stderr


def test_a_missing_currency_module_only_prints_a_note(
    hooks: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    (hooks / "deployed_currency.py").unlink()
    project, iid, _ = approved
    result = run_hook(
        hooks, hook_input(f"glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    assert result.returncode == 0
    assert "currency was not established" in result.stderr


def test_a_merge_decision_reads_gitlab_only_for_the_merges_found(
    hooks: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    project, iid, _ = approved
    sandbox.clear_requests()
    run_hook(
        hooks, hook_input(f"echo start && glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    paths = [r["path"] for r in sandbox.requests()]
    assert any(f"merge_requests/{iid}" in p for p in paths)
    assert not any(p.rstrip("/").endswith("/merge") for p in paths)  # it never merges itself


@pytest.fixture(autouse=True)
def _no_stray_pyc(hooks: Path) -> Iterator[None]:
    yield
    assert not list(hooks.glob("__pycache__")), "the hook must not write into the hooks directory"
