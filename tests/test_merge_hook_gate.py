"""The real merge hook against the sandbox, run the way Claude Code runs it (the deployed
directory and the helpers are test_merge_hook.py's): the gate decides each merge the reader
finds; this round's doors, push options, MCP tools, and which Python the hook runs."""
# ruff: noqa: F811

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.command_reader.read import read_command
from tests.kit.command_corpus import APP, ATTRIBUTED, HARMLESS
from tests.kit.gate_cases import approved_at_head, never_approved, outside_the_group
from tests.kit.run import agent_env
from tests.kit.world import World
from tests.test_merge_hook import (  # noqa: F401
    HOME,
    INSTALL,
    MERGE,
    PYTHON_FIRST,
    _no_stray_pyc,
    add_to_hooklib,
    bash_only_path,
    deployed,
    hook_input,
    hooks,
    run_hook,
)

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
    # what git pushes or runs by ways other than git push's own words
    ("git --config-env user.name=HOME push -o merge_request.auto_merge origin feature", "resolves to a commit"),
    ("git send-pack --push-option=merge_request.auto_merge origin main", "git send-pack with a push option"),
    ("git rebase -x 'git push -o mr.auto_merge origin feature' HEAD~1", "resolves to a commit"),
    ("printf '[push]\\n\\tpushOption = merge_request.auto_merge\\n' > x.cfg; GIT_CONFIG_GLOBAL=x.cfg git push origin main",
     "its configuration from another file here (GIT_CONFIG_GLOBAL)"),
    ("perl -e 'system(\"glab mr --help=false merge 12 -R acme/app\")'", "names a glab merge"),
    ("glab api --output json -X PUT projects/2/merge_requests/1/merge", "before the endpoint"),
    ("git -c alias.push='!true' push -o merge_request.auto_merge origin feature", "resolves to a commit"),
    ("git $NOPE -c alias.x='!gl\"\"ab mr merge 1 -R acme/app' x", "one could be the git command"),
    ("git push --recurse-submodules=on-demand -o mr.auto_merge origin main", "pushes submodules too"),
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
    # git and curl resolve dot segments (RFC 3986: a .. above the root goes nowhere), so the
    # project is the one they reach
    elsewhere = f"git push {sandbox.url}/x/../../{project}.git {'1' * 40}:refs/heads/"
    disguised = run_hook(
        deployed, hook_input(elsewhere + f"{mr['source_branch']} -o mr.auto_merge"), env=env
    )
    assert disguised.returncode == 2 and f"{project}!{iid}" in disguised.stderr, disguised.stderr
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
