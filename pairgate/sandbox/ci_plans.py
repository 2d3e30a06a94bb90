"""A pipeline made from its configuration, in three steps so that gitlab-ci-local never runs
under the server's lock unless the caller wants the answer at once (GitLab creates a pipeline
within the request that asks for one):

1. ``prepare`` (reads the world): the configuration, the commit's files, the variables.
2. ``evaluate`` (no world): the commit checked out, and one gitlab-ci-local ``--list-json``
   start for the jobs, the expanded configuration and ``workflow:rules`` (asked as one more
   job's rules: gitlab-ci-local only takes their variables), remembered for a configuration and
   the values of the variables its rules read.
3. ``record`` (writes the world): the pipeline and its jobs, unless no job is left, when GitLab
   creates no pipeline.
"""

from __future__ import annotations

import itertools
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairgate import yaml_io
from pairgate.sandbox import ci_config, ci_variables, gcl, pipelines
from pairgate.sandbox.jobs import add_job
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Pipeline, Project, User

CONFIG_FILE = ".pairgate-sandbox-ci.yml"  # untracked: never copied into a job's directory
STATE = ".pairgate-sandbox-gcl"  # gitlab-ci-local's state directory in a checkout
_PROBE = "pairgate-sandbox-workflow"
_RULE_KEYS = ("rules", "workflow", "only", "except", "variables", "include")
_NAMES = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Prepared:
    """A pipeline about to be made: everything ``evaluate`` and ``record`` need."""

    pipeline: Pipeline
    text: str | None  # the configuration; None with an error or a skip
    error: str | None
    skip: bool
    tree: dict[str, str]
    branch: str  # the checkout's branch: the pipeline's branch, or the MR's source branch
    remote: str
    default_branch: str
    variables: dict[str, str]
    masked: list[str]
    depth: int = 0  # 0 for a pipeline, 1 and 2 for children
    git_dir: str | None = None  # where a mirrored commit is fetched from (records.Commit)


@dataclass
class Plan:
    """A recorded pipeline as the runner runs it."""

    pipeline_id: int
    cwd: Path
    variables: dict[str, str]
    masked: list[str]
    document: dict[str, Any]
    builds: dict[str, int] = field(default_factory=dict)  # gitlab-ci-local's name -> job id
    bridges: dict[int, str] = field(default_factory=dict)  # job id -> its name
    depth: int = 0
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))


def prepare(
    world: World,
    project: Project,
    *,
    ref: str,
    sha: str,
    source: str,
    user: User | None,
    base: str,
    mr_iid: int | None = None,
    branch: str | None = None,
    push_options: dict[str, Any] | None = None,
    ignore_skip: bool = False,
    variables: list[dict[str, Any]] | None = None,
    config: ci_config.Source | None = None,
    parent: Pipeline | None = None,
    depth: int = 0,
    source_sha: str | None = None,
) -> Prepared | None:
    """None when the project has no configuration at ``sha`` (GitLab makes no pipeline)."""
    error = None
    if config is None:
        try:
            config = ci_config.source_for(world, project, sha, user)
        except ci_config.ConfigError as problem:
            error = str(problem)
        if config is None and error is None:
            return None
    pipeline = Pipeline(
        world.next_id("pipeline"),
        world.next_iid(project, "pipeline"),
        project.id,
        sha,
        ref,
        source,
        user.id if user else None,
        world.stamp(),
        world.stamp(),
        mr_iid=mr_iid,
        parent_id=parent.id if parent else None,
        variables=list(variables or []),
        source_sha=source_sha,
    )
    checkout_branch = branch or ref
    predefined = ci_variables.predefined(world, pipeline, branch=branch, base=base)
    group = world.groups.get(project.namespace_id)
    own, masked = ci_variables.project_variables(project, ref, group)
    values = {**predefined, **own, **ci_variables.pipeline_variables(pipeline)}
    commit = world.commits[sha]
    skip = not ignore_skip and ci_config.skips(commit.message, push_options)
    return Prepared(
        pipeline,
        config.text if config else None,
        error,
        skip,
        dict(commit.tree),
        checkout_branch,
        f"{base}/{world.full_path(project)}.git",
        project.default_branch,
        values,
        masked,
        depth,
        commit.git_dir,
    )


@dataclass
class Evaluated:
    jobs: list[dict[str, Any]]  # gitlab-ci-local's list, "never" ones left out
    document: dict[str, Any]
    cwd: Path | None


class Evaluator:
    """gitlab-ci-local's answers for configurations, remembered where they depend on nothing
    but the text and the variables its rules name."""

    def __init__(self, program: str, root: Path) -> None:
        self.program, self.root = program, root
        self._count = itertools.count(1)  # ids start again after a reset: directories do not
        self.cache: dict[tuple[Any, ...], tuple[list[dict[str, Any]], dict[str, Any], bool]] = {}

    def evaluate(self, prepared: Prepared) -> Evaluated:
        """Raises gcl.GclError when gitlab-ci-local refuses the configuration."""
        pipeline = prepared.pipeline
        cwd = gcl.checkout(
            self.root / f"{next(self._count)}-pipeline-{pipeline.id}",
            prepared.tree,
            branch=prepared.branch,
            remote=prepared.remote,
            default_branch=prepared.default_branch,
            fetch=(prepared.git_dir, pipeline.sha) if prepared.git_dir else None,
        )
        (cwd / CONFIG_FILE).write_text(prepared.text or "", encoding="utf-8")
        key = _cache_key(prepared.text or "", prepared.variables, prepared.tree)
        if key is not None and key in self.cache:
            jobs, document, admitted = self.cache[key]
        else:
            jobs, document, admitted = self._ask(prepared, cwd)
            if key is not None:
                self.cache[key] = (jobs, document, admitted)
        kept = [j for j in jobs if j.get("when") != "never"] if admitted else []
        return Evaluated(kept, document, cwd)

    def home(self) -> Path:
        home = self.root / "gitlab-ci-local-home"
        home.mkdir(exist_ok=True)
        return home

    def _ask(
        self, prepared: Prepared, cwd: Path
    ) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
        """gitlab-ci-local's jobs and expanded configuration, and whether ``workflow:rules``
        admit the pipeline. gitlab-ci-local evaluates a job's rules but not the workflow's, so
        the workflow's are asked as the rules of one more job: written into the configuration
        itself when it includes nothing (one start), else in a file of their own (two)."""
        home, variables = self.home(), prepared.variables
        raw = _plain(prepared.text or "")
        rules = ((raw or {}).get("workflow") or {}).get("rules")
        if raw is not None and rules:
            probed = {**raw, _PROBE: {"stage": ".pre", "rules": rules, "script": [":"]}}
            (cwd / CONFIG_FILE).write_text(yaml_io.dump(probed, sort_keys=False), encoding="utf-8")
        found = gcl.evaluate(self.program, cwd, CONFIG_FILE, variables, state=STATE, home=home)
        jobs = [j for j in found.jobs if j["name"] != _PROBE]
        document = {k: v for k, v in found.document.items() if k != _PROBE}
        if raw is not None and rules:
            return jobs, document, _admits(found.jobs)
        rules = (document.get("workflow") or {}).get("rules")
        if not rules:
            return jobs, document, True
        probe = {
            "variables": document.get("variables") or {},
            _PROBE: {"rules": rules, "script": [":"]},
        }
        name = ".pairgate-sandbox-workflow.yml"
        (cwd / name).write_text(yaml_io.dump(probe), encoding="utf-8")
        alone = gcl.evaluate(
            self.program, cwd, name, variables, state=STATE + "-workflow", home=home
        )
        return jobs, document, _admits(alone.jobs)


def _admits(jobs: list[dict[str, Any]]) -> bool:
    return any(j["name"] == _PROBE and j.get("when") != "never" for j in jobs)


def _plain(text: str) -> dict[str, Any] | None:
    """The configuration as a mapping, when it includes no other file and YAML reads it
    without GitLab's own tags (``!reference``); else None."""
    try:
        document = yaml_io.load(text)
    except yaml_io.YAMLError:
        return None
    return document if isinstance(document, dict) and "include" not in document else None


def _cache_key(
    text: str, variables: dict[str, str], tree: dict[str, str] | None = None
) -> tuple[Any, ...] | None:
    """The text, the values of the variables named where rules and includes live, and whether
    each exact path a ``rules: exists:`` names is in the commit; None (no remembering) for a
    configuration that includes files, or whose rules read the commit's files otherwise (a glob
    or a variable in ``exists``, ``changes``): its answer depends on them too."""
    document = _plain(text)
    if document is None:
        return None
    named: set[str] = set()
    paths: set[str] = set()
    for key, value in document.items():
        parts = [value] if key in _RULE_KEYS else []
        if isinstance(value, dict):
            parts += [value.get(k) for k in _RULE_KEYS if k in value]
        read = _files_read(parts)
        if read is None:
            return None
        paths |= read
        named |= set(_NAMES.findall(yaml_io.dump(parts)))
    present = tuple(sorted((p, p in (tree or {})) for p in paths))
    return (text, tuple(sorted((n, variables.get(n)) for n in named)), present)


_EXACT = re.compile(r"^[A-Za-z0-9._/-]+$")  # no glob, no variable


def _files_read(node: Any) -> set[str] | None:
    """The exact paths the rules under ``node`` test with ``exists``; None when they read the
    commit's files in any other way."""
    found: set[str] = set()
    if isinstance(node, dict):
        if "changes" in node:
            return None
        if "exists" in node:
            listed = node["exists"]
            if not (isinstance(listed, list) and all(isinstance(p, str) for p in listed)):
                return None
            if not all(_EXACT.match(p) for p in listed):
                return None
            found |= set(listed)
        children: list[Any] = [v for k, v in node.items() if k != "exists"]
    elif isinstance(node, list):
        children = node
    else:
        return found
    for child in children:
        more = _files_read(child)
        if more is None:
            return None
        found |= more
    return found


def record(
    world: World, prepared: Prepared, evaluated: Evaluated | None
) -> tuple[Pipeline, Plan | None] | None:
    """Store the pipeline and its jobs; None when it has no job (GitLab creates none). A skip or
    a configuration error stores a pipeline without jobs, skipped or failed, and no plan."""
    pipeline = prepared.pipeline
    if prepared.skip or prepared.error is not None or evaluated is None:
        pipeline.status = "skipped" if prepared.skip else "failed"
        pipeline.yaml_errors = None if prepared.skip else prepared.error
        pipelines.store(world, pipeline)
        return pipeline, None
    if not evaluated.jobs:
        return None
    pipelines.store(world, pipeline)
    assert evaluated.cwd is not None
    plan = Plan(
        pipeline.id,
        evaluated.cwd,
        prepared.variables,
        prepared.masked,
        evaluated.document,
        depth=prepared.depth,
    )
    stages = _stages(evaluated.document)
    rank = {stage: n for n, stage in enumerate(stages)}
    first = min((rank.get(j.get("stage", "test"), 0) for j in evaluated.jobs), default=0)
    for spec in evaluated.jobs:
        name = str(spec["name"])
        definition = evaluated.document.get(name) or {}
        ready = rank.get(spec.get("stage", "test"), 0) == first or spec.get("needs") == []
        status = "manual" if spec.get("when") == "manual" else ("pending" if ready else "created")
        job = add_job(
            world,
            pipeline,
            {
                "name": name,
                "stage": spec.get("stage", "test"),
                "allow_failure": bool(spec.get("allow_failure")),
                "status": status,
            },
            token=secrets.token_urlsafe(24),
        )
        if isinstance(definition, dict) and "trigger" in definition:
            job.kind = "bridge"
            plan.bridges[job.id] = name
        else:
            plan.builds[safe_name(name)] = job.id
    return pipeline, plan


def _stages(document: dict[str, Any]) -> list[str]:
    stages = list(document.get("stages") or [".pre", "build", "test", "deploy", ".post"])
    return stages if "test" in stages else [*stages, "test"]


def safe_name(name: str) -> str:
    """gitlab-ci-local's file name for a job (Utils.safeDockerString): each run of characters
    outside [A-Za-z0-9_-] replaced by its base64url."""
    import base64

    def encode(match: re.Match[str]) -> str:
        return base64.urlsafe_b64encode(match.group(0).encode()).decode().rstrip("=")

    return re.sub(r"[^A-Za-z0-9_-]+", encode, name)


def create_now(
    world: World, evaluator: Evaluator | None, prepared: Prepared
) -> tuple[Pipeline, Plan | None] | None:
    """All three steps at once (the caller holds the lock); a configuration gitlab-ci-local
    refuses makes a failed pipeline with its message."""
    if prepared.skip or prepared.error is not None or evaluator is None:
        return record(world, prepared, None)
    try:
        evaluated = evaluator.evaluate(prepared)
    except gcl.GclError as error:
        prepared.error = str(error)
        return record(world, prepared, None)
    return record(world, prepared, evaluated)
