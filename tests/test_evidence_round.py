"""Mutation evidence in the round, against the sandbox: handoff --evidence, evidence rerun, and
what status, board and waiting show of them (tests/kit/evidence_round.py is the world;
approve --evidence is tests/test_evidence_approve.py's). The re-runs that a test is about run
through the command line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pairgate.evidence.handoff import patches_from_block
from pairgate.evidence.patches import Patch
from pairgate.evidence.rerun import rerun_document
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import evidence_digest
from pairgate.evidence.surface import evidence_field
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.records import compose_note, parse_marker
from tests.kit.evidence_repos import CALC, PYTEST
from tests.kit.evidence_round import (
    Docs,
    docs,
    handoff,
    json_of,
    last_note,
    offered_and_accepted,
    record_of,
    rerun_cli,
    world,
)
from tests.kit.names import FIXTURE_CONFIG
from tests.kit.run import run_cli
from tests.kit.world import Round

FIXTURES = (docs, world)  # the kit's fixtures, which pytest finds here by name


# -- handoff --evidence ---------------------------------------------------------------------


def test_an_offer_with_evidence_shows_the_table_and_the_patches(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    result = handoff(world, "--evidence", docs.file(tmp_path, docs.good))
    assert result.code == 0, result.err
    assert f"Mutation evidence: {docs.killed} ({docs.good['digest']})." in result.out
    note = last_note(world)
    body = note["body"]
    assert "| # | mutant | files | test | verdict |" in body
    assert (
        "| 1 | add.patch | calc/\\_\\_init\\_\\_.py | tests.test\\_calc::test\\_add | killed |"
        in body
    )
    assert "<details><summary>The mutants' patches (2)</summary>" in body
    assert patches_from_block(body) == {
        1: (docs.good["mutants"][0]["patch"]["sha256"], docs.add.read_text()),
        2: (docs.good["mutants"][1]["patch"]["sha256"], docs.clamp.read_text()),
    }
    assert record_of(note)["evidence"] == evidence_field(docs.good)
    assert record_of(note)["evidence"]["mutants"][1] == {
        "index": 2,
        "sha256": docs.good["mutants"][1]["patch"]["sha256"],
        "files": ["calc/__init__.py"],
        "verdict": "killed",
    }


def test_status_board_and_waiting_show_the_offers_evidence(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    assert handoff(world, "--evidence", docs.file(tmp_path, docs.good)).code == 0
    text = world.run(None, "status", world.issue).out
    assert (
        f"  evidence: {docs.killed} (digest {docs.good['digest']}; self-reported: run in the "
        "agent's session, its digest catches accidents, not forgery; the reviewer's re-run is "
        "the check)"
    ) in text.splitlines()
    assert "  no CI re-run" in text.splitlines()  # the merge request has no pipeline
    offer = json_of(world, "status", world.issue)["offer"]
    assert offer["evidence"] == evidence_field(docs.good)
    assert offer["evidence_summary"] == docs.killed
    assert offer["ci_rerun"] == {
        "state": "none",
        "job": None,
        "job_status": None,
        "pipeline": None,
        "result": None,
    }
    board = world.run(None, "board").out
    assert re.search(rf"-> acme-review as review, \d+s, evidence {re.escape(docs.killed)}", board)
    assert "Mutation evidence and re-runs are self-reported: run in the agent's session" in board
    (entry,) = json_of(world, "board")["issues"]
    assert entry["offer"]["evidence_summary"] == docs.killed
    waiting = world.run(None, "waiting", "--agent", "acme-review").out
    assert "(note " in waiting and f"; evidence {docs.killed}" in waiting


def test_an_offer_without_evidence_is_allowed_and_marked_everywhere(world: Round) -> None:
    result = handoff(world)
    assert result.code == 0, result.err
    assert "This offer carries no mutation evidence: the reviewer has no mutant" in result.out
    note = last_note(world)
    assert record_of(note)["evidence"] is None
    assert "**This offer carries no mutation evidence**" in note["body"]
    assert "  no mutation evidence" in world.run(None, "status", world.issue).out.splitlines()
    assert json_of(world, "status", world.issue)["offer"]["evidence_summary"] == (
        "no mutation evidence"
    )
    assert ", no mutation evidence" in world.run(None, "board").out
    assert "; no mutation evidence" in world.run(None, "waiting").out


def test_evidence_run_at_another_sha_refuses_the_handoff(
    sandbox: RunningSandbox, docs: Docs, tmp_path: Path
) -> None:
    world = Round(sandbox)  # its head is the sandbox's own commit, not the evidence's
    world.claim()
    before = world.notes()
    path = docs.file(tmp_path, docs.good)
    result = handoff(world, "--evidence", path)
    assert result.code == 1
    assert (
        f"pairgate handoff: the evidence in {path} does not back an offer of {world.head}:\n"
        f"  - the evidence was run at {docs.sha}, not at the offered {world.head}\n"
    ) in result.err
    assert (
        f"  pairgate evidence run --test '{PYTEST}' --sha {world.head} --mutant add.patch "
        f"--mutant clamp.patch --out {path}\n"
    ) in result.err
    assert world.notes() == before


def test_a_surviving_mutant_refuses_the_handoff(world: Round, docs: Docs, tmp_path: Path) -> None:
    before = world.notes()
    result = handoff(world, "--evidence", docs.file(tmp_path, docs.surviving))
    assert result.code == 1
    survivor = docs.surviving["mutants"][1]
    assert (
        f"  - mutant 2 (survive.patch) was not killed: survived, {survivor['reason']}\n"
    ) in result.err
    assert "mutant 1 (add.patch)" not in result.err  # only the one that was not killed
    assert "then offer again: pairgate handoff" in result.err
    assert world.notes() == before


def test_weak_evidence_refuses_the_handoff(world: Round, docs: Docs, tmp_path: Path) -> None:
    """The exit-code rule "kills" the mutant (the command fails with it applied), but no test
    judged it: handoff does not take that as every mutant killed."""
    weak = collect(
        Request(
            repo=docs.pkg.repo,
            command="! grep -q 'a - b' calc/__init__.py",
            patches=(Patch(docs.add.name, docs.add.read_text()),),
        )
    )
    assert (weak["weak"], weak["mutants"][0]["verdict"]) == (True, "killed")
    before = world.notes()
    path = docs.file(tmp_path, weak)
    result = handoff(world, "--evidence", path)
    assert result.code == 1
    assert (
        f"pairgate handoff: the evidence in {path} does not back an offer of {world.head}:\n"
        "  - the evidence is weak: the exit-code rule judged it (the runner reports no failing "
        "test), so nothing shows that a test judged any mutant; run the tests with pytest\n"
    ) in result.err
    assert world.notes() == before


def test_a_baseline_that_failed_refuses_the_handoff(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    result = handoff(world, "--evidence", docs.file(tmp_path, docs.failing))
    assert result.code == 1
    assert f"  - its baseline did not pass: {docs.failing['baseline']['detail']}" in result.err
    assert "  - mutant 1 (add.patch) was not killed: refused" in result.err


def test_a_mutant_of_the_tests_refuses_the_handoff(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    assert docs.sensitive["mutants"][0]["verdict"] == "killed"
    result = handoff(world, "--evidence", docs.file(tmp_path, docs.sensitive))
    assert result.code == 1
    assert (
        "  - mutant 1 (tests.patch) edits files that judge the change (tests/test_calc.py): a "
        "mutant changes the code under test, not the tests or their configuration"
    ) in result.err


def test_evidence_edited_after_its_run_refuses_the_handoff(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    edited = json.loads(json.dumps(docs.surviving))
    edited["mutants"][1]["verdict"] = "killed"  # the survivor, called killed by hand
    result = handoff(world, "--evidence", docs.file(tmp_path, edited))
    assert result.code == 1
    assert (
        "  - the evidence: its digest does not match its content (it was changed after it was run)"
    ) in result.err


def test_a_file_that_is_not_evidence_refuses_and_one_that_cannot_be_read_is_exit_2(
    world: Round, tmp_path: Path
) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"schema": "something else"}')
    result = handoff(world, "--evidence", other)
    assert result.code == 1
    assert (
        "  - the evidence is not an evidence document (pairgate-evidence): schema: " in result.err
    )
    assert "--test '<test command>'" in result.err and "--mutant '<patch>'" in result.err
    missing = tmp_path / "missing.json"
    result = handoff(world, "--evidence", missing)
    assert result.code == 2
    assert f"cannot read the evidence in {missing}" in result.err


# -- evidence rerun and approve --evidence ---------------------------------------------------


def test_a_rerun_with_no_offer_to_review_is_refused(world: Round, docs: Docs) -> None:
    result = rerun_cli(world, docs)
    assert result.code == 1
    assert (
        f"pairgate evidence rerun: #{world.issue} has no offer to review: no handoff is "
        "pending, and acme-lead holds it without having accepted one."
    ) in result.err
    assert f"See the ledger: pairgate status {world.issue}" in result.err


def test_a_rerun_whose_baseline_fails_exits_1(world: Round, docs: Docs, tmp_path: Path) -> None:
    offered_and_accepted(world, docs, tmp_path)
    result = rerun_cli(world, docs, test="exit 1")
    assert result.code == 1
    assert f"pairgate evidence rerun: the baseline did not pass at {docs.sha}: " in result.err
    assert "that is a BLOCKS: finding" in result.err


def test_a_rerun_with_an_unreadable_mutant_is_a_usage_error(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    missing = tmp_path / "mine.patch"
    result = world.run(
        "acme-review",
        *("evidence", "rerun", world.issue, "--mutant-index", 1, "--mutant", missing),
        *("--test", PYTEST, "--repo", docs.pkg.repo),
    )
    assert result.code == 2
    assert f"pairgate evidence rerun: cannot read the mutant {missing}" in result.err


def test_a_rerun_of_an_offer_without_evidence_is_refused(world: Round, docs: Docs) -> None:
    assert handoff(world).code == 0
    offer = last_note(world)["id"]
    result = rerun_cli(world, docs)
    assert result.code == 1
    assert (
        f"the offer in note {offer} (acme-lead) carries no mutation evidence, so there is no "
        "mutant of its to re-run."
    ) in result.err
    assert f"--evidence FILE --supersede {offer}" in result.err


def test_a_mutant_index_the_offer_does_not_have_is_a_usage_error(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    offered_and_accepted(world, docs, tmp_path)
    result = rerun_cli(world, docs, index=3)
    assert result.code == 2
    assert "--mutant-index 3: the offer in note" in result.err and "has 2 mutants" in result.err


def test_a_patch_in_the_note_that_is_not_the_recorded_one_is_refused(
    world: Round, docs: Docs, config: Config, tmp_path: Path
) -> None:
    """A ledger author's offer whose note shows another patch than the one its record hashes
    (and whose block header claims that other patch's hash): the record's hash decides."""
    good = handoff(world, "--evidence", docs.file(tmp_path, docs.good))
    assert good.code == 0
    note = last_note(world)
    kind, record, human = parse_marker(note["body"])
    swapped = docs.survivor.read_text()
    block = human.replace(docs.clamp.read_text().rstrip("\n"), swapped.rstrip("\n"))
    block = block.replace(docs.good["mutants"][1]["patch"]["sha256"], Patch("x", swapped).sha256)
    assert block != human
    ledger = world.ledger(config)
    fields = {k: v for k, v in record.items() if k not in ("v", "digest", "write_id", "prev")}
    forged = {**fields, "write_id": "f" * 32, "prev": ledger.head, "supersedes": note["id"]}
    body, _ = compose_note(kind, forged, block.strip())
    world.sb.note(world.issue, body)
    assert world.ledger(config).offer.note_id == last_note(world)["id"]  # it is the offer now
    result = rerun_cli(world, docs)
    assert result.code == 1
    assert (
        f"has SHA-256 {Patch('x', swapped).sha256}, but the offer recorded "
        f"{docs.good['mutants'][1]['patch']['sha256']}: it is not the patch the evidence ran"
    ) in result.err


def test_the_wrapped_rerun_is_what_the_command_line_writes(docs: Docs) -> None:
    """The tests above bind the module's re-run with rerun_document, as evidence rerun does."""
    doc = rerun_document(
        docs.rerun_inner,
        project="acme/tracker",
        issue=1,
        offer_note=5,
        sender="acme-lead",
        offered=evidence_field(docs.good),
        index=2,
        now=0.0,
    )
    assert doc["digest"] == evidence_digest(doc)
    assert doc["offer"]["mutant_sha256"] == docs.good["mutants"][1]["patch"]["sha256"]


def test_evidence_run_goes_through_main_with_no_gitlab_credentials(docs: Docs) -> None:
    """The evidence family gets main's GitLab client (rerun reads the ledger); run needs none."""
    test = "! grep -q 'a - b' calc/__init__.py"  # the exit-code runner: 1 is a kill, but weak
    argv = ["evidence", "run", "--test", test, "--mutant", str(docs.add), "--repo"]
    result = run_cli([*argv, str(docs.pkg.repo)], {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert result.code == 1, result.err
    assert "add.patch" in result.out and "killed" in result.out
    assert "\nWEAK: the runner reports no failing tests (the exit-code rule)" in result.out
    assert "pairgate evidence run: every mutant failed the command, but the evidence is weak" in (
        result.err
    )


def test_accept_after_a_push_asks_for_evidence_at_the_new_head(
    world: Round, docs: Docs, tmp_path: Path
) -> None:
    assert handoff(world, "--evidence", docs.file(tmp_path, docs.good)).code == 0
    offer = last_note(world)["id"]
    pushed = "d" * 40
    world.sb.mirror_commit(pushed, world.branch, {"calc/__init__.py": CALC + "\n"})
    result = world.run("acme-review", "accept", world.issue)
    assert result.code == 1
    assert (
        f"--sha {pushed} --mr {world.mr} --mr-project acme/app --supersede {offer} "
        f"--evidence <evidence run at that head>\n"
    ) in result.err
    assert "acme-lead offers again at the new head; acme-lead runs:\n" in result.err
    assert "--as" not in result.err
