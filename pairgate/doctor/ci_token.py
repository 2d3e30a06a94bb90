"""doctor's check of the gate jobs' read token: the CI/CD variable the pipeline's
``--read-token-variable`` names is one a merge request pipeline of the gated project is given,
masked. Without it every gate job fails closed: no merge request merges, approved or not.

What a job gets (doc/ci/variables/_index.md): the project's variables over its groups', the
closest group over its parents; a protected variable only in pipelines on protected branches and
tags, and a merge request pipeline runs on refs/merge-requests/<iid>/head, so it never gets one
(doc/ci/pipelines/merge_request_pipelines.md); a job that names no environment, as the gate jobs
do, gets only variables of environment scope ``*``. So the levels are read in that order, with
``filter[environment_scope]=*``, and the first one that is not protected is the variable the
jobs get.

GitLab returns a variable's value to whoever may read it. Only the fields below are kept (the
reader drops the rest), and no answer is printed: doctor never holds the token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pairgate.doctor.checks import CANNOT_READ, HOLE, PASS, DoctorCheck
from pairgate.standalone.gitlab import GitLabError

CHECK = "read-token-variable"
KEPT = ("key", "masked", "hidden", "protected", "variable_type", "environment_scope")
_WHERE = {
    "projects": "doc/api/project_level_variables.md; Maintainer",
    "groups": "doc/api/group_level_variables.md; Owner",
}

# One level's answer: the kept fields, None when it has no such variable (404), or the error.
Answer = Mapping[str, Any] | None | Exception


def metadata(answer: Any) -> dict[str, Any]:
    """The fields doctor judges, and nothing else of GitLab's answer (never the value)."""
    return {k: answer[k] for k in KEPT if isinstance(answer, Mapping) and k in answer}


def levels(project: str) -> list[tuple[str, str]]:
    """Where a job of ``project`` gets variables from, nearest first: the project, then each
    group its path lies in (a subgroup's before its parent's)."""
    parts = project.split("/")
    groups = ["/".join(parts[:n]) for n in range(len(parts) - 1, 0, -1)]
    return [("projects", project), *(("groups", g) for g in groups)]


def _name(kind: str, ref: str) -> str:
    return f"{'project' if kind == 'projects' else 'group'} {ref}"


def read_token_variable_check(
    project: str,
    variable: str,
    pipeline: str,
    read: Callable[[str, str], Answer],
) -> DoctorCheck:
    """``variable`` (named by ``pipeline``'s header) as ``project``'s merge request pipelines get
    it. ``read(kind, ref)`` reads one level; levels past the one that decides are not read."""
    add = (
        f"POST /projects/:id/variables key={variable} value=<a read_api token> masked=true "
        f"protected=false (or {project}'s Settings > CI/CD > Variables > Add variable: "
        f"Masked, not Protected, environment scope All); doctor cannot add it: it does not "
        f"hold the token"
    )
    read_fields: list[str] = []
    protected: list[tuple[str, str]] = []
    for kind, ref in levels(project):
        read_fields.append(
            f"GET /{kind}/:id/variables/{variable}?filter[environment_scope]=* masked, "
            f"protected, variable_type ({_WHERE[kind]}) of {ref}"
        )
        found = read(kind, ref)
        if isinstance(found, Exception):
            return _unseen(project, variable, kind, ref, found, protected, tuple(read_fields))
        if found is None:
            continue
        missing = [k for k in ("masked", "protected") if k not in found]
        if missing:
            return DoctorCheck(
                CHECK, project, CANNOT_READ, tuple(read_fields),
                f"GitLab's answer for {variable} of {_name(kind, ref)} has no "
                f"{', '.join(missing)}",
                "run doctor against a GitLab that shows a variable's masked and protected",
            )  # fmt: skip
        if found["protected"] is True:
            protected.append((kind, ref))
            continue
        return _judged(project, variable, pipeline, (kind, ref), found, tuple(read_fields))
    if protected:
        named = " and ".join(_name(k, r) for k, r in protected)
        return DoctorCheck(
            CHECK,
            project,
            HOLE,
            tuple(read_fields),
            f"{variable} (named by {pipeline}) is protected in {named}: a "
            f"protected variable is given only to pipelines on protected branches and tags, "
            f"and a merge request pipeline runs on refs/merge-requests/<iid>/head, so no gate "
            f"job gets it and every one fails, approved or not",
            f"PUT /{protected[0][0]}/:id/variables/{variable} protected=false, {named} "
            f"(Settings > CI/CD > Variables > Edit: Protect variable off)",
        )
    return DoctorCheck(
        CHECK,
        project,
        HOLE,
        tuple(read_fields),
        f"{variable} (named by {pipeline}) is not a CI/CD variable of {project} nor of its "
        f"groups (of environment scope *: the gate jobs name no environment, so a scoped one "
        f"is not given to them; instance variables, an administrator's, are not read): every "
        f"gate job fails, approved or not",
        add,
    )


def _judged(
    project: str,
    variable: str,
    pipeline: str,
    level: tuple[str, str],
    found: Mapping[str, Any],
    read: tuple[str, ...],
) -> DoctorCheck:
    """The variable the jobs get: masked, and an environment variable (a file variable holds
    the path of a file, which the gate jobs would send as the token)."""
    where = _name(*level)
    edit = f"PUT /{level[0]}/:id/variables/{variable}, {where}"
    if found.get("variable_type", "env_var") != "env_var":
        return DoctorCheck(
            CHECK, project, HOLE, read,
            f"{variable} of {where} is of type {found.get('variable_type')!r}: the gate jobs "
            f"read the token from the variable itself, and a file variable holds a path",
            f"{edit} variable_type=env_var (Settings > CI/CD > Variables > Edit: Type Variable)",
        )  # fmt: skip
    if found["masked"] is not True:
        return DoctorCheck(
            CHECK,
            project,
            HOLE,
            read,
            f"{variable} of {where} is not masked: a job log that prints it (any merge "
            f"request's own job, which runs beside the gate) shows the read token to everyone "
            f"who reads the log",
            f"{edit} masked=true (Settings > CI/CD > Variables > Edit: Mask variable); "
            f"then issue a new token, since the old one may have been shown",
        )
    return DoctorCheck(
        CHECK,
        project,
        PASS,
        read,
        f"{variable} (named by {pipeline}) is set in {where}: masked, not protected, "
        f"environment scope *",
    )


def _unseen(
    project: str,
    variable: str,
    kind: str,
    ref: str,
    error: Exception,
    protected: Sequence[tuple[str, str]],
    read: tuple[str, ...],
) -> DoctorCheck:
    """A level doctor cannot read: whether the jobs get the variable is not known."""
    status = error.status if isinstance(error, GitLabError) else None
    named = " and ".join(_name(k, r) for k, r in protected)
    before = f"; it is protected in {named}" if protected else ""
    if status == 403 and kind == "projects":
        why = "the read token is below Maintainer in it (GitLab shows CI/CD variables to "
        why += "Maintainers)"
        fix = f"run doctor with the read_api token of a Maintainer of {project}"
    elif status == 403:
        why = "the read token is not an Owner of the group (GitLab shows a group's CI/CD "
        why += "variables to its Owners)"
        fix = (
            f"run doctor with the read_api token of an Owner of {ref}, or add {variable} to "
            f"{project} itself, where a Maintainer sees it"
        )
    else:
        why = str(error)
        fix = "run doctor again once GitLab answers"
    return DoctorCheck(
        CHECK,
        project,
        CANNOT_READ,
        read,
        f"whether {project}'s gate jobs get {variable} cannot be seen: the CI/CD variables of "
        f"{_name(kind, ref)} could not be read: {why}{before}",
        fix,
    )
