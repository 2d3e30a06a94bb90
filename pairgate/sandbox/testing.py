"""A sandbox for tests: ``running_sandbox()`` serves one in-process on a free loopback port and
yields a ``RunningSandbox`` with the ready line's fields and thin helpers over the real HTTP API
(and the ``/-/sandbox/`` endpoints) that set a world up in a few calls."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

from pairgate.sandbox.records import Options
from pairgate.sandbox.server import Sandbox


class SandboxError(AssertionError):
    """A helper's request failed: a test set its world up wrongly."""


class RunningSandbox:
    """The ready line as attributes (``url``, ``api_url``, ``sandbox_api``, ``group``,
    ``tracker_project``, ``projects``, ``users``) plus helpers. ``as_user`` names a key of
    ``users``: "agents", "review_bot", "renovate_bot", "maintainer" or "reporter"."""

    def __init__(self, server: Sandbox) -> None:
        self.server = server
        self.info: dict[str, Any] = server.info()
        self.url: str = self.info["url"]
        self.api_url: str = self.info["api_url"]
        self.sandbox_api: str = self.info["sandbox_api"]
        self.group: dict[str, Any] = self.info["group"]
        self.tracker_project: str = self.info["tracker_project"]
        self.projects: list[dict[str, Any]] = self.info["projects"]
        self.users: dict[str, dict[str, Any]] = self.info["users"]
        self.http = requests.Session()

    # -- plumbing -----------------------------------------------------------------------------

    def token(self, as_user: str = "agents") -> str:
        return str(self.info["users"][as_user]["token"])

    def request(
        self, method: str, path: str, as_user: str = "agents", **kw: Any
    ) -> requests.Response:
        """One API call as ``as_user``, whatever its answer (for tests of error answers)."""
        headers = {"PRIVATE-TOKEN": self.token(as_user)}
        return self.http.request(method, self.api_url + path, headers=headers, timeout=10, **kw)

    def api(self, method: str, path: str, *, as_user: str = "agents", **kw: Any) -> Any:
        """One API call; raises SandboxError unless it succeeded. Returns the decoded body."""
        return self._body(self.request(method, path, as_user, **kw))

    def control(self, method: str, path: str, **kw: Any) -> Any:
        return self._body(self.http.request(method, f"{self.sandbox_api}/{path}", **kw))

    @staticmethod
    def _body(response: requests.Response) -> Any:
        if response.status_code >= 300:
            raise SandboxError(
                f"{response.request.method} {response.url}: {response.status_code} {response.text}"
            )
        return response.json() if response.content else None

    def gitlab(self, as_user: str = "agents", **kw: Any) -> Any:
        """A python-gitlab client acting as ``as_user`` (python-gitlab is a test dependency)."""
        import gitlab

        return gitlab.Gitlab(self.url, private_token=self.token(as_user), **kw)

    # -- the sandbox endpoints ----------------------------------------------------------------

    def reset(self) -> None:
        self.control("POST", "reset")

    def fault(self, **spec: Any) -> None:
        self.control("POST", "faults", json=spec)

    def clear_faults(self) -> None:
        self.control("DELETE", "faults")

    def advance_clock(self, seconds: float) -> str:
        return str(self.control("POST", "clock", json={"advance_seconds": seconds})["now"])

    def requests(self) -> list[dict[str, Any]]:
        return list(self.control("GET", "requests"))

    def clear_requests(self) -> None:
        self.control("DELETE", "requests")

    def set_member(self, user: str | int, access_level: int, *, group: str = "acme") -> None:
        """``POST /-/sandbox/members``: ``user`` a direct member of ``group`` at
        ``access_level``, as an administrator makes one (50: an Owner)."""
        self.control(
            "POST", "members", json={"user": user, "access_level": access_level, "group": group}
        )

    def set_options(self, **options: Any) -> dict[str, Any]:
        return dict(self.control("POST", "options", json=options))

    def pipeline(
        self,
        project: str,
        ref: str,
        jobs: list[dict[str, Any]],
        *,
        sha: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        body = {"project": project, "ref": ref, "jobs": jobs, **extra}
        if sha:
            body["sha"] = sha
        return dict(self.control("POST", "pipelines", json=body))

    def set_ci(self, project: str, jobs: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The jobs a merge request pipeline of ``project`` gets (None: no CI configuration)."""
        return dict(self.control("POST", "ci", json={"project": project, "jobs": jobs}))

    def wait_for_pipelines(self, timeout: float = 300.0) -> None:
        """Until the runner has no pipeline left running (SandboxError after ``timeout``)."""
        runner = self.server.app.runner
        if runner is not None and not runner.wait(timeout):
            raise SandboxError(
                f"the runner still runs {runner.busy()} pipeline(s) after {timeout} s"
            )

    def settings(self, project: str = "acme/app", **values: Any) -> dict[str, Any]:
        """``PUT /projects/:id`` as the maintainer: project settings (ci_config_path and so on)."""
        return dict(self.api("PUT", f"/projects/{_id(project)}", as_user="maintainer", json=values))

    def variable(self, key: str, value: str, *, project: str = "acme/app", **flags: Any) -> Any:
        """A CI/CD variable of ``project`` (``masked``, ``protected``), as the maintainer."""
        body = {"key": key, "value": value, **flags}
        return self.api(
            "POST", f"/projects/{_id(project)}/variables", as_user="maintainer", json=body
        )

    def set_job(self, job_id: int, status: str, *, trace: str | None = None) -> dict[str, Any]:
        """Move a job to ``status`` as its runner would (and give it ``trace`` as its log);
        returns the job with its token."""
        body: dict[str, Any] = {"status": status}
        if trace is not None:
            body["trace"] = trace
        return dict(self.control("POST", f"jobs/{job_id}", json=body))

    # -- the world ----------------------------------------------------------------------------

    def create_issue(
        self, title: str, *, project: str = "acme/tracker", as_user: str = "agents", **fields: Any
    ) -> dict[str, Any]:
        return dict(
            self.api(
                "POST",
                f"/projects/{_id(project)}/issues",
                as_user=as_user,
                json={"title": title, **fields},
            )
        )

    def note(
        self, issue_iid: int, body: str, *, project: str = "acme/tracker", as_user: str = "agents"
    ) -> Any:
        return self.api(
            "POST",
            f"/projects/{_id(project)}/issues/{issue_iid}/notes",
            as_user=as_user,
            json={"body": body},
        )

    def create_branch(
        self, branch: str, *, project: str = "acme/app", ref: str = "main", as_user: str = "agents"
    ) -> dict[str, Any]:
        return dict(
            self.api(
                "POST",
                f"/projects/{_id(project)}/repository/branches",
                as_user=as_user,
                json={"branch": branch, "ref": ref},
            )
        )

    def commit(
        self,
        branch: str,
        files: dict[str, str | None],
        *,
        project: str = "acme/app",
        message: str = "Change files",
        start_branch: str = "main",
        as_user: str | None = None,
    ) -> dict[str, Any]:
        """Commit ``files`` (a None content deletes the file) to ``branch``, creating it from
        ``start_branch`` if needed. Pushes to main go as the maintainer (main is protected)."""
        project_id = _id(project)
        head = self.request(
            "GET", f"/projects/{project_id}/repository/branches/{_id(branch)}", "maintainer"
        )
        ref = head.json()["commit"]["id"] if head.ok else start_branch
        actions = []
        for path, content in files.items():
            exists = self._has_file(project_id, path, ref)
            kind = "delete" if content is None else ("update" if exists else "create")
            actions.append({"action": kind, "file_path": path, "content": content or ""})
        as_user = as_user or ("maintainer" if branch == "main" else "agents")
        return dict(
            self.api(
                "POST",
                f"/projects/{project_id}/repository/commits",
                as_user=as_user,
                json={
                    "branch": branch,
                    "commit_message": message,
                    "start_branch": start_branch,
                    "actions": actions,
                },
            )
        )

    def mirror_commit(
        self,
        sha: str,
        branch: str,
        files: Mapping[str, str | None],
        *,
        project: str = "acme/app",
        message: str = "Mirrored commit",
        start_branch: str = "main",
        push_options: list[str] | None = None,
        git_dir: Path | None = None,
    ) -> dict[str, Any]:
        """``POST /-/sandbox/commits``: a commit on ``branch`` whose id is ``sha`` (a real git
        repository's commit), its tree the parent's with ``files`` applied, pushed with
        ``push_options`` (``["ci.skip"]``: its pipelines skipped); with ``git_dir`` (that
        repository) the runner checks the real commit out."""
        body = {"project": project, "sha": sha, "branch": branch, "files": dict(files)}
        body |= {"message": message, "start_branch": start_branch}
        if push_options:
            body["push_options"] = push_options
        if git_dir is not None:
            body["git_dir"] = str(git_dir.resolve())
        return dict(self.control("POST", "commits", json=body))

    def create_mr(
        self,
        source_branch: str,
        *,
        project: str = "acme/app",
        title: str = "A change",
        target_branch: str = "main",
        as_user: str = "agents",
        **fields: Any,
    ) -> dict[str, Any]:
        return dict(
            self.api(
                "POST",
                f"/projects/{_id(project)}/merge_requests",
                as_user=as_user,
                json={
                    "source_branch": source_branch,
                    "target_branch": target_branch,
                    "title": title,
                    **fields,
                },
            )
        )

    def _has_file(self, project_id: str, path: str, ref: str) -> bool:
        raw = f"/projects/{project_id}/repository/files/{_id(path)}/raw"
        return self.request("GET", raw, "maintainer", params={"ref": ref}).ok


def _id(project: str | int) -> str:
    return quote(str(project), safe="")


@contextlib.contextmanager
def running_sandbox(
    *, runner: str | None = None, shared_home: bool = False, **options: Any
) -> Iterator[RunningSandbox]:
    """A sandbox on a free loopback port for the block; ``options`` are model.Options fields
    (they survive ``reset``). ``runner``: the gitlab-ci-local that runs its pipelines
    (runner.py; ``shared_home`` gives its jobs one HOME). Every one started is watched for
    unserved requests."""
    run = None
    if runner:
        from pairgate.sandbox.runner import Runner

        run = Runner(runner, shared_home=shared_home)
    server = Sandbox("127.0.0.1", 0, options=Options(**options), runner=run).start()
    running = RunningSandbox(server)
    watched = _Watched(running.url, server.app.unserved)
    _WATCHED.append(watched)
    try:
        yield running
    finally:
        watched.running = False
        running.http.close()
        server.stop()


# -- strictness: which requests reached no route (tests/conftest.py fails the test) ----------------


@dataclass
class _Watched:
    url: str
    unserved: list[dict[str, Any]]  # the server's own list, growing
    running: bool = True


_WATCHED: list[_Watched] = []


def unserved_mark() -> dict[int, int]:
    """Where each watched sandbox's unserved list stands now; give it to ``unserved_since``."""
    return {id(w): len(w.unserved) for w in _WATCHED}


def unserved_since(mark: dict[int, int]) -> list[dict[str, Any]]:
    """The unserved requests every sandbox started by ``running_sandbox`` received since
    ``mark`` (all of them for sandboxes started since), each with its ``sandbox`` url. Forgets
    the sandboxes that have stopped."""
    found = [
        entry | {"sandbox": w.url} for w in _WATCHED for entry in w.unserved[mark.get(id(w), 0) :]
    ]
    _WATCHED[:] = [w for w in _WATCHED if w.running]
    return found


def unexpected(found: list[dict[str, Any]], allowed: list[str]) -> list[dict[str, Any]]:
    """The entries of ``found`` no pattern of ``allowed`` matches (regular expressions searched
    in ``METHOD path``); with no patterns every entry is allowed."""
    if not allowed:
        return []
    return [
        e for e in found if not any(re.search(p, f"{e['method']} {e['path']}") for p in allowed)
    ]
