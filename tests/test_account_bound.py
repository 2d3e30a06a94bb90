"""Account-bound roles against the sandbox, which records each note's author from the token that
wrote it, as GitLab does: with review_author_user_ids set, an approval counts only in a note the
review account wrote, and only when that account wrote no record of a hand in the work. Each
way around it is refused by merge-check, the hook, the three validators and
``ownership.py merge-check`` copied flat, with its message and exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import ACCOUNT_BOUND_CONFIG, FIXTURE_CONFIG, LEAD, REVIEW, ROOT
from tests.kit.run import Result, agent_env
from tests.kit.world import Round
from tests.test_gate_parity import VALIDATORS, flat_runs
from tests.test_independence import hooks as hooks
from tests.test_merge_hook import hook_input, run_hook

pytestmark = pytest.mark.slow

BOUND = {"PAIRGATE_CONFIG": str(ACCOUNT_BOUND_CONFIG)}
NOT_A_REVIEW_ACCOUNT = (
    "GitLab reports its note as written by user 10, which is no review account "
    "(review_author_user_ids: 11)"
)


@pytest.fixture(scope="module")
def bound_hooks(tmp_path_factory: pytest.TempPathFactory, hooks: Path) -> Path:
    """The deployed hooks directory, with the account-bound configuration beside the hook."""
    directory = tmp_path_factory.mktemp("bound") / "hooks"
    shutil.copytree(hooks, directory)
    shutil.copy(ACCOUNT_BOUND_CONFIG, directory / "pairgate-config.json")
    return directory


@pytest.fixture(scope="module")
def bound_flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The deployed shape of the gate jobs (test_gate_parity's), account-bound."""
    directory = tmp_path_factory.mktemp("bound-flat")
    shutil.copy(ROOT / "pairgate" / "ownership.py", directory)
    for name in VALIDATORS:
        shutil.copy(ROOT / "validators" / f"{name}.py", directory)
    shutil.copy(ACCOUNT_BOUND_CONFIG, directory / "pairgate-config.json")
    shutil.copy(ROOT / "tests" / "fixtures" / "automation_mr_families.py", directory)
    return directory


def as_review_account(sandbox: RunningSandbox) -> dict[str, str]:
    """The reviewer's session in an account-bound deployment: its verbs write with the review
    account's token (<env_prefix>_TASK_WRITE_TOKEN), reads stay the agents'."""
    return {**BOUND, "PAIRGATE_TEST_TASK_WRITE_TOKEN": sandbox.token("review_bot")}


def verb(world: Round, agent: str, *argv: object, **env: str) -> Result:
    result = world.run(agent, *argv, **{**BOUND, **env})
    assert result.code == 0, result.out + result.err
    return result


def approve(world: Round, agent: str, to: str, **env: str) -> Result:
    return verb(
        world, agent, "approve", world.issue, "--mr", world.mr, "--mr-project", world.project,
        "--sha", world.head, "--to", to, **env,
    )  # fmt: skip


def offer(world: Round, sender: str, to: str, **env: str) -> Result:
    return verb(
        world, sender, "handoff", world.issue, "--to", to, "--role", "review",
        "--sha", world.head, "--mr", world.mr, "--mr-project", world.project, **env,
    )  # fmt: skip


def merge_check(world: Round, config: Path = ACCOUNT_BOUND_CONFIG) -> Result:
    argv = ("merge-check", "--mr", world.mr, "--mr-project", world.project)
    return world.run(None, *argv, PAIRGATE_CONFIG=str(config))


def every_door(world: Round, flat: Path, hooks: Path, code: int, *says: str) -> dict[str, str]:
    """merge-check, the hook, both validators, the merge-check job's program and the flat
    ``ownership.py merge-check`` give ``code`` (the record job passes: the issue is held), and
    each refusal says all of ``says``. Returns merge-check --json."""
    processes = flat_runs(flat, world.sb, world.project, world.mr)
    checked = merge_check(world)
    assert checked.code == code, checked.out + checked.err
    command = f"glab mr merge {world.mr} -R {world.project} --sha {world.head}"
    hook = run_hook(hooks, hook_input(command), env={**agent_env(world.sb), **BOUND})
    assert hook.returncode == (2 if code else 0), hook.stderr
    results = {name: (p.wait(timeout=60), *p.communicate()) for name, p in processes.items()}
    expected = {VALIDATORS[0]: 0, VALIDATORS[1]: code, VALIDATORS[2]: code, "ownership.py": code}
    assert {name: r[0] for name, r in results.items()} == expected, results
    for words in says:
        assert words in " ".join(checked.err.split()), checked.err
        assert words in " ".join(hook.stderr.split()), hook.stderr
        for name in (VALIDATORS[1], VALIDATORS[2]):
            assert words in " ".join(results[name][1].split()), results[name]
    for name in (VALIDATORS[1], VALIDATORS[2]):  # the jobs that judge independence say so
        assert "note: independence is account-bound" in results[name][1], results[name]
    doc = json.loads(results["ownership.py"][1])
    assert doc["independence_basis"]["mode"] == "account-bound"
    return dict(doc)


def test_the_review_account_writes_the_approval_and_it_counts(
    sandbox: RunningSandbox, bound_flat: Path, bound_hooks: Path
) -> None:
    world = Round(sandbox)
    verb(world, LEAD, "claim", world.issue, "--role", "lead")
    offer(world, LEAD, REVIEW)
    verb(world, REVIEW, "accept", world.issue, **as_review_account(sandbox))
    approve(world, REVIEW, LEAD, **as_review_account(sandbox))
    assert world.ledger_notes()[-1]["author"]["id"] == 11  # GitLab says who wrote it
    doc = every_door(world, bound_flat, bound_hooks, 0)
    assert doc["verdict"] == "approved"
    assert doc["independence_basis"]["says"].startswith("independence is account-bound")
    checked = merge_check(world)
    assert "note: independence is account-bound" in checked.err
    status = world.run(None, "status", world.issue, **BOUND)
    assert "(independence is account-bound: an approval counts only in a note GitLab" in status.out
    board = json.loads(world.run(LEAD, "board", "--json", **BOUND).out)
    assert board["independence_basis"]["mode"] == "account-bound"
    # Without the key, the review account is no ledger author: its notes are forged.
    plain = world.run(None, "status", world.issue)
    assert "skipped (forged): a marker in a note by review-bot (user 11)" in plain.out


def test_forged_notes_by_the_agents_account_do_not_count(
    sandbox: RunningSandbox, bound_flat: Path, bound_hooks: Path
) -> None:
    # The whole round written by the agents' account, every digest right and each name in its
    # own session: names and sessions vouch for it; GitLab's note author does not.
    world = Round(sandbox)
    verb(world, LEAD, "claim", world.issue, "--role", "lead")
    offer(world, LEAD, REVIEW)
    verb(world, REVIEW, "accept", world.issue)
    approved = approve(world, REVIEW, LEAD)
    note = world.ledger_notes()[-1]["id"]
    said = " ".join(approved.err.split())
    assert f"warning: this approval does not count ({NOT_A_REVIEW_ACCOUNT}" in said
    assert "approve from a session that writes with the review account's token" in said
    assert merge_check(world, FIXTURE_CONFIG).code == 0  # without the key, it passes
    doc = every_door(
        world,
        bound_flat,
        bound_hooks,
        1,
        f"the approval of {world.project}!{world.mr} by {REVIEW} (acme/tracker#{world.issue}, "
        f"note {note}) does not count: {NOT_A_REVIEW_ACCOUNT}",
        "The reviewer approves again from a session that writes with the review account's token.",
    )
    assert doc["verdict"] == "not-review-account"


def test_an_approval_written_by_the_leads_own_session_does_not_count(
    sandbox: RunningSandbox, bound_flat: Path, bound_hooks: Path
) -> None:
    # A proper offer and accept, then the lead's session writes the approval --as the reviewer.
    world = Round(sandbox)
    verb(world, LEAD, "claim", world.issue, "--role", "lead")
    offer(world, LEAD, REVIEW)
    verb(world, REVIEW, "accept", world.issue, **as_review_account(sandbox))
    approve(world, LEAD, LEAD, PAIRGATE_TEST_AGENT_ID=REVIEW)
    every_door(world, bound_flat, bound_hooks, 1, NOT_A_REVIEW_ACCOUNT)


@pytest.mark.parametrize("hand", ["hold", "offer"])
def test_the_review_account_wrote_a_hand_in_the_work(
    sandbox: RunningSandbox, bound_flat: Path, bound_hooks: Path, hand: str
) -> None:
    # The review account's token in the lead's hands: the lead's claim, or its offer, is then
    # written by the account that approves.
    world = Round(sandbox)
    review = as_review_account(sandbox)
    verb(world, LEAD, "claim", world.issue, "--role", "lead", **(review if hand == "hold" else {}))
    written = world.ledger_notes()[-1]["id"]
    offer(world, LEAD, REVIEW, **(review if hand == "offer" else {}))
    if hand == "offer":
        written = world.ledger_notes()[-1]["id"]
    verb(world, REVIEW, "accept", world.issue, **review)
    approve(world, REVIEW, LEAD, **review)
    what = f"held #{world.issue} as lead" if hand == "hold" else "offered"
    doc = every_door(
        world,
        bound_flat,
        bound_hooks,
        1,
        f"the review account that wrote it (user 11) also wrote note {written}, in which "
        f"{LEAD} {what}",
    )
    assert doc["verdict"] == "not-review-account"
