"""pairgate deploy-pipeline: render the tracker-held pipeline into one file.

The file a gated project's "CI/CD configuration file" setting names as
``<path>@<tracker_project>``: both components' gate jobs (rendered from the templates the
package ships, with the configuration's tracker_project and env_prefix and the flags' values),
and the project's own ``.gitlab-ci.yml`` as a child pipeline. The refusals and the writing are
pairgate.deployment.install's, shared with deploy-hooks and deploy-agents; ``--check`` compares
bytes.
Exit codes: 0 done or in line; 1 drift (--check); 2 cannot deploy.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from pairgate.deployment import install
from pairgate.deployment.tracker_pipeline import COMPONENTS, render
from pairgate.resources import component_template, package_file
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError

MODE = 0o644
FRAME = "deployment/tracker-pipeline.yml"
# The gate's files in the tracker repository, by the names the jobs give them.
_GATE_DIR = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")


def pinned_url(config: Config, env: Mapping[str, str], given: str | None) -> str:
    """The instance the jobs are pinned to: --gitlab-url, else <env_prefix>_GITLAB_URL."""
    variable = config.env_name("GITLAB_URL")
    url = (given or env.get(variable, "")).strip().rstrip("/").removesuffix("/api/v4")
    if not url:
        raise UsageError(
            f"{config.cli} deploy-pipeline: name the instance the gate jobs run on with "
            f"--gitlab-url https://gitlab.example.com (or set {variable}): the pin is what keeps "
            "the read token off any host a merge request could name. Nothing was written."
        )
    return url


def input_values(
    config: Config,
    *,
    image: str,
    runner_tags: list[str],
    read_token_variable: str,
    gate_dir: str,
    url: str,
) -> dict[str, dict[str, object]]:
    if not _GATE_DIR.fullmatch(gate_dir) or ".." in gate_dir.split("/"):
        raise UsageError(
            f"{config.cli} deploy-pipeline: --gate-dir {gate_dir!r} is not a path in the tracker "
            "repository (letters, digits, '.', '_', '-' and '/'). Nothing was written."
        )
    where = gate_dir.rstrip("/")
    common: dict[str, object] = {
        "image": image,
        "runner-tags": runner_tags,
        "tracker-project": config.tracker_project,
        "env-prefix": config.env_prefix,
        "read-token-variable": read_token_variable,
        "reader-path": f"{where}/ownership.py",
        "config-path": f"{where}/pairgate-config.json",
        "roster-path": f"{where}/automation_mr_families.py",
        "gitlab-url": url,
    }
    return {
        "mr-ownership-gate": {
            **common,
            "record-validator-path": f"{where}/validate-mr-carries-ownership-record.py",
            "approval-validator-path": f"{where}/validate-mr-approval-at-head.py",
        },
        "mr-merge-check": {
            **common,
            "merge-check-validator-path": f"{where}/validate-mr-merge-check.py",
        },
    }


def rendered(config: Config, command: str, values: dict[str, dict[str, object]]) -> bytes:
    try:
        frame = package_file(FRAME).read_text(encoding="utf-8")
        texts = [
            (name, component_template(name).read_text(encoding="utf-8")) for name in COMPONENTS
        ]
    except OSError as exc:
        raise PairgateError(
            f"{config.cli} deploy-pipeline: this installation lacks a template it renders "
            f"({exc.strerror or exc}: {exc.filename}). Reinstall pairgate. Nothing was written."
        ) from None
    try:
        text = render(frame, texts, values, tracker=config.tracker_project, command=command)
    except UsageError as exc:
        raise UsageError(
            f"{config.cli} deploy-pipeline: {exc.message}. Nothing was written."
        ) from None
    return text.encode("utf-8")


def deploy_pipeline(
    *,
    ctx: Context,
    config: Config,
    target: Path,
    check: bool,
    image: str,
    runner_tag: list[str],
    read_token_variable: str,
    gate_dir: str,
    gitlab_url: str | None,
) -> int:
    """``deploy-pipeline --target FILE [--check] --image I --runner-tag T ...``."""
    command = f"{config.cli} deploy-pipeline"
    url = pinned_url(config, ctx.env, gitlab_url)
    values = input_values(
        config,
        image=image,
        runner_tags=runner_tag,
        read_token_variable=read_token_variable,
        gate_dir=gate_dir,
        url=url,
    )
    flags = ["--image", image, *[w for t in runner_tag for w in ("--runner-tag", t)]]
    flags += ["--read-token-variable", read_token_variable, "--gate-dir", gate_dir]
    flags += ["--gitlab-url", url]
    again = f"{command} --target {shlex.quote(str(target))} {shlex.join(flags)}"
    data = rendered(config, f"{command} --target FILE {shlex.join(flags)}", values)
    files = {target.name: data}
    if check:
        drift = install.check(command, target.parent, files)
        if drift:
            for line in drift:
                print(line, file=ctx.stdout)
            print(f"run {again} to update it", file=ctx.stdout)
            return Exit.REFUSED
        print(f"in line: {target}", file=ctx.stdout)
        return Exit.OK
    for line in install.install(command, target.parent, files, mode=MODE, again=again):
        print(line, file=ctx.stdout)
    print(
        f"commit it to {config.tracker_project}'s default branch, and set each gated "
        f"project's CI/CD configuration file to <its path there>@{config.tracker_project}",
        file=ctx.stdout,
    )
    return Exit.OK
