"""What --config-out writes beside the configuration, and --with-example."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from pairgate.deployment import agent_templates
from pairgate.resources import resource_dir
from pairgate.sandbox import defaults, kit
from pairgate.sandbox.server import Sandbox
from pairgate.standalone.config import load_config
from pairgate.standalone.scope import load_automation_families, roster_path
from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, clean_env, run_program


def written(tmp_path: Path) -> tuple[Path, list[Path]]:
    config_path = tmp_path / "pairgate-config.json"
    config = defaults.pairgate_config(defaults.build())
    return config_path, kit.write_deployment(config_path, config)


def test_the_kit_is_a_whole_deployment(tmp_path: Path) -> None:
    config_path, files = written(tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in files) == [
        "_hooklib.sh",
        "agent-text/escalation.md",
        "agent-text/session.md",
        "agent-text/testing.md",
        "automation_mr_families.py",
        "liveness-oracle.md",
        "pairgate-config.json",
        "review-bot-token",
    ]
    config = load_config({"PAIRGATE_CONFIG": str(config_path)})
    rendered = agent_templates.render(config, resource_dir("agents"))  # raises on any gap
    assert sorted(rendered) == ["acme-finder.md", "acme-lead.md", "acme-review.md", "acme-solo.md"]
    assert kit.ORACLE.strip() in rendered["acme-finder.md"].decode()
    token = tmp_path / "review-bot-token"
    assert token.read_text() == "sandbox-review-bot-token\n"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    roster = roster_path(config)
    assert roster == tmp_path / "automation_mr_families.py"
    assert load_automation_families(roster) == ()


def test_every_template_placeholder_gets_a_text(tmp_path: Path) -> None:
    written(tmp_path)
    problems: list[str] = []
    templates = agent_templates.read_templates(resource_dir("agents"), problems)
    texts = {p.stem for p in (tmp_path / "agent-text").iterdir()}
    assert not problems and texts == agent_templates.texts_named(templates)
    # The sandbox's own texts, not the generic starters.
    assert "PAIRGATE_SANDBOX_GITLAB_URL" in (tmp_path / "agent-text" / "session.md").read_text()


def test_a_restart_keeps_the_operators_edits(tmp_path: Path) -> None:
    written(tmp_path)
    text = tmp_path / "agent-text" / "testing.md"
    text.write_text("Run make test.\n")
    (tmp_path / "review-bot-token").write_text("stale\n")
    _, again = written(tmp_path)
    assert text.read_text() == "Run make test.\n" and text not in again
    assert (tmp_path / "review-bot-token").read_text() == "sandbox-review-bot-token\n"


def test_the_example_round(tmp_path: Path) -> None:
    server = Sandbox()
    example = kit.add_example(server.app)
    server.app.example = example
    world = server.app.world
    issue = world.issue(world.projects[1], 2)
    mr = world.merge_request(world.projects[2], 1)
    assert issue is not None and mr is not None and issue.state == "opened"
    assert mr.description == "Related to acme/tracker#2" and mr.author_id == 10
    assert example["merge_request"]["sha"] == world.projects[2].branches["greet-by-name"]
    assert server.info()["example"] == example
    server.app.reset()
    assert (
        world is not server.app.world
        and server.app.world.merge_request(server.app.world.projects[2], 1) is None
    )


@pytest.mark.slow
def test_with_example_refuses_a_saved_world(tmp_path: Path) -> None:
    state = tmp_path / "world.json"
    state.write_text("{}")
    result = run_program([*PAIRGATE, "sandbox", "--state", str(state), "--with-example"])
    assert result.code == 2
    assert "--with-example builds on the default world" in result.err
    assert f"{state} holds a saved one; drop --state, or give a new state file" in result.err


@pytest.mark.slow
def test_config_out_creates_its_directory_and_the_ready_line_names_the_example(
    tmp_path: Path,
) -> None:
    target = tmp_path / "new" / "dir" / "pairgate-config.json"
    proc = subprocess.Popen(
        [*PAIRGATE, "sandbox", "--config-out", str(target), "--with-example"],
        env=clean_env(PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = json.loads(proc.stdout.readline())
        assert line["example"]["merge_request"] == {
            "project": "acme/app",
            "id": 701,
            "iid": 1,
            "source_branch": "greet-by-name",
            "sha": line["example"]["merge_request"]["sha"],
        }
        assert json.loads(target.read_text())["env_prefix"] == "PAIRGATE_SANDBOX"
        assert (target.parent / "agent-text" / "session.md").is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_the_configuration_describes_a_sandbox_deployment_not_pairgates_repository(
    tmp_path: Path,
) -> None:
    """A project's checkout holds the hooks where hooks_install_command puts them, and no
    pairgate source tree: the currency check measures those, and refusals point at pairgate's
    operator card by name."""
    config_path, _ = written(tmp_path)
    config = load_config({"PAIRGATE_CONFIG": str(config_path)})
    assert config.deployed_paths == (".claude/hooks",)
    assert config.hooks_install_command.endswith("--target .claude/hooks")
    assert config.handoff_doc == (
        "pairgate's operator card (docs/agent-handoff.md in pairgate's repository)"
    )
    checkout = tmp_path / "app"
    hooks = checkout / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "ownership.py").write_text("# deployed\n")
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    result = run_program(
        [
            "python3",
            str(ROOT / "pairgate" / "currency" / "deployed_currency.py"),
            "--checkout",
            str(hooks),
            "--paths",
            *config.deployed_paths,
            "--json",
        ],
        env=clean_env(),
    )
    doc = json.loads(result.out)
    assert "not in the checkout" not in doc["reason"]  # measured: only origin/main is missing
