"""What a pipeline's jobs are given: GitLab's predefined variables for the pipeline (and, for a
merge request pipeline or its child, the merge request's), the project's CI/CD variables and
the pipeline variables. Pure functions over the world; the runner passes them on (runner.py)
and adds the job's own (CI_JOB_ID, CI_JOB_TOKEN) when the job starts.

GitLab's predefined variables: doc/ci/variables/predefined_variables.md, and for merge request
pipelines predefined_variables.md#predefined-variables-for-merge-request-pipelines.
"""

from __future__ import annotations

from pairgate.sandbox import protection, repo
from pairgate.sandbox.ci_config import config_path
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Group, MergeRequest, Pipeline, Project

ZERO_SHA = "0" * 40


def slug(text: str) -> str:
    """GitLab's *_SLUG: lower case, 63 bytes, anything but a-z and 0-9 a dash, no edge dashes."""
    out = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower())
    return out[:63].strip("-")


def open_mrs(world: World, project: Project, branch: str) -> list[MergeRequest]:
    """The open merge requests whose source is ``branch`` of ``project``, oldest first."""
    return sorted(
        (
            m
            for m in world.merge_requests.values()
            if (m.source_project_id, m.source_branch, m.state) == (project.id, branch, "opened")
        ),
        key=lambda m: m.id,
    )


def predefined(
    world: World, pipeline: Pipeline, *, branch: str | None, base: str
) -> dict[str, str]:
    """The pipeline's predefined variables. ``branch`` is the branch a branch pipeline runs for,
    or a merge request pipeline's source branch; ``base`` the instance URL."""
    project = world.projects[pipeline.project_id]
    full = world.full_path(project)
    commit = world.commits[pipeline.sha]
    title, _, description = commit.message.partition("\n")
    user = world.users.get(pipeline.user_id or 0)
    out = {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_SERVER_URL": base,
        "CI_API_V4_URL": f"{base}/api/v4",
        "CI_PROJECT_ID": str(project.id),
        "CI_PROJECT_PATH": full,
        "CI_PROJECT_NAMESPACE_ID": str(project.namespace_id),
        "CI_PROJECT_VISIBILITY": project.visibility,
        "CI_PROJECT_URL": f"{base}/{full}",
        "CI_DEFAULT_BRANCH": project.default_branch,
        "CI_CONFIG_PATH": config_path(project),
        "CI_PIPELINE_ID": str(pipeline.id),
        "CI_PIPELINE_IID": str(pipeline.iid),
        "CI_PIPELINE_SOURCE": pipeline.source,
        "CI_PIPELINE_URL": f"{base}/{full}/-/pipelines/{pipeline.id}",
        "CI_PIPELINE_CREATED_AT": pipeline.created_at[:19] + "Z",
        "CI_COMMIT_SHA": pipeline.sha,
        "CI_COMMIT_SHORT_SHA": pipeline.sha[:8],
        "CI_COMMIT_BEFORE_SHA": ZERO_SHA,
        "CI_COMMIT_TITLE": title,
        "CI_COMMIT_MESSAGE": commit.message,
        "CI_COMMIT_DESCRIPTION": description.strip("\n"),
        "CI_COMMIT_AUTHOR": f"{commit.author_name} <{commit.author_email}>",
        "CI_COMMIT_REF_NAME": branch or pipeline.ref,
        "CI_COMMIT_REF_SLUG": slug(branch or pipeline.ref),
        "CI_COMMIT_REF_PROTECTED": str(protected(project, pipeline.ref)).lower(),
        "GITLAB_USER_ID": str(user.id) if user else "",
        "GITLAB_USER_LOGIN": user.username if user else "",
        "GITLAB_USER_NAME": user.name if user else "",
        "GITLAB_USER_EMAIL": f"{user.username}@sandbox.test" if user else "",
    }
    if branch and pipeline.ref == branch:  # a branch pipeline (not a merge request's)
        out["CI_COMMIT_BRANCH"] = branch
    if branch:
        mrs = open_mrs(world, project, branch)[:4]
        if mrs:
            out["CI_OPEN_MERGE_REQUESTS"] = ",".join(
                f"{world.full_path(world.projects[m.project_id])}!{m.iid}" for m in mrs
            )
    if pipeline.mr_iid is not None:
        mr = world.merge_request(project, pipeline.mr_iid)
        if mr is not None:
            out |= merge_request(world, mr, pipeline, base)
    return out


def merge_request(world: World, mr: MergeRequest, pipeline: Pipeline, base: str) -> dict[str, str]:
    """The CI_MERGE_REQUEST_* of a merge request pipeline (its child gets them too)."""
    target = world.projects[mr.project_id]
    source = world.projects[mr.source_project_id]
    merged_results = pipeline.ref.endswith("/merge")
    return {
        "CI_MERGE_REQUEST_ID": str(mr.id),
        "CI_MERGE_REQUEST_IID": str(mr.iid),
        "CI_MERGE_REQUEST_PROJECT_ID": str(target.id),
        "CI_MERGE_REQUEST_PROJECT_PATH": world.full_path(target),
        "CI_MERGE_REQUEST_PROJECT_URL": f"{base}/{world.full_path(target)}",
        "CI_MERGE_REQUEST_REF_PATH": f"refs/merge-requests/{mr.iid}/head",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": mr.source_branch,
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": str(source.id),
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": world.full_path(source),
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": mr.target_branch,
        "CI_MERGE_REQUEST_TITLE": mr.title,
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": mr.base_sha,
        "CI_MERGE_REQUEST_EVENT_TYPE": "merged_result" if merged_results else "detached",
        # Set in merged results pipelines only; empty in detached ones.
        "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": repo.current_sha(world, mr) if merged_results else "",
        "CI_MERGE_REQUEST_TARGET_BRANCH_SHA": (
            target.branches.get(mr.target_branch, "") if merged_results else ""
        ),
    }


def protected(project: Project, ref: str) -> bool:
    return not ref.startswith("refs/") and bool(protection.matching(project, ref))


def project_variables(
    project: Project, ref: str, group: Group | None = None
) -> tuple[dict[str, str], list[str]]:
    """The CI/CD variables a pipeline of ``project`` on ``ref`` gets: its group's, then its own
    over them (doc/ci/variables: project variables take precedence over group ones); protected
    ones only on a protected branch, so never in a merge request pipeline; of environment scope
    ``*`` only, since the sandbox's jobs name no environment. And the values to mask."""
    values, masked = {}, []
    for variable in [*(group.variables if group else []), *project.variables]:
        if variable.get("protected") and not protected(project, ref):
            continue
        if variable.get("environment_scope", "*") != "*":
            continue
        values[str(variable["key"])] = str(variable["value"])
        if variable.get("masked"):
            masked.append(str(variable["value"]))
    return values, masked


def pipeline_variables(pipeline: Pipeline) -> dict[str, str]:
    return {str(v["key"]): str(v.get("value", "")) for v in pipeline.variables}


def mask(text: str, secrets: list[str]) -> str:
    """The job log as GitLab keeps it: each masked value replaced by [MASKED]."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "[MASKED]")
    return text
