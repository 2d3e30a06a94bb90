"""The second configuration (tests/kit/suite_configuration.py): what it catches, and the agent
definitions rendered under it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kit.run import run_cli
from tests.kit.suite_configuration import (
    FIXTURE_CONFIG,
    HARD_CODED,
    RENAMED_CLI,
    RENAMED_CONFIG,
    activate,
    read_back,
    swapped,
)

RENAMED_ENV = {"PAIRGATE_CONFIG": str(RENAMED_CONFIG)}


def test_the_renamed_configuration_is_the_suite_configuration_but_for_the_command() -> None:
    suite = json.loads(FIXTURE_CONFIG.read_text(encoding="utf-8"))
    renamed = json.loads(RENAMED_CONFIG.read_text(encoding="utf-8"))
    assert suite["cli_command"] == "pairgate" and renamed["cli_command"] == RENAMED_CLI
    differ = sorted(k for k in suite if suite[k] != renamed[k])
    assert differ == ["cli_command", "cli_install_command", "hooks_install_command"]
    for key in differ:
        assert renamed[key] == suite[key].replace("pairgate", RENAMED_CLI)


@pytest.mark.parametrize(
    "line",
    [
        "pairgate claim: #3 is held by acme-lead",
        "run pairgate deploy-hooks --target /x to update them",
        "pairgate: no agent identity",
        "offer it: pairgate handoff 3 --to acme-review",
    ],
)
def test_a_hard_coded_program_name_fails_the_run(line: str) -> None:
    with pytest.raises(AssertionError, match="yet the output names the program 'pairgate'"):
        read_back(RENAMED_ENV, "", f"first line\n{line}\n")


@pytest.mark.parametrize(
    "line",
    [
        "wrote: /work/pairgate/hooks/ownership.py",
        "PAIRGATE_CONFIG names, else pairgate-config.json beside ownership.py",
        "the label pairgate::frozen",
        "usage: pairgate claim [-h] [--as AGENT]",
        "pairgate claim: error: the following arguments are required: --role",
        "merge-check: could not decide: pairgate: GitLab GET /projects/1: HTTP 404",
        "reinstall pairgate.",
    ],
)
def test_names_that_are_not_the_program_pass(line: str) -> None:
    assert read_back(RENAMED_ENV, line) == [line]


def test_the_configured_name_is_read_back_as_pairgate_and_only_then() -> None:
    text = "acme-pg claim 3 --role lead; acme-pgx stays; /opt/acme-pg/bin stays"
    assert read_back(RENAMED_ENV, text) == [
        "pairgate claim 3 --role lead; acme-pgx stays; /opt/acme-pg/bin stays"
    ]
    suite = {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}
    assert read_back(suite, "pairgate claim: x") == ["pairgate claim: x"]  # nothing to check


def test_only_the_suite_configuration_is_swapped() -> None:
    activate(RENAMED_CLI)
    try:
        assert swapped({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}) == RENAMED_ENV
        assert swapped({"PAIRGATE_CONFIG": "/elsewhere.json"}) == {
            "PAIRGATE_CONFIG": "/elsewhere.json"
        }
    finally:
        activate("pairgate")
    assert swapped({"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)}) == {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG)
    }


def test_the_agent_definitions_name_the_configured_command(tmp_path: Path) -> None:
    """The golden files are the suite configuration's render; under the renamed one no
    definition may name the program as "pairgate"."""
    result = run_cli(["deploy-agents", "--target", str(tmp_path)], env=RENAMED_ENV)
    assert result.code == 0, result.err
    rendered = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    assert sorted(rendered) == ["acme-finder.md", "acme-lead.md", "acme-review.md", "acme-solo.md"]
    for name, text in rendered.items():
        assert not [m.group(0) for m in HARD_CODED.finditer(text)], name
    for role in ("lead", "review", "solo"):  # the finder runs no command of ours
        assert f"{RENAMED_CLI} " in rendered[f"acme-{role}.md"], role
