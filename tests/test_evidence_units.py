"""The evidence runner's pure parts: verdicts, junit reading, patch parsing, sensitive files,
the document's schema and digest, and what an offer does with the document."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.handoff import (
    note_table,
    patch_matches,
    patches_block,
    patches_from_block,
    verify_for_handoff,
)
from pairgate.evidence.isolation import Isolation, Tools
from pairgate.evidence.patches import patch_sha256, touched
from pairgate.evidence.proclimit import ProcessCap
from pairgate.evidence.schema import (
    check_evidence,
    digest_problem,
    evidence_digest,
    read_evidence,
    sealed,
    write_evidence,
)
from pairgate.evidence.sensitive import DEFAULT_PATTERNS, is_test_file, matching_pattern
from pairgate.evidence.verdict import (
    FailedTest,
    classify,
    failing_frame,
    mutant_verdict,
    names_pytest,
    read_junit,
)
from pairgate.standalone.errors import UsageError
from pairgate.standalone.records import compose_note

SHA = "a" * 40
OTHER = "b" * 40

# -- verdicts --------------------------------------------------------------------------------


def outcome(exit_code: int | None, junit: tuple[FailedTest, ...] | None, **kw: Any) -> str:
    return classify(
        runner=kw.get("runner", "pytest"),
        exit_code=exit_code,
        timed_out=kw.get("timed_out", False),
        timeout=5,
        junit=junit,
    ).outcome


ASSERT = FailedTest("t::a", "assertion", "assert 1 == 2")
CRASH = FailedTest("t::c", "crash", "ZeroDivisionError: division by zero")
ERROR = FailedTest("t::e", "error", 'failed on setup with "RuntimeError: fx"')


@pytest.mark.parametrize(
    ("exit_code", "junit", "want"),
    [
        (0, (), "passed"),
        (1, (ASSERT,), "assertion-failed"),
        (1, (ASSERT, CRASH), "assertion-failed"),
        (1, (CRASH,), "crashed"),
        (1, (ASSERT, ERROR), "error"),  # an errored test makes it an error, not a kill
        (2, (ERROR,), "error"),  # a collection error
        (2, (), "error"),
        (3, (), "error"),
        (4, (), "error"),
        (5, (), "error"),  # no tests collected
        (1, (), "error"),  # exit 1 with nothing failed on an assertion
        (0, (ASSERT,), "error"),
        (1, None, "error"),  # pytest, but no report: cannot tell a crash from an assertion
        (-9, (), "error"),
    ],
)
def test_pytest_outcomes(exit_code: int, junit: tuple[FailedTest, ...] | None, want: str) -> None:
    assert outcome(exit_code, junit) == want


@pytest.mark.parametrize(
    ("exit_code", "want"), [(0, "passed"), (1, "failed"), (2, "error"), (127, "error")]
)
def test_other_runners_go_by_the_exit_code(exit_code: int, want: str) -> None:
    assert outcome(exit_code, None, runner="exit-code") == want


def test_a_timeout_wins_over_any_exit_code() -> None:
    result = classify(runner="pytest", exit_code=1, timed_out=True, timeout=2.5, junit=(ASSERT,))
    assert (result.outcome, result.detail.split(";")[0]) == ("timed-out", "timed out after 2.5 s")


@pytest.mark.parametrize(
    ("result", "want"),
    [("passed", "survived"), ("assertion-failed", "killed"), ("failed", "killed")]
    + [(o, "error") for o in ("crashed", "timed-out", "error")],
)
def test_mutant_verdicts(result: str, want: str) -> None:
    from pairgate.evidence.verdict import Outcome

    assert mutant_verdict(Outcome(result, "why"))[0] == want


@pytest.mark.parametrize(
    ("command", "pytest_named"),
    [
        ("python3 -m pytest -q", True),
        ("pytest tests", True),
        ("/usr/bin/py.test", True),
        ("pytest-3 -x", True),
        ("tox -e py", False),
        ("make test", False),
        ("echo pytest-like", False),
        ("sh -c 'unbalanced", False),
    ],
)
def test_which_commands_name_pytest(command: str, pytest_named: bool) -> None:
    assert names_pytest(command) is pytest_named


def junit(tmp_path: Path, body: str) -> tuple[FailedTest, ...] | None:
    path = tmp_path / "junit.xml"
    path.write_text(body)
    return read_junit(path, is_test_file, ("/evidence/repo",))


IN_TEST = "tests/test_calc.py:5: AssertionError"
IN_CODE = "def test_add():\n&gt;   add(1, 2)\n\ntests/test_calc.py:5: \n_ _ _\n\ncalc/__init__.py:2: AssertionError"


def test_junit_tells_assertions_in_tests_from_crashes_and_errors(tmp_path: Path) -> None:
    def case(name: str, inner: str) -> str:
        return f'<testcase classname="t" name="{name}">{inner}</testcase>'

    found = junit(
        tmp_path,
        '<testsuites><testsuite name="pytest">'
        + case("a", f'<failure message="assert 1 == 2">{IN_TEST}</failure>')
        + case("b", f'<failure message="AssertionError: boom">{IN_TEST}</failure>')
        + case("c", '<failure message="Failed: DID NOT RAISE">tests/t.py:9: Failed</failure>')
        + case("d", f'<failure message="ZeroDivisionError: x">{IN_TEST}</failure>')
        + case("e", f'<failure type="AssertionError" message="3 != 4">{IN_TEST}</failure>')
        + case("f", f'<failure type="builtins.TypeError" message="assert">{IN_TEST}</failure>')
        + case("g", '<error message="collection failure"/>')
        + case("h", '<skipped message="later"/>')
        + '<testcase classname="t" name="i"/>'
        # an assertion the code under test raised: its failing frame is in calc/, not a test
        + case("j", f'<failure message="AssertionError">{IN_CODE}</failure>')
        # no traceback to read (--tb=no): no frame, so not a test's assertion
        + case("k", '<failure message="assert 1 == 2"/>')
        # an absolute path counts only under the clone as the run saw it
        + case("l", '<failure message="assert 0">/evidence/repo/tests/test_x.py:3: A</failure>')
        + case("m", '<failure message="assert 0">/usr/lib/tests/test_x.py:3: A</failure>')
        + case("n", '<failure message="assert 0">../tests/test_x.py:3: A</failure>')
        + "</testsuite></testsuites>",
    )
    assert found is not None
    assert [(t.id, t.kind) for t in found] == [
        ("t::a", "assertion"),
        ("t::b", "assertion"),
        ("t::c", "assertion"),
        ("t::d", "crash"),
        ("t::e", "assertion"),
        ("t::f", "crash"),  # the type attribute, when present, decides
        ("t::g", "error"),
        ("t::j", "crash"),
        ("t::k", "crash"),
        ("t::l", "assertion"),
        ("t::m", "crash"),
        ("t::n", "crash"),
    ]
    assert found[7].frame == "calc/__init__.py:2"


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        (
            "tests/t.py:3: in test_x\n    f()\nsrc/m.py:7: in f\n    g()\nE   ValueError",
            "src/m.py:7",
        ),
        (
            'Traceback:\n  File "tests/t.py", line 3, in t\n  File "src/m.py", line 9, in g',
            "src/m.py:9",
        ),
        ("Engine/test_a.py:4: AssertionError", "Engine/test_a.py:4"),
        ("E   tests/t.py:1: looks like a location\n>   also:2: not one", ""),
        ("", ""),
    ],
)
def test_the_failing_frame_is_the_last_location(text: str, frame: str) -> None:
    assert failing_frame(text) == frame


@pytest.mark.parametrize(
    "body",
    [
        "",
        "<testsuites>",
        "not xml at all",
        # An entity expansion bomb is refused, not expanded.
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">'
        + "".join(
            f'<!ENTITY {c} "{("&" + p + ";") * 10}">'
            for p, c in zip("abcdefg", "bcdefgh", strict=True)
        )
        + ']><testsuites><testcase name="&h;"/></testsuites>',
    ],
)
def test_an_unreadable_junit_report_is_no_report(tmp_path: Path, body: str) -> None:
    assert junit(tmp_path, body) is None


def test_a_missing_junit_report_is_no_report(tmp_path: Path) -> None:
    assert read_junit(tmp_path / "absent.xml", is_test_file) is None


# -- patches ---------------------------------------------------------------------------------

GIT_PATCH = """\
diff --git a/calc/ops.py b/calc/ops.py
index 1111111..2222222 100644
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,4 +1,4 @@
 def f():
--- a removed line that looks like a header
+++ an added line that looks like a header
     return 1
@@ -10 +10 @@ def g():
-    x
+    y
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/from.py b/to.py
similarity index 100%
rename from from.py
rename to to.py
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git "a/sp\\303\\251cial name.py" "b/sp\\303\\251cial name.py"
--- "a/sp\\303\\251cial name.py"
+++ "b/sp\\303\\251cial name.py"
@@ -1 +1 @@
-a
+b
"""


def test_a_patch_names_its_files_and_hunks() -> None:
    files, hunks = touched(GIT_PATCH)
    assert files == [
        "calc/ops.py",
        "new.txt",
        "old.txt",
        "from.py",
        "to.py",
        "run.sh",
        "spécial name.py",
    ]
    assert [(h.file, h.old_start, h.old_lines, h.new_start, h.new_lines) for h in hunks] == [
        ("calc/ops.py", 1, 4, 1, 4),
        ("calc/ops.py", 10, 1, 10, 1),
        ("new.txt", 0, 0, 1, 1),
        ("old.txt", 1, 1, 0, 0),
        ("spécial name.py", 1, 1, 1, 1),
    ]


def test_a_plain_unified_diff_is_read_as_git_apply_reads_it() -> None:
    text = "--- calc.orig/ops.py\t2024-01-01\n+++ calc/ops.py\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    files, hunks = touched(text)
    assert (files, [h.file for h in hunks]) == (["ops.py"], ["ops.py"])


def test_text_that_is_no_patch_touches_nothing() -> None:
    assert touched("just words\n") == ([], [])


def test_the_patch_hash_is_over_its_exact_bytes() -> None:
    assert patch_sha256("a\r\n") != patch_sha256("a\n")
    assert len(patch_sha256("")) == 64


# -- sensitive files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("tests/test_calc.py", "tests/"),
        ("pkg/tests/helpers.py", "tests/"),
        ("pkg/test_calc.py", "test_*.py"),
        ("conftest.py", "conftest.py"),
        ("src/app.spec.ts", "*.spec.*"),
        ("pyproject.toml", "pyproject.toml"),
        (".gitlab-ci.yml", ".gitlab-ci.yml"),
        (".github/workflows/ci.yml", ".github/"),
        ("deploy/pairgate-config.json", "pairgate-config.json"),
        ("hooks/block-unapproved-merge.sh", "hooks/"),
        ("agents/lead.md", "agents/"),
        (".claude/settings.json", ".claude/"),
        ("templates/mr-ownership-gate/template.yml", "templates/mr-ownership-gate/*"),
        ("calc/ops.py", None),
        ("tests", None),  # a file named like a directory pattern is not under it
        ("contest.py", None),
        ("src/templates/mr-ownership-gate/x", None),  # whole-path patterns are anchored
    ],
)
def test_sensitive_patterns(path: str, pattern: str | None) -> None:
    assert matching_pattern(path, DEFAULT_PATTERNS) == pattern


# -- the document ----------------------------------------------------------------------------

TOOLS = Tools(bwrap="/usr/bin/bwrap", unshare="/usr/bin/unshare", timeout="/usr/bin/timeout")
CGROUP = ProcessCap("pids-cgroup", "", Path("/sys/fs/cgroup/pids"))
ISO = Isolation("bubblewrap", "", TOOLS, CGROUP)


def run_doc(outcome: str = "passed", *, exit_code: int = 0) -> dict[str, Any]:
    return {
        "command": "python3 -m pytest -q",
        "runner": "pytest",
        "exit_code": exit_code,
        "timed_out": False,
        "duration_ms": 412,
        "isolation": ISO.describe(network=False, pids=256),
        "outcome": outcome,
        "detail": "exit 0: every test passed",
        "failed_tests": [],
        "output_tail": "1 passed",
        "log_path": None,
        "changed_files": [".pytest_cache/v/cache/nodeids"],
        "unexpected_changes": [],
    }


def mutant_doc(index: int, text: str, verdict: str = "killed", **kw: Any) -> dict[str, Any]:
    files, hunks = touched(text)
    return {
        "index": index,
        "name": f"m{index}.patch",
        "patch": {
            "sha256": patch_sha256(text),
            "text": text,
            "files": files,
            "hunks": [vars(h) for h in hunks],
        },
        "sensitive_files": kw.get("sensitive", []),
        "applied": True,
        "apply_error": None,
        "run": run_doc("assertion-failed", exit_code=1),
        "verdict": verdict,
        "reason": kw.get("reason", "exit 1: 1 test(s) failed on an assertion: t::a"),
        "killed_by": ["tests.test_calc::test_add"] if verdict == "killed" else [],
    }


KILL = "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n"


def make_doc(*mutants: dict[str, Any], baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    ms = list(mutants) or [mutant_doc(1, KILL)]
    return sealed(
        {
            "schema": "pairgate-evidence",
            "v": 2,
            "created_at": "2026-01-01T00:00:00Z",
            "status": "pass",
            "weak": False,
            "repository": {"path": "/src/calc", "root_commit": OTHER},
            "sha": SHA,
            "command": "python3 -m pytest -q",
            "timeout_seconds": 300.0,
            "network": False,
            "pids": 256,
            "environment": ["HOME", "LANG", "PATH"],
            "workspace": {"kind": "tmpfs", "path": "/dev/shm"},
            "may_change": [".pytest_cache/"],
            "baseline": baseline or run_doc(),
            "mutants": ms,
            "sensitive_changes": {"base": None, "base_source": "none", "patterns": [], "files": []},
            "summary": {
                v: sum(m["verdict"] == v for m in ms)
                for v in ("killed", "survived", "error", "refused")
            },
        }
    )


def test_a_sealed_document_passes_its_schema_and_digest() -> None:
    doc = make_doc()
    assert check_evidence(doc) is None
    assert digest_problem(doc) is None
    assert doc["digest"] == evidence_digest(doc)


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda d: d.pop("sha"), "document"),
        (lambda d: d.update(sha="HEAD"), "sha"),
        (lambda d: d.update(extra=1), "document"),
        (lambda d: d.update(mutants=[]), "mutants"),
        (lambda d: d["mutants"][0].update(verdict="probably"), "mutants/0/verdict"),
        (lambda d: d["baseline"]["isolation"].update(mode="trust-me"), "baseline/isolation/mode"),
        (lambda d: d.update(v=1), "v"),
        (lambda d: d.update(status="fine"), "status"),
        (
            lambda d: d["baseline"]["isolation"].update(filesystem="mostly"),
            "baseline/isolation/filesystem",
        ),
        (lambda d: d.update(digest="md5:1"), "digest"),
    ],
)
def test_the_schema_rejects_what_is_not_evidence(edit: Any, where: str) -> None:
    doc = make_doc()
    edit(doc)
    problem = check_evidence(doc)
    assert problem is not None and problem.startswith(f"schema: {where}:"), problem


def test_sealing_refuses_to_write_an_invalid_document() -> None:
    doc = make_doc()
    doc["mutants"][0]["verdict"] = "maybe"
    with pytest.raises(ValueError, match="refusing to write invalid evidence"):
        sealed(doc)


def test_the_document_is_written_atomically_and_read_back_checked(tmp_path: Path) -> None:
    doc, path = make_doc(), tmp_path / "evidence.json"
    write_evidence(doc, path)
    assert read_evidence(path) == doc
    assert [p.name for p in tmp_path.iterdir()] == ["evidence.json"]  # no temporary left behind
    edited = path.read_text().replace('"killed"', '"survived"', 1)
    path.write_text(edited)
    with pytest.raises(UsageError, match="its digest does not match its content"):
        read_evidence(path)
    path.write_text("{")
    with pytest.raises(UsageError, match="cannot read the evidence"):
        read_evidence(path)
    bad = copy.deepcopy(doc)
    bad["digest"] = "sha256:" + "0" * 64
    with pytest.raises(ValueError, match="digest does not match"):
        write_evidence(bad, tmp_path / "other.json")
    assert not (tmp_path / "other.json").exists()


# -- what an offer does with it --------------------------------------------------------------


def test_evidence_at_the_offered_sha_with_every_mutant_killed_supports_the_offer() -> None:
    assert verify_for_handoff(make_doc(), sha=SHA.upper()) == []


def test_verify_names_every_problem() -> None:
    doc = make_doc(
        mutant_doc(1, KILL),
        mutant_doc(2, KILL, "survived", reason="the command passed"),
        mutant_doc(3, KILL, "error", reason="timed out after 5 s"),
        mutant_doc(
            4, KILL.replace("calc/__init__", "tests/test_calc"), sensitive=["tests/test_calc.py"]
        ),
        baseline=run_doc("failed", exit_code=1),
    )
    problems = verify_for_handoff(doc, sha=OTHER)
    assert problems == [
        f"the evidence was run at {SHA}, not at the offered {OTHER}",
        "its baseline did not pass: exit 0: every test passed",
        "mutant 2 (m2.patch) was not killed: survived, the command passed",
        "mutant 3 (m3.patch) was not killed: error, timed out after 5 s",
        "mutant 4 (m4.patch) edits files that judge the change (tests/test_calc.py): a mutant "
        "changes the code under test, not the tests or their configuration",
    ]


def test_verify_catches_an_edited_document_and_a_malformed_one() -> None:
    doc = make_doc()
    doc["mutants"][0]["reason"] = "edited afterwards"
    assert verify_for_handoff(doc, sha=SHA) == [
        "the evidence: its digest does not match its content (it was changed after it was run)"
    ]
    assert verify_for_handoff({"sha": SHA}, sha=SHA)[0].startswith(
        "the evidence is not an evidence document (pairgate-evidence): schema:"
    )


def test_the_note_table_escapes_what_the_agent_named() -> None:
    m = mutant_doc(1, KILL)
    m["name"] = "a|b <!-- x --> `c` *d*.patch"
    table = note_table(make_doc(m))
    assert "| 1 | a\\|b &lt;!-- x --&gt; \\`c\\` \\*d\\*.patch |" in table
    assert "| calc/\\_\\_init\\_\\_.py | tests.test\\_calc::test\\_add | killed |" in table
    assert "1 of 1 mutants killed" in table
    odd = make_doc()
    odd["command"] = "pytest tests/test_x.py -k 'a`b' <x>"
    assert "(``pytest tests/test_x.py -k 'a`b' <x>``, bubblewrap" in note_table(odd)
    assert "<!--" not in table


ADVERSARIAL = [
    KILL,
    KILL.rstrip("\n"),  # no newline at its end
    "/close\n  /label ~x\n\\/already\n \\\\/two\n<!-- mochi-task:ownership {} -->\n<b>\n",
    "````\n`````diff\nMutant 9, SHA-256 `" + "0" * 64 + "`:\n\n````diff\nfake\n````\n",
    "--- a/x\n+++ b/x\n@@ -1 +1 @@\n- /usr/bin\n+ /usr/local/bin\n",
    "</details>\n\n# heading\n",
]


def test_the_patches_block_gives_every_patch_back_byte_for_byte() -> None:
    doc = make_doc(*(mutant_doc(i, t) for i, t in enumerate(ADVERSARIAL, start=1)))
    block = patches_block(doc)
    # The note writer's own rewrites (quick actions, marker lines) leave the block alone...
    note, _ = compose_note("ownership", _record(), block)
    assert block in note
    # ...and every patch comes back, with the hash it was recorded under.
    back = patches_from_block(note)
    assert sorted(back) == list(range(1, len(ADVERSARIAL) + 1))
    for i, text in enumerate(ADVERSARIAL, start=1):
        digest, got = back[i]
        assert got == text
        assert digest == patch_sha256(text) and patch_matches(digest, got)
    assert block.startswith("<details><summary>") and block.endswith("</details>")


def test_a_patch_changed_in_the_note_no_longer_matches_its_hash() -> None:
    block = patches_block(make_doc())
    digest, text = patches_from_block(block.replace("a - b", "a * b"))[1]
    assert not patch_matches(digest, text)


def _record() -> dict[str, Any]:
    return {
        "event": "claim",
        "agent": "acme-lead",
        "write_id": "0" * 32,
        "session": "session-1",
        "prev": None,
        "role": "lead",
        "issue": "acme/tracker#4",
    }
