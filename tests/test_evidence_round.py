"""Mutation evidence in the round, against the sandbox: handoff --evidence, evidence rerun,
approve --evidence, and what status, board and waiting show of them.

The local repository is the source of truth: a real git repository with a real pytest suite
and real mutants (tests/kit/evidence_repos.py). The sandbox's own commit ids are not git's, so its
merge request is given the local commit's id (``mirror_commit``, POST /-/sandbox/commits), and
the evidence run in a clone of the local repository is of the MR's head.

The evidence documents are collected once per module (each run is a real pytest run); the
re-runs that a test is about run through the command line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.handoff import patches_from_block
from pairgate.evidence.patches import Patch
from pairgate.evidence.rerun import rerun_document, rerun_field
from pairgate.evidence.runner import Request, collect, rerun
from pairgate.evidence.schema import evidence_digest
from pairgate.evidence.surface import evidence_field, evidence_summary
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.records import compose_note, parse_marker
from tests.kit.evidence_repos import CALC, PYTEST, TESTS, Package, make_package
from tests.kit.world import Round

FILES = {"calc/__init__.py": CALC, "tests/test_calc.py": TESTS}


class Docs:
    """What the module collects once: the package, its mutants, and the evidence."""

    def __init__(self, tmp: Path) -> None:
        self.pkg: Package = make_package(tmp)
        pkg = self.pkg
        self.sha = pkg.sha()
        self.add = pkg.calc("add.patch", "a + b", "a - b")
        self.clamp = pkg.calc("clamp.patch", "max(lo, min(x, hi))", "min(x, hi)")
        self.survivor = pkg.calc("survive.patch", "return a + b", "return a + b if a != 100 else 0")
        self.own = pkg.calc("own.patch", "return a + b", "return b + b")
        self.good = self._collect(self.add, self.clamp)
        # "2/2 killed", and where the machine has no namespaces "2/2 killed (env-only, ...)"
        self.killed = evidence_summary(evidence_field(self.good))
        assert self.killed.startswith("2/2 killed")
        self.surviving = self._collect(self.add, self.survivor)
        # a mutant of the tests, not of the code: killed, and still no evidence for an offer
        weakened = pkg.mutant("tests.patch", {"tests/test_calc.py": TESTS.replace("== 5", "== 6")})
        self.sensitive = collect(
            Request(repo=pkg.repo, command=PYTEST, patches=(self._patch(weakened),))
        )
        self.failing = collect(
            Request(repo=pkg.repo, command="exit 1", patches=(self._patch(self.add),))
        )
        # the reviewer's re-run of mutant 2 (clamp) and its own, as evidence rerun runs it
        offered = Patch("note-mutant-2", self.clamp.read_text())
        self.rerun_inner = rerun(
            Request(repo=pkg.repo, command=PYTEST, patches=(offered, self._patch(self.own))),
            offered_sha256=offered.sha256,
        )

    @staticmethod
    def _patch(path: Path) -> Patch:
        return Patch(path.name, path.read_text())

    def _collect(self, *mutants: Path) -> dict[str, Any]:
        patches = tuple(self._patch(m) for m in mutants)
        return collect(Request(repo=self.pkg.repo, command=PYTEST, patches=patches, jobs=2))

    def file(self, tmp: Path, doc: dict[str, Any], name: str = "evidence.json") -> Path:
        path = tmp / name
        path.write_text(json.dumps(doc))
        return path


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Docs:
    return Docs(tmp_path_factory.mktemp("evidence-round"))


@pytest.fixture
def world(sandbox: RunningSandbox, docs: Docs) -> Round:
    """An issue claimed by the lead, and its MR, whose head is the local repository's commit."""
    w = Round(sandbox)
    sandbox.mirror_commit(docs.sha, w.branch, FILES)
    assert w.head == docs.sha
    w.claim()
    return w


def handoff(world: Round, *extra: Any, sha: str | None = None) -> Any:
    return world.run(
        "acme-lead",
        *("handoff", world.issue, "--to", "acme-review", "--role", "review"),
        *("--sha", sha or world.head, "--mr", world.mr, "--mr-project", world.project),
        *extra,
    )


def approve(world: Round, *extra: Any, sha: str | None = None) -> Any:
    return world.run(
        "acme-review",
        *("approve", world.issue, "--mr", world.mr, "--mr-project", world.project),
        *("--sha", sha or world.head, "--to", "acme-lead"),
        *extra,
    )


def last_note(world: Round) -> dict[str, Any]:
    return world.notes()[-1]


def record_of(note: dict[str, Any]) -> dict[str, Any]:
    return parse_marker(note["body"])[1]


def json_of(world: Round, *argv: Any) -> Any:
    result = world.run("acme-lead", *argv, "--json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


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
    assert f"  evidence: {docs.killed} (digest {docs.good['digest']})" in text.splitlines()
    offer = json_of(world, "status", world.issue)["offer"]
    assert offer["evidence"] == evidence_field(docs.good)
    assert offer["evidence_summary"] == docs.killed
    board = world.run(None, "board").out
    assert re.search(rf"-> acme-review as review, \d+s, evidence {re.escape(docs.killed)}", board)
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


def offered_and_accepted(world: Round, docs: Docs, tmp_path: Path) -> int:
    assert handoff(world, "--evidence", docs.file(tmp_path, docs.good)).code == 0
    note = last_note(world)["id"]
    world.accept()
    return int(note)


def rerun_cli(world: Round, docs: Docs, *extra: Any, test: str = PYTEST, index: int = 2) -> Any:
    return world.run(
        "acme-review",
        *("evidence", "rerun", world.issue, "--mutant-index", index, "--mutant", docs.own),
        *("--test", test, "--repo", docs.pkg.repo),
        *extra,
    )


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
        f"Mutation evidence at {docs.sha} of {docs.pkg.repo}\n"
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


def wrapped(world: Round, docs: Docs, offer_note: int, tmp_path: Path) -> Path:
    """The module's re-run of mutant 2, bound to this world's offer as evidence rerun binds it."""
    doc = rerun_document(
        docs.rerun_inner,
        project="acme/tracker",
        issue=world.issue,
        offer_note=offer_note,
        sender="acme-lead",
        offered=evidence_field(docs.good),
        index=2,
        now=0.0,
    )
    return docs.file(tmp_path, doc, "rerun.json")


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
    from tests.kit.names import FIXTURE_CONFIG
    from tests.kit.run import run_cli

    test = "! grep -q 'a - b' calc/__init__.py"  # the exit-code runner: 1 is a kill
    argv = ["evidence", "run", "--test", test, "--mutant", str(docs.add), "--repo"]
    result = run_cli([*argv, str(docs.pkg.repo)], {"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)})
    assert result.code == 0, result.err
    assert "add.patch" in result.out and "killed" in result.out


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
        f"--evidence <evidence run at that head> --as acme-lead"
    ) in result.err
