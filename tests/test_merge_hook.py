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
from tests.kit.gate_cases import approved_at_head, never_approved
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, ROOT
from tests.kit.run import PAIRGATE, agent_env, run_program
from tests.kit.suite_configuration import RENAMED_CONFIG
from tests.kit.world import World

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
    # Its first merge check, which compiles the reader into the hook's cache (cold, as every
    # new deployment starts: test_a_new_directory_compiles_the_reader_outside_it).
    first = run_hook(hooks, hook_input("glab mr merge 3 -R acme/app"))
    assert first.returncode == 2, first.stderr
    return hooks


@pytest.fixture
def hooks(deployed: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the deployed directory, for a test to break. Tests that break nothing
    run the module's ``deployed`` directory itself: one path, so the hook's bytecode cache
    (keyed by the source's path) is compiled once, not once per test. The copy starts with
    the cache the deployed directory has, as a deployment has after its first merge check (a
    file a test rewrites no longer matches it and is compiled again, as the hook would):
    compiling the reader again costs each of these tests most of a second."""
    copy = tmp_path / "hooks"
    shutil.copytree(deployed, copy)  # copy2 keeps the sources' times, which the cache records
    for compiled in cache_dir(deployed).glob("*.pyc"):
        cache_dir(copy).mkdir(parents=True, exist_ok=True)
        shutil.copy2(compiled, cache_dir(copy))
    yield copy
    assert not list(copy.glob("__pycache__")), "the hook must not write into the hooks directory"
    shutil.rmtree(cache_dir(copy), ignore_errors=True)  # 600 KB a test, under a HOME that stays


# The suite's own interpreter first: the one with the runtime dependencies (and no shim).
PYTHON_FIRST = os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
HOME = Path(tempfile.gettempdir()) / "pairgate-hook-tests-home"  # where the bytecode cache goes


def cache_dir(hooks: Path) -> Path:
    """Where the hook's python half keeps the compiled modules of ``hooks`` (its
    pycache_prefix, under HOME, mirrors the directory's absolute path)."""
    return HOME.joinpath(".cache", "pairgate", "pycache", *Path(os.path.abspath(hooks)).parts[1:])


# JSON.stringify's spacing (what Claude Code writes), json.dumps's, and an indented form.
COMPACT: dict[str, Any] = {"separators": (",", ":")}
SPACINGS: dict[str, dict[str, Any]] = {
    "compact": COMPACT,
    "spaced": {"separators": (", ", ": ")},
    "indented": {"indent": 2},
}


def hook_input(command: str, *, spacing: dict[str, Any] = COMPACT, **extra: Any) -> str:
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
        },
        **spacing,
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


@pytest.mark.parametrize("spacing", SPACINGS)
@pytest.mark.parametrize(
    "command",
    ["ls -la", "git status", "cd src && make test", "pytest -q tests/x.py", "make\nmake test"],
)
def test_a_command_that_cannot_name_a_merge_is_allowed_by_bash_alone(
    deployed: Path, tmp_path: Path, command: str, spacing: str
) -> None:
    stdin = hook_input(command, spacing=SPACINGS[spacing])
    result = run_hook(deployed, stdin, path=bash_only_path(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")


@pytest.mark.parametrize("spacing", SPACINGS)
@pytest.mark.parametrize(
    "command",
    [
        "glab mr merge 3",
        "GLAB MR MERGE 3",
        "ls && gh pr merge",
        'ls "x"',
        "ls \\x",
        "ls $HOME",
        "echo $(printf glab) mr me''rge 3",
    ],
)
def test_bash_leaves_a_command_that_could_name_a_merge_to_python(
    deployed: Path, tmp_path: Path, command: str, spacing: str
) -> None:
    # With no python3 to go to, a command the fast path let through would exit 0.
    stdin = hook_input(command, spacing=SPACINGS[spacing])
    result = run_hook(deployed, stdin, path=bash_only_path(tmp_path))
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


@pytest.mark.parametrize(
    "stdin",
    [
        # A key that ends in "command" or "tool_name" (an escaped quote before the name) makes
        # the name occur twice: neither is trusted.
        '{"tool_name":"Bash","tool_input":{"x\\"command":"ls","command":"glab mr merge 3"}}',
        '{"tool_name":"mcp__glab__glab_mr_merge","tool_input":{"x\\"tool_name":"Bash","command":"ls"}}',
        # The command's string ends at an escaped quote, or at none: cut short.
        '{"tool_name":"Bash","tool_input":{"command":"ls \\"; glab mr merge 3"}}',
        '{"tool_name":"Bash","tool_input":{"command":"ls',
        '{"tool_name":"Bash","tool_input":{"comm',
        # The command is not a string.
        '{"tool_name":"Bash","tool_input":{"command":["ls"]}}',
        '{"tool_name":"Bash","tool_input":{"command":null}}',
        # Names of another case are other keys.
        '{"tool_name":"Bash","tool_input":{"Command":"ls"}}',
        '{"tool_name":"bash","tool_input":{"command":"ls"}}',
    ],
)
def test_compact_json_the_fast_path_cannot_trust_goes_to_python(
    deployed: Path, tmp_path: Path, stdin: str
) -> None:
    result = run_hook(deployed, stdin, path=bash_only_path(tmp_path))
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


@pytest.mark.parametrize(
    "stdin",
    [
        '{"tool_name":"Bash","tool_input":{"command":"ls',
        '{"tool_name":"Bash","tool_input":{"comm',
        '{"tool_name":"Bash","tool_input":{"command":["ls"]}}',
        '{"tool_name": "Bash", "tool_input": {"command": "ls',
        "{",
    ],
)
def test_malformed_json_is_blocked_by_python(deployed: Path, stdin: str) -> None:
    # (Bash reads the command, not the whole input: JSON cut short after the command's string
    # still has a command that cannot name a merge, and is allowed.)
    result = run_hook(deployed, stdin)
    assert result.returncode == 2, result.stderr
    assert "hook input" in result.stderr


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
def test_no_argument_turns_the_hook_into_a_pass(hooks: Path, argument: str, tmp_path: Path) -> None:
    """Claude Code starts the hook with no arguments; one given anyway changes nothing. (Each
    run has a state directory of its own: the currency note comes once a day per directory.)"""
    stdin = hook_input("glab mr merge 3 -R acme/app")
    proc = subprocess.run(
        [str(hooks / HOOK), argument],
        input=stdin,
        env={"PATH": PYTHON_FIRST, "HOME": str(HOME), "XDG_STATE_HOME": str(tmp_path / "a")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    again = run_hook(hooks, stdin, env={"XDG_STATE_HOME": str(tmp_path / "b")})
    assert again.stderr == proc.stderr


def test_without_python_a_command_that_could_merge_is_blocked(
    deployed: Path, tmp_path: Path
) -> None:
    result = run_hook(
        deployed, hook_input("glab mr merge 3 -R acme/app"), path=bash_only_path(tmp_path)
    )
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


@pytest.mark.parametrize("tail", [" && ls", " && glab mr merge 3 -R acme/app"])
def test_a_long_command_is_read_whole_and_decided_in_time(
    deployed: Path, tmp_path: Path, tail: str
) -> None:
    # The script reads stdin in 64 KiB chunks, and leaves long input to the reader: bash's own
    # regex matching is quadratic, and a hook that outlives Claude Code's timeout lets the
    # command through (run_hook's 60 s limit fails this test first).
    command = "echo " + "x" * 200_000 + tail
    result = run_hook(deployed, hook_input(command), path=bash_only_path(tmp_path))
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr


def test_a_long_harmless_command_is_allowed_by_the_reader(deployed: Path) -> None:
    result = run_hook(deployed, hook_input("echo " + "x " * 100_000 + "&& ls"))
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
    deployed: Path, stdin: str
) -> None:
    result = run_hook(deployed, stdin)
    assert result.returncode == 2, result.stderr
    assert "pairgate:" in result.stderr


def test_the_command_is_tool_input_command_and_no_other_key(deployed: Path) -> None:
    stdin = '{"tool_name":"Bash","tool_input":{"command":"ls","x":{"command":"glab mr merge 3"}}}'
    assert run_hook(deployed, stdin).returncode == 0
    stdin = '{"tool_name":"Bash","x":{"command":"ls"},"tool_input":{"command":"glab mr merge 3"}}'
    assert run_hook(deployed, stdin).returncode == 2


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_name": "Bash"}'])
def test_hook_input_that_is_not_a_bash_call_blocks(deployed: Path, stdin: str) -> None:
    result = run_hook(deployed, stdin)
    assert result.returncode == 2
    assert "hook input" in result.stderr


def test_another_tool_is_not_the_hooks_business(deployed: Path) -> None:
    stdin = json.dumps({"tool_name": "Read", "tool_input": {"file_path": "glab-merge.md"}})
    assert run_hook(deployed, stdin).returncode == 0


def test_a_new_directory_compiles_the_reader_outside_it(deployed: Path, tmp_path: Path) -> None:
    # Cold, as a new deployment's first check is: no compiled reader anywhere yet.
    cold = tmp_path / "hooks"
    shutil.copytree(deployed, cold)
    assert not cache_dir(cold).exists()
    result = run_hook(cold, hook_input("glab mr merge 3 -R acme/app"))
    assert result.returncode == 2, result.stderr
    assert "pairgate:" in result.stderr
    assert (cache_dir(cold) / f"ownership.{sys.implementation.cache_tag}.pyc").is_file()
    assert sorted(p.name for p in cold.iterdir()) == sorted(p.name for p in deployed.iterdir())
    shutil.rmtree(cache_dir(cold))


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


def test_a_crash_blocks_and_leaves_its_traceback_in_the_crash_log(
    hooks: Path, tmp_path: Path
) -> None:
    """An unexpected error (here the parser's module failing as it loads) still blocks, exit 2;
    its traceback goes to the crash log under the state directory, whose path the hook prints."""
    (hooks / "tree_sitter_bash.py").write_text("raise RuntimeError('the parser is broken')\n")
    state = tmp_path / "state"
    result = run_hook(hooks, hook_input(MERGE), env={"XDG_STATE_HOME": str(state)})
    assert result.returncode == 2
    log = state / "pairgate" / "pairgate.log"
    assert result.stderr == (
        "pairgate: the merge hook could not decide, so it blocks: RuntimeError: the parser is "
        f"broken\npairgate: the traceback is in {log}\n"
    )
    text = log.read_text(encoding="utf-8")
    assert "program: the merge hook (python3 ownership.py hook)\n" in text
    assert f'"{hooks / "tree_sitter_bash.py"}", line 1' in text
    assert text.endswith("RuntimeError: the parser is broken\n")


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


@pytest.mark.parametrize("status", [1, 3, 126])
def test_a_failure_past_the_fast_path_blocks(hooks: Path, status: int) -> None:
    # The EXIT guard is set once the fast path is done: a hooklib that ends the script with
    # another status (an error of its own, or a stray exit) still blocks.
    add_to_hooklib(hooks, f"exit {status}\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert f"the merge hook failed (status {status})" in result.stderr


def test_a_hooklib_that_sets_errexit_cannot_turn_a_block_into_a_pass(hooks: Path) -> None:
    add_to_hooklib(hooks, "set -e\ntrap 'exit 0' EXIT\n")
    (hooks / "ownership.py").write_text("raise SystemExit(1)\n")
    assert run_hook(hooks, hook_input(MERGE)).returncode == 2


def test_gitlab_unreachable_blocks(deployed: Path, sandbox: RunningSandbox) -> None:
    env = agent_env(sandbox, PAIRGATE_TEST_GITLAB_URL="http://127.0.0.1:9")
    result = run_hook(deployed, hook_input(MERGE), env=env)
    assert result.returncode == 2
    assert "could not decide" in result.stderr


def test_gitlab_answering_errors_blocks(deployed: Path, sandbox: RunningSandbox) -> None:
    ref = approved_at_head(World(sandbox))
    sandbox.fault(path="merge_requests", status=500, count=10)
    result = run_hook(
        deployed, hook_input(f"glab mr merge {ref[1]} -R {ref[0]}"), env=agent_env(sandbox)
    )
    assert result.returncode == 2
    assert "could not decide" in result.stderr


@pytest.fixture(autouse=True)
def _no_stray_pyc(deployed: Path) -> Iterator[None]:
    yield
    assert not list(deployed.glob("__pycache__")), (
        "the hook must not write into the hooks directory"
    )
