"""pairgate deploy-pipeline: render the tracker-held pipeline, write the gate's files, and
publish both to the tracker.

The pipeline is the file a gated project's "CI/CD configuration file" setting names as
``<path>@<tracker_project>``: both components' gate jobs (rendered from the templates the
package ships, with the configuration's tracker_project and env_prefix and the flags' values),
and the project's own ``.gitlab-ci.yml`` as a child pipeline. ``--target`` writes it locally,
``--gate-out`` writes the gate directory's files (what the jobs fetch), ``--publish`` commits
both to the tracker's default branch in one commit (pairgate.deployment.publish). ``--check``
compares bytes and writes nothing. The inputs and files are pairgate.deployment.gate_files'.
Exit codes: 0 done or in line; 1 drift (--check), or a branch that moved under the publish;
2 cannot deploy.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

from pairgate.deployment import install, publish
from pairgate.deployment.gate_files import (
    PipelineInputs,
    checked_inputs,
    ci_config_path,
    differing,
    gate_files,
    one_line,
    rendered,
    unpinned_warning,
)
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError
from pairgate.standalone.gitlab import GitLab, GitLabError
from pairgate.standalone.gitlab_env import gitlab_client

MODE = 0o644
_PIPELINE_PATH = re.compile(r"(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.][A-Za-z0-9_./-]*\.ya?ml")


def pinned_url(config: Config, env: Mapping[str, str], given: str | None) -> str:
    """The instance the jobs are pinned to: --gitlab-url, else <env_prefix>_GITLAB_URL."""
    variable = config.env_name("GITLAB_URL")
    if given is not None:
        one_line(f"{config.cli} deploy-pipeline", "--gitlab-url", given)
    url = (given or env.get(variable, "")).strip().rstrip("/").removesuffix("/api/v4")
    if not url:
        raise UsageError(
            f"{config.cli} deploy-pipeline: name the instance the gate jobs run on with "
            f"--gitlab-url https://gitlab.example.com (or set {variable}): the pin is what keeps "
            "the read token off any host a merge request could name. Nothing was written."
        )
    return url


def deploy_client(config: Config, env: Mapping[str, str], url: str, command: str) -> GitLab:
    """A Maintainer's client for the tracker: <env_prefix>_DEPLOY_TOKEN, to the pinned URL."""
    variable = config.env_name("DEPLOY_TOKEN")
    token = env.get(variable, "").strip()
    if not token:
        raise UsageError(
            f"{command}: set {variable} to a token of a Maintainer of {config.tracker_project} "
            f"(scope api): it commits to the protected default branch. Nothing was written."
        )
    return gitlab_client(
        f"{url}/api/v4",
        "--gitlab-url",
        read_token=token,
        read_token_source=variable,
        write_token=token,
        write_token_source=variable,
    )


def deploy_pipeline(
    *,
    ctx: Context,
    config: Config,
    target: Path | None,
    gate_out: Path | None,
    publish_path: str | None,
    check: bool,
    image: str,
    runner_tag: list[str],
    read_token_variable: str,
    gate_dir: str,
    gitlab_url: str | None,
    evidence_image: str | None = None,
) -> int:
    """``deploy-pipeline (--target FILE | --gate-out DIR | --publish PATH) [--check] ...``."""
    command = f"{config.cli} deploy-pipeline"
    if target is None and gate_out is None and publish_path is None:
        raise UsageError(
            f"{command}: say where the gate goes: --target FILE (the pipeline), --gate-out DIR "
            f"(the gate's files), --publish PATH (both, to the tracker). Nothing was written."
        )
    for flag, path in (("--target", target), ("--gate-out", gate_out)):
        if path is not None:
            one_line(command, flag, str(path))
    url = pinned_url(config, ctx.env, gitlab_url)
    inputs = checked_inputs(
        command,
        PipelineInputs(
            image, tuple(runner_tag), read_token_variable, gate_dir, url, evidence_image
        ),
    )
    if publish_path is not None and not _PIPELINE_PATH.fullmatch(publish_path):
        raise UsageError(
            f"{command}: --publish {publish_path!r} is not a YAML file's path in the tracker "
            f"repository (letters, digits, '.', '_', '-' and '/', ending .yml or .yaml). "
            f"Nothing was written."
        )
    data = rendered(config, command, inputs)
    files = gate_files(config, gate_dir) if gate_out or publish_path else {}
    warning = unpinned_warning(image)
    if warning and not check:
        print(warning, file=ctx.stderr)
    again = f"{command} {' '.join(_where(target, gate_out, publish_path))} " + shlex.join(
        inputs.flags()
    )
    code: int = Exit.OK
    local: list[tuple[Path, dict[str, bytes]]] = []
    if target is not None:
        local.append((target.parent, {target.name: data}))
    if gate_out is not None:
        local.append((gate_out, {Path(p).name: b for p, b in files.items()}))
    for directory, named in local:
        if check:
            drift = install.check(command, directory, named)
            for line in drift:
                print(line, file=ctx.stdout)
            if drift:
                code = Exit.REFUSED
            else:
                print(f"in line: {', '.join(str(directory / n) for n in named)}", file=ctx.stdout)
        else:
            for line in install.install(command, directory, named, mode=MODE, again=again):
                print(line, file=ctx.stdout)
    if publish_path is not None:
        wanted = {publish_path: data, **files}
        code = max(code, publish_files(ctx, config, url, wanted, check=check))
        setting = ci_config_path(publish_path, config)
        print(
            f"set each gated project's CI/CD configuration file (Settings > CI/CD > General "
            f"pipelines; PUT /projects/:id ci_config_path) to: {setting}",
            file=ctx.stdout,
        )
    elif not check and target is not None:
        there = tracker_path(target)
        print(
            f"commit it to {config.tracker_project}'s default branch as {there} (or let "
            f"{command} --publish {shlex.quote(there)} commit it with the gate's files), and set "
            f"each gated project's CI/CD configuration file to: "
            f"{ci_config_path(there, config)}",
            file=ctx.stdout,
        )
    if code != Exit.OK and check:
        print(f"run {again} to update it", file=ctx.stdout)
    return code


def tracker_path(target: Path) -> str:
    """The pipeline file's path in the tracker repository: its path in the git checkout it was
    written into (a checkout of the tracker, as the README deploys it), else its name."""
    here = target.resolve()
    for directory in here.parents:
        if (directory / ".git").exists():
            return here.relative_to(directory).as_posix()
    return here.name


def _where(target: Path | None, gate_out: Path | None, publish_path: str | None) -> list[str]:
    out = []
    for flag, value in (("--target", target), ("--gate-out", gate_out)):
        if value is not None:
            out += [flag, shlex.quote(str(value))]
    if publish_path is not None:
        out += ["--publish", shlex.quote(publish_path)]
    return out


def publish_files(
    ctx: Context,
    config: Config,
    url: str,
    wanted: dict[str, bytes],
    *,
    check: bool,
    between: Callable[[], None] | None = None,
) -> int:
    """--publish: compare (``check``) or commit ``wanted`` (path -> bytes) on the tracker's
    default branch; ``between`` runs after the reads, before the commit (a test's writer)."""
    command = f"{config.cli} deploy-pipeline"
    tracker = config.tracker_project
    client = deploy_client(config, ctx.env, url, command)
    try:
        remote = publish.read_remote(client, tracker, list(wanted))
    except PairgateError as exc:
        raise PairgateError(
            f"{command}: could not read {tracker}'s default branch: {exc.message}. "
            f"Nothing was written."
        ) from None
    drift = differing(wanted, remote.files)
    where = f"{tracker} {remote.branch} at {remote.head[:12]}"
    if check:
        for path, how in drift:
            print(f"{how}: {path} ({where})", file=ctx.stdout)
        if drift:
            return Exit.REFUSED
        print(f"in line: {len(wanted)} files on {where}", file=ctx.stdout)
        return Exit.OK
    todo = publish.actions(wanted, remote)
    if not todo:
        print(f"in line: {len(wanted)} files on {where}; nothing to commit", file=ctx.stdout)
        return Exit.OK
    message = f"pairgate gate: {', '.join(a['file_path'] for a in todo)}"
    try:
        done = publish.commit(client, tracker, remote, todo, message, between=between)
    except GitLabError as exc:
        raise PairgateError(
            f"{command}: {tracker} refused the commit: {exc.message}. Nothing was "
            f"published (a file changed since it was read at {remote.head[:12]}, or the token "
            f"may not push to {remote.branch}); run {command} --publish again to read it anew."
        ) from None
    for action in todo:
        print(f"{action['action']}d: {action['file_path']}", file=ctx.stdout)
    print(f"published: commit {done.commit} on {tracker} {remote.branch}", file=ctx.stdout)
    code: int = Exit.OK
    if done.moved_before:
        print(
            f"{command}: {tracker} {remote.branch} moved between the read "
            f"({remote.head[:12]}) and the commit, which went on {str(done.parent)[:12]}: none "
            f"of the published files changed in between (GitLab checked each), but commits "
            f"landed that this run did not see. Review them, then run {command} --publish "
            f"PATH --check and doctor.",
            file=ctx.stdout,
        )
        code = Exit.REFUSED
    if done.head_after != done.commit:
        print(
            f"{command}: {tracker} {remote.branch} moved again after the commit (now "
            f"{done.head_after[:12]}): run {command} --publish PATH --check and doctor.",
            file=ctx.stdout,
        )
        code = Exit.REFUSED
    return code
