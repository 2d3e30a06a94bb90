"""What the merge hook tells the agent when it blocks: the command quoted whole, the file option
of that command, the spelling advice only when spelling was the problem, and the currency note
once a day. The real hook script, with Claude Code's JSON on stdin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import REVIEW
from tests.kit.run import agent_env
from tests.kit.world import Round
from tests.test_merge_hook import deployed, hook_input, run_hook  # noqa: F401

FOOTER = (
    "Merge one reviewed merge request per command, spelled so the hook can read it: "
    "glab mr merge <iid> -R <group/project> --sha <approved head>"
)
NAMES = "this names a glab merge that the command does not run; if it is a message"


@pytest.mark.parametrize(
    ("command", "remedy"),
    [
        (
            'glab mr note 4 -R acme/app -m "ready for glab mr merge"',
            'write it to a file and pass it as -m "$(cat <file>)"',
        ),
        ('git commit -m "then glab mr merge 4"', "write it to a file and pass it with -F <file>"),
        (
            'pairgate impose 3 --text "never glab mr merge"',
            "pass it from a file with --text-file <file>",
        ),
        (
            'pairgate decline 3 --reason "run glab mr merge 4 yourself"',
            "pass it from a file with --reason-file <file>",
        ),
    ],
)
def test_a_text_naming_a_merge_is_quoted_whole_with_its_commands_file_option(
    deployed: Path,  # noqa: F811
    command: str,
    remedy: str,
) -> None:
    result = run_hook(deployed, hook_input(command))
    assert result.returncode == 2
    assert result.stderr == (
        f"pairgate: the merge hook blocked this command:\n- {command}: {NAMES}, {remedy}\n"
        f"Background: docs/agent-handoff.md.\n"
    )


def test_the_remedy_for_a_glab_note_passes(deployed: Path) -> None:  # noqa: F811
    result = run_hook(deployed, hook_input('glab mr note 4 -R acme/app -m "$(cat note.txt)"'))
    assert (result.returncode, result.stderr) == (0, "")


def test_the_spelling_advice_comes_when_the_spelling_was_the_problem(
    deployed: Path,  # noqa: F811
) -> None:
    result = run_hook(deployed, hook_input('glab mr merge "$MR" -R acme/app'))
    assert result.returncode == 2
    assert result.stderr.endswith(f"{FOOTER}\nBackground: docs/agent-handoff.md.\n")


def test_the_currency_note_comes_once_a_day(deployed: Path, tmp_path: Path) -> None:  # noqa: F811
    command = "glab mr merge 4 -R acme/app --sha " + "0" * 40
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    first, second = (run_hook(deployed, hook_input(command), env=env) for _ in range(2))
    note = f"pairgate merge hook: note: UNVERIFIABLE: no checkout at {deployed}: no .git in it"
    assert (first.returncode, second.returncode) == (2, 2)  # no GitLab here: it cannot decide
    assert first.stderr.startswith(note)
    assert "note:" not in second.stderr
    assert second.stderr.startswith("pairgate: the merge hook could not decide, so it blocks")


def test_the_hook_names_the_pending_offer_and_who_answers_it(
    deployed: Path,  # noqa: F811
    sandbox: RunningSandbox,
) -> None:
    w = Round(sandbox).claim().offer()
    result = run_hook(
        deployed,
        hook_input(f"glab mr merge {w.mr} -R {w.project} --sha {w.head}"),
        env=agent_env(sandbox),
    )
    assert result.returncode == 2
    assert f"{REVIEW} takes it; {REVIEW} runs: pairgate accept {w.issue}; then" in result.stderr
    assert "--as" not in result.stderr
    assert FOOTER not in result.stderr  # the spelling was right: the approval is missing


def test_missing_files_are_a_list(deployed: Path, tmp_path: Path) -> None:  # noqa: F811
    hooks = tmp_path / "hooks"
    shutil.copytree(deployed, hooks)
    (hooks / "pairgate-config.json").unlink()
    (hooks / "automation_mr_families.py").unlink()
    result = run_hook(hooks, hook_input("glab mr merge 4 -R acme/app --sha " + "0" * 40))
    assert result.returncode == 2
    assert result.stderr == (
        f"pairgate: the merge hook runs beside files that are missing from {hooks}:\n"
        f"  - pairgate-config.json (the deployment's own configuration: `init` writes one, "
        f"`sandbox --config-out` one for a trial)\n"
        f"  - automation_mr_families.py (the deployment's own automation roster: `init` writes "
        f"one, and examples/automation_mr_families.py in pairgate's repository is an example)\n"
        f"Until they are there it cannot check a merge, so it blocks every command that could "
        f"make one.\n"
        f"pairgate-config.json is the deployment's own configuration, so the hook cannot read "
        f"which command reinstalls it. Put the deployment's pairgate-config.json back in {hooks}, "
        f"then reinstall the hooks with the deployment's hooks install command (the "
        f"hooks_install_command key of that file; for pairgate itself, pairgate deploy-hooks "
        f"--target {hooks}).\n"
    )
