"""The command surface: every command of the specification, its flags, and what reads config."""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

from pairgate.parser import build_parser
from pairgate.sandbox.testing import RunningSandbox
from pairgate.version import schema_checker
from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, agent_env, run_cli, run_program

# The specification's Commands section (plus sandbox and demo, docs/sandbox.md).
COMMANDS = {
    "claim": ({"--role"}, {"--as", "--verbose"}),
    "handoff": (
        {"--to", "--role", "--sha"},
        {"--reason", "--reason-file", "--mr", "--mr-project", "--supersede", "--new-identity"}
        | {"--evidence"},
    ),
    "accept": (set(), {"--as"}),
    "decline": (set(), {"--as"}),
    "release": (set(), {"--as"}),
    "approve": (
        {"--mr", "--sha", "--to"},
        {
            "--mr-project",
            "--reason",
            "--reason-file",
            "--not-covering",
            "--server-approval-only",
            "--supersede",
            "--evidence",
        },
    ),
    "withdraw": ({"--approval"}, {"--reason", "--reason-file", "--as"}),
    "merge-check": ({"--mr", "--mr-project"}, {"--json"}),
    "audit": (set(), {"--since", "--days", "--project", "--json", "--file-issues", "--verbose"}),
    "doctor": (set(), {"--project", "--json", "--verbose", "--fix", "--dry-run", "--pipeline"}),
    "status": (set(), {"--json"}),
    "board": (set(), {"--json", "--closed"}),
    "waiting": (set(), {"--agent", "--json"}),
    "close": (set(), set()),
    "sync": (set(), {"--apply"}),
    # One of --reason / --reason-file (and of --text / --text-file) is required: a required group.
    "freeze": ({"--scope"}, {"--reason", "--reason-file", "--minutes"}),
    "thaw": (set(), set()),
    "identity": (set(), {"--json"}),
    "impose": (set(), {"--text", "--text-file", "--as"}),
    "lift-check": ({"--lift-from"}, {"--constraint-file", "--constraint-text"}),
    "deploy-agents": ({"--target"}, {"--check"}),
    "deploy-hooks": (set(), {"--target", "--check", "--list"}),
    "deploy-pipeline": (
        {"--image", "--runner-tag", "--read-token-variable", "--gate-dir"},
        {"--target", "--gate-out", "--publish", "--check", "--gitlab-url"},
    ),
    "graph": (set(), {"--format"}),
    "sandbox": (
        set(),
        {"--host", "--port", "--state", "--config-out", "--with-example", "--runner"}
        | {"--gitlab-ci-local", "--runner-shared-home"},
    ),
    "demo": (set(), {"--ci"}),
    "watch": (
        set(),
        {"--once", "--interval", "--store", "--status", "--json", "--deliver-command"}
        | {"--remind-after", "--verbose"},
    ),
    "evidence": (set(), set()),
    "inbox": (set(), {"--agent", "--json", "--claude-hook", "--store", "--remind-after"}),
    "init": (
        {"--target", "--tracker-project", "--review-bot-user", "--renovate-user"},
        {"--agents-user", "--env-prefix", "--identity-prefix", "--cli-command"}
        | {"--generic-issue", "--handoff-doc", "--hooks-dir", "--json"},
    ),
}


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_registered_and_nothing_else() -> None:
    assert set(subparsers()) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_flags_and_required_flags(name: str) -> None:
    required, optional = COMMANDS[name]
    parser = subparsers()[name]
    flags = {opt: a for a in parser._actions for opt in a.option_strings}
    for flag in required | optional:
        assert flag in flags, f"{name} lacks {flag}"
    assert {o for o, a in flags.items() if a.required and o.startswith("--")} == required


def test_help_lists_every_command_and_reads_no_configuration() -> None:
    result = run_cli(["--help"], env={"PAIRGATE_CONFIG": "/nonexistent"})
    assert result.code == 0
    for name in COMMANDS:
        assert name in result.out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_reads_no_configuration(name: str) -> None:
    result = run_cli([name, "--help"], env={"PAIRGATE_CONFIG": "/nonexistent"})
    assert result.code == 0, result.err
    assert f"usage: pairgate {name}" in result.out


def test_help_spells_configured_values_as_their_keys() -> None:
    assert "<env_prefix>_AGENT_ID" in run_cli(["claim", "--help"]).out
    assert "<tracker_project>" in run_cli(["handoff", "--help"]).out
    assert "<tracker_project>" in run_cli(["approve", "--help"]).out


def test_missing_required_flag_is_a_usage_error() -> None:
    result = run_cli(["merge-check", "--mr", "3"], env={})
    assert result.code == 2
    assert "--mr-project" in result.err


def test_bad_issue_number_is_a_usage_error() -> None:
    result = run_cli(["status", "abc"], env={})
    assert result.code == 2
    assert "'abc' is not an issue number" in result.err


def test_no_command_prints_help_and_exits_2() -> None:
    result = run_cli([], env={})
    assert result.code == 2
    assert "usage: pairgate" in result.out


def test_graph_renders_the_issues_round(sandbox: RunningSandbox) -> None:
    issue = sandbox.create_issue("graph me")["iid"]
    env = agent_env(sandbox, "acme-lead")
    assert run_cli(["claim", str(issue), "--role", "lead"], env).code == 0
    result = run_cli(["graph", str(issue)], env)
    assert result.code == 0, result.err
    assert result.out.startswith("sequenceDiagram\n")
    assert "claims as lead" in result.out


@pytest.mark.parametrize(
    "argv",
    [
        ["claim", "1", "--role", "lead"],
        ["status", "1"],
        ["board"],
        ["merge-check", "--mr", "1", "--mr-project", "acme/app"],
        ["deploy-hooks", "--target", "hooks"],  # --list reads none: test_deploy_hooks
    ],
)
def test_every_configured_command_reads_the_configuration_first(argv: list[str]) -> None:
    result = run_cli(argv, env={"PAIRGATE_CONFIG": "/nonexistent"})
    assert result.code == 2
    assert "missing configuration" in result.err


def test_python_dash_m_runs_the_cli() -> None:
    result = run_program([*PAIRGATE, "--help"])
    assert result.code == 0
    assert "merge-check" in result.out


def fake_install(site: Path, *, editable_checkout: Path | None = None) -> None:
    """Put an installed pairgate 9.9.9 in ``site``: editable from ``editable_checkout``, else a
    plain install whose package sits in ``site`` itself (so not the copy that runs)."""
    info = site / "pairgate-9.9.9.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pairgate\nVersion: 9.9.9\n")
    (info / "RECORD").write_text("pairgate/__init__.py,,\n")
    if editable_checkout is not None:
        url = {"url": editable_checkout.as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(url))


def test_version_prints_the_installed_version_of_the_running_copy(tmp_path: Path) -> None:
    fake_install(tmp_path, editable_checkout=ROOT)
    result = run_program([*PAIRGATE, "--version"], env={"PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert (result.code, result.out, result.err) == (0, "pairgate 9.9.9\n", "")


def test_version_verbose_says_which_schema_checker_is_active(tmp_path: Path) -> None:
    fake_install(tmp_path, editable_checkout=ROOT)
    result = run_program(
        [*PAIRGATE, "--version", "--verbose"], env={"PYTHONPATH": f"{tmp_path}:{ROOT}"}
    )
    assert (result.code, result.err) == (0, "")
    assert result.out == f"pairgate 9.9.9\nschema checker: {schema_checker()}\n"


def test_verbose_before_a_command_is_for_version_only() -> None:
    result = run_cli(["--verbose", "status", "3"])
    assert (result.code, result.out) == (2, "")
    assert "pairgate: error: --verbose before the command goes with --version only" in result.err


def test_the_schema_checker_line_says_which_check_runs_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("jsonschema_rs", reason="the fast check's library")
    fast, authority = metadata.version("jsonschema-rs"), metadata.version("jsonschema")
    assert schema_checker() == (
        f"jsonschema-rs {fast} accepts first, jsonschema {authority} decides every rejection"
    )
    # Installed, but it does not load (as with a wheel for another platform).
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)
    assert schema_checker().startswith(
        f"jsonschema {authority} alone: jsonschema-rs {fast} is installed but does not load ("
    )
    # Not installed at all (a platform it publishes no wheel for).
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert schema_checker() == (
        "jsonschema (version unknown) alone: jsonschema-rs is not installed (it is a dependency "
        "where it publishes wheels; elsewhere pip install 'pairgate[fast]' builds it)"
    )


def test_version_refuses_when_the_running_copy_is_not_the_installed_one(tmp_path: Path) -> None:
    fake_install(tmp_path)
    result = run_program([*PAIRGATE, "--version"], env={"PYTHONPATH": f"{tmp_path}:{ROOT}"})
    assert result.code == 2 and result.out == ""
    assert (
        f"pairgate --version: the copy running ({ROOT / 'pairgate'}) is not the installed one "
        f"({tmp_path / 'pairgate'})"
    ) in result.err


def test_version_refuses_when_no_copy_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pairgate.version  # noqa: F401  (imported while it can still be found)

    monkeypatch.setattr(sys, "path", [str(tmp_path)])  # a search path with no distribution
    result = run_cli(["--version"])
    assert result.code == 2 and result.out == ""
    assert (
        f"pairgate --version: no copy of pairgate is installed (this one runs from "
        f"{ROOT / 'pairgate'})"
    ) in result.err


@pytest.mark.parametrize("origin", ["", "  ", "relative/path"])
def test_main_refuses_a_blank_or_relative_origin(origin: str) -> None:
    with pytest.raises(ValueError):
        run_cli(["--help"], origin=origin)


def test_main_refuses_a_non_path_origin() -> None:
    with pytest.raises(TypeError):
        run_cli(["--help"], origin=42)


def test_the_command_reference_is_rendered_from_the_current_help() -> None:
    result = run_program(
        [sys.executable, "-B", str(ROOT / "scripts" / "render-cli-reference.py"), "--check"]
    )
    assert result.code == 0, result.err


def test_the_command_reference_has_a_section_per_subcommand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """evidence run, plan, report and rerun and inbox ack each get their own section, from their
    own --help, so --check sees a change to a subcommand's flags too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "render_cli_reference", ROOT / "scripts" / "render-cli-reference.py"
    )
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setenv("COLUMNS", script.WIDTH)  # rendered() sets it; put it back afterwards
    text = script.rendered()
    for words in (
        "evidence run",
        "evidence plan",
        "evidence report",
        "evidence rerun",
        "inbox ack",
    ):
        assert text.count(f"\n## pairgate {words}\n") == 1, words
        assert f"usage: pairgate {words} [-h]" in text
    assert "--mutant-index K" in text.split("## pairgate evidence rerun\n")[1].split("## ")[0]
    assert script.subcommands("evidence") == ["run", "plan", "report", "rerun"]
    assert script.subcommands("claim") == []


def test_the_readme_names_every_command() -> None:
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in COMMANDS if f"pairgate {name}" not in readme]
    assert missing == []


def test_the_readmes_command_block_lists_each_command_once_with_its_own_flags() -> None:
    """Each line of the block starts a command or continues the one above: approve's flags stay
    with approve, withdraw's line stands alone, and every flag is one its parser has."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Commands\n", 1)[1].split("```\n", 2)[1]
    assert "\n\n" not in block
    entries: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        if line.startswith("pairgate "):
            words = [*line.split(), ""]
            pair = f"{words[1]} {words[2]}"
            name = pair if pair in ("inbox ack", "evidence run", "evidence rerun") else words[1]
            assert name not in entries, name
            entries[name] = line
        else:
            entries[name] += line
    assert list(entries)[:3] == ["demo", "sandbox", "init"]
    assert "--evidence FILE" in entries["approve"] and "--supersede" in entries["approve"]
    assert entries["withdraw"].split() == (
        [
            "pairgate",
            "withdraw",
            "<issue>",
            "--approval",
            "<note",
            "id>",
            "(--reason",
            "TEXT",
            "|",
            "--reason-file",
            "PATH)",
        ]
    )
