"""pairgate init: ask GitLab what a configuration needs, and write a deployment's whole set.

Everything init would derive has a flag. It reads GitLab the way every command does (the
``<env_prefix>_TASK_API_TOKEN`` and ``<env_prefix>_GITLAB_URL`` variables, else glab), with the
prefix it is given (default PAIRGATE), since there is no configuration yet to name one.
"""

from __future__ import annotations

import json as jsonlib
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from pairgate.deployment import claude_settings
from pairgate.deployment.file_set import write_set
from pairgate.deployment.gate_files import one_line
from pairgate.standalone.config import CONFIG_FILENAME, Config, validate_config
from pairgate.standalone.errors import Context, Exit, UsageError
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.gitlab_env import gitlab_from_prefix


def _one_user(client: GitLab, username: str, flag: str) -> dict[str, Any]:
    found = [
        u for u in client.get("users", username=username) or [] if u.get("username") == username
    ]
    if not found:
        raise UsageError(
            f"pairgate init: GitLab has no user {username!r} ({flag}): name the account with "
            f"{flag} <username>"
        )
    return dict(found[0])


def _tracker(client: GitLab, tracker: str) -> dict[str, Any]:
    try:
        project = client.get(f"projects/{encode_project(tracker)}")
    except GitLabError as exc:
        if exc.status == 404:
            raise UsageError(
                f"pairgate init: the tracker project {tracker} does not exist, or the token "
                f"cannot see it (--tracker-project)"
            ) from None
        raise
    namespace = project.get("namespace") or {}
    if namespace.get("kind") != "group":
        raise UsageError(
            f"pairgate init: {tracker} is in the personal namespace {namespace.get('full_path')}; "
            f"pairgate gates the projects of a group, so the tracker must be in one"
        )
    return dict(project)


def derived_prefix(group_path: str) -> str:
    """An identity prefix from the group's last segment: lower case letters and digits."""
    words = re.findall(r"[a-z0-9]+", group_path.rsplit("/", 1)[-1].lower())
    prefix = "-".join(words)
    return prefix if re.match(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", prefix) else "agent"


def init(
    *,
    ctx: Context,
    target: Path,
    tracker_project: str,
    env_prefix: str,
    agents_user: str | None,
    review_bot_user: str,
    renovate_user: str,
    identity_prefix: str | None,
    cli_command: str,
    generic_issue: int | None,
    handoff_doc: str,
    hooks_dir: str,
    json: bool,
    claude_settings_file: Path | None = None,
) -> int:
    """``init --target DIR --tracker-project G/P --review-bot-user U --renovate-user U``."""
    for flag, value in (
        ("--target", str(target)),
        ("--tracker-project", tracker_project),
        ("--env-prefix", env_prefix),
        ("--agents-user", agents_user),
        ("--review-bot-user", review_bot_user),
        ("--renovate-user", renovate_user),
        ("--identity-prefix", identity_prefix),
        ("--cli-command", cli_command),
        ("--handoff-doc", handoff_doc),
        ("--hooks-dir", hooks_dir),
        ("--claude-settings", None if claude_settings_file is None else str(claude_settings_file)),
    ):
        if value is not None:
            one_line("pairgate init", flag, value)
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", env_prefix):
        raise UsageError(
            f"pairgate init: --env-prefix {env_prefix!r}: upper case letters, digits and "
            f"underscores, starting with a letter"
        )
    client = gitlab_from_prefix(env_prefix, ctx.env)
    tracker = _tracker(client, tracker_project)
    namespace = tracker["namespace"]
    agents = (
        _one_user(client, agents_user, "--agents-user") if agents_user else dict(client.get("user"))
    )
    bot = _one_user(client, review_bot_user, "--review-bot-user")
    renovate = _one_user(client, renovate_user, "--renovate-user")
    if bot["id"] == agents["id"]:
        raise UsageError(
            f"pairgate init: the review bot and the agents are both {agents['username']!r}: the "
            f"review bot approves on GitLab as a second account, so name another with "
            f"--review-bot-user"
        )
    group_path = str(namespace["full_path"])
    values: dict[str, Any] = {
        "tracker_project": str(tracker["path_with_namespace"]),
        "group_path": group_path,
        "group_id": str(namespace["id"]),
        "env_prefix": env_prefix,
        "agent_identity_prefix": identity_prefix or derived_prefix(group_path),
        "review_bot_token_file": "review-bot-token",
        "deployed_paths": ["pairgate"],
        "generic_tracking_issue": generic_issue,
        "liveness_oracle_file": "liveness-oracle.md",
        "cli_command": cli_command,
        "renovate_bot_user_id": int(renovate["id"]),
        "renovate_branch_prefix": "renovate/",
        "renovate_exempt_namespaces": [],
        "cli_install_command": f"{sys.executable} -m pip install --upgrade pairgate",
        "hooks_install_command": f"{cli_command} deploy-hooks --target {shlex.quote(hooks_dir)}",
        "agent_text_dir": "agent-text",
        "handoff_doc": handoff_doc,
        "ledger_author_user_ids": [int(agents["id"])],
        # Account-bound from the start: the review bot's account writes the reviewers' records.
        "review_author_user_ids": [int(bot["id"])],
    }
    validate_config(values, source="the configuration init would write")
    settings_path = claude_settings_file
    settings = None
    if settings_path is not None:  # refused before anything is written
        wanted = claude_settings.registrations(cli_command, hooks_dir)
        source = f"--claude-settings {settings_path}"
        settings = claude_settings.merged(
            claude_settings.read_settings(settings_path), wanted, source=source
        )
    config = write_set(target, values)
    if settings_path is not None and settings is not None:
        claude_settings.write_settings(settings_path, settings)
    url = (client.api_url or "").removesuffix("/api/v4") or "<https://gitlab.example.com>"
    steps = next_commands(config, target, hooks_dir, url, merged_into=settings_path)
    doc: dict[str, Any] = {
        "directory": str(target),
        "configuration": str(config.path),
        "values": values,
        "claude_settings": None if settings_path is None else str(settings_path),
        "next": steps,
    }
    if json:
        print(jsonlib.dumps(doc, indent=2), file=ctx.stdout)
        return Exit.OK
    print(f"wrote a deployment for {values['tracker_project']} into {target}:", file=ctx.stdout)
    print(
        f"  {CONFIG_FILENAME}: agents {agents['username']} (id {agents['id']}), review bot "
        f"{bot['username']} (id {bot['id']}), renovate {renovate['username']} "
        f"(id {renovate['id']})",
        file=ctx.stdout,
    )
    print("next:", file=ctx.stdout)
    for step in steps:
        print(f"  {step}", file=ctx.stdout)
    return Exit.OK


PIPELINE_PATH = "gate/pipeline.yml"
GATE_DIR = "gate"


def next_commands(
    config: Config, target: Path, hooks_dir: str, url: str, *, merged_into: Path | None = None
) -> list[str]:
    """What to run after init, in order, spelled with the deployment's own command; every
    value shell-quoted, so a line pasted into a shell runs as printed."""
    q = shlex.quote
    cli, conf = config.cli, q(str(config.path))
    hooks = q(hooks_dir)
    variable = config.env_name

    def secret(name: str, what: str) -> str:
        return f"read -rs {name} && export {name}  # {what}"

    settings = claude_settings.registrations(cli, hooks_dir)
    steps = [
        f"export PAIRGATE_CONFIG={conf}",
        f"export {variable('GITLAB_URL')}={q(url)}",
        secret(
            variable("TASK_API_TOKEN"),
            "a read_api token (doctor: a Maintainer's, to read the protected branches)",
        ),
        secret(variable("TASK_WRITE_TOKEN"), "the agents' api token (the ledger's notes)"),
        secret(
            variable("DEPLOY_TOKEN"),
            "a Maintainer's api token: deploy-pipeline --publish and doctor --fix",
        ),
        f"(umask 077 && read -rs token && printf '%s\\n' \"$token\" > "
        f"{q(str(config.path.parent / 'review-bot-token'))})  # the review bot's api token "
        f"(or export {variable('REVIEW_BOT_TOKEN')})",
        f"mkdir -p {hooks} && {cli} deploy-hooks --target {hooks} && cp {conf} "
        f"{q(str(config.path.parent / 'automation_mr_families.py'))} {q(str(config.path.parent / '_hooklib.sh'))} "
        f"{hooks}/",
        f"mkdir -p .claude/agents && {cli} deploy-agents --target .claude/agents",
        f"{cli} deploy-pipeline --publish {PIPELINE_PATH} --image "
        f"{q('<registry>/<image>@sha256:<digest>')} --runner-tag {q('<runner tag>')} "
        f"--read-token-variable {variable('TRACKER_READ_TOKEN')} --gate-dir {GATE_DIR} "
        f"--gitlab-url {q(url)}",
        f"# in the group or every gated project, add {variable('TRACKER_READ_TOKEN')} as a "
        f"masked CI/CD variable, not protected (Settings > CI/CD > Variables): a read_api "
        f"token that reads the tracker; every gate job fails without it (doctor checks it, but "
        f"cannot add it: it does not hold the token)",
        f"{cli} doctor --fix --pipeline {PIPELINE_PATH}",
        f"{cli} doctor",
    ]
    if merged_into is None:
        steps.append(
            "add to the Claude Code settings the agents run with (or run init with "
            "--claude-settings .claude/settings.json): "
            + jsonlib.dumps(settings, separators=(",", ":"))
        )
    else:
        steps.append(f"the hook registrations are in {q(str(merged_into))}")
    return steps
