"""graph: the issue's round as a Mermaid sequence diagram or a dot graph."""

from __future__ import annotations

import json

from pairgate.commands.graph import dot, graph_doc, mermaid, steps
from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.config import Config
from pairgate.standalone.ledger import MrRef
from pairgate.tracker import MrState
from tests.kit.names import LEAD, MR, REVIEW, SHA, SHA2
from tests.kit.run import agent_env, ok, run_cli
from tests.kit.trail import Trail
from tests.kit.world import Round

REF = MrRef(*MR)


def test_a_whole_round_in_mermaid(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    out = ok(["graph", str(r.issue)], r.lead).out
    lines = out.splitlines()
    assert lines[:4] == [
        "sequenceDiagram",
        f"    title acme/tracker#{r.issue}",
        f"    participant A1 as {LEAD}",
        f"    participant A2 as {REVIEW}",
    ]
    body = "\n".join(lines[4:])
    assert "Note over A1: " in body and "claims as lead" in body
    assert "A1->>A2: " in body and f"offers as review, acme/app!{r.mr} at {r.sha[:8]}" in body
    assert "A2->>A1: " in body and "independent, at the head" in body
    assert out.count("accepts the offer of note") == 2


def test_self_stale_void_and_tampered_are_marked(config: Config) -> None:
    trail = Trail(config)
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review")
    trail.accept("acme-review", offer, "acme-lead")
    trail.approve("acme-review", "acme-review")  # offers back to itself: a self-approval
    trail.claim("acme-solo")  # void: the issue is held
    bad = trail.claim("acme-lead")
    trail.edit(bad, bad.body.replace("claim", "grab", 1))
    lines = steps(trail.fold(), {REF: MrState(SHA, "opened")})
    text = mermaid("acme/tracker#4", lines)
    (self_line,) = [line for line in text.splitlines() if "SELF-APPROVAL" in line]
    assert self_line.startswith("    Note over A2: ")  # to itself: no arrow to anyone else
    assert "SELF-APPROVAL (acme-review offers the work back to itself)" in self_line
    assert "-x" not in text  # the void claim is a note, not an arrow
    assert "(VOID: acme-review already holds the issue" in text
    assert "skipped (tampered)" in text
    stale = Trail(config)
    stale.claim("acme-lead")
    offer = stale.handoff("acme-lead", "acme-review")
    stale.accept("acme-review", offer, "acme-lead")
    stale.approve("acme-review", "acme-lead")
    text = mermaid("t", steps(stale.fold(), {REF: MrState(SHA2, "opened")}))
    assert f"STALE: the head is now {SHA2[:8]}" in text and "A2--)A1: " in text


def test_mermaid_text_cannot_break_out_of_its_line(config: Config) -> None:
    trail = Trail(config)
    reason = "a; b #1 <b>bold</b>\n%% not a comment --> x"
    trail.record("freeze", "freeze", "acme-lead", scope="board", reason=reason, minutes=5)
    text = mermaid("acme/tracker#4", steps(trail.fold(), {}))
    (line,) = [line for line in text.splitlines() if "freezes" in line]
    assert ";" not in line.replace("#59;", "").replace("#35;", "").replace("#60;", "").replace(
        "#62;", ""
    )
    assert "<" not in line and ">" not in line and "\n" not in line


def test_dot_format(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim().offer()
    out = ok(["graph", str(r.issue), "--format", "dot"], r.lead).out
    assert out.startswith(f'digraph "acme/tracker#{r.issue}" {{\n')
    assert out.rstrip().endswith("}")
    assert " -> " in out and f"{LEAD} -> {REVIEW}\\noffers as review" in out


def test_dot_escapes_quotes_and_marks_problems(config: Config) -> None:
    trail = Trail(config)
    trail.record(
        "freeze", "freeze", "acme-lead", scope="board", reason='say "hi" \\ bye', minutes=5
    )
    trail.claim("acme-lead")
    trail.claim("acme-review")  # void
    text = dot("t", steps(trail.fold(), {}))
    assert 'say \\"hi\\" \\\\ bye' in text
    assert 'style="dashed"' in text


def test_an_issue_without_records_and_a_missing_issue(sandbox: RunningSandbox) -> None:
    issue = sandbox.create_issue("empty")["iid"]
    env = agent_env(sandbox, LEAD)
    assert "no ledger records on this issue" in ok(["graph", str(issue)], env).out
    missing = run_cli(["graph", "999"], env)
    assert missing.code == 2 and "acme/tracker#999 does not exist" in missing.err


def test_a_tampered_round_is_drawn_with_the_damage(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).claim().offer()
    notes = sandbox.api("GET", f"/projects/acme%2Ftracker/issues/{r.issue}/notes")
    offer = max(n["id"] for n in notes if "mochi-task" in n["body"])
    r.tamper(offer, "offers this issue", "hands over this issue")
    out = ok(["graph", str(r.issue)], r.lead).out
    assert f"{offer}: skipped (tampered)" in out and "offers as review" not in out


def test_graph_json_has_the_documented_keys(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    doc = json.loads(ok(["graph", str(r.issue), "--json"], r.lead).out)
    assert list(doc) == ["issue", "title", "participants", "steps"]
    assert (doc["issue"], doc["title"], doc["participants"]) == (
        r.issue,
        f"acme/tracker#{r.issue}",
        [LEAD, REVIEW],
    )
    first = doc["steps"][0]
    assert list(first) == ["note_id", "actor", "target", "text", "mark"]
    assert (first["actor"], first["target"], first["text"], first["mark"]) == (
        LEAD,
        None,
        "claims as lead",
        None,
    )
    approve = next(s for s in doc["steps"] if s["text"].startswith("approves"))
    assert (approve["actor"], approve["target"]) == (REVIEW, LEAD)
    assert approve["text"].endswith("independent, at the head; offers back as lead")
    ids = [s["note_id"] for s in doc["steps"]]
    assert ids == sorted(ids) and len(ids) == 5  # claim, offer, accept, approve, accept: in order


def test_graph_json_marks_what_the_diagram_marks(config: Config) -> None:
    trail = Trail(config)
    trail.claim("acme-lead")
    offer = trail.handoff("acme-lead", "acme-review")
    trail.accept("acme-review", offer, "acme-lead")
    trail.approve("acme-review", "acme-review")
    trail.claim("acme-solo")
    doc = graph_doc("t", 4, steps(trail.fold(), {REF: MrState(SHA, "opened")}))
    assert [s["mark"] for s in doc["steps"]] == [None, None, None, "self", "void"]


def test_graph_says_which_gitlab_under_verbose(sandbox: RunningSandbox) -> None:
    r = Round(sandbox).approved()
    result = ok(["graph", str(r.issue), "--verbose"], r.lead)
    assert result.out.startswith("sequenceDiagram\n")
    assert f"GitLab API {sandbox.url}/api/v4 (from PAIRGATE_TEST_GITLAB_URL)" in result.err
