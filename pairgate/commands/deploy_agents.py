"""pairgate deploy-agents: render the agent templates into a deployment's agents directory.

The rendering is pairgate/deployment/agent_templates.py's; this writes what it rendered, or with
``--check`` compares bytes.
"""

from __future__ import annotations

from pathlib import Path

from pairgate.deployment import install
from pairgate.deployment.agent_templates import render
from pairgate.resources import resource_dir
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit


def deploy_agents(*, ctx: Context, config: Config, target: Path, check: bool) -> int:
    """``deploy-agents --target DIR [--check]``: render everything, then write or compare."""
    return deploy_from(resource_dir("agents"), ctx=ctx, config=config, target=target, check=check)


def deploy_from(templates: Path, *, ctx: Context, config: Config, target: Path, check: bool) -> int:
    """deploy-agents from these templates (a test's own, or the package's)."""
    command = f"{config.cli} deploy-agents"
    rendered = render(config, templates)
    if check:
        drift = install.check(command, target, rendered)
        lines = [*drift, f"run {command} --target {target} to update them"] if drift else []
        for line in lines or [f"in line: {len(rendered)} agent definitions in {target}"]:
            print(line, file=ctx.stdout)
        return Exit.REFUSED if drift else Exit.OK
    again = f"{command} --target {target}"
    for line in install.install(command, target, rendered, mode=0o644, again=again):
        print(line, file=ctx.stdout)
    return Exit.OK
