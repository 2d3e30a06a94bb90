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
from pairgate.standalone.command_reader.read import read_command
from tests.kit.gate_cases import approved_at_head, never_approved, outside_the_group
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, ROOT
from tests.kit.run import PAIRGATE, agent_env, run_program
from tests.kit.suite_configuration import RENAMED_CONFIG
from tests.kit.world import World
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


# -- against the sandbox: the gate decides each merge found ---------------------------------------


def _aimed(template: str, project: str, iid: int, project_id: int) -> str:
    """A corpus command aimed at ``project!iid`` instead of acme/app!12."""
    text = template.replace("acme%2Fapp", project.replace("/", "%2F")).replace("acme/app", project)
    text = text.replace("projects/42/", f"projects/{project_id}/")
    text = re.sub(r"(?<![\d\\x])012(?!\d)", f"0{iid}", text)
    return re.sub(r"(?<![\d\\x])12(?!\d)", str(iid), text)


@pytest.fixture
def approved(sandbox: RunningSandbox) -> tuple[str, int, int]:
    project, iid = approved_at_head(World(sandbox))
    project_id = int(sandbox.api("GET", "/projects/" + project.replace("/", "%2F"))["id"])
    return project, iid, project_id


def head_of(sandbox: RunningSandbox, project: str, iid: int) -> str:
    path = f"/projects/{project.replace('/', '%2F')}/merge_requests/{iid}"
    return str(sandbox.api("GET", path)["sha"])


# The hook's Python half, many calls per process: what the deployed ownership.py decides for
# each hook input, exactly as `ownership.py hook` would (hook_main), without a Python start per
# command. The script itself is run by the tests of what the script does.
DRIVER = """
import io, json, os, sys
sys.path.insert(0, sys.argv[1])
import ownership
for line in sys.stdin:
    err = io.StringIO()
    ctx = ownership.Context(env=dict(os.environ), stdout=io.StringIO(), stderr=err)
    code = ownership.hook_main(ctx, io.StringIO(json.loads(line)))
    print(json.dumps([code, err.getvalue()]), flush=True)
"""


def decide_many(hooks: Path, stdins: list[str], env: dict[str, str]) -> list[tuple[int, str]]:
    """(exit code, stderr) of the hook's Python half for each hook input, in one process."""
    result = subprocess.run(
        [sys.executable, "-E", "-P", "-B", "-c", DRIVER, str(hooks)],
        input="".join(json.dumps(s) + "\n" for s in stdins),
        env={"PATH": PYTHON_FIRST, "HOME": str(HOME), **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [(int(code), str(err)) for code, err in map(json.loads, result.stdout.splitlines())]


ACME_APP_CORPUS = [c for c, merges in ATTRIBUTED if merges == APP]
PLACEHOLDER = "c" * 40  # stands for the approved head until the command is aimed


def _with_head(template: str) -> str | None:
    """The corpus command with the head bound (--sha, ?sha=, sha:), when one spelling reads so."""
    variants = [
        re.sub(r"(-R ?|--repo[= ])acme/app", rf"\g<0> --sha {PLACEHOLDER}", template, count=1),
        re.sub(r"(merge_requests/12/merge|merge_requests/12)(\?)", rf"\1?sha={PLACEHOLDER}&", template),
        re.sub(r"(merge_requests/12/merge|merge_trains/merge_requests/12)(?=['\" ]|$)",
               rf"\1?sha={PLACEHOLDER}", template),
        template.replace('iid: "12"', f'iid: "12", sha: "{PLACEHOLDER}"'),
        template + f" --sha {PLACEHOLDER}",
    ]  # fmt: skip
    for variant in variants:
        reading = read_command(variant)
        if (
            reading.merges
            and not reading.problems()
            and all(m.shas == (PLACEHOLDER,) for m in reading.merges)
        ):
            return variant
    return None


BOUND_CORPUS = [v for v in map(_with_head, ACME_APP_CORPUS) if v is not None]


@pytest.mark.slow
def test_every_disguise_of_an_approved_merge_bound_to_its_head_is_allowed(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    assert len(BOUND_CORPUS) >= 120, len(BOUND_CORPUS)  # the binding applies to the disguises
    head = head_of(sandbox, approved[0], approved[1])
    commands = [_aimed(v, *approved).replace(PLACEHOLDER, head) for v in BOUND_CORPUS]
    decided = decide_many(deployed, [hook_input(c) for c in commands], agent_env(sandbox))
    refused = {c: err for c, (code, err) in zip(commands, decided, strict=True) if code != 0}
    assert refused == {}


def test_an_approved_merge_is_decided_without_requests_or_jsonschema(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    """Importing requests, urllib3 or jsonschema cost a merge decision more than the rest of
    its work: the hook's reader asks GitLab through http.client (gitlab_once.OneAttempt) and
    checks records with the fast schema check, and leaves them to what fails or is refused.
    Nor does it import argparse: it reads no arguments (doors.arg_parser imports it)."""
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    driver = DRIVER + "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    stdin = json.dumps(hook_input(f"glab mr merge {iid} -R {project} --sha {head}")) + "\n"
    result = subprocess.run(
        [sys.executable, "-E", "-P", "-B", "-c", driver, str(deployed)],
        input=stdin,
        env={"PATH": PYTHON_FIRST, "HOME": str(HOME), **agent_env(sandbox)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    decided, imported = result.stdout.splitlines()
    assert json.loads(decided)[0] == 0, decided  # allowed: approved, and bound to its head
    assert {"requests", "urllib3", "jsonschema", "argparse"} & set(json.loads(imported)) == set()


@pytest.mark.slow
def test_every_disguise_of_an_approved_merge_that_names_no_head_is_blocked(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    # Time of check, time of use: a merge that does not carry the approved head could merge a
    # commit pushed after the check. The refusal prints the command that binds it.
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    commands = [_aimed(t, *approved) for t in ACME_APP_CORPUS]
    decided = decide_many(deployed, [hook_input(c) for c in commands], agent_env(sandbox))
    passed = [
        c
        for c, (code, err) in zip(commands, decided, strict=True)
        if code != 2 or f"glab mr merge {iid} -R {project} --sha {head}" not in err
    ]
    assert passed == []


@pytest.mark.slow
def test_every_disguise_of_an_unapproved_merge_is_blocked_naming_it(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    project, iid = never_approved(World(sandbox))
    project_id = int(sandbox.api("GET", "/projects/" + project.replace("/", "%2F"))["id"])
    assert len(ACME_APP_CORPUS) >= 40
    templates = [*ACME_APP_CORPUS, "glab api -X PUT projects/42/merge_requests/12/merge"]
    commands = [_aimed(t, project, iid, project_id) for t in templates]
    decided = decide_many(deployed, [hook_input(c) for c in commands], agent_env(sandbox))
    passed = [
        c
        for c, (code, err) in zip(commands, decided, strict=True)
        if code != 2 or f"{project}!{iid}" not in err
    ]
    assert passed == []


def test_the_python_half_decides_in_one_process_as_the_script_does(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    # The batch above is only as good as its agreement with the real script.
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    commands = [
        f"glab mr merge {iid} -R {project} --sha {head}",
        f"glab mr merge {iid} -R {project}",
        "glab tofu 1",
        "git status",
    ]
    env = agent_env(sandbox)
    batch = decide_many(deployed, [hook_input(c) for c in commands], env)
    script = [run_hook(deployed, hook_input(c), env=env) for c in commands]
    assert [code for code, _ in batch] == [r.returncode for r in script] == [0, 2, 2, 0]


def test_the_refusal_says_what_is_wrong_and_what_to_run(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    project, iid = never_approved(World(sandbox))
    result = run_hook(
        deployed, hook_input(f"glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    assert result.returncode == 2
    assert "approve" in result.stderr
    assert f"pairgate merge-check --mr {iid} --mr-project {project}" in result.stderr
    assert "Background: docs/agent-handoff.md." in result.stderr


def test_an_approved_merge_next_to_an_unapproved_one_is_blocked_naming_the_unapproved(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    world = World(sandbox)
    good, bad = approved_at_head(world), never_approved(world)
    command = f"glab mr merge {good[1]} -R {good[0]} && glab mr merge {bad[1]} -R {bad[0]}"
    result = run_hook(deployed, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 2
    assert f"{bad[0]}!{bad[1]}" in result.stderr
    assert f"{good[0]}!{good[1]} may merge" not in result.stderr


def test_a_merge_outside_the_group_is_allowed(deployed: Path, sandbox: RunningSandbox) -> None:
    project, iid = outside_the_group(World(sandbox))
    result = run_hook(
        deployed, hook_input(f"glab mr merge {iid} -R {project}"), env=agent_env(sandbox)
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_commands_are_allowed(deployed: Path, command: str) -> None:
    # No GitLab is configured at all: nothing here needs a verdict.
    result = run_hook(deployed, hook_input(command))
    assert result.returncode == 0, result.stderr


def test_a_missing_currency_module_only_prints_a_note(
    hooks: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    (hooks / "deployed_currency.py").unlink()
    project, iid, _ = approved
    command = f"glab mr merge {iid} -R {project} --sha {head_of(sandbox, project, iid)}"
    result = run_hook(hooks, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 0
    assert "currency was not established" in result.stderr


def test_a_merge_decision_reads_gitlab_only_for_the_merges_found(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    project, iid, _ = approved
    sandbox.clear_requests()
    run_hook(
        deployed,
        hook_input(f"echo start && glab mr merge {iid} -R {project}"),
        env=agent_env(sandbox),
    )
    paths = [r["path"] for r in sandbox.requests()]
    assert any(f"merge_requests/{iid}" in p for p in paths)
    assert not any(p.rstrip("/").endswith("/merge") for p in paths)  # it never merges itself


@pytest.fixture(autouse=True)
def _no_stray_pyc(deployed: Path) -> Iterator[None]:
    yield
    assert not list(deployed.glob("__pycache__")), (
        "the hook must not write into the hooks directory"
    )


# -- this round's doors, each through the real script ---------------------------------------------

HOST = "gitlab.example.com"
GQL = 'mutation { mergeRequestAccept(input: {projectPath: "acme/app", iid: "12", sha: "%s"}) { errors } }'

# Each merges acme/app!12 (aimed at an approved merge request) without its approved head bound,
# so the hook blocks it and prints the merge that binds it: proof that the script reads it.
UNBOUND_MERGES = [
    "git push origin feature && glab mr merge 12 -R acme/app",  # time of check, time of use
    "glab mr merge 12 -R acme/app --sha 0000000000000000000000000000000000000000",
    'glab mr merge 12 -R acme/app --sha "$(git rev-parse HEAD)"',
    "glab mr merge 12 -R acme/app --auto-merge",
    "glab alias set tofu 'mr merge' && glab tofu 12 -R acme/app",
    "glab mr merge +12 -R acme/app",
    f"glab mr merge HTTPS://{HOST}/acme/app/-/merge_requests/12",
    f"glab mr merge //{HOST}/acme/app/-/merge_requests/12",
    f"glab api -X PUT HTTPS://{HOST}/gitlab/api/v4/projects/acme%2Fapp/merge_requests/12/merge",
    f"glab api https://{HOST}/api/graphql -f query='{GQL % ('0' * 40)}'",
    "cp /usr/bin/glab /tmp/g && /tmp/g api -X PUT projects/acme%2Fapp/merge_requests/12/merge",
    "script -qc 'glab mr merge 12 -R acme/app' /dev/null",
    "su -lc 'glab mr merge 12 -R acme/app' bot",
    "echo 'glab mr merge 12 -R acme/app' | sudo -s",
    "flock /tmp/lock -c 'glab mr merge 12 -R acme/app'",
    "tmux new-session -d 'glab mr merge 12 -R acme/app'",
    "source /dev/stdin <<< 'glab mr merge 12 -R acme/app'",
    "git -c alias.x='!glab mr merge 12 -R acme/app' x",
    # (`git config alias.x ...` defines an alias for later commands too: the reading blocks it)
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!glab mr merge 12 -R acme/app' git x",
    "cat > m.sh <<'EOF'\nglab mr merge 12 -R acme/app\nEOF\nbash m.sh",
    "echo 'glab mr merge 12 -R acme/app' > m.sh; sh m.sh",
    "printf 'gl\\141b mr m\\x65rge 12 -R acme/app\\n' > m.sh; . ./m.sh",
    "make -f - <<'EOF'\nall:\n\t@glab mr merge 12 -R acme/app\nEOF",
    "glab mr note 12 -R acme/app -m '/merge'",
    "glab api -X POST projects/acme%2Fapp/merge_requests/12/notes -f body=/merge",
]


@pytest.mark.parametrize("template", UNBOUND_MERGES)
def test_a_merge_that_does_not_bind_the_approved_head_is_blocked_with_the_command_that_does(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int], template: str
) -> None:
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    result = run_hook(deployed, hook_input(_aimed(template, *approved)), env=agent_env(sandbox))
    assert result.returncode == 2
    assert f"glab mr merge {iid} -R {project} --sha {head}" in result.stderr


@pytest.mark.parametrize(
    "template",
    [
        "glab mr merge +12 -R acme/app --sha HEAD_SHA",
        "glab mr merge 12 -R acme/app --auto-merge=true --sha HEAD_SHA",
        "glab api -X PUT 'projects/acme%2Fapp/merge_requests/12/merge?sha=HEAD_SHA'",
        f"glab api https://{HOST}/api/graphql -f query='{GQL % 'HEAD_SHA'}'",
        "script -qc 'glab mr merge 12 -R acme/app --sha HEAD_SHA' /dev/null",
        "glab api -X POST projects/acme%2Fapp/merge_requests/12/notes -f body=/merge "
        "-f merge_request_diff_head_sha=HEAD_SHA",
    ],
)
def test_a_merge_bound_to_the_approved_head_is_allowed(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int], template: str
) -> None:
    head = head_of(sandbox, approved[0], approved[1])
    command = _aimed(template, *approved).replace("HEAD_SHA", head)
    result = run_hook(deployed, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 0, result.stderr


# Blocked by the reading alone, before GitLab is asked (no GitLab is configured at all).
READ_BLOCKED = [
    ("glab tofu 1 -R acme/app", "alias could expand"),
    ("glab issues", "alias could expand"),
    ("glab work-items list", "alias could expand"),
    ("glab alias set -- --version 'mr merge 1 -R acme/app'", "named like a flag"),
    ("glab mr merge ２ -R acme/app", "names a branch"),
    ("find /usr/bin -name 'gl*b' -exec {} mr merge 12 -R acme/app \\;", "find runs the files"),
    ("python3 -c \"import os; os.system('glab mr          merge 12 -R acme/app')\"", "names a glab merge"),
    ("base64 -d <<< 'Z2xhYg==' > m.sh; bash m.sh", "file this command writes"),
    ("git push -o merge_request.merge_when_pipeline_succeeds", "cannot tell which commit"),
    ("git -c push.pushOption=merge_request.auto_merge push origin feature", "resolves to a commit"),
    ("git config push.pushOption merge_request.auto_merge", "sets push.pushOption"),
    # a git alias kept for later commands, where `git ship` is read without its definition
    ("git config alias.ship '!gl\"\"ab mr m\"\"erge 1 -R acme/app'", "defines the git alias ship, which runs"),
    ("git config set --global alias.ship '!gl\"\"ab mr m\"\"erge 1 -R acme/app'", "defines the git alias ship"),
    ("git config --file ~/.gitconfig alias.ship '!gl\"\"ab mr m\"\"erge 1 -R acme/app'", "defines the git alias ship"),
    ("git config alias.ship '-c alias.x=!gl\"\"ab\\ mr\\ m\"\"erge\\ 1\\ -R\\ acme/app x'", "defines the git alias ship"),
    ("export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.ship GIT_CONFIG_VALUE_0='!gl\"\"ab mr m\"\"erge 1 -R acme/app'; git ship",
     "which defines a git alias"),
    # sudo -s runs the program $SHELL names
    ("echo 'gl\"\"ab mr m\"\"erge 1 -R acme/app' > s.sh; export SHELL=./s.sh; sudo -s true",
     "which this command sets elsewhere"),
    ("echo " + "$(echo " * 1600 + "hi" + ")" * 1600, "the reader's budget"),
]  # fmt: skip


@pytest.mark.parametrize(("command", "why"), READ_BLOCKED, ids=[c[:60] for c, _ in READ_BLOCKED])
def test_a_door_the_reading_alone_blocks_is_blocked_by_the_script(
    deployed: Path, command: str, why: str
) -> None:
    result = run_hook(deployed, hook_input(command))
    assert result.returncode == 2
    assert why in result.stderr


def test_the_end_to_end_time_of_check_is_closed_by_the_sha(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    # Approved at X; the hook allows the merge bound to X; Y is pushed before it runs; the merge
    # glab then makes (PUT .../merge with sha=X, mr_merge.go) fails at GitLab and main stays.
    world = World(sandbox)
    project, iid = approved_at_head(world)
    encoded = project.replace("/", "%2F")
    mr = sandbox.api("GET", f"/projects/{encoded}/merge_requests/{iid}")
    x = mr["sha"]
    command = f"glab mr merge {iid} -R {project} --sha {x}"
    assert run_hook(deployed, hook_input(command), env=agent_env(sandbox)).returncode == 0
    main = sandbox.api("GET", f"/projects/{encoded}/repository/branches/main")["commit"]["id"]
    y = world.push(project, mr["source_branch"])
    merged = sandbox.request(
        "PUT", f"/projects/{encoded}/merge_requests/{iid}/merge", "maintainer", json={"sha": x}
    )
    assert merged.status_code == 409
    assert y in merged.json()["message"]
    assert (
        sandbox.api("GET", f"/projects/{encoded}/repository/branches/main")["commit"]["id"] == main
    )
    # and the same command is refused now: the approval names X, the head is Y
    result = run_hook(deployed, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 2
    assert y in result.stderr


# -- push options ------------------------------------------------------------------------------------


def test_a_push_arming_auto_merge_at_the_approved_head_is_allowed_and_at_another_blocked(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    world = World(sandbox)
    project, iid = approved_at_head(world)
    mr = sandbox.api("GET", f"/projects/{project.replace('/', '%2F')}/merge_requests/{iid}")
    url = f"{sandbox.url}/{project}.git"
    push = f"git push {url} {{sha}}:refs/heads/{mr['source_branch']} -o merge_request.auto_merge"
    env = agent_env(sandbox)
    assert run_hook(deployed, hook_input(push.format(sha=mr["sha"])), env=env).returncode == 0
    other = run_hook(deployed, hook_input(push.format(sha="1" * 40)), env=env)
    assert other.returncode == 2
    assert f"arms auto-merge of {project}!{iid} at {'1' * 40}" in other.stderr


def test_a_push_to_a_named_remote_is_read_from_the_repository_when_it_is_alone(
    deployed: Path, sandbox: RunningSandbox, tmp_path: Path
) -> None:
    world = World(sandbox)
    project, iid = never_approved(world)
    mr = sandbox.api("GET", f"/projects/{project.replace('/', '%2F')}/merge_requests/{iid}")
    repo = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", f"{sandbox.url}/{project}.git"],
        check=True,
    )
    push = f"git push origin {mr['sha']}:{mr['source_branch']} -o mr.merge_when_pipeline_succeeds"
    env = agent_env(sandbox)
    alone = run_hook(deployed, hook_input(push, cwd=str(repo)), env=env)
    assert alone.returncode == 2
    assert f"{project}!{iid}" in alone.stderr  # the gate's refusal: it was read
    chained = run_hook(deployed, hook_input(f"git fetch && {push}", cwd=str(repo)), env=env)
    assert chained.returncode == 2
    assert "does more than push" in chained.stderr


def test_a_push_that_creates_a_merge_request_with_auto_merge_is_blocked(
    deployed: Path, sandbox: RunningSandbox
) -> None:
    branch = "new-work"
    sha = World(sandbox).push("acme/app", branch)
    command = (
        f"git push {sandbox.url}/acme/app.git {sha}:{branch} -o merge_request.create "
        "-o merge_request.auto_merge"
    )
    result = run_hook(deployed, hook_input(command), env=agent_env(sandbox))
    assert result.returncode == 2
    assert "creates a merge request" in result.stderr


# -- MCP tools, Monitor and PowerShell ---------------------------------------------------------------


def tool_input(tool: str, arguments: dict[str, Any]) -> str:
    """What Claude Code writes on a PreToolUse hook's stdin for an MCP (or other) tool."""
    return hook_input("", tool_name=tool, tool_input=arguments)


def test_mcp_merge_tools_are_gated_like_the_bash_forms(
    deployed: Path, sandbox: RunningSandbox, approved: tuple[str, int, int]
) -> None:
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    url = f"{sandbox.url}/{project}/-/merge_requests/{iid}"
    env = agent_env(sandbox)
    bound = tool_input("mcp__glab__glab_mr_merge", {"args": [url], "flags": {"sha": head}})
    assert run_hook(deployed, bound, env=env).returncode == 0
    blocked = [
        tool_input("mcp__glab__glab_mr_merge", {"args": [url], "flags": {"yes": True}}),
        tool_input("mcp__GitLab__accept_merge_request", {"id": project, "merge_request_iid": iid}),
        tool_input(
            "mcp__gitlab__merge_merge_request",
            {"project_id": project, "merge_request_iid": str(iid), "sha": "0" * 40},
        ),
        tool_input(
            "mcp__gitlab__create_merge_request_note",
            {"project_id": project, "merge_request_iid": iid, "body": "/merge"},
        ),
        hook_input("", tool_name="Monitor", tool_input={"command": f"glab mr merge {iid} -R {project}"}),
    ]  # fmt: skip
    for stdin in blocked:
        result = run_hook(deployed, stdin, env=env)
        assert result.returncode == 2, stdin
        assert f"glab mr merge {iid} -R {project} --sha {head}" in result.stderr


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("mcp__memory__create_entities", {"entities": [{"name": "notes"}]}, 0),
        ("mcp__glab__glab_mr_list", {"flags": {"label": ["ready"]}}, 0),
        ("Monitor", {"ws": "wss://example.com/feed"}, 0),
        ("Monitor", {"command": "tail -f build.log"}, 0),
        ("PowerShell", {"command": "Get-ChildItem"}, 0),
        ("PowerShell", {"command": "glab mr merge 3 -R acme/app"}, 2),
        ("mcp__glab__glab_mr_merge", {"args": ["3"], "flags": {"repo": "acme/app"}}, 2),
    ],
)
def test_other_tools_are_read_for_what_they_run(
    deployed: Path, tool: str, arguments: dict[str, Any], code: int
) -> None:
    result = run_hook(deployed, tool_input(tool, arguments))
    assert result.returncode == code, result.stderr


def test_the_fast_path_trusts_a_command_only_from_bash_or_monitor(
    deployed: Path, tmp_path: Path
) -> None:
    # An MCP tool's input may carry a "command" of its own: it is never the fast path's.
    only_bash = bash_only_path(tmp_path)
    stdin = tool_input("mcp__glab__glab_mr_merge", {"command": "ls", "args": ["3"]})
    result = run_hook(deployed, stdin, path=only_bash)
    assert result.returncode == 2
    assert "python3 is not on PATH" in result.stderr
    monitor = hook_input("", tool_name="Monitor", tool_input={"command": "ls -la"})
    assert run_hook(deployed, monitor, path=only_bash).returncode == 0


# -- which Python the hook runs -------------------------------------------------------------------


def test_hooklib_python_names_the_interpreter(
    hooks: Path, sandbox: RunningSandbox, approved: tuple[str, int, int], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    python = tmp_path / "venv-python"
    python.write_text(f'#!/bin/sh\n: > "{marker}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    add_to_hooklib(hooks, f"hooklib_python={python}\n")
    project, iid, _ = approved
    head = head_of(sandbox, project, iid)
    command = f"glab mr merge {iid} -R {project} --sha {head}"
    # the session's PATH has no python3 at all: the hook runs the one _hooklib.sh names
    env = {**agent_env(sandbox), "PATH": os.path.dirname(shutil.which("bash") or "/bin/bash")}
    result = run_hook(hooks, hook_input(command), env=env, path=bash_only_path(tmp_path))
    assert result.returncode == 0, result.stderr
    assert marker.exists()


def test_a_hooklib_python_that_is_not_an_interpreter_blocks(hooks: Path) -> None:
    add_to_hooklib(hooks, "hooklib_python=/nonexistent/python3\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "hooklib_python" in result.stderr and "/nonexistent/python3" in result.stderr


def test_a_missing_module_says_exactly_what_to_run(hooks: Path, tmp_path: Path) -> None:
    # An interpreter without pairgate's dependencies (here: without site-packages at all).
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    add_to_hooklib(hooks, f"hooklib_python={bare}\n")
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert "ModuleNotFoundError" in result.stderr and "tree_sitter" in result.stderr
    assert f"{sys.executable} -m pip install" in result.stderr
    assert "hooklib_python=/path/to/that/python3" in result.stderr
    assert INSTALL in result.stderr


@pytest.mark.parametrize(
    ("missing", "source"),
    [
        ("_hooklib.sh", "_hooklib.sh (the deployment's own preflight library: `init` writes one)"),
        (
            "automation_mr_families.py",
            "automation_mr_families.py (the deployment's own automation roster: `init` writes one",
        ),
        (
            "validate-mr-carries-ownership-record.py",
            "validate-mr-carries-ownership-record.py (deploy-hooks)",
        ),
    ],
)
def test_a_missing_file_is_named_with_where_it_comes_from(
    hooks: Path, missing: str, source: str
) -> None:
    (hooks / missing).unlink()
    result = run_hook(hooks, hook_input(MERGE))
    assert result.returncode == 2
    assert source in result.stderr
