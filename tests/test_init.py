"""pairgate init against the sandbox: what it asks GitLab, the set it writes, and a whole round
and the merge hook working from nothing but what it wrote."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairgate.deployment.claude_settings import (
    MERGE_HOOK_MATCHER,
    MERGE_HOOK_TIMEOUT,
    registrations,
)
from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, Result, clean_env, run_cli, run_program

FLAGS = ["--tracker-project", "acme/tracker", "--review-bot-user", "review-bot"]
FLAGS += ["--renovate-user", "renovate-bot"]


def reach(sandbox: RunningSandbox, user: str = "agents") -> dict[str, str]:
    """How init reads GitLab before there is a configuration: the PAIRGATE_ prefix."""
    return {"PAIRGATE_GITLAB_URL": sandbox.url, "PAIRGATE_TASK_API_TOKEN": sandbox.token(user)}


def init(sandbox: RunningSandbox, target: Path, *extra: str) -> Result:
    return run_cli(["init", "--target", str(target), *FLAGS, *extra], env=reach(sandbox))


def test_init_writes_a_complete_set_from_what_gitlab_says(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    target = tmp_path / "deployment"
    result = run_cli(
        ["init", "--target", str(target), *FLAGS, "--generic-issue", "1", "--json"],
        env=reach(sandbox),
    )
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    values = doc["values"]
    assert values["group_path"] == "acme" and values["group_id"] == "100"
    assert values["ledger_author_user_ids"] == [10]  # the token's own account
    assert values["review_author_user_ids"] == [11]  # the review bot's: account-bound
    assert values["renovate_bot_user_id"] == 12
    assert values["agent_identity_prefix"] == "acme"
    assert values["generic_tracking_issue"] == 1
    names = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert names == [
        "_hooklib.sh",
        "agent-text/escalation.md",
        "agent-text/session.md",
        "agent-text/testing.md",
        "automation_mr_families.py",
        "liveness-oracle.md",
        "pairgate-config.json",
    ]
    hooklib = (target / "_hooklib.sh").read_text()
    assert f"hooklib_python={sys.executable}" in hooklib
    steps = "\n".join(doc["next"])
    for expected in (
        "deploy-hooks --target",
        "deploy-agents --target",
        "deploy-pipeline",
        "doctor",
    ):
        assert expected in steps
    assert json.dumps(registrations("pairgate", ".claude/hooks"), separators=(",", ":")) in steps
    assert (
        "pairgate deploy-pipeline --publish gate/pipeline.yml --image "
        "'<registry>/<image>@sha256:<digest>' --runner-tag '<runner tag>' --read-token-variable "
        f"PAIRGATE_TRACKER_READ_TOKEN --gate-dir gate --gitlab-url {sandbox.url}"
    ) in doc["next"]
    assert "pairgate doctor --fix --pipeline gate/pipeline.yml" in doc["next"]
    # the gate jobs' read token: a settings page, no command, so a comment the shell skips
    variable = next(s for s in doc["next"] if "PAIRGATE_TRACKER_READ_TOKEN as a masked" in s)
    assert variable.startswith("# ") and "not protected" in variable
    assert doc["next"].index(variable) == doc["next"].index(
        "pairgate doctor --fix --pipeline gate/pipeline.yml") - 1  # fmt: skip
    for name in ("GITLAB_URL", "TASK_API_TOKEN", "TASK_WRITE_TOKEN", "DEPLOY_TOKEN"):
        assert any(f"export PAIRGATE_{name}" in step for step in doc["next"]), name


def test_init_refuses_to_overwrite_naming_what_exists(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    target = tmp_path / "deployment"
    (target / "agent-text").mkdir(parents=True)
    (target / "agent-text" / "session.md").write_text("ours\n")
    (target / "pairgate-config.json").write_text("{}\n")
    result = init(sandbox, target)
    assert result.code == 2
    assert "already holds agent-text/session.md, pairgate-config.json" in result.err
    assert "nothing was written" in result.err
    assert sorted(p.name for p in target.rglob("*")) == [
        "agent-text",
        "pairgate-config.json",
        "session.md",
    ]
    assert (target / "agent-text" / "session.md").read_text() == "ours\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--review-bot-user", "nobody-here"],
            "GitLab has no user 'nobody-here' (--review-bot-user)",
        ),
        (["--renovate-user", "ghost"], "GitLab has no user 'ghost' (--renovate-user)"),
        (["--tracker-project", "acme/nothing"], "the tracker project acme/nothing does not exist"),
        (["--review-bot-user", "agents"], "the review bot and the agents are both 'agents'"),
        (["--env-prefix", "lower"], "--env-prefix 'lower': upper case letters"),
    ],
)
def test_init_refusals_name_the_flag(
    sandbox: RunningSandbox, tmp_path: Path, extra: list[str], message: str
) -> None:
    result = init(sandbox, tmp_path / "d", *extra)
    assert result.code == 2
    assert message in result.err
    assert not (tmp_path / "d").exists()


def test_a_round_and_the_hook_work_from_what_init_wrote(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    target = tmp_path / "deployment"
    assert init(sandbox, target).code == 0
    config = target / "pairgate-config.json"
    env: dict[str, Any] = {
        "PAIRGATE_CONFIG": str(config),
        "PAIRGATE_GITLAB_URL": sandbox.url,
        "PAIRGATE_TASK_API_TOKEN": sandbox.token("agents"),
        "PAIRGATE_TASK_WRITE_TOKEN": sandbox.token("agents"),
        "PAIRGATE_REVIEW_BOT_TOKEN": sandbox.token("review_bot"),
    }
    hooks, agents = tmp_path / "hooks", tmp_path / "agents"
    hooks.mkdir()
    agents.mkdir()
    assert run_cli(["deploy-hooks", "--target", str(hooks)], env=env).code == 0
    for name in ("pairgate-config.json", "automation_mr_families.py", "_hooklib.sh"):
        shutil.copy(target / name, hooks / name)
    rendered = run_cli(["deploy-agents", "--target", str(agents)], env=env)
    assert rendered.code == 0, rendered.err
    assert sorted(p.name for p in agents.iterdir()) == [
        "acme-finder.md",
        "acme-lead.md",
        "acme-review.md",
        "acme-solo.md",
    ]

    issue = str(sandbox.create_issue("Work from an init'd deployment")["iid"])
    sha = sandbox.commit("init-round", {"x.txt": "x\n"}, project="acme/app")["id"]
    mr = str(
        sandbox.create_mr("init-round", project="acme/app", description=f"acme/tracker#{issue}")[
            "iid"
        ]
    )

    def as_agent(agent: str, *argv: str) -> None:
        # Each agent in a session of its own: the gate counts no approval from a session that
        # also wrote as the lead.
        agent_env = {**env, "PAIRGATE_AGENT_ID": agent, "PAIRGATE_SESSION_ID": f"s-{agent}"}
        if agent == "acme-review":  # account-bound: the reviewer writes as the review account
            agent_env["PAIRGATE_TASK_WRITE_TOKEN"] = sandbox.token("review_bot")
        result = run_cli(list(argv), env=agent_env)
        assert result.code == 0, f"{argv}: {result.err}"

    merge = f"glab mr merge {mr} -R acme/app --sha {sha}"
    assert hook(hooks, merge, env).returncode == 2  # never approved: blocked
    as_agent("acme-lead", "claim", issue, "--role", "lead")
    as_agent("acme-lead", "handoff", issue, "--to", "acme-review", "--role", "review", "--sha", sha)
    as_agent("acme-review", "accept", issue)
    as_agent(
        "acme-review",
        "approve",
        issue,
        "--mr",
        mr,
        "--mr-project",
        "acme/app",
        "--sha",
        sha,
        "--to",
        "acme-lead",
    )
    as_agent("acme-lead", "accept", issue)
    check = run_cli(["merge-check", "--mr", mr, "--mr-project", "acme/app"], env=env)
    assert check.code == 0, check.err
    allowed = hook(hooks, merge, env)
    assert allowed.returncode == 0, allowed.stderr


def hook(hooks: Path, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": command}})
    gitlab = {k: v for k, v in env.items() if k != "PAIRGATE_CONFIG"}
    return subprocess.run(
        ["bash", str(hooks / "block-unapproved-merge.sh")],
        input=payload,
        capture_output=True,
        text=True,
        env=clean_env(
            **gitlab, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
        ),
        timeout=60,
        check=False,
    )


def test_init_help_reads_no_configuration() -> None:
    result = run_program([*PAIRGATE, "init", "--help"], env={"PAIRGATE_CONFIG": "/nonexistent"})
    assert result.code == 0 and "--tracker-project" in result.out


# -- what init prints and writes: quoted, one line, never through a link -----------------------


def test_the_printed_registration_is_the_one_the_docs_show() -> None:
    """docs/agent-handoff.md's JSON block and the reference's inbox block are this constant."""
    doc = (ROOT / "docs" / "agent-handoff.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("```json")[1:]]
    shown = json.loads(next(b for b in blocks if '"PreToolUse"' in b))
    assert shown == {"hooks": {"PreToolUse": registrations("pairgate", ".claude/hooks")["hooks"][
        "PreToolUse"]}}  # fmt: skip
    assert (MERGE_HOOK_MATCHER, MERGE_HOOK_TIMEOUT) == ("^(Bash|Monitor|PowerShell|mcp__.+)$", 60)
    reference = (ROOT / "docs" / "agent-handoff-reference.md").read_text(encoding="utf-8")
    inbox = reference.split("### The Claude Code hooks", 1)[1].split("```json", 1)[1]
    inbox_doc = json.loads(inbox.split("```", 1)[0].replace('"<cli>"', '"pairgate"'))
    wanted = registrations("pairgate", ".claude/hooks")["hooks"]
    assert inbox_doc == {"hooks": {e: wanted[e] for e in ("SessionStart", "UserPromptSubmit",
                                                           "Stop")}}  # fmt: skip


def test_every_printed_value_is_shell_quoted(sandbox: RunningSandbox, tmp_path: Path) -> None:
    hooks_dir = ".claude/hooks; touch X"
    result = init(sandbox, tmp_path / "d", "--hooks-dir", hooks_dir, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["values"]["hooks_install_command"] == (
        "pairgate deploy-hooks --target '.claude/hooks; touch X'"
    )
    step = next(s for s in doc["next"] if "deploy-hooks" in s)
    words = shlex.split(step)
    assert words[:3] == ["mkdir", "-p", hooks_dir] and words[4:8] == [
        "pairgate", "deploy-hooks", "--target", hooks_dir]  # fmt: skip
    for line in doc["next"][:-1]:
        shlex.split(line, comments=True)  # every line parses as the shell reads it
    registration = registrations("pairgate", hooks_dir)["hooks"]["PreToolUse"][0]
    assert registration["hooks"][0]["command"] == (
        """bash "$CLAUDE_PROJECT_DIR"/'.claude/hooks; touch X/block-unapproved-merge.sh'"""
    )


@pytest.mark.parametrize(
    "flag", ["--handoff-doc", "--hooks-dir", "--cli-command", "--identity-prefix"]
)
def test_a_newline_in_a_flag_value_is_refused(
    sandbox: RunningSandbox, tmp_path: Path, flag: str
) -> None:
    result = init(sandbox, tmp_path / "d", flag, "x\ninclude: evil.yml")
    assert result.code == 2
    assert f"pairgate init: {flag} 'x\\ninclude: evil.yml' is not one line" in result.err
    assert not (tmp_path / "d").exists()


def test_init_never_writes_through_a_planted_link(sandbox: RunningSandbox, tmp_path: Path) -> None:
    target = tmp_path / "d"
    target.mkdir()
    outside = tmp_path / "outside.json"
    (target / "pairgate-config.json").symlink_to(outside)  # dangling
    result = init(sandbox, target)
    assert result.code == 2 and "already holds pairgate-config.json" in result.err
    assert not outside.exists()


def test_claude_settings_are_merged_keeping_every_key(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    mine = {"model": "x", "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": []}],
                                    "Notification": [{"hooks": []}]}}  # fmt: skip
    settings.write_text(json.dumps(mine))
    result = init(sandbox, tmp_path / "d", "--claude-settings", str(settings))
    assert result.code == 0, result.err
    merged = json.loads(settings.read_text())
    wanted = registrations("pairgate", ".claude/hooks")["hooks"]
    assert merged["model"] == "x" and merged["hooks"]["Notification"] == [{"hooks": []}]
    assert merged["hooks"]["PreToolUse"] == [{"matcher": "Edit", "hooks": []},
                                             *wanted["PreToolUse"]]  # fmt: skip
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert merged["hooks"][event] == wanted[event]
    assert f"the hook registrations are in {settings}" in result.out
    again = init(sandbox, tmp_path / "e", "--claude-settings", str(settings))
    assert again.code == 0 and json.loads(settings.read_text()) == merged  # nothing twice


def test_invalid_claude_settings_are_refused_and_nothing_is_written(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    result = init(sandbox, tmp_path / "d", "--claude-settings", str(settings))
    assert result.code == 2
    assert f"pairgate init: --claude-settings {settings} is not valid JSON" in result.err
    assert settings.read_text() == "{not json" and not (tmp_path / "d").exists()
    settings.write_text("[]")
    listed = init(sandbox, tmp_path / "d", "--claude-settings", str(settings))
    assert listed.code == 2 and "is not a JSON object" in listed.err
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    linked = init(sandbox, tmp_path / "d", "--claude-settings", str(link))
    assert linked.code == 2 and "a symbolic link is refused" in linked.err
    assert not (tmp_path / "elsewhere.json").exists()
