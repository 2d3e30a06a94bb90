"""approve --evidence in the round, against the sandbox: what it checks of the re-run document,
that it runs the document's mutants again itself, and what every surface shows of it."""

from __future__ import annotations

import json
from pathlib import Path

from pairgate.evidence.patches import Patch
from pairgate.evidence.rerun import rerun_document, rerun_field
from pairgate.evidence.schema import sealed
from pairgate.evidence.surface import evidence_field
from pairgate.sandbox.testing import RunningSandbox
from tests.kit.evidence_repos import CALC, PYTEST
from tests.kit.evidence_round import (
    FILES,
    Docs,
    approve,
    docs,
    handoff,
    json_of,
    last_note,
    offered_and_accepted,
    record_of,
    rerun_cli,
    world,
    wrapped,
)
from tests.kit.world import Round

FIXTURES = (docs, world)  # the kit's fixtures, which pytest finds here by name


def test_the_reviewer_reruns_and_the_approval_records_it_on_every_surface(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offer = offered_and_accepted(world, docs, tmp_path)
    out = tmp_path / "rerun.json"
    result = rerun_cli(world, docs, "--out", out)
    assert result.code == 0, result.err
    assert result.out.startswith(
        f"Re-run of mutant 2 of the offer in note {offer} (acme-lead, evidence "
        f"{docs.good['digest']}) on acme/tracker#{world.issue}, and of your own\n"
        f"Mutation evidence at {docs.sha} of {docs.pkg.repo}: pass\n"
    )
    assert result.out.endswith(
        f"Written to {out}; approve with it: pairgate approve {world.issue} --mr {world.mr} "
        f"--mr-project {world.project} --sha {docs.sha} --to acme-lead --evidence {out}\n"
    )
    doc = json.loads(out.read_text())
    assert doc["offer"]["note_id"] == offer
    assert [m["verdict"] for m in doc["evidence"]["mutants"]] == ["killed", "killed"]
    assert doc["evidence"]["mutants"][0]["patch"]["text"] == docs.clamp.read_text()

    result = approve(world, "--evidence", out)
    assert result.code == 0, result.err
    assert "Re-run before approving: mutant 2 killed, own killed." in result.out
    # acme/app has no CI here: the repeat the warning offers refuses --evidence, so has none.
    (warning,) = [x for x in result.err.splitlines() if x.startswith("warning: the approval")]
    assert "--server-approval-only" in warning and "--evidence" not in warning
    note = last_note(world)
    assert record_of(note)["rerun"] == rerun_field(doc)
    assert record_of(note)["rerun"]["own"] == {
        "sha256": doc["evidence"]["mutants"][1]["patch"]["sha256"],
        "files": ["calc/__init__.py"],
        "verdict": "killed",
    }
    assert "the offer's mutant 2 killed, the reviewer's own mutant killed" in note["body"]

    words = f"evidence: {docs.killed}; re-run: mutant 2 killed, own killed"
    assert words in world.run(None, "status", world.issue).out
    (approval,) = json_of(world, "status", world.issue)["approvals"]
    assert approval["approved_offer"] == offer
    assert approval["rerun"] == rerun_field(doc)
    assert approval["rerun_summary"] == "mutant 2 killed, own killed"
    assert words in world.run(None, "board").out
    assert json_of(world, "board")["issues"][0]["approval"]["rerun"] == rerun_field(doc)
    assert words in world.run(None, "waiting", "--agent", "acme-lead").out


def test_an_approval_without_a_rerun_says_so_on_every_surface(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offered_and_accepted(world, docs, tmp_path)
    result = approve(world)
    assert result.code == 0, result.err
    assert "The approval records no re-run (no --evidence)." in result.out
    assert record_of(last_note(world))["rerun"] is None
    words = f"evidence: {docs.killed}; no re-run"
    assert words in world.run(None, "status", world.issue).out
    assert words in world.run(None, "board").out
    assert json_of(world, "status", world.issue)["approvals"][0]["rerun_summary"] == "no re-run"


def test_a_rerun_in_which_the_offers_mutant_survives_refuses_and_so_does_approve(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offered_and_accepted(world, docs, tmp_path)
    out = tmp_path / "rerun.json"
    # only test_add runs: the clamp mutant (the offer's 2) survives, the reviewer's own dies
    narrow = f"{PYTEST} tests/test_calc.py::test_add"
    result = rerun_cli(world, docs, "--out", out, test=narrow)
    assert result.code == 1
    assert "pairgate evidence rerun: the offer's mutant 2 was not killed: survived" in result.err
    assert (
        f"hand the work back: pairgate handoff {world.issue} --to acme-lead --role lead "
        f"--sha {docs.sha} --reason-file <findings>"
    ) in result.err
    result = approve(world, "--evidence", out)
    assert result.code == 1
    assert (
        f"pairgate approve: the re-run in {out} does not back this approval:\n"
        "  - the offer's mutant 2 was not killed again: survived"
    ) in result.err
    assert record_of(last_note(world))["event"] == "accept"  # nothing was written


def test_a_rerun_whose_own_mutant_survives_exits_1_and_approve_records_it_with_a_warning(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offered_and_accepted(world, docs, tmp_path)
    out = tmp_path / "rerun.json"
    result = world.run(
        "acme-review",
        *("evidence", "rerun", world.issue, "--mutant-index", 1, "--mutant", docs.survivor),
        *("--test", PYTEST, "--repo", docs.pkg.repo, "--out", out),
    )
    assert result.code == 1
    assert "pairgate evidence rerun: your own mutant survive.patch was not killed: survived" in (
        result.err
    )
    assert "the offer's mutant" not in result.err
    result = approve(world, "--evidence", out)
    assert result.code == 0, result.err
    assert "Re-run before approving: mutant 1 killed, own survived." in result.out
    assert "warning: your own mutant was not killed (survived)" in result.err
    assert "re-run: mutant 1 killed, own survived" in world.run(None, "status", world.issue).out


def test_a_rerun_built_without_running_anything_is_refused_by_approve(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    """The red team's forgery: a re-run document written by hand, claiming the reviewer's own
    mutant (one no test notices) was killed, sealed with pairgate's own functions. Its schema
    and digests check; approve runs its mutants again and refuses it."""
    offer = offered_and_accepted(world, docs, tmp_path)
    forged = json.loads(json.dumps(docs.rerun_inner))
    own = forged["mutants"][1]
    own["patch"].update(
        text=docs.survivor.read_text(), sha256=Patch("", docs.survivor.read_text()).sha256
    )
    own["patch"]["files"] = ["calc/__init__.py"]
    path = docs.file(
        tmp_path,
        rerun_document(
            sealed(forged),
            project="acme/tracker",
            issue=world.issue,
            offer_note=offer,
            sender="acme-lead",
            offered=evidence_field(docs.good),
            index=2,
            now=0.0,
        ),
        "forged.json",
    )
    result = approve(world, "--evidence", path)
    assert result.code == 1
    assert (
        f"pairgate approve: approve ran the re-run's mutants again at {docs.sha[:12]}, and its "
        f"run does not give what {path} claims:\n"
        "  - your own mutant: the document says killed, approve's own run gives survived"
    ) in result.err
    assert record_of(last_note(world))["event"] == "accept"  # nothing was written


def test_a_rerun_at_another_sha_refuses_the_approval(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offer = offered_and_accepted(world, docs, tmp_path)
    path = wrapped(world, docs, offer, tmp_path)
    pushed = "c" * 40  # the lead pushed after the offer was accepted
    world.sb.mirror_commit(pushed, world.branch, {"calc/__init__.py": CALC + "\n"})
    result = approve(world, "--evidence", path, sha=pushed)
    assert result.code == 1
    assert f"  - it ran at {docs.sha}, not at the approved {pushed}" in result.err
    assert f"pairgate evidence rerun {world.issue} --mutant-index <K>" in result.err


def test_a_rerun_of_another_offer_refuses_the_approval(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    assert handoff(world, "--evidence", docs.file(tmp_path, docs.good)).code == 0
    first = int(last_note(world)["id"])
    path = wrapped(world, docs, first, tmp_path)  # re-run while the first offer was pending
    again = handoff(world, "--evidence", docs.file(tmp_path, docs.good), "--supersede", first)
    assert again.code == 0, again.err
    second = int(last_note(world)["id"])
    world.accept()
    result = approve(world, "--evidence", path)
    assert result.code == 1
    assert (
        f"  - it re-ran the offer in note {first}, not the one being approved (note {second})"
    ) in result.err


def test_a_rerun_of_an_offer_without_evidence_refuses_the_approval(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    assert handoff(world).code == 0
    offer = int(last_note(world)["id"])
    world.accept()
    result = approve(world, "--evidence", wrapped(world, docs, offer, tmp_path))
    assert result.code == 1
    assert f"  - the offer in note {offer} carries no mutation evidence" in result.err
    assert "there is nothing to re-run: hand the work back for evidence" in result.err


def test_a_rerun_when_the_approver_claimed_the_issue_refuses_the_approval(
    sandbox: RunningSandbox, docs: Docs, tmp_path: Path
) -> None:
    world = Round(sandbox)
    sandbox.mirror_commit(docs.sha, world.branch, FILES)
    claim = world.run("acme-review", "claim", world.issue, "--role", "review")
    assert claim.code == 0, claim.err  # held by a claim, not by accepting an offer
    path = wrapped(world, docs, 999, tmp_path)
    result = approve(world, "--evidence", path)
    assert result.code == 1
    assert "  - the approval answers no offer (the holder did not accept a handoff)" in result.err
    assert f"you hold #{world.issue} without one. Approve without --evidence" in result.err


def test_an_edited_rerun_refuses_the_approval_and_an_unreadable_one_is_exit_2(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offer = offered_and_accepted(world, docs, tmp_path)
    path = wrapped(world, docs, offer, tmp_path)
    doc = json.loads(path.read_text())
    doc["offer"]["mutant_index"] = 1
    path.write_text(json.dumps(doc))
    result = approve(world, "--evidence", path)
    assert result.code == 1
    assert "its digest does not match its content" in result.err
    result = approve(world, "--evidence", tmp_path / "none.json")
    assert result.code == 2 and "cannot read the re-run in" in result.err
    result = approve(world, "--evidence", path, "--server-approval-only")
    assert result.code == 2 and "--server-approval-only records nothing" in result.err


# -- evidence rerun's refusals ----------------------------------------------------------------
