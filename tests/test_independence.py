"""Each way one agent name (or an edit, a retarget, a copy) got an unreviewed change past the
gate, played through the real CLI against the sandbox: merge-check exits 1 saying why and what
to run, and the real merge hook (a flat deploy-hooks directory) blocks the merge. The parity
table (tests/kit/gate_cases.py) holds the same cases for both CI validators; the rounds that must
still pass are here too."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.records import parse_marker
from tests.kit.names import FIXTURE_CONFIG, FIXTURES, LEAD, REVIEW, ROOT, SOLO
from tests.kit.run import PAIRGATE, Result, agent_env, run_cli, run_program
from tests.kit.trail import resealed
from tests.kit.world import Round
from tests.test_merge_hook import SUPPLIED, hook_input, run_hook

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hooks directory made by deploy-hooks, with the deployment's three files."""
    directory = tmp_path_factory.mktemp("hooks")
    made = run_program(
        [*PAIRGATE, "deploy-hooks", "--target", str(directory)],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert made.code == 0, made.err
    for name, source in SUPPLIED.items():
        shutil.copy(source, directory / name)
    return directory


def ok(result: Result) -> Result:
    assert result.code == 0, result.out + result.err
    return result


def merge_check(world: Round, *flags: str) -> Result:
    return world.run(None, "merge-check", "--mr", world.mr, "--mr-project", world.project, *flags)


def refused(world: Round, hooks: Path, *says: str) -> str:
    """merge-check exits 1 saying all of ``says``, and the hook blocks the merge saying them."""
    result = merge_check(world)
    assert result.code == 1, result.out + result.err
    for words in says:
        assert words in result.err, result.err
    command = f"glab mr merge {world.mr} -R {world.project} --sha {world.head}"
    blocked = run_hook(hooks, hook_input(command), env=agent_env(world.sb))
    assert blocked.returncode == 2, blocked.stderr
    for words in says:
        assert words in " ".join(blocked.stderr.split()), blocked.stderr
    return result.err


def passes(world: Round, hooks: Path) -> None:
    result = merge_check(world)
    assert result.code == 0, result.err
    command = f"glab mr merge {world.mr} -R {world.project} --sha {world.head}"
    assert run_hook(hooks, hook_input(command), env=agent_env(world.sb)).returncode == 0


def approve(world: Round, agent: str, to: str, **env: str) -> Result:
    return world.run(
        agent, "approve", world.issue, "--mr", world.mr, "--mr-project", world.project,
        "--sha", world.head, "--to", to, **env,
    )  # fmt: skip


def verdict(world: Round) -> dict[str, Any]:
    return dict(json.loads(merge_check(world, "--json").out))


REVIEW_AGAIN = "Offer it for review to such an agent: pairgate handoff"


# -- the measured cases -------------------------------------------------------------------------


@pytest.mark.parametrize("agent", [LEAD, SOLO])
def test_a_lead_that_claims_as_review_cannot_approve_its_own_work(
    sandbox: RunningSandbox, hooks: Path, agent: str
) -> None:
    world = Round(sandbox)
    ok(world.run(agent, "claim", world.issue, "--role", "lead"))
    first = world.ledger_notes()[-1]["id"]
    ok(world.run(agent, "release", world.issue))
    claimed = ok(world.run(agent, "claim", world.issue, "--role", "review"))
    held = f"{agent} held #{world.issue} as lead (note {first})"
    assert f"warning: {agent} has a hand in this work ({held}" in claimed.err
    assert "its approvals of it will not count on any door" in claimed.err
    approved = ok(approve(world, agent, "acme-review-2"))
    assert f"warning: this is a self-approval ({held}" in approved.err
    body = world.ledger_notes()[-1]["body"]  # the issue says so by name, too
    assert "**This is a self-approval.**" in body and f"- not independent: {held}" in body
    refused(
        world, hooks, f"is a self-approval by {agent}", f"not independent: {held}", REVIEW_AGAIN
    )
    doc = verdict(world)
    assert doc["independence"]["independent"] is False and held in doc["independence"]["reasons"]


def test_an_agent_that_only_ever_claimed_as_review_cannot_approve_its_own_work(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    # The agent that wrote the MR never holds it as lead and never offers it: no hand shows.
    # Nobody else offered it the work, and that is the refusal.
    world = Round(sandbox)
    claimed = ok(world.run(LEAD, "claim", world.issue, "--role", "review"))
    assert (
        f"An approval by {LEAD} counts only once it has accepted an offer of the merge request "
        f"for review from another agent, written in another session; this claim is no such "
        f"offer." in " ".join(claimed.out.split())
    )
    approved = ok(approve(world, LEAD, REVIEW))
    note = world.ledger_notes()[-1]["id"]
    assert "warning: this approval does not count (" in approved.err
    assert "an agent that accepted an offer of it from another agent" in approved.err
    alone = (
        f"{LEAD} is the only agent on the trail: nobody else offered it {world.project}!"
        f"{world.mr} for review before its approval (note {note})"
    )
    err = refused(
        world,
        hooks,
        f"the approval of {world.project}!{world.mr} by {LEAD} (acme/tracker#{world.issue}, "
        f"note {note}) does not count: {alone}",
        f"pairgate handoff {world.issue} --to <reviewer> --role review --sha {world.head}",
    )
    assert "the reviewer accepts in a session of its own" in " ".join(err.split())
    doc = verdict(world)
    assert (doc["verdict"], doc["independence"]["independent"]) == ("not-offered", False)
    assert doc["independence_basis"]["mode"] == "names-and-sessions"


def test_a_role_swap_leaves_the_lead_a_hand_in_the_work(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    world = Round(sandbox)
    world.claim()
    first = world.ledger_notes()[-1]["id"]
    world.offer()
    world.accept()
    ok(world.run(REVIEW, "handoff", world.issue, "--to", LEAD, "--role", "review",
                 "--sha", world.head, "--mr", world.mr, "--mr-project", world.project))  # fmt: skip
    world.accept(LEAD)
    ok(approve(world, LEAD, REVIEW))
    refused(world, hooks, f"not independent: {LEAD} held #{world.issue} as lead (note {first})")


def test_laundering_through_a_second_cited_issue(sandbox: RunningSandbox, hooks: Path) -> None:
    world = Round(sandbox)
    second = int(sandbox.create_issue("The other half")["iid"])
    path = world.mr_path
    sandbox.api(
        "PUT", path, json={"description": f"acme/tracker#{world.issue} acme/tracker#{second}"}
    )
    world.claim()
    first = world.ledger_notes()[-1]["id"]
    other = Round.on(world, second)
    ok(other.run(LEAD, "claim", second, "--role", "review"))
    ok(approve(other, LEAD, REVIEW))
    err = refused(
        world, hooks, f"not independent: {LEAD} held #{world.issue} as lead (note {first})"
    )
    assert f"acme/tracker#{second}, note" in err


def test_two_names_in_one_session(sandbox: RunningSandbox, hooks: Path) -> None:
    world = Round(sandbox)
    one = {"PAIRGATE_TEST_SESSION_ID": "laptop-1"}
    ok(world.run(LEAD, "claim", world.issue, "--role", "lead", **one))
    first = world.ledger_notes()[-1]["id"]
    ok(world.run(LEAD, "handoff", world.issue, "--to", REVIEW, "--role", "review", "--sha",
                 world.head, "--mr", world.mr, "--mr-project", world.project, **one))  # fmt: skip
    ok(world.run(REVIEW, "accept", world.issue, **one))
    ok(approve(world, REVIEW, LEAD, **one))
    refused(
        world,
        hooks,
        f"{REVIEW} writes in session laptop-1, as {LEAD} does (#{world.issue}, note {first}), "
        f"and {LEAD} held #{world.issue} as lead (note {first})",
    )
    identity = world.run(REVIEW, "identity", **one)
    assert identity.code == 1 and "this session (laptop-1) also wrote as acme-lead" in identity.err


def test_an_edited_and_resealed_approval_does_not_count(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    world = Round(sandbox)
    world.claim()
    world.offer()
    world.accept()
    world.approve()
    world.accept(LEAD)
    approval, accept = (n for n in world.ledger_notes()[-2:])
    new = world.push()
    # A maintainer rewrites the approval onto the new head and re-seals it and the next record:
    # the chain reads clean, and only GitLab's record of the edit tells.
    notes = f"/projects/acme%2Ftracker/issues/{world.issue}/notes"
    body, digest = resealed(approval["body"], sha=new)
    sandbox.api("PUT", f"{notes}/{approval['id']}", json={"body": body}, as_user="maintainer")
    body, _ = resealed(accept["body"], prev=digest)
    sandbox.api("PUT", f"{notes}/{accept['id']}", json={"body": body}, as_user="maintainer")
    refused(
        world,
        hooks,
        f"(acme/tracker#{world.issue}, note {approval['id']}) does not count: GitLab reports its "
        f"note as edited at",
        "A fresh approval at the head does.",
    )
    status = json.loads(world.run(None, "status", world.issue, "--json").out)
    (shown,) = status["approvals"]  # status still shows the approval, and the edit
    assert shown["sha"] == new and approval["id"] in status["edited"]


def test_a_retarget_after_the_approval_voids_it(sandbox: RunningSandbox, hooks: Path) -> None:
    sandbox.commit("staging", {"unreviewed.py": "nobody read this\n"})
    world = Round(sandbox, branch="fix", start_branch="staging", target_branch="staging")
    world.claim()
    world.offer()
    world.accept()
    world.approve()
    reviewed = sandbox.api("GET", world.mr_path)
    sandbox.api("PUT", world.mr_path, json={"target_branch": "main"})
    refused(
        world,
        hooks,
        f"it was given while acme/app!{world.mr} targeted staging, and it now targets main",
        "the target branch changed, so the head needs a review of the change as it is now "
        "(against main)",
        f"acme-review still holds #{world.issue} as review, so it reviews the head and "
        f"approves it, replacing its offer; acme-review runs: pairgate approve {world.issue} "
        f"--mr {world.mr} --mr-project acme/app --sha {world.head} --to acme-lead --supersede",
    )
    # The record keeps what was reviewed; GitLab's diff now follows the new target.
    _, record, _ = parse_marker(world.ledger_notes()[-1]["body"])
    base = reviewed["diff_refs"]["base_sha"]
    assert (record["target_branch"], record["base_sha"]) == ("staging", base)
    now = sandbox.api("GET", world.mr_path)
    assert now["target_branch"] == "main"
    offer = world.ledger_notes()[-1]["id"]
    again = world.run(
        "acme-review",
        *("approve", world.issue, "--mr", world.mr, "--mr-project", "acme/app"),
        *("--sha", world.head, "--to", "acme-lead", "--supersede", offer),
    )
    assert again.code == 0, again.err  # the remedy runs as printed


def test_records_replayed_onto_another_issue_count_nowhere(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    world = Round(sandbox)
    world.claim()
    world.offer()
    world.accept()
    world.approve()
    target = int(sandbox.create_issue("Another issue")["iid"])
    for note in world.ledger_notes():
        sandbox.note(target, note["body"])  # the agents' own account copies them
    path = world.mr_path
    sandbox.api("PUT", path, json={"description": f"Related to acme/tracker#{target}"})
    result = merge_check(world)
    assert result.code == 1
    assert f"acme/tracker#{target}, which nobody holds" in result.err
    assert (
        f"skipped (replayed): it names acme/tracker#{world.issue}, not this issue (#{target})"
        in result.err
    )
    command = f"glab mr merge {world.mr} -R {world.project}"
    assert run_hook(hooks, hook_input(command), env=agent_env(sandbox)).returncode == 2


# -- withdraw -----------------------------------------------------------------------------------


@pytest.fixture
def approved(sandbox: RunningSandbox) -> Round:
    world = Round(sandbox)
    world.claim()
    world.offer()
    world.accept()
    world.approve()
    return world


def bot_approvals(world: Round) -> list[str]:
    body = world.sb.api("GET", f"{world.mr_path}/approvals")
    return [a["user"]["username"] for a in body["approved_by"]]


def test_withdraw_voids_the_approval_on_every_door(approved: Round, hooks: Path) -> None:
    world = approved
    passes(world, hooks)
    note = world.ledger_notes()[-1]["id"]
    assert bot_approvals(world) == [world.sb.users["review_bot"]["username"]]
    result = ok(world.run(REVIEW, "withdraw", world.issue, "--approval", note, "--reason",
                          "the parser still drops the last byte"))  # fmt: skip
    assert f"{REVIEW} withdraws the approval in note {note} of acme/app!{world.mr}" in result.out
    assert (
        f"Its offer back to {LEAD} is void: {REVIEW} holds #{world.issue} as review." in result.out
    )
    assert f"removed the review bot's approval of acme/app!{world.mr} on GitLab." in result.out
    assert bot_approvals(world) == []
    refused(world, hooks, f"{REVIEW} withdrew it (note", "the parser still drops the last byte")
    status = json.loads(world.run(None, "status", world.issue, "--json").out)
    assert status["offer"] is None and status["approvals"][0]["status"] == "withdrawn"
    # The reviewer still holds it: a fresh approval at the head counts again.
    ok(approve(world, REVIEW, LEAD))
    passes(world, hooks)


def test_withdraw_refusals(approved: Round) -> None:
    world = approved
    note = world.ledger_notes()[-1]["id"]
    theirs = world.run(LEAD, "withdraw", world.issue, "--approval", note, "--reason", "x")
    assert theirs.code == 1
    assert (
        f"the approval in note {note} is {REVIEW}'s, not {LEAD}'s: only its approver" in theirs.err
    )
    assert (
        f"\n{REVIEW} runs: pairgate withdraw {world.issue} --approval {note} --reason-file <file>\n"
        in theirs.err
    )
    nothing = world.run(REVIEW, "withdraw", world.issue, "--approval", 99999, "--reason", "x")
    assert nothing.code == 1
    assert f"note 99999 is not an approval recorded on #{world.issue}" in nothing.err
    assert f"Its approvals: note {note} by {REVIEW}" in nothing.err
    ok(world.run(REVIEW, "withdraw", world.issue, "--approval", note, "--reason", "x"))
    again = world.run(REVIEW, "withdraw", world.issue, "--approval", note, "--reason", "x")
    assert again.code == 1 and f"already withdrew the approval in note {note}" in again.err
    blank = world.run(REVIEW, "withdraw", world.issue, "--approval", note, "--reason", "  ")
    assert blank.code == 2 and "say what is wrong with the approval" in blank.err
    usage = world.run(REVIEW, "withdraw", world.issue, "--approval", note)
    assert (
        usage.code == 2 and "one of the arguments --reason --reason-file is required" in usage.err
    )


def test_the_leads_session_cannot_withdraw_as_the_reviewer(approved: Round, hooks: Path) -> None:
    world = approved
    note = world.ledger_notes()[-1]["id"]
    first = world.ledger_notes()[0]["id"]  # the lead's claim, written in session-acme-lead
    argv = ["withdraw", world.issue, "--approval", note, "--reason", "x", "--as", REVIEW]
    lead_session = {"PAIRGATE_TEST_SESSION_ID": f"session-{LEAD}"}
    forged = world.run(LEAD, *argv, **lead_session)
    assert forged.code == 1, forged.out + forged.err
    assert (
        f"pairgate withdraw: refused: this session (session-{LEAD}) wrote as {LEAD} on "
        f"#{world.issue} (note {first}); a session speaks for one name only, so it does not act "
        f"as {REVIEW}."
    ) in forged.err
    assert f"--reason-file <file> --as {REVIEW}" in forged.err
    passes(world, hooks)  # nothing was written: the approval still counts
    # The reviewer, restarted in a session of its own, still withdraws.
    ok(world.run(REVIEW, *argv, PAIRGATE_TEST_SESSION_ID="session-acme-review-restarted"))
    refused(world, hooks, f"{REVIEW} withdrew it (note")


def test_withdrawing_an_approve_record_that_never_took_effect(
    sandbox: RunningSandbox, config: Config
) -> None:
    world = Round(sandbox)
    world.claim()
    # An approve record by someone who does not hold the issue, written by hand: void.
    trail = world.trail()
    trail.prev = world.ledger(config).head
    void = trail.approve(REVIEW, LEAD, sha=world.head, mr=(world.project, world.mr)).id
    result = world.run(REVIEW, "withdraw", world.issue, "--approval", void, "--reason", "x")
    assert result.code == 1
    assert f"note {void} is an approve record that never took effect" in result.err
    assert "so it is already void: no door counts it" in result.err


# -- the other surfaces -------------------------------------------------------------------------


def test_waiting_marks_a_self_approval(sandbox: RunningSandbox) -> None:
    world = Round(sandbox)
    ok(world.run(SOLO, "claim", world.issue, "--role", "lead"))
    world.offer(SOLO, sender=SOLO)
    world.accept(SOLO)
    ok(approve(world, SOLO, SOLO))
    doc = json.loads(ok(world.run(SOLO, "waiting", "--json")).out)
    (row,) = [r for r in doc["waiting"] if r["issue"] == world.issue]
    assert row["owes"] == "take-approval" and row["independent"] is False
    assert row["independence_reasons"][0] == f"{SOLO} offers the work back to itself"
    text = ok(world.run(SOLO, "waiting")).out
    assert "a SELF-APPROVAL, not independent: no door counts it" in text


def test_status_and_board_carry_the_verdict_and_its_reasons(sandbox: RunningSandbox) -> None:
    world = Round(sandbox)
    ok(world.run(LEAD, "claim", world.issue, "--role", "lead"))
    first = world.ledger_notes()[-1]["id"]
    ok(world.run(LEAD, "release", world.issue))
    ok(world.run(LEAD, "claim", world.issue, "--role", "review"))
    ok(approve(world, LEAD, REVIEW))
    approved = world.ledger_notes()[-1]["id"]
    held = f"{LEAD} held #{world.issue} as lead (note {first})"
    alone = (
        f"{LEAD} is the only agent on the trail: nobody else offered it {world.project}!"
        f"{world.mr} for review before its approval (note {approved})"
    )
    status = json.loads(world.run(None, "status", world.issue, "--json").out)
    (approval,) = status["approvals"]
    assert (approval["status"], approval["independent"], approval["independence_reasons"]) == (
        "self",
        False,
        [held, alone],
    )
    assert held in world.run(None, "status", world.issue).out
    board = json.loads(world.run(LEAD, "board", "--json").out)
    (entry,) = [i for i in board["issues"] if i["issue"] == world.issue]
    assert entry["approval"]["independence_reasons"] == [held, alone]
    assert "SELF-APPROVAL" in world.run(LEAD, "board").out


def test_an_agent_mr_citing_only_the_generic_issue_is_refused(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    # The generic issue exempts unattended automation; the agents' account is none.
    sandbox.commit("chore", {"lock.txt": "1\n"})
    mr = sandbox.create_mr("chore", description="Chore. Related to acme/tracker#1")
    argv = ["merge-check", "--mr", str(mr["iid"]), "--mr-project", "acme/app"]
    result = run_cli(argv, agent_env(sandbox, None))
    assert result.code == 1, result.out + result.err
    said = (
        f"acme/app!{mr['iid']} cites only the generic tracking issue acme/tracker#1, which "
        "exempts unattended automation alone, and its author is @agents (user 10), not an "
        "automation account: no family of the roster is authored by it. Cite the issue it works "
        "on in its description (acme/tracker#NN)"
    )
    assert said in " ".join(result.err.split()), result.err
    command = f"glab mr merge {mr['iid']} -R acme/app --sha {mr['sha']}"
    blocked = run_hook(hooks, hook_input(command), env=agent_env(sandbox))
    assert blocked.returncode == 2, blocked.stderr
    assert said in " ".join(blocked.stderr.split()), blocked.stderr
    status = run_cli(["status", "1"], agent_env(sandbox, None))
    assert (
        "gated and refused: it cites only the generic tracking issue, which exempts unattended "
        "automation alone; its author is @agents (user 10)"
    ) in " ".join(status.out.split())


def test_automation_citing_only_the_generic_issue_is_out_of_scope(
    sandbox: RunningSandbox,
) -> None:
    sandbox.commit("nightly", {"lock.txt": "2\n"}, as_user="maintainer")
    mr = sandbox.create_mr(
        "nightly", description="Chore. Related to acme/tracker#1", as_user="maintainer"
    )
    argv = ["merge-check", "--mr", str(mr["iid"]), "--mr-project", "acme/app"]
    result = run_cli(argv, agent_env(sandbox, None))
    assert result.code == 0, result.err
    assert "it cites only the generic tracking issue acme/tracker#1; its author is" in result.out
    status = run_cli(["status", "1"], agent_env(sandbox, None))
    assert "not gated: it cites only the generic tracking issue; its author is" in status.out


# -- the rounds that still pass -----------------------------------------------------------------


def test_the_normal_round_passes(approved: Round, hooks: Path) -> None:
    approved.accept(LEAD)
    passes(approved, hooks)


def test_the_solo_round_ended_by_a_second_agent_passes(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    world = Round(sandbox)
    ok(world.run(SOLO, "claim", world.issue, "--role", "lead"))
    world.offer(SOLO, sender=SOLO)
    world.accept(SOLO)
    ok(approve(world, SOLO, SOLO))
    refused(world, hooks, f"{SOLO} offers the work back to itself")
    world.accept(SOLO)
    world.offer(REVIEW, sender=SOLO)
    world.accept(REVIEW)
    ok(approve(world, REVIEW, SOLO))
    passes(world, hooks)


def test_a_push_then_a_second_review_passes(approved: Round, hooks: Path) -> None:
    world = approved
    world.accept(LEAD)
    world.push()
    refused(world, hooks, "a push after an approval voids it")
    world.offer()
    world.accept()
    world.approve()
    passes(world, hooks)


def test_two_cited_issues_and_one_independent_approval_pass(
    sandbox: RunningSandbox, hooks: Path
) -> None:
    world = Round(sandbox)
    second = int(sandbox.create_issue("The other half")["iid"])
    path = world.mr_path
    sandbox.api(
        "PUT", path, json={"description": f"acme/tracker#{world.issue} acme/tracker#{second}"}
    )
    ok(Round.on(world, second).run("acme-lead-2", "claim", second, "--role", "lead"))
    world.claim()
    world.offer()
    world.accept()
    world.approve()
    passes(world, hooks)


def test_the_flat_reader_sees_the_same(approved: Round, tmp_path: Path) -> None:
    shutil.copy(ROOT / "pairgate" / "ownership.py", tmp_path)
    shutil.copy(FIXTURE_CONFIG, tmp_path / "pairgate-config.json")
    shutil.copy(FIXTURES / "automation_mr_families.py", tmp_path)
    note = approved.ledger_notes()[-1]["id"]
    ok(approved.run(REVIEW, "withdraw", approved.issue, "--approval", note, "--reason", "no"))
    flat = run_program(
        [sys.executable, "-B", "ownership.py", "merge-check", "--mr", str(approved.mr),
         "--mr-project", "acme/app"],
        env={**agent_env(approved.sb), "PYTHONPATH": ""},
        cwd=tmp_path,
    )  # fmt: skip
    assert flat.code == 1 and f"{REVIEW} withdrew it (note" in flat.err
