"""Child pipelines: what a trigger job's ``trigger: include:`` makes (its configuration read
and its variables forwarded, as GitLab's Ci::Bridge and Downstream::Generator do), and the
bridge's status, which with ``strategy: depend`` follows its child's. The runner (runner.py)
runs the child.
"""

from __future__ import annotations

from typing import Any

from pairgate import yaml_io
from pairgate.sandbox import ci_config, ci_plans, ci_variables
from pairgate.sandbox.ci_plans import Plan
from pairgate.sandbox.jobs import set_status
from pairgate.sandbox.model import World
from pairgate.sandbox.records import Job, Pipeline

MAX_DEPTH = 2  # child pipelines below a pipeline (Ci::CreateDownstreamPipelineService)
_DEPEND = {"success": "success", "canceled": "canceled"}  # anything else that ended: failed


def bridge_status(child: str) -> str:
    """A ``strategy: depend`` bridge's status once its child has ended (Ci::Bridge)."""
    return _DEPEND.get(child, "failed")


def prepare(
    world: World, plan: Plan, bridge: Job, *, base: str
) -> tuple[ci_plans.Prepared | None, bool]:
    """The child a bridge starts, prepared (ci_plans.prepare), and whether the bridge takes
    its status (``strategy: depend`` or ``mirror``); None, the bridge failed, when it cannot
    be made."""
    parent = world.pipelines[bridge.pipeline_id]
    project = world.projects[parent.project_id]
    spec = plan.document.get(plan.bridges[bridge.id]) or {}
    trigger = spec.get("trigger") or {}
    if not isinstance(trigger, dict) or "include" not in trigger:
        fail(world, bridge, "trigger: project (a multi-project pipeline) is not served here")
        return None, False
    depend = trigger.get("strategy") in ("depend", "mirror")
    if plan.depth >= MAX_DEPTH:
        fail(world, bridge, "reached_max_descendant_pipelines_depth")
        return None, depend
    forwarded = _forwarded(plan, spec, trigger, parent)
    values = {**plan.variables, "CI_PIPELINE_SOURCE": "parent_pipeline", **forwarded}
    user = world.users.get(parent.user_id or 0)
    try:
        sources = ci_config.child_sources(
            world, project, parent.sha, trigger["include"], values, user
        )
    except ci_config.ConfigError as error:
        fail(world, bridge, str(error))
        return None, depend
    config = ci_config.Source(_merged(sources), sources[0].path)
    branch = plan.variables.get("CI_COMMIT_REF_NAME")
    prepared = ci_plans.prepare(
        world, project, ref=parent.ref, sha=parent.sha, source="parent_pipeline",
        user=user, base=base, mr_iid=parent.mr_iid, branch=branch,
        ignore_skip=True, config=config, parent=parent, depth=plan.depth + 1,
        variables=[{"key": k, "value": v} for k, v in forwarded.items()],
    )  # fmt: skip
    return prepared, depend


def fail(world: World, bridge: Job, reason: str) -> None:
    set_status(world, bridge, "failed")
    bridge.trace = f"Downstream pipeline cannot be created: {reason}\n"


def _forwarded(
    plan: Plan, spec: dict[str, Any], trigger: dict[str, Any], parent: Pipeline
) -> dict[str, str]:
    """What a trigger job passes its child as pipeline variables (Downstream::Generator): its
    YAML variables and the inherited global ones unless ``forward: yaml_variables: false``,
    then the parent's pipeline variables with ``forward: pipeline_variables: true``."""
    forward = trigger.get("forward") or {}
    out: dict[str, str] = {}
    if forward.get("yaml_variables", True):
        inherit = (spec.get("inherit") or {}).get("variables", True)
        globals_ = plan.document.get("variables") or {}
        if inherit is True:
            out |= {k: _value(v) for k, v in globals_.items()}
        elif isinstance(inherit, list):
            out |= {k: _value(v) for k, v in globals_.items() if k in inherit}
        out |= {k: _value(v) for k, v in (spec.get("variables") or {}).items()}
    if forward.get("pipeline_variables", False):
        out |= ci_variables.pipeline_variables(parent)
    return out


def _value(value: Any) -> str:
    return str(value.get("value", "")) if isinstance(value, dict) else str(value)


def _merged(sources: list[ci_config.Source]) -> str:
    """Several included files as one configuration: later files override earlier ones, hashes
    merged deeply and everything else replaced (GitLab's include merge)."""
    if len(sources) == 1:
        return sources[0].text
    merged: dict[str, Any] = {}
    for source in sources:
        _deep_merge(merged, yaml_io.load(source.text) or {})
    return yaml_io.dump(merged)


def _deep_merge(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value
