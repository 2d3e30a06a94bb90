"""close, and status in both its forms."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pairgate.standalone.config import Config
from tests.kit.names import ROOT
from tests.kit.run import agent_env, clean_env
from tests.kit.world import Round


@pytest.fixture
def world(sandbox: Any) -> Round:
    w = Round(sandbox)
    w.claim()
    return w


def merge(world: Round) -> None:
    world.sb.api("PUT", f"{world.mr_path}/merge", as_user="maintainer")


def test_close_with_nothing_outstanding(world: Round, config: Config) -> None:
    merge(world)
    result = world.run("acme-lead", "close", world.issue)
    assert result.code == 0, result.err
    state = world.issue_state()
    assert (state["state"], state["labels"]) == ("closed", ["pairgate::closed"])
    assert world.ledger(config).holder is None


def test_close_refused_while_an_mr_citing_it_is_open(world: Round) -> None:
    result = world.run("acme-lead", "close", world.issue)
    assert result.code == 1
    assert f"1 open merge request(s) cite #{world.issue}" in result.err
    assert f"pairgate merge-check --mr {world.mr} --mr-project acme/app" in result.err


def test_close_refused_while_an_offer_is_pending(world: Round) -> None:
    world.offer()
    result = world.run("acme-lead", "close", world.issue)
    assert result.code == 1
    assert "an offer is pending on" in result.err
    assert result.err.endswith(
        f"acme-review answers it first; acme-review runs: pairgate accept {world.issue} (or "
        f"pairgate decline {world.issue})\n"
    )


def test_close_by_someone_who_does_not_hold_it(world: Round) -> None:
    merge(world)
    result = world.run("acme-review", "close", world.issue)
    assert result.code == 1
    assert f"acme-lead holds #{world.issue}; only the holder closes a held issue" in result.err


def status(world: Round) -> dict[str, Any]:
    result = world.run(None, "status", world.issue, "--json")
    assert result.code == 0, result.err
    return dict(json.loads(result.out))


STATUS_KEYS = {
    "issue",
    "project",
    "state",
    "holder",
    "role",
    "holder_since",
    "label",
    "offer",
    "approvals",
    "independence_basis",
    "merge_requests",
    "skipped",
    "breaks",
    "edited",
    "unbound",
    "concurrent",
    "trail",
}


def test_status_json_keys_are_stable(world: Round) -> None:
    world.offer()
    doc = status(world)
    assert set(doc) == STATUS_KEYS
    assert set(doc["offer"]) == {
        "note_id",
        "kind",
        "from",
        "to",
        "role",
        "sha",
        "mr",
        "reason",
        "supersedes",
        "evidence",
        "evidence_summary",
        "ci_rerun",
    }
    assert (
        doc["offer"]["evidence"],
        doc["offer"]["evidence_summary"],
        doc["offer"]["ci_rerun"],  # null: no evidence, so nothing a CI job re-runs
    ) == (None, "no mutation evidence", None)
    assert doc["merge_requests"][0]["iid"] == world.mr
    assert doc["label"] == {"expected": "agent::lead", "actual": ["agent::lead"], "in_step": True}


def test_status_marks_approvals_at_head_stale_and_self(world: Round) -> None:
    world.offer()
    world.accept()
    world.approve()
    assert [a["status"] for a in status(world)["approvals"]] == ["at-head"]
    world.push()
    (approval,) = status(world)["approvals"]
    assert approval["status"] == "stale" and approval["mr_head"] == world.head
    pending = status(world)["offer"]["note_id"]
    world.approve("acme-review", "acme-review", "--supersede", pending)
    assert [a["status"] for a in status(world)["approvals"]] == ["stale", "self"]


def test_status_reports_every_skipped_record_with_where_and_why(world: Round, sandbox: Any) -> None:
    claim = world.notes()[0]
    sandbox.note(world.issue, claim["body"], as_user="maintainer")  # a copied marker: forged
    sandbox.note(world.issue, "x\n<!-- mochi-task:ownership {broken -->")  # malformed
    path = f"/projects/acme%2Ftracker/issues/{world.issue}/notes/{claim['id']}"
    sandbox.advance_clock(60)
    sandbox.api(
        "PUT", path, as_user="maintainer", json={"body": claim["body"].replace("claims", "took")}
    )
    doc = status(world)
    kinds = [(s["note_id"], s["kind"]) for s in doc["skipped"]]
    assert [k for _, k in kinds] == ["tampered", "forged", "malformed"]
    assert kinds[0][0] == claim["id"] and doc["edited"] == [claim["id"]]
    assert doc["holder"] is None
    assert doc["label"]["in_step"] is False
    text = world.run(None, "status", world.issue).out
    assert f"note {claim['id']} skipped (tampered): its digest does not match" in text
    assert "-- out of step: the notes say none" in text


def test_status_shows_a_deleted_note_as_a_chain_break(world: Round, sandbox: Any) -> None:
    world.offer()
    world.accept()
    offer = world.notes()[1]
    sandbox.api(
        "DELETE",
        f"/projects/acme%2Ftracker/issues/{world.issue}/notes/{offer['id']}",
        as_user="maintainer",
    )
    doc = status(world)
    (brk,) = doc["breaks"]
    assert "an earlier note was deleted or rewritten" in brk["reason"]
    assert "breaks the chain" in world.run(None, "status", world.issue).out


def test_status_needs_no_identity(world: Round) -> None:
    text = world.run(None, "status", world.issue).out
    assert "holder: acme-lead as lead" in text and "pending offer: none" in text


def test_status_imports_what_its_sections_need_and_no_more(sandbox: Any) -> None:
    # Each of these cost every start of status milliseconds for a section or a verb it does not
    # have: the board's thread pool, tempfile (through urllib.request, when no proxy is set),
    # the gate's verdict, a verb's turn, the gate runs and the CI re-run.
    issue = sandbox.create_issue("Imports")["iid"]
    heavy = [
        "concurrent.futures",
        "tempfile",
        "urllib.request",
        "pairgate.standalone.verdict",
        "pairgate.verbs.turn",
        "pairgate.views.gate_runs",
        "pairgate.evidence.ci_result",
    ]
    code = (
        "import sys; from pairgate.main import main; code = main(['status', sys.argv[1]]); "
        f"print(code, sorted(set({heavy!r}) & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(issue)],
        env={**clean_env(), **agent_env(sandbox, None)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.splitlines()[-1] == "0 []", done.stderr
