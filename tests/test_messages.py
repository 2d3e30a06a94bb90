"""Messages that say what to do: each names the variable, key or command that fixes it."""

from __future__ import annotations

import io
import json
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from pairgate.main import main
from pairgate.standalone.errors import Context
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.run import agent_env, run_cli, run_program


def fixture_values() -> dict[str, Any]:
    values: dict[str, Any] = json.loads(FIXTURE_CONFIG.read_text())
    return values


def write_config(tmp_path: Path, values: dict[str, Any]) -> dict[str, str]:
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(values))
    return {"PAIRGATE_CONFIG": str(path)}


def free_port() -> int:
    """A loopback port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


# -- the configuration ----------------------------------------------------------------------------


def test_an_unknown_key_suggests_the_key_it_misspells(tmp_path: Path) -> None:
    values = fixture_values()
    values["tracker_projet"] = values.pop("tracker_project")
    result = run_cli(["status", "1"], env=write_config(tmp_path, values))
    assert result.code == 2
    assert "unknown key 'tracker_projet' (did you mean 'tracker_project'?)" in result.err
    assert "missing key 'tracker_project'" in result.err


def test_every_missing_key_is_listed_at_once_in_words(tmp_path: Path) -> None:
    values = fixture_values()
    for key in ("group_id", "handoff_doc", "cli_command"):
        del values[key]
    result = run_cli(["status", "1"], env=write_config(tmp_path, values))
    assert result.code == 2
    assert "missing keys 'group_id', 'cli_command', 'handoff_doc'" in result.err
    assert "README's Configuration section" in result.err
    assert "CONFIG_KEYS" not in result.err  # a Python name is no help to a user


def test_an_installed_copy_is_not_told_to_write_into_site_packages(tmp_path: Path) -> None:
    # The reader as an installed wheel lays it out: ownership.py in a site-packages directory.
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "pairgate"
    site.mkdir(parents=True)
    shutil.copy(Path(__file__).resolve().parent.parent / "pairgate" / "ownership.py", site)
    result = run_program(["python3", "-B", str(site / "ownership.py"), "check-config"])
    assert result.code == 2
    assert "missing configuration" in result.err
    assert "Set PAIRGATE_CONFIG to your deployment's configuration file" in result.err
    assert "beside ownership.py" not in result.err


def test_a_flat_deployment_is_told_to_put_the_file_beside_ownership_py(tmp_path: Path) -> None:
    shutil.copy(Path(__file__).resolve().parent.parent / "pairgate" / "ownership.py", tmp_path)
    result = run_program(["python3", "-B", str(tmp_path / "ownership.py"), "check-config"])
    assert result.code == 2
    assert "put pairgate-config.json beside ownership.py" in result.err


# -- reaching GitLab ------------------------------------------------------------------------------


@pytest.mark.timing
def test_a_refused_connection_fails_at_once_naming_the_url_and_its_variable(
    config_env: dict[str, str],
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {
        **config_env,
        "PAIRGATE_TEST_GITLAB_URL": url,
        "PAIRGATE_TEST_TASK_API_TOKEN": "t",
        "PAIRGATE_TEST_TASK_WRITE_TOKEN": "t",
    }
    started = time.monotonic()
    result = run_cli(["status", "1"], env=env)
    assert time.monotonic() - started < 2.0
    assert result.code == 2
    assert f"cannot reach GitLab at {url}/api/v4 (connection refused" in result.err
    assert "the URL is from PAIRGATE_TEST_GITLAB_URL" in result.err


def test_a_read_token_gitlab_refuses_is_named_with_the_scope_it_needs(sandbox: Any) -> None:
    result = run_cli(["status", "1"], env=agent_env(sandbox, PAIRGATE_TEST_TASK_API_TOKEN="bad"))
    assert result.code == 2
    assert "HTTP 401" in result.err
    assert "The token in PAIRGATE_TEST_TASK_API_TOKEN was refused" in result.err
    assert "scope read_api" in result.err


def test_no_token_and_no_glab_names_the_variables_to_set(
    sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no glab anywhere on it
    env = agent_env(sandbox, PAIRGATE_TEST_TASK_API_TOKEN="", PAIRGATE_TEST_TASK_WRITE_TOKEN="")
    result = run_cli(["status", "1"], env=env)
    assert result.code == 2
    assert "glab is not installed" in result.err
    assert "PAIRGATE_TEST_TASK_API_TOKEN (a read_api token)" in result.err
    assert "PAIRGATE_TEST_TASK_WRITE_TOKEN (an api token)" in result.err


# -- the verbs --------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["handoff", "approve"])
def test_mr_without_mr_project_says_the_project_defaulted_to_the_tracker(
    sandbox: Any, verb: str
) -> None:
    issue = sandbox.create_issue("work")["iid"]
    lead = agent_env(sandbox, "acme-lead")
    assert run_cli(["claim", str(issue), "--role", "lead"], env=lead).code == 0
    sha = "a" * 40
    if verb == "handoff":
        argv = ["handoff", str(issue), "--to", "acme-review", "--role", "review", "--sha", sha]
        env = lead
    else:
        argv = ["approve", str(issue), "--to", "acme-lead", "--sha", sha]
        release = run_cli(["release", str(issue)], env=lead)
        assert release.code == 0
        env = agent_env(sandbox, "acme-review")
        assert run_cli(["claim", str(issue), "--role", "review"], env=env).code == 0
    result = run_cli([*argv, "--mr", "7"], env=env)
    assert result.code == 2
    assert "acme/tracker!7 does not exist" in result.err
    assert "--mr-project was not given, so the project defaulted to the tracker" in result.err


def test_merge_check_json_gives_a_verdict_when_it_cannot_decide(config_env: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {**config_env, "PAIRGATE_TEST_GITLAB_URL": url, "PAIRGATE_TEST_TASK_API_TOKEN": "t"}
    result = run_cli(["merge-check", "--mr", "3", "--mr-project", "acme/app", "--json"], env=env)
    assert result.code == 2
    doc = json.loads(result.out)
    assert doc["verdict"] == "undecided" and doc["allowed"] is False
    assert doc["mr"] == {"project": "acme/app", "iid": 3}
    assert (
        "could not decide, so no pass" in doc["message"] and "cannot reach GitLab" in doc["message"]
    )
    assert "could not decide" in result.err


class ClosedPipe(io.StringIO):
    """stdout whose reader has gone: every write fails as a closed pipe does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("argv", [["--help"], ["status", "1"], ["board"]])
def test_a_closed_pipe_ends_quietly(sandbox: Any, argv: list[str]) -> None:
    err = io.StringIO()
    ctx = Context(env=agent_env(sandbox), stdout=ClosedPipe(), stderr=err)
    code = main(argv, ctx=ctx)
    assert code == 0
    assert "BrokenPipe" not in err.getvalue() and "internal error" not in err.getvalue()


def test_status_of_a_closed_issue_does_not_suggest_a_claim(sandbox: Any) -> None:
    issue = sandbox.create_issue("done already")["iid"]
    sandbox.api(
        "PUT",
        f"/projects/acme%2Ftracker/issues/{issue}",
        as_user="maintainer",
        json={"state_event": "close"},
    )
    env = agent_env(sandbox)
    result = run_cli(["status", str(issue)], env=env)
    assert result.code == 0
    assert "holder: nobody (the issue is closed)" in result.out
    assert "claim" not in result.out
    opened = sandbox.create_issue("still open")["iid"]
    assert f"claim {opened} --role lead" in run_cli(["status", str(opened)], env=env).out
