"""What doctor reads of GitLab, and every check run over it: the gated projects' settings,
their pipeline files, the tracker's default branch, the protected branches, the agents' and the
review bot's roles. The checks themselves are pure (checks.py, branches.py)."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pairgate.deployment.gate_files import recorded_inputs
from pairgate.doctor.branches import default_branch_check, renovate_check
from pairgate.doctor.checks import (
    CANNOT_READ,
    DoctorCheck,
    PipelineFile,
    distinct_check,
    gate_files_check,
    image_check,
    independence_check,
    pipeline_check,
    pipeline_file,
    role_check,
    setting_checks,
    token_check,
    variables_check,
)
from pairgate.doctor.ci_token import Answer, metadata, read_token_variable_check
from pairgate.standalone.audit_door import gated_projects
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, PairgateError
from pairgate.standalone.gate import group_project_paths
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.gitlab_env import gitlab_with_token
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


def file_bytes(client: GitLab, project: str, path: str, ref: str) -> bytes | Exception:
    """A repository file's bytes at ``ref``: the files API's JSON (base64 ``content``)."""
    where = f"projects/{encode_project(project)}/repository/files/{encode_project(path)}"
    found = _read(lambda: client.get(where, ref=ref))
    if isinstance(found, Exception):
        return found
    try:
        return base64.b64decode(str(found["content"]))
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


def doctor_paths(config: Config, client: GitLab, named: list[str]) -> list[str]:
    """The gated projects doctor looks at: those named (each checked), else the group's."""
    return sorted(
        gated_projects(client, config, named, command="doctor")
        if named
        else group_project_paths(client, config)
    )


def run_checks(
    ctx: Context, config: Config, client: GitLab, named: list[str]
) -> tuple[list[str], list[DoctorCheck]]:
    """The gated projects looked at, and every check's answer."""
    tracker = config.tracker_project
    paths = doctor_paths(config, client, named)

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

    # A group's variable is read once, however many of its projects fall through to it.
    @functools.cache
    def variable(kind: str, ref: str, key: str) -> Answer:
        return variable_answer(client, kind, ref, key)

    @functools.cache
    def pipeline_bytes(target: PipelineFile) -> bytes | Exception:
        return file_bytes(client, tracker, target.path, target.ref or default_branch or "HEAD")

    token_variable = config.env_name("TASK_API_TOKEN")
    token = (
        _read(lambda: client.get("personal_access_tokens/self"))
        if str(ctx.env.get(token_variable, "")).strip()
        else None
    )
    checks = [distinct_check(bot, agents, bot_source), token_check(token, token_variable)]
    review = list(config.review_author_user_ids)
    checks.append(independence_check(review, agents, bot, config.env_name("TASK_WRITE_TOKEN")))
    checks.append(_branch(client, tracker, default_branch, tracker_data, level))
    targets: dict[PipelineFile, None] = {}
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
        checks.append(variables_check(path, data))
        checks.append(pipeline_check(path, data, config, default_branch, pipeline_bytes))
        target = pipeline_file(data.get("ci_config_path"), tracker)
        if isinstance(target, PipelineFile):
            targets[target] = None
            checks += _read_token_variable(variable, path, target, pipeline_bytes(target))
        if path != tracker:  # the tracker's own branch check above is the stricter one
            branch = data.get("default_branch")
            checks.append(_branch(client, path, branch, data, level, gated=True))
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
    for target in targets:
        checks += _gate(client, config, target, default_branch, pipeline_bytes(target))
    return paths, checks


def _gate(
    client: GitLab,
    config: Config,
    target: PipelineFile,
    default_branch: str | None,
    have: bytes | Exception,
) -> list[DoctorCheck]:
    """The gate files and the image of one tracker-held pipeline, read from its header (the
    tracker-pipeline check says whether the file is pairgate's render of it)."""
    if isinstance(have, Exception):
        return []  # the tracker-pipeline check already says it could not be read
    inputs = recorded_inputs(have.decode("utf-8", "replace"))
    if isinstance(inputs, str):
        return []  # the tracker-pipeline check is the hole
    # The jobs fetch their files at the default branch's head, whatever ref the pipeline came
    # from (templates' fetch step), so that is where they must be current.
    ref = default_branch or "HEAD"
    subject = f"{config.tracker_project}:{target.path}"

    def gate_file(path: str) -> bytes | Exception | None:
        found = file_bytes(client, config.tracker_project, path, ref)
        if isinstance(found, GitLabError) and found.status == 404:
            return None
        return found

    return [
        gate_files_check(subject, config, inputs, ref, gate_file),
        image_check(subject, inputs),
    ]


def variable_answer(client: GitLab, kind: str, ref: str, key: str) -> Answer:
    """One level's CI/CD variable ``key`` of environment scope ``*``: its kept fields (GitLab
    also returns the value, which goes no further than this function), None when there is
    none (404), or the error."""
    where = f"{kind}/{encode_project(ref)}/variables/{encode_project(key)}"
    try:
        return metadata(client.get(where, **{"filter[environment_scope]": "*"}))
    except GitLabError as exc:
        return None if exc.status == 404 else exc
    except PairgateError as exc:
        return exc


def _read_token_variable(
    variable: Callable[[str, str, str], Answer],
    path: str,
    target: PipelineFile,
    have: bytes | Exception,
) -> list[DoctorCheck]:
    """The read-token variable the project's pipeline names, as its jobs get it; nothing when
    the pipeline names none (the tracker-pipeline check says why the file is not pairgate's)."""
    if isinstance(have, Exception):
        return []
    inputs = recorded_inputs(have.decode("utf-8", "replace"))
    if isinstance(inputs, str):
        return []
    key = inputs.read_token_variable
    return [
        read_token_variable_check(
            path, key, target.path, lambda kind, ref: variable(kind, ref, key)
        )
    ]


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


def _branch(
    client: GitLab,
    project_path: str,
    branch: str | None,
    data: Any,
    level: Callable[..., Any],
    *,
    gated: bool = False,
) -> DoctorCheck:
    """The protection of a project's default branch: the tracker's, or (``gated``) a gated
    project's."""
    check = "default-branch" if gated else "tracker-default-branch"
    if isinstance(data, Exception):
        return DoctorCheck(
            check,
            project_path,
            CANNOT_READ,
            ("GET /projects/:id default_branch (doc/api/projects.md)",),
            f"{project_path} could not be read: {data}",
            "give the read token access to the tracker",
        )
    project = encode_project(project_path)
    rules = _read(lambda: client.get_all(f"projects/{project}/protected_branches"))
    entity = None
    if branch and isinstance(rules, GitLabError) and rules.status == 403:
        entity = _read(
            lambda: client.get(f"projects/{project}/repository/branches/{encode_project(branch)}")
        )
    return default_branch_check(
        project_path,
        branch,
        rules,
        entity,
        lambda user: level("projects", project_path, user),
        gated=gated,
    )
