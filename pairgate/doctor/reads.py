"""What doctor reads of GitLab, and every check run over it: the gated projects' settings,
their pipeline files, the tracker's default branch, the protected branches, the agents' and the
review bot's roles. The checks themselves are pure (checks.py, branches.py)."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pairgate.doctor.branches import default_branch_check, renovate_check
from pairgate.doctor.checks import (
    CANNOT_READ,
    DoctorCheck,
    PipelineFile,
    distinct_check,
    independence_check,
    pipeline_check,
    role_check,
    setting_checks,
    token_check,
)
from pairgate.standalone.audit_door import gated_projects
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError
from pairgate.standalone.gate import group_project_paths
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project, gitlab_with_token
from pairgate.standalone.scope import under
from pairgate.tracker import pooled, review_bot_token

T = TypeVar("T")


def _read(what: Callable[[], T]) -> T | PairgateError:
    """One read; its error is kept (a check it feeds is then cannot-read, never a pass)."""
    try:
        return what()
    except PairgateError as exc:
        return exc


def review_bot_id(config: Config, env: Mapping[str, str], client: GitLab) -> tuple[int | None, str]:
    """The review bot's user id, asked of GitLab with its own token (approve's credential,
    tracker.review_bot_token), and where the token came from (or why there is none)."""
    token, source = review_bot_token(config, env)
    if not token:
        variable = config.env_name("REVIEW_BOT_TOKEN")
        return None, f"neither {variable} nor {source} holds a token"
    try:
        return int(gitlab_with_token(client, token, source=source).get("user")["id"]), source
    except (PairgateError, KeyError, TypeError, ValueError) as exc:
        return None, f"GET /user with the token from {source} failed: {exc}"


def _file_text(client: GitLab, project: str, path: str, ref: str) -> str | Exception:
    """A repository file's text at ``ref``: the files API's JSON (base64 ``content``)."""
    where = f"projects/{encode_project(project)}/repository/files/{encode_project(path)}"
    found = _read(lambda: client.get(where, ref=ref))
    if isinstance(found, Exception):
        return found
    try:
        return base64.b64decode(str(found["content"])).decode("utf-8")
    except (KeyError, TypeError, ValueError) as exc:
        return PairgateError(
            f"GitLab's answer for {path} at {ref} holds no readable content: {exc}"
        )


def _level(client: GitLab, kind: str, ref: str, user: int) -> int | PairgateError:
    try:
        return int(client.get(f"{kind}/{encode_project(ref)}/members/all/{user}")["access_level"])
    except GitLabError as exc:
        return 0 if exc.status == 404 else exc  # 404: not a member at all
    except PairgateError as exc:
        return exc


def run_checks(
    ctx: Context, config: Config, client: GitLab, named: list[str]
) -> tuple[list[str], list[DoctorCheck]]:
    """The gated projects looked at, and every check's answer."""
    tracker = config.tracker_project
    paths = sorted(
        gated_projects(client, config, named, command="doctor")
        if named
        else group_project_paths(client, config)
    )

    def project(path: str) -> Any:
        return _read(lambda: client.get(f"projects/{encode_project(path)}"))

    projects = dict(zip(paths, pooled(project, paths), strict=True))
    tracker_data = projects[tracker] if tracker in projects else project(tracker)
    default_branch = (
        None if isinstance(tracker_data, Exception) else tracker_data.get("default_branch")
    )
    agents = list(config.ledger_author_user_ids)
    bot, bot_source = review_bot_id(config, ctx.env, client)

    @functools.cache
    def level(kind: str, ref: str, user: int) -> int | PairgateError:
        return _level(client, kind, ref, user)

    @functools.cache
    def pipeline_text(target: PipelineFile) -> str | Exception:
        return _file_text(client, tracker, target.path, target.ref or default_branch or "HEAD")

    token_variable = config.env_name("TASK_API_TOKEN")
    token = (
        _read(lambda: client.get("personal_access_tokens/self"))
        if str(ctx.env.get(token_variable, "")).strip()
        else None
    )
    checks = [distinct_check(bot, agents, bot_source), token_check(token, token_variable)]
    review = list(config.review_author_user_ids)
    checks.append(independence_check(review, agents, bot, config.env_name("TASK_WRITE_TOKEN")))
    checks.append(_tracker_branch(client, tracker, default_branch, tracker_data, level))
    for path in paths:
        data = projects[path]
        if isinstance(data, Exception):
            checks.append(
                DoctorCheck(
                    "project",
                    path,
                    CANNOT_READ,
                    ("GET /projects/:id",),
                    f"{path} could not be read: {data}",
                    "give the read token access to every gated project",
                )
            )
            continue
        checks += setting_checks(path, data)
        checks.append(pipeline_check(path, data, tracker, default_branch, pipeline_text))
        checks += _roles(path, "projects", agents, bot, bot_source, level)
        if any(under(path, ns) for ns in config.renovate_exempt_namespaces):
            rules = _read(
                functools.partial(
                    client.get_all, f"projects/{encode_project(path)}/protected_branches"
                )
            )
            checks.append(
                renovate_check(
                    path,
                    config.renovate_branch_prefix,
                    config.renovate_bot_user_id,
                    rules,
                    functools.partial(level, "projects", path),
                )
            )
    checks += _roles(
        config.group_path, "groups", agents, bot, bot_source, level, ref=config.group_id
    )
    return paths, checks


def _roles(
    subject: str,
    kind: str,
    agents: list[int],
    bot: int | None,
    source: str,
    level: Callable[..., Any],
    *,
    ref: str | None = None,
) -> list[DoctorCheck]:
    """The agents' and the review bot's roles in a project or the group."""
    ref = ref or subject
    agents_levels = [(u, level(kind, ref, u)) for u in agents]
    found = [role_check("agents-role", subject, "the agents' account", agents_levels, kind=kind)]
    if bot is None:
        found.append(
            DoctorCheck(
                "review-bot-role",
                subject,
                CANNOT_READ,
                (),
                f"the review bot's account is unknown: {source}",
                "set the review bot's token (as approve reads it), then run doctor again",
            )
        )
    else:
        levels = [(bot, level(kind, ref, bot))]
        found.append(
            role_check("review-bot-role", subject, "the review bot's account", levels, kind=kind)
        )
    return found


def _tracker_branch(
    client: GitLab, tracker: str, branch: str | None, data: Any, level: Callable[..., Any]
) -> DoctorCheck:
    if isinstance(data, Exception):
        return DoctorCheck(
            "tracker-default-branch",
            tracker,
            CANNOT_READ,
            ("GET /projects/:id default_branch (doc/api/projects.md)",),
            f"{tracker} could not be read: {data}",
            "give the read token access to the tracker",
        )
    project = encode_project(tracker)
    rules = _read(lambda: client.get_all(f"projects/{project}/protected_branches"))
    entity = None
    if branch and isinstance(rules, GitLabError) and rules.status == 403:
        entity = _read(
            lambda: client.get(f"projects/{project}/repository/branches/{encode_project(branch)}")
        )
    return default_branch_check(
        tracker, branch, rules, entity, lambda user: level("projects", tracker, user)
    )
