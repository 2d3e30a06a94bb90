"""``pairgate sandbox push``, ``variable`` and ``merge`` against a running sandbox: what each
does on the sandbox, and each refusal with its message and exit code. The whole deployment in
docs/sandbox.md plays them on the runner (tests/sandbox/test_sandbox_deployment.py)."""

from __future__ import annotations

import base64
import socket
from pathlib import Path

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.gitrepos import commit, git
from tests.kit.run import run_cli

FILES = {"greet.py": "def greet(name):\n    return f'hello, {name}'\n", "docs/a.md": "# a\n"}


def repo_with_commit(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "app"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    commit(repo, FILES, "Greet by name")
    return repo, git(repo, "rev-parse", "HEAD")


def push(sandbox: RunningSandbox, repo: Path, project: str = "acme/app") -> tuple[int, str, str]:
    argv = ["sandbox", "push", "--url", sandbox.url, "--repo", str(repo), "--project", project,
            "--branch", "greet-by-name"]  # fmt: skip
    result = run_cli(argv)
    return result.code, result.out, result.err


def test_push_puts_heads_commit_on_the_branch_under_its_own_id(
    sandbox: RunningSandbox, tmp_path: Path
) -> None:
    repo, sha = repo_with_commit(tmp_path)
    code, out, err = push(sandbox, repo)
    assert (code, out, err) == (0, f"{sha}\n", "")
    branch = sandbox.api("GET", "/projects/acme%2Fapp/repository/branches/greet-by-name")
    assert branch["commit"]["id"] == sha
    assert branch["commit"]["message"].strip() == "Greet by name"
    for path, text in FILES.items():
        found = sandbox.api(
            "GET", f"/projects/acme%2Fapp/repository/files/{path.replace('/', '%2F')}?ref={sha}"
        )
        assert base64.b64decode(found["content"]).decode() == text
    # main's README stays: the commit's tree is the branch's parent's with HEAD's files on it
    sandbox.api("GET", f"/projects/acme%2Fapp/repository/files/README.md?ref={sha}")


def test_push_refusals_say_why_and_exit_2(sandbox: RunningSandbox, tmp_path: Path) -> None:
    repo, sha = repo_with_commit(tmp_path)
    assert push(sandbox, repo)[0] == 0
    code, out, err = push(sandbox, repo)  # the same commit again
    assert (code, out) == (2, "")
    assert f"the sandbox refused {sha} on acme/app greet-by-name: HTTP 400" in err
    assert "already exists" in err
    code, _, err = push(sandbox, repo, project="acme/nothing")
    assert code == 2 and "HTTP 404" in err and "Project Not Found" in err
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = push(sandbox, plain)
    assert code == 2 and "pairgate sandbox push: git rev-parse HEAD in" in err


def test_variable_adds_a_masked_variable_as_the_maintainer(sandbox: RunningSandbox) -> None:
    argv = ["sandbox", "variable", "--url", sandbox.url, "--project", "acme/app", "--key",
            "GATE_READ", "--value", "sandbox-agents-read-token"]  # fmt: skip
    result = run_cli(argv)
    assert (result.code, result.out) == (0, "acme/app: CI/CD variable GATE_READ added, masked\n")
    found = sandbox.api("GET", "/projects/acme%2Fapp/variables/GATE_READ", as_user="maintainer")
    assert (found["value"], found["masked"]) == ("sandbox-agents-read-token", True)
    again = run_cli(argv)
    assert again.code == 2
    assert "pairgate sandbox variable: acme/app GATE_READ: HTTP 400" in again.err


def mr_with_commit(sandbox: RunningSandbox) -> int:
    sandbox.commit("greet-by-name", {"greet.py": "x = 1\n"})
    return int(sandbox.create_mr("greet-by-name", description="Related to acme/tracker#1")["iid"])


def merge(sandbox: RunningSandbox, mr: int) -> tuple[int, str, str]:
    argv = ["sandbox", "merge", "--url", sandbox.url, "--project", "acme/app", "--mr", str(mr)]
    result = run_cli(argv)
    return result.code, result.out, result.err


def test_merge_merges_at_the_head(sandbox: RunningSandbox) -> None:
    mr = mr_with_commit(sandbox)
    code, out, _ = merge(sandbox, mr)
    assert code == 0
    merged = sandbox.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr}")
    assert merged["state"] == "merged"
    assert out == f"merged {merged['merge_commit_sha']} (no pipeline)\n"


def test_merge_refused_by_a_failed_pipeline_is_exit_1_with_gitlabs_answer(
    sandbox: RunningSandbox,
) -> None:
    sandbox.settings(only_allow_merge_if_pipeline_succeeds=True)
    mr = mr_with_commit(sandbox)
    pipeline = sandbox.pipeline("acme/app", f"refs/merge-requests/{mr}/head", [
        {"name": "validate-mr-merge-check", "status": "failed"}])  # fmt: skip
    code, out, _ = merge(sandbox, mr)
    head = sandbox.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr}")
    assert head["state"] == "opened"
    assert code == 1
    assert out == (
        'refused: HTTP 405 {"message": "405 Method Not Allowed"} '
        f"(acme/app!{mr} at {head['sha'][:12]}, head pipeline {pipeline['id']}: failed)\n"
    )


def test_merge_without_a_sandbox_is_exit_2(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_cli(["sandbox", "merge", "--url", f"http://127.0.0.1:{port}", "--project",
                      "acme/app", "--mr", "1"])  # fmt: skip
    assert result.code == 2
    assert f"pairgate sandbox: no sandbox answers at http://127.0.0.1:{port}/-/sandbox/runner" in (
        result.err
    )
