"""doctor's checks: each way around the merge gate that a setting leaves open, judged from what
GitLab answered. Pure: the reads are reads.py's.

Every check says which API fields it read, and where GitLab documents them; a field missing from
an answer is "cannot-read" (never a guess). The fields: doc/api/projects.md (the project
settings, ``ci_config_path``, ``forking_access_level``), doc/api/protected_branches.md,
doc/api/branches.md, doc/api/members.md, doc/api/personal_access_tokens.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pairgate.deployment.gate_files import (
    PipelineInputs,
    differing,
    first_difference,
    gate_files,
    recorded_inputs,
    rendered,
)
from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError

PASS, HOLE, CANNOT_READ = "pass", "hole", "cannot-read"
MAINTAINER = 40
ROLE_NAMES = {0: "no access", 5: "Minimal access", 10: "Guest", 15: "Planner", 20: "Reporter"}
ROLE_NAMES |= {30: "Developer", 40: "Maintainer", 50: "Owner", 60: "Administrator"}
PROJECT_FIELDS = "GET /projects/:id"  # doc/api/projects.md


@dataclass(frozen=True)
class DoctorCheck:
    check: str  # a stable id, such as "pipelines-must-succeed"
    subject: str  # the project, the group, or what else it is about
    status: str  # PASS, HOLE or CANNOT_READ
    read: tuple[str, ...]  # the API fields it read, and where GitLab documents them
    detail: str  # what was found
    fix: str = ""  # what closes the hole, or how to make it readable

    def as_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "subject": self.subject,
            "status": self.status,
            "read": list(self.read),
            "detail": self.detail,
            "fix": self.fix or None,
        }


# -- project settings ---------------------------------------------------------------------------


def _setting(
    check: str,
    project: str,
    data: Mapping[str, Any],
    field: str,
    *,
    good: Callable[[Any], bool],
    why: str,
    fix: str,
) -> DoctorCheck:
    read = (f"{PROJECT_FIELDS} {field} (doc/api/projects.md)",)
    if field not in data:
        return DoctorCheck(
            check,
            project,
            CANNOT_READ,
            read,
            f"GitLab's answer for {project} has no {field}: this GitLab, or the read token's "
            f"access, does not show it",
            "run doctor with a read token of an account that sees the project's settings "
            "(a Maintainer's read_api token sees them all)",
        )
    value = data[field]
    if good(value):
        return DoctorCheck(check, project, PASS, read, f"{field} is {_shown(value)}")
    return DoctorCheck(check, project, HOLE, read, f"{field} is {_shown(value)}: {why}", fix)


def _shown(value: Any) -> str:
    return (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)
    )


def setting_checks(project: str, data: Mapping[str, Any]) -> list[DoctorCheck]:
    """ "Pipelines must succeed", skipped pipelines, and forking."""
    put = f"PUT /projects/:id (or the project's settings page), {project}:"
    return [
        _setting(
            "pipelines-must-succeed",
            project,
            data,
            "only_allow_merge_if_pipeline_succeeds",
            good=lambda v: v is True,
            why="a red gate job is advice; the web page, the API and auto-merge merge anyway",
            fix=f"{put} only_allow_merge_if_pipeline_succeeds=true (Settings > Merge requests > "
            f"Merge checks > Pipelines must succeed)",
        ),
        _setting(
            "skipped-pipelines",
            project,
            data,
            "allow_merge_on_skipped_pipeline",
            good=lambda v: v is False,
            why="a head commit saying [skip ci] makes a skipped pipeline with no gate job in "
            "it, and it counts as a success",
            fix=f"{put} allow_merge_on_skipped_pipeline=false (Settings > Merge requests > "
            f"Skipped pipelines are considered successful: off)",
        ),
        _setting(
            "forking",
            project,
            data,
            "forking_access_level",
            good=lambda v: v == "disabled",
            why="a merge request from a fork runs the fork's pipeline with the fork's CI "
            "configuration (a fork copies ci_config_path, and its owner can change it), so no "
            "gate job holds it; `audit` reports every merge from a fork",
            fix=f"{put} forking_access_level=disabled (Settings > General > Visibility, project "
            f"features, permissions > Forks: off); forks made before stay: close their open "
            f"merge requests",
        ),
    ]


# -- the tracker-held pipeline -----------------------------------------------------------------

_CONFIG_PATH = re.compile(r"^(?P<file>[^@]+\.ya?ml)@(?P<project>[^:@]+)(?::(?P<ref>.+))?$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class PipelineFile:
    """Where a ci_config_path points in the tracker: the file and the ref to read it at."""

    path: str
    ref: str | None  # None: the tracker's default branch


def pipeline_file(ci_config_path: Any, tracker: str) -> PipelineFile | str:
    """The tracker file ``ci_config_path`` names, or why it names none (a hole)."""
    if not ci_config_path:
        return (
            "it is unset, so the project's own .gitlab-ci.yml runs: any merge request can edit "
            "the gate out of its own pipeline"
        )
    if str(ci_config_path).startswith(("http://", "https://")):
        return "it is a remote URL: whoever serves that file decides the pipeline"
    match = _CONFIG_PATH.match(str(ci_config_path))
    if match is None:
        return "it is a file of the project itself: any merge request can edit it"
    if match["project"].casefold() != tracker.casefold():
        return f"it names {match['project']}, not the tracker {tracker}"
    return PipelineFile(match["file"], match["ref"])


def pipeline_problem(config: Config, have: bytes) -> str | None:
    """Why the pipeline file is not byte for byte what deploy-pipeline renders from the inputs
    its header records, or None. Any edit is a hole: a second definition of a job, an
    ``extends``, a ``rules:`` entry, an ``include:``; doctor does not judge what an edit does,
    only that the file is no longer pairgate's."""
    inputs = recorded_inputs(have.decode("utf-8", "replace"))
    if isinstance(inputs, str):
        return inputs
    try:
        want = rendered(config, f"{config.cli} doctor", inputs)
    except PairgateError as exc:
        return f"the inputs its header records do not render: {exc.message}"
    if have != want:
        return (
            f"it is not what {config.cli} deploy-pipeline renders from the inputs its header "
            f"records: {first_difference(have, want)}"
        )
    return None


def pipeline_check(
    project: str,
    data: Mapping[str, Any],
    config: Config,
    default_branch: str | None,
    read_file: Callable[[PipelineFile], bytes | Exception],
) -> DoctorCheck:
    """ci_config_path names the tracker-held pipeline, and that file is byte for byte what
    deploy-pipeline renders from the inputs its header records."""
    tracker = config.tracker_project
    read = [f"{PROJECT_FIELDS} ci_config_path (doc/api/projects.md; shown to Reporter and above)"]
    fix = (
        f"publish the tracker-held pipeline (`{config.cli} deploy-pipeline --publish <file> "
        f"...`) and set {project}'s CI/CD configuration file to <file>@{tracker} "
        f"(`{config.cli} doctor --fix --pipeline <file>`, or PUT /projects/:id ci_config_path)"
    )
    check = "tracker-pipeline"
    if "ci_config_path" not in data:
        return DoctorCheck(
            check,
            project,
            CANNOT_READ,
            tuple(read),
            f"GitLab's answer for {project} has no ci_config_path (it shows it to Reporter and "
            f"above)",
            "run doctor with a read token of an account that can read the project's code",
        )
    value = data["ci_config_path"]
    target = pipeline_file(value, tracker)
    if isinstance(target, str):
        return DoctorCheck(
            check, project, HOLE, tuple(read), f"ci_config_path is {_shown(value)}: {target}", fix
        )
    if target.ref is not None and target.ref != default_branch and not _SHA.match(target.ref):
        return DoctorCheck(
            check,
            project,
            HOLE,
            tuple(read),
            f"ci_config_path {value!r} reads the file at {target.ref!r}, which is neither the "
            f"tracker's default branch (protected, checked below) nor a full commit SHA",
            f"drop the ':{target.ref}' (or pin a full commit SHA) in {project}'s ci_config_path",
        )
    ref = target.ref or default_branch or "the default branch"
    read.append(
        f"GET /projects/:id/repository/files/:file_path?ref={ref} on {tracker} "
        f"(doc/api/repository_files.md): the file, byte for byte"
    )
    have = read_file(target)
    if isinstance(have, Exception):
        return DoctorCheck(
            check,
            project,
            CANNOT_READ,
            tuple(read),
            f"{target.path} could not be read from {tracker} at {ref}: {have}",
            "give the read token access to the tracker's repository (read_api)",
        )
    problem = pipeline_problem(config, have)
    if problem is not None:
        return DoctorCheck(
            check,
            project,
            HOLE,
            tuple(read),
            f"ci_config_path is {value!r}, but {target.path} at {ref}: {problem}",
            f"publish it again: `{config.cli} deploy-pipeline --publish {target.path} ...` with "
            f"the flags its header records (--publish {target.path} --check names what "
            f"differs)",
        )
    return DoctorCheck(
        check,
        project,
        PASS,
        tuple(read),
        f"ci_config_path is {value!r}, and {target.path} at {ref} is byte for byte what "
        f"deploy-pipeline renders from its header's inputs",
    )


def gate_files_check(
    subject: str,
    config: Config,
    inputs: PipelineInputs,
    ref: str,
    read_file: Callable[[str], bytes | Exception | None],
) -> DoctorCheck:
    """Every file the pipeline's jobs fetch is at the tracker's default branch and equals this
    pairgate's (a gate job that cannot fetch one fails every merge request; an old one judges
    by old rules)."""
    read = (
        f"GET /projects/:id/repository/files/:file_path?ref={ref} on {config.tracker_project} "
        f"(doc/api/repository_files.md): each file under {inputs.where}/",
    )
    try:
        wanted = gate_files(config, inputs.gate_dir)
    except PairgateError as exc:
        return DoctorCheck(
            "gate-files", subject, CANNOT_READ, read, exc.message, "run doctor beside the "
            "deployment's configuration and roster"
        )  # fmt: skip
    have: dict[str, bytes | None] = {}
    for path in wanted:
        found = read_file(path)
        if isinstance(found, Exception):
            return DoctorCheck(
                "gate-files",
                subject,
                CANNOT_READ,
                read,
                f"{path} could not be read at {ref}: {found}",
                "give the read token access to the tracker's repository (read_api)",
            )
        have[path] = found
    drift = differing(wanted, have)
    if drift:
        return DoctorCheck(
            "gate-files",
            subject,
            HOLE,
            read,
            "; ".join(f"{path} {how}" for path, how in drift)
            + ": the gate jobs fetch these files, so they fail every merge request (missing) "
            "or judge by another pairgate's rules (differs)",
            f"`{config.cli} deploy-pipeline --publish <the pipeline's path> ...` with the flags "
            f"the pipeline's header records",
        )
    return DoctorCheck(
        "gate-files",
        subject,
        PASS,
        read,
        f"the {len(wanted)} files under {inputs.where}/ at {ref} are this pairgate's",
    )


def image_check(subject: str, inputs: PipelineInputs) -> DoctorCheck:
    """The gate jobs' image is named by digest: a tag is replaced by whoever can push it."""
    read = (
        "GET /projects/:id/repository/files/:file_path (doc/api/repository_files.md): the "
        "pipeline file's header, its deploy-pipeline --image",
    )
    if inputs.pinned():
        return DoctorCheck("gate-image", subject, PASS, read, f"{inputs.image} is pinned by digest")
    return DoctorCheck(
        "gate-image",
        subject,
        HOLE,
        read,
        f"{inputs.image} is not pinned by digest: whoever can push that tag replaces the image "
        f"every gate job runs in",
        "publish the pipeline again with --image <registry/path>@sha256:<64 hex>",
    )


ROLE_ORDER = ("developer", "maintainer", "owner", "no_one_allowed")


def variables_check(project: str, data: Mapping[str, Any]) -> DoctorCheck:
    """Pipeline variables are restricted to Maintainers: both settings, since the role has no
    effect while restrict_user_defined_variables is off (ProjectCiCdSetting
    #override_pipeline_variables_allowed?)."""
    fields = ("restrict_user_defined_variables", "ci_pipeline_variables_minimum_override_role")
    read = tuple(f"{PROJECT_FIELDS} {f} (doc/api/projects.md; Maintainer)" for f in fields)
    fix = (
        f"PUT /projects/:id (or `doctor --fix`), {project}: restrict_user_defined_variables=true "
        f"ci_pipeline_variables_minimum_override_role=maintainer (Settings > CI/CD > Variables "
        f"> Minimum role to use pipeline variables)"
    )
    missing = [f for f in fields if f not in data]
    if missing:
        return DoctorCheck(
            "pipeline-variables",
            project,
            CANNOT_READ,
            read,
            f"GitLab's answer for {project} has no {', '.join(missing)} (shown to Maintainers)",
            "run doctor with a Maintainer's read_api token",
        )
    restricted, role = data[fields[0]], data[fields[1]]
    shown = f"restrict_user_defined_variables is {_shown(restricted)}, minimum role {role!r}"
    if restricted is not True or role not in ("maintainer", "owner", "no_one_allowed"):
        return DoctorCheck(
            "pipeline-variables",
            project,
            HOLE,
            read,
            f"{shown}: a Developer runs a pipeline with variables of their own, which reach "
            f"the project's child pipeline and every job's environment",
            fix,
        )
    return DoctorCheck("pipeline-variables", project, PASS, read, shown)


# -- accounts and the read token ----------------------------------------------------------------


def role_check(
    check: str, subject: str, who: str, levels: Sequence[tuple[int, Any]], *, kind: str
) -> DoctorCheck:
    """``who`` (user id, access level or the error reading it) is no Maintainer or Owner of
    ``subject`` (of ``kind`` "projects" or "groups"): a Maintainer could change every setting
    doctor checks."""
    read = (f"GET /{kind}/:id/members/all/:user_id access_level (doc/api/members.md)",)
    errors = [(u, e) for u, e in levels if isinstance(e, Exception)]
    if errors:
        user, error = errors[0]
        return DoctorCheck(
            check,
            subject,
            CANNOT_READ,
            read,
            f"{who} (user id {user}): the membership in {subject} could not be read: {error}",
            "give the read token access to the members of every gated project and the group",
        )
    high = [(u, lv) for u, lv in levels if lv >= MAINTAINER]
    shown = ", ".join(f"user id {u}: {ROLE_NAMES.get(lv, lv)}" for u, lv in levels)
    if high:
        user, level = high[0]
        return DoctorCheck(
            check,
            subject,
            HOLE,
            read,
            f"{who} (user id {user}) is {ROLE_NAMES.get(level, level)} in {subject}: it can "
            f"change the settings the gate stands on, and unprotect branches",
            f"make user id {user} a Developer in {subject} (PUT /{kind}/:id/members/:user_id "
            f"access_level=30, or lower the group membership it inherits)",
        )
    return DoctorCheck(check, subject, PASS, read, f"{who} in {subject}: {shown or 'no member'}")


def distinct_check(bot: int | None, agents: Sequence[int], source: str) -> DoctorCheck:
    read = (f"GET /user id, as the review bot's token ({source}) (doc/api/users.md)",)
    if bot is None:
        return DoctorCheck(
            "accounts-distinct",
            "accounts",
            CANNOT_READ,
            read,
            f"the review bot's account could not be read: {source}",
            "set <env_prefix>_REVIEW_BOT_TOKEN, or put the token in review_bot_token_file",
        )
    if bot in agents:
        return DoctorCheck(
            "accounts-distinct",
            "accounts",
            HOLE,
            read,
            f"the review bot's token is user id {bot}, one of ledger_author_user_ids: the agents "
            f"approve their own merge requests on GitLab",
            "give the review bot an account of its own, and its token to approve with",
        )
    return DoctorCheck(
        "accounts-distinct",
        "accounts",
        PASS,
        read,
        f"the review bot is user id {bot}; the agents post as {', '.join(map(str, agents))}",
    )


def independence_check(
    review: Sequence[int], agents: Sequence[int], bot: int | None, write_token: str
) -> DoctorCheck:
    """What an approval's independence rests on: the review accounts of the configuration
    (``review``, review_author_user_ids) against the agents' (``agents``). Without them it
    rests on the names and sessions records declare, which any writer as the agents' account
    can declare; that is a hole, and this says how to close it."""
    read = (
        "the configuration's review_author_user_ids and ledger_author_user_ids, against GET "
        "/user id as the review bot's token (doc/api/users.md)",
    )
    if not review:
        account = f"user id {bot}, the review bot's" if bot is not None else "the review bot's"
        return DoctorCheck(
            "independence-basis",
            "configuration",
            HOLE,
            read,
            "review_author_user_ids is not set: independence rests on names and sessions, "
            "which any process writing as the agents' account can declare (a hand-set session "
            "id, notes written with a recomputed digest)",
            f"set review_author_user_ids to the review account ({account}), and run each "
            f"reviewer's session with that account's token in {write_token}: an approval then "
            f"counts only in a note GitLab reports as written by it",
        )
    shared = sorted(set(review) & set(agents))
    if shared:
        return DoctorCheck(
            "independence-basis",
            "configuration",
            HOLE,
            read,
            f"user id {shared[0]} is in both review_author_user_ids and ledger_author_user_ids: "
            f"the agents' own account writes approvals that count",
            "give the review role an account of its own, and list only that one in "
            "review_author_user_ids",
        )
    return DoctorCheck(
        "independence-basis",
        "configuration",
        PASS,
        read,
        f"account-bound: approvals count only in notes by user id "
        f"{', '.join(map(str, review))}; the agents post as {', '.join(map(str, agents))}",
    )


def token_check(entity: Mapping[str, Any] | Exception | None, variable: str) -> DoctorCheck:
    read = ("GET /personal_access_tokens/self scopes (doc/api/personal_access_tokens.md)",)
    if entity is None:
        return DoctorCheck(
            "read-token",
            variable,
            CANNOT_READ,
            read,
            f"{variable} is not set: reads go through glab, whose token doctor cannot inspect",
            f"set {variable} to the read token, then run doctor again",
        )
    if isinstance(entity, Exception):
        return DoctorCheck(
            "read-token",
            variable,
            CANNOT_READ,
            read,
            f"the read token's own entity could not be read: {entity}",
            "use a personal access token as the read token (doctor reads its scopes)",
        )
    scopes = [str(s) for s in entity.get("scopes") or []]
    writes = [s for s in scopes if not s.startswith("read_")]
    if writes:
        return DoctorCheck(
            "read-token",
            variable,
            HOLE,
            read,
            f"the read token has the scopes {', '.join(scopes)}: with {', '.join(writes)} "
            f"whoever holds it (every CI job given it) can write, approve and merge",
            "issue a token with read_api only (and read_repository if wanted) and use it as "
            "the read token, in CI too",
        )
    return DoctorCheck(
        "read-token", variable, PASS, read, f"the read token's scopes: {', '.join(scopes)}"
    )
