"""gitlab-ci-local (4.73.0), the program the sandbox's runner runs jobs with: where it is, a
commit checked out for it, one start that evaluates a configuration (``--list-json``, which also
writes the configuration with its includes and extends expanded), one start that runs every job
of it, and the shell each job's script goes through (shim.py) so that the sandbox knows when a
job starts and ends and gives it its token and its own HOME.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pairgate import yaml_io
from pairgate.sandbox import shim

VERSION = "4.73.0"  # its newest release that runs on Node 20
INSTALL = (
    f"npm install --prefix .cache/gitlab-ci-local gitlab-ci-local@{VERSION} (it needs Node 20 "
    "or later, and rsync: apt-get install rsync)"
)
_LOCAL = Path(".cache") / "gitlab-ci-local" / "node_modules" / ".bin" / "gitlab-ci-local"
# The flags every start gets: jobs in this machine's shell, each in a copy of the checkout's
# tracked files (--shell-isolation), no colours, gitlab-ci-local's own variables file unread.
_COMMON = (
    "--force-shell-executor",
    "--shell-executor-no-image",
    "--shell-isolation",
    "--no-json-schema-validation",
    "--no-color",
    "--max-job-name-padding",
    "0",
)
_TIMEOUT = 600


class GclError(Exception):
    """gitlab-ci-local could not read the configuration: its message."""


def find(explicit: str | Path | None = None, *, cwd: Path | None = None) -> str | None:
    """gitlab-ci-local: the one named, else ``.cache/gitlab-ci-local`` in the current directory
    (where scripts/test installs it), else the one on PATH."""
    if explicit:
        path = Path(explicit).expanduser()
        return str(path.absolute()) if path.is_file() and os.access(path, os.X_OK) else None
    local = (cwd or Path.cwd()) / _LOCAL
    return str(local.absolute()) if local.is_file() else shutil.which("gitlab-ci-local")


def missing(explicit: str | Path | None = None) -> list[str]:
    """What the runner lacks to start, each with how to install it; empty when it can run."""
    out = [] if find(explicit) else [f"gitlab-ci-local {VERSION}: {INSTALL}"]
    if explicit and out:
        out = [f"gitlab-ci-local at {explicit} (no executable file there); or {INSTALL}"]
    return out + ([] if shutil.which("rsync") else ["rsync (apt-get install rsync)"])


def _git(args: Sequence[str], cwd: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "pairgate sandbox",
        "GIT_AUTHOR_EMAIL": "runner@sandbox.test",
        "GIT_COMMITTER_NAME": "pairgate sandbox",
        "GIT_COMMITTER_EMAIL": "runner@sandbox.test",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def checkout(
    path: Path,
    tree: Mapping[str, str],
    *,
    branch: str,
    remote: str,
    default_branch: str,
    fetch: tuple[str, str] | None = None,
) -> Path:
    """A git repository at ``path`` holding ``tree`` on ``branch``, its origin the sandbox's
    project URL, so that gitlab-ci-local derives the instance and the project from it. With
    ``fetch`` (a repository and a commit id: a mirrored commit's), the branch is that commit,
    fetched from there, as a runner fetches the pipeline's commit from GitLab."""
    path.mkdir(parents=True)
    local = branch if _plain_branch(branch) else "sandbox-pipeline"
    # Four git starts, not eight (a pipeline's checkout is made for every pipeline, and each
    # start is a fork of the sandbox's process): no template (no sample hooks, which every
    # job's copy of the checkout would carry too), the identity and the origin written into
    # the configuration as ``git config`` writes them, and origin/HEAD a symbolic ref file.
    _git(["init", "-q", "--template=", "-b", local], path)
    with (path / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write(
            '[user]\n\tname = "pairgate sandbox"\n\temail = "runner@sandbox.test"\n'
            f'[remote "origin"]\n\turl = {_quoted(remote)}\n'
            "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        )
    if fetch is not None:
        source, sha = fetch
        _git(["fetch", "-q", "--no-tags", source, sha], path)
        _git(["checkout", "-q", "-B", local, sha], path)
    else:
        for name, content in tree.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        _git(["add", "-A"], path)
        _git(["commit", "-q", "--allow-empty", "-m", "sandbox pipeline"], path)
    _git(["update-ref", f"refs/remotes/origin/{default_branch}", "HEAD"], path)
    (path / ".git" / "refs" / "remotes" / "origin" / "HEAD").write_text(
        f"ref: refs/remotes/origin/{default_branch}\n", encoding="utf-8"
    )
    return path


def _quoted(value: str) -> str:
    """A value as git's configuration file quotes it."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _plain_branch(name: str) -> bool:
    return bool(name) and not name.startswith(("refs/", "-")) and ".." not in name


@dataclass(frozen=True)
class Evaluation:
    """What gitlab-ci-local made of a configuration: its jobs (name, stage, when,
    allow_failure, needs) with their rules applied, and the whole configuration expanded."""

    jobs: list[dict[str, Any]]
    document: dict[str, Any]


# What gitlab-ci-local predefines that GitLab leaves unset in some pipelines: unset unless given.
_UNSET_UNLESS_GIVEN = ("CI_COMMIT_BRANCH",)


def _argv(gcl: str, file: str, state: str, variables: Mapping[str, str]) -> list[str]:
    argv = [gcl, *_COMMON, "--file", file, "--state-dir", state]
    argv += ["--ignore-predefined-vars", ",".join(sorted(variables))]
    for name, value in variables.items():
        argv += ["--variable", f"{name}={value}"]
    for name in _UNSET_UNLESS_GIVEN:
        if name not in variables:
            argv += ["--unset-variable", name]
    return argv


def _env(home: Path, path_first: Sequence[Path] = ()) -> dict[str, str]:
    """gitlab-ci-local's environment, which every job inherits: nothing of this process's but
    PATH, a HOME of its own and the locale."""
    path = os.pathsep.join([*(str(p) for p in path_first), os.environ.get("PATH", os.defpath)])
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}


def evaluate(
    gcl: str, cwd: Path, file: str, variables: Mapping[str, str], *, state: str, home: Path
) -> Evaluation:
    """One ``--list-json`` start; raises GclError with its message on a configuration it
    refuses."""
    argv = [*_argv(gcl, file, state, variables), "--list-json"]
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=_env(home), capture_output=True, text=True, timeout=_TIMEOUT
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GclError(f"the sandbox's runner could not run gitlab-ci-local: {error}") from None
    expanded = cwd / state / "expanded-gitlab-ci.yml"
    if done.returncode != 0 or not expanded.is_file():
        raise GclError(_complaint(done.stdout + done.stderr))
    jobs = json.loads(done.stdout)
    document = yaml_io.load(expanded.read_text(encoding="utf-8")) or {}
    return Evaluation(list(jobs), dict(document))


def _complaint(output: str) -> str:
    """gitlab-ci-local's error, without its notes about the git remote."""
    noise = (
        "Unable to retrieve default remote branch",
        "Using fallback git remote",
        "Command failed",
    )
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    kept = [line for line in lines if not line.startswith(noise) and "fatal:" not in line]
    return "\n".join(kept[-5:]) or "gitlab-ci-local could not read the configuration"


def run(
    gcl: str,
    cwd: Path,
    file: str,
    variables: Mapping[str, str],
    *,
    state: str,
    home: Path,
    shell: Path,
    started: Callable[[subprocess.Popen[str]], None],
    jobs: Sequence[str] = (),
) -> tuple[int, str]:
    """One start that runs every job of ``file`` (or ``jobs``); each job's script goes through
    the shell in the directory ``shell`` (shim.py), first on PATH, with this interpreter's
    directory next so that a job's python3 is this one. ``started`` is given the process (in
    a session of its own, so that it can be ended whole). Returns its exit code and output."""
    argv = [*_argv(gcl, file, state, variables), *jobs]
    env = _env(home, (shell, Path(sys.executable).parent))
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    ) as process:  # fmt: skip
        started(process)
        try:
            output, _ = process.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return process.returncode, output


def write_shell(directory: Path, *, url: str, run_id: str) -> Path:
    """The directory whose ``bash`` is the sandbox's job shell for one run (shim.py)."""
    directory.mkdir(parents=True)
    python = os.path.realpath(sys.executable)  # a binary: a script interpreter could be bash
    shim.write(directory, python=python, url=url, run_id=run_id)
    return directory
