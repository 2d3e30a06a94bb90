"""``pairgate sandbox push``, ``variable`` and ``merge``: what an operator trying a deployment
against a running sandbox would otherwise write curl bodies for (docs/sandbox.md, "A whole
deployment against it").

``push`` puts a real git repository's HEAD on a sandbox branch under its own commit id (the
sandbox's ``POST /-/sandbox/commits``), so that ``evidence run`` in that repository and the
merge request name the same SHA. ``merge`` presses GitLab's merge button (``PUT
.../merge_requests/:iid/merge`` as the agents' account) once the sandbox's runner is idle, so
the answer is the one the finished pipeline decides. ``variable`` adds a masked CI/CD
variable as the maintainer, where GitLab has a settings page. All three talk to the sandbox alone.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from pairgate.sandbox import defaults
from pairgate.standalone.errors import Context, Exit, PairgateError

TIMEOUT = 10.0  # one HTTP call to a sandbox on loopback


def _url(base: str, tail: str) -> str:
    return f"{base.rstrip('/')}/{tail}"


def _call(method: str, url: str, **kw: Any) -> Any:
    import requests

    try:
        return requests.request(method, url, timeout=TIMEOUT, **kw)
    except requests.RequestException as error:
        raise PairgateError(f"pairgate sandbox: no sandbox answers at {url}: {error}") from None


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise PairgateError(
            f"pairgate sandbox push: git {' '.join(args)} in {repo}: {done.stderr.strip()}"
        )
    return done.stdout


def head_files(repo: Path) -> dict[str, str]:
    """Every file of HEAD's tree, by path, as text."""
    files = {}
    for path in _git(repo, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0"):
        if path:
            blob = subprocess.run(
                ["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=True
            ).stdout
            try:
                files[path] = blob.decode("utf-8")
            except UnicodeDecodeError:
                raise PairgateError(
                    f"pairgate sandbox push: {path} is not UTF-8 text; the sandbox holds text files"
                ) from None
    return files


def push(*, ctx: Context, url: str, repo: Path, project: str, branch: str) -> int:
    """``sandbox push``: HEAD of ``repo`` onto ``branch``; prints its commit id."""
    repo = repo.resolve()
    sha = _git(repo, "rev-parse", "HEAD").strip()
    body = {
        "project": project,
        "sha": sha,
        "branch": branch,
        "files": head_files(repo),
        "message": _git(repo, "log", "-1", "--format=%B").strip() or "Pushed commit",
        "git_dir": str(repo),
    }
    answer = _call("POST", _url(url, "-/sandbox/commits"), json=body)
    if answer.status_code != 201:
        raise PairgateError(
            f"pairgate sandbox push: the sandbox refused {sha} on {project} {branch}: "
            f"HTTP {answer.status_code} {answer.text.strip()}"
        )
    print(sha, file=ctx.stdout)
    return Exit.OK


def variable(*, ctx: Context, url: str, project: str, key: str, value: str) -> int:
    """``sandbox variable``: a masked CI/CD variable of ``project``, added as the maintainer
    (GitLab's Settings > CI/CD > Variables, which the sandbox has no page for)."""
    headers = {"PRIVATE-TOKEN": defaults.token("maintainer")}
    path = _url(url, f"api/v4/projects/{project.replace('/', '%2F')}/variables")
    body = {"key": key, "value": value, "masked": True}
    answer = _call("POST", path, headers=headers, json=body)
    if answer.status_code != 201:
        raise PairgateError(
            f"pairgate sandbox variable: {project} {key}: HTTP {answer.status_code} "
            f"{answer.text.strip()}"
        )
    print(f"{project}: CI/CD variable {key} added, masked", file=ctx.stdout)
    return Exit.OK


def wait_idle(url: str, timeout: float) -> None:
    """Until the sandbox's runner runs no pipeline; an error after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        running = _call("GET", _url(url, "-/sandbox/runner")).json().get("running", 0)
        if not running:
            return
        if time.monotonic() > deadline:
            raise PairgateError(
                f"pairgate sandbox merge: the runner still runs {running} pipeline(s) after "
                f"{timeout:g} s; nothing was merged"
            )
        time.sleep(0.2)


def merge(*, ctx: Context, url: str, project: str, mr: int, timeout: float) -> int:
    """``sandbox merge``: the merge button, pressed as the agents' account at the merge
    request's head, once every pipeline has run. Exit 0 merged, 1 refused."""
    wait_idle(url, timeout)
    headers = {"PRIVATE-TOKEN": defaults.token("agents")}
    path = _url(url, f"api/v4/projects/{project.replace('/', '%2F')}/merge_requests/{mr}")
    found = _call("GET", path, headers=headers)
    if found.status_code != 200:
        raise PairgateError(
            f"pairgate sandbox merge: {project}!{mr}: HTTP {found.status_code} {found.text.strip()}"
        )
    request = found.json()
    pipeline = request.get("head_pipeline") or {}
    said = f"head pipeline {pipeline['id']}: {pipeline['status']}" if pipeline else "no pipeline"
    answer = _call("PUT", f"{path}/merge", headers=headers, json={"sha": request["sha"]})
    if answer.status_code == 200:
        print(f"merged {answer.json()['merge_commit_sha']} ({said})", file=ctx.stdout)
        return Exit.OK
    print(
        f"refused: HTTP {answer.status_code} {answer.text.strip()} ({project}!{mr} at "
        f"{request['sha'][:12]}, {said})",
        file=ctx.stdout,
    )
    return Exit.REFUSED
