"""pairgate deploy-agents: render the agent templates into a deployment's agents directory.

The rendering is pairgate/deployment/agent_templates.py's; this writes what it rendered, or with
``--check`` compares bytes.
"""

from __future__ import annotations

from pathlib import Path

from pairgate.deployment import install
from pairgate.deployment.agent_templates import render
from pairgate.deployment.file_set import ORACLE, starter_text
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
        _say_starters(ctx, config, command)
        return Exit.REFUSED if drift else Exit.OK
    again = f"{command} --target {target}"
    for line in install.install(command, target, rendered, mode=0o644, again=again):
        print(line, file=ctx.stdout)
    _say_starters(ctx, config, command)
    return Exit.OK


def starters(config: Config) -> list[Path]:
    """The deployment's texts (and liveness oracle) still as init wrote them: the agents read
    a line that says what belongs there instead of the deployment's own words."""
    found = [
        path
        for path in sorted(config.relative("agent_text_dir").glob("*.md"))
        if _text(path) in (starter_text(path.stem), starter_text(path.stem).rstrip("\n"))
    ]
    oracle = config.relative("liveness_oracle_file")
    if _text(oracle) == ORACLE:
        found.append(oracle)
    return found


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _say_starters(ctx: Context, config: Config, command: str) -> None:
    found = starters(config)
    if found:
        one = len(found) == 1
        print(
            f"{len(found)} text{'' if one else 's'} {'is' if one else 'are'} still "
            f"{'a starter' if one else 'starters'}: {', '.join(str(p) for p in found)}. Write "
            f"the deployment's own words there, then run {command} again.",
            file=ctx.stdout,
        )
