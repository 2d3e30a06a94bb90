"""The evidence runner against real git repositories holding a real package, a real pytest suite
and real mutants: killed, survived, not applying, timing out, crashing; and the refusals."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pairgate.evidence.handoff import verify_for_handoff
from pairgate.evidence.isolation import probe
from pairgate.evidence.patches import Patch
from pairgate.evidence.runner import Request, collect, rerun
from pairgate.evidence.schema import check_evidence, digest_problem
from pairgate.standalone.errors import Refusal, UsageError
from tests.kit.evidence_repos import (
    CALC,
    PYTEST,
    Package,
    make_package,
    marker,
    processes_with,
    sleeper_code,
)
from tests.kit.gitrepos import commit, git

TIMEOUT = 4.0


def patches(*paths: Path) -> tuple[Patch, ...]:
    return tuple(Patch(p.name, p.read_text()) for p in paths)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of six real mutants (three at a time), watched for the hanging one's grandchild."""
    pkg = make_package(tmp_path_factory.mktemp("scenario"))
    token = marker()
    # The hanging mutant's grandchild leaves the process group (as a daemon does), so only the
    # pid namespace can take it down; the weaker mode promises only the process group.
    daemon = probe().has_userns
    mutants = [
        pkg.calc("kill.patch", "a + b", "a - b"),
        pkg.calc("survive.patch", "max(lo, min(x, hi))", "min(hi, max(x, lo))"),
        pkg.calc("crash.patch", "a + b", "a + b + None"),
        pkg.calc("broken-import.patch", "def add(a, b):", "def add(a, b)"),
        pkg.calc(
            "hang.patch",
            "    return a + b",
            f"    {sleeper_code(token, new_session=daemon)}\n    return a + b",
        ),
        pkg.calc("stale.patch", "a + b", "a * b"),
    ]
    stale = mutants[-1]
    stale.write_text(stale.read_text().replace(" def add(a, b):", " def plus(a, b):"))
    # The working tree is broken and holds a stray file: neither may reach the runs.
    (pkg.repo / "calc" / "__init__.py").write_text("raise SystemExit('working tree used')\n")
    (pkg.repo / "tests" / "test_stray.py").write_text("def test_stray():\n    assert False\n")
    request = Request(pkg.repo, PYTEST, patches(*mutants), timeout=TIMEOUT, jobs=3)
    done: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: done.update(doc=collect(request)))
    worker.start()
    seen: list[int] = []
    while worker.is_alive():
        seen = seen or processes_with(token)
        time.sleep(0.05)
    worker.join()
    after = processes_with(token)
    for pid in after:  # a failing run must not leave a sleeper behind
        os.kill(pid, signal.SIGKILL)
    return {"doc": done["doc"], "pkg": pkg, "seen": seen, "after": after}


def mutant(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["mutants"] if m["name"] == name)


def test_the_baseline_runs_at_head_never_on_the_working_tree(scenario: dict[str, Any]) -> None:
    doc, pkg = scenario["doc"], scenario["pkg"]
    assert doc["sha"] == pkg.sha()
    assert doc["repository"] == {"path": str(pkg.repo), "root_commit": pkg.sha()}
    base = doc["baseline"]
    assert (base["outcome"], base["runner"], base["exit_code"]) == ("passed", "pytest", 0)
    assert "2 passed" in base["output_tail"]  # not 3: the stray test is not committed


def test_a_mutant_that_fails_an_assertion_is_killed(scenario: dict[str, Any]) -> None:
    m = mutant(scenario["doc"], "kill.patch")
    assert (m["verdict"], m["applied"], m["run"]["exit_code"]) == ("killed", True, 1)
    assert m["killed_by"] == ["tests.test_calc::test_add"]
    assert m["patch"]["files"] == ["calc/__init__.py"]
    assert m["patch"]["hunks"] == [
        {"file": "calc/__init__.py", "old_start": 1, "old_lines": 5, "new_start": 1, "new_lines": 5}
    ]


def test_a_mutant_no_test_notices_survives(scenario: dict[str, Any]) -> None:
    m = mutant(scenario["doc"], "survive.patch")
    assert (m["verdict"], m["run"]["outcome"], m["run"]["exit_code"]) == ("survived", "passed", 0)
    assert m["killed_by"] == []


def test_a_mutant_that_crashes_instead_of_failing_an_assertion_is_an_error(
    scenario: dict[str, Any],
) -> None:
    m = mutant(scenario["doc"], "crash.patch")
    assert (m["verdict"], m["run"]["outcome"], m["run"]["exit_code"]) == ("error", "crashed", 1)
    assert "TypeError" in m["reason"] and m["killed_by"] == []
    broken = mutant(scenario["doc"], "broken-import.patch")
    assert (broken["verdict"], broken["run"]["exit_code"]) == ("error", 2)
    assert "not assertion failures" in broken["reason"]
    assert broken["run"]["failed_tests"][0]["kind"] == "error"


def test_a_mutant_that_does_not_apply_is_an_error_not_a_kill(scenario: dict[str, Any]) -> None:
    doc = scenario["doc"]
    m = mutant(doc, "stale.patch")
    assert (m["verdict"], m["applied"], m["run"]) == ("error", False, None)
    assert m["reason"].startswith(f"the patch does not apply at {doc['sha']}: ")
    assert "patch does not apply" in m["apply_error"]


def test_a_mutant_that_hangs_times_out_and_its_process_tree_is_gone(
    scenario: dict[str, Any],
) -> None:
    m = mutant(scenario["doc"], "hang.patch")
    assert (m["verdict"], m["run"]["outcome"], m["run"]["timed_out"]) == (
        "error",
        "timed-out",
        True,
    )
    assert TIMEOUT * 1000 <= m["run"]["duration_ms"] < (TIMEOUT + 3) * 1000
    assert scenario["seen"], "the grandchild was never seen running: the check proves nothing"
    assert scenario["after"] == [], "the grandchild outlived the timeout"


def test_the_document_is_complete_and_sealed(scenario: dict[str, Any]) -> None:
    doc = scenario["doc"]
    assert check_evidence(doc) is None and digest_problem(doc) is None
    assert doc["summary"] == {"killed": 1, "survived": 1, "error": 4, "refused": 0}
    assert [m["index"] for m in doc["mutants"]] == [1, 2, 3, 4, 5, 6]
    kill = mutant(doc, "kill.patch")
    assert kill["patch"]["text"] == (scenario["pkg"].patches / "kill.patch").read_text()
    assert kill["run"]["isolation"] == doc["baseline"]["isolation"]
    assert verify_for_handoff(doc, sha=doc["sha"])[0] == (
        "mutant 2 (survive.patch) was not killed: survived, the command passed with the mutant "
        "applied: no test noticed it"
    )


# -- refusals --------------------------------------------------------------------------------


@pytest.fixture
def pkg(tmp_path: Path) -> Package:
    return make_package(tmp_path)


def test_a_failing_baseline_refuses_every_mutant(pkg: Package) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    commit(pkg.repo, {"calc/__init__.py": CALC.replace("min(x, hi)", "min(x, hi + 1)")}, "bug")
    doc = collect(Request(pkg.repo, PYTEST, patches(kill, kill)))
    assert doc["baseline"]["outcome"] == "assertion-failed"
    assert [(m["verdict"], m["run"], m["applied"]) for m in doc["mutants"]] == [
        ("refused", None, False)
    ] * 2
    assert doc["summary"]["refused"] == 2
    assert "its baseline did not pass" in verify_for_handoff(doc, sha=doc["sha"])[0]


@pytest.mark.parametrize(
    ("rev", "said"),
    [
        ("HEAD^{tree}", "is a tree"),
        ("0" * 40, "names nothing"),
        ("no-such-branch", "names nothing"),
        ("--output=/tmp/x", "is not a revision"),
        ("HEAD ~1", "is not a revision"),
    ],
)
def test_a_sha_that_is_not_a_commit_is_refused(pkg: Package, rev: str, said: str) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    with pytest.raises(UsageError, match="--sha") as raised:
        collect(Request(pkg.repo, "true", patches(kill), sha=rev))
    assert said in raised.value.message and raised.value.exit_code == 2


def test_a_directory_that_is_no_repository_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a git repository"):
        collect(Request(tmp_path, "true", (Patch("p", "x"),)))


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("command", "  ", "--test is empty"),
        ("patches", (), "at least one --mutant"),
        ("timeout", 0.0, "--timeout 0 is not a positive time"),
        ("jobs", 0, "--jobs 0 is not a positive number"),
    ],
)
def test_requests_that_cannot_run_are_usage_errors(
    pkg: Package, field: str, value: Any, said: str
) -> None:
    request = {"repo": pkg.repo, "command": "true", "patches": (Patch("p", "x"),), field: value}
    with pytest.raises(UsageError, match=said):
        collect(Request(**request))


def test_an_older_sha_is_run_as_committed(pkg: Package) -> None:
    first = pkg.sha()
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    commit(pkg.repo, {"calc/__init__.py": "def add(a, b):\n    return 0\n"}, "break it")
    doc = collect(Request(pkg.repo, PYTEST, patches(kill), sha=first[:10]))
    assert doc["sha"] == first and doc["baseline"]["outcome"] == "passed"
    assert doc["mutants"][0]["verdict"] == "killed"


# -- other runners, clean copies, the environment --------------------------------------------

CHECK = """\
# Fails (exit 1) when a run finds a file an earlier run left, or when the code is wrong.
test ! -e left-by-a-run || exit 4
touch left-by-a-run
test "$(cat value)" = 42 || exit 1
"""


def test_other_runners_go_by_exit_code_and_each_run_gets_a_clean_copy(pkg: Package) -> None:
    commit(pkg.repo, {"check.sh": CHECK, "value": "42\n"}, "check")
    wrong = pkg.mutant("wrong.patch", {"value": "41\n"})
    odd = pkg.mutant("odd.patch", {"check.sh": CHECK.replace("exit 1", "exit 3")})
    worse = pkg.mutant(
        "worse.patch", {"value": "40\n", "check.sh": CHECK.replace("exit 1", "exit 3")}
    )
    doc = collect(Request(pkg.repo, "sh check.sh", patches(wrong, odd, wrong, worse), jobs=2))
    assert doc["baseline"]["outcome"] == "passed"
    assert [(m["verdict"], m["run"]["runner"], m["run"]["exit_code"]) for m in doc["mutants"]] == [
        ("killed", "exit-code", 1),
        ("survived", "exit-code", 0),
        ("killed", "exit-code", 1),  # the same patch again: the first run left nothing behind
        ("error", "exit-code", 3),
    ]
    assert "the exit-code rule counts only exit 1" in doc["mutants"][3]["reason"]
    assert doc["mutants"][1]["sensitive_files"] == []  # check.sh matches no default pattern


def test_no_variable_of_the_callers_reaches_the_command(
    pkg: Package, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "PAIRGATE_TEST_TASK_API_TOKEN": "glpat-api-secret",
        "PAIRGATE_TEST_TASK_WRITE_TOKEN": "glpat-write-secret",
        "GITLAB_TOKEN": "glpat-gitlab-secret",
        "CI_JOB_TOKEN": "job-secret",
        "PAIRGATE_TEST_AGENT_ID": "acme-lead",
        "PYTHONPATH": "/agent/path",
        # git's own variables would redirect the runner's git, were they passed on.
        "GIT_DIR": "/nonexistent",
        "GIT_INDEX_FILE": "/nonexistent/index",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    doc = collect(Request(pkg.repo, "env", patches(kill)))
    shown = doc["baseline"]["output_tail"]
    names = {line.split("=", 1)[0] for line in shown.splitlines() if "=" in line}
    assert names - {"PWD", "SHLVL", "_", "OLDPWD"} == set(doc["environment"])
    for name, value in secrets.items():
        assert name not in names and value not in shown
    lines = set(shown.splitlines())
    assert {"LANG=C.UTF-8", "TZ=UTC", "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1"} <= lines
    home = next(line for line in lines if line.startswith("HOME="))
    assert home.startswith("HOME=/") and home != f"HOME={Path.home()}"


# -- sensitive changes -----------------------------------------------------------------------


def test_the_files_that_judge_the_change_are_named(pkg: Package) -> None:
    base = pkg.sha()
    git(pkg.repo, "update-ref", "refs/remotes/origin/main", base)
    commit(
        pkg.repo,
        {
            "tests/test_calc.py": "def test_nothing():\n    assert True\n",
            "calc/extra.py": "X = 1\n",
            ".gitlab-ci.yml": "job: {}\n",
        },
        "weaken the tests",
    )
    touches_tests = pkg.mutant(
        "tests.patch", {"tests/test_calc.py": "def test_x():\n    assert 0\n"}
    )
    doc = collect(Request(pkg.repo, "true", patches(touches_tests)))
    changes = doc["sensitive_changes"]
    assert (changes["base"], changes["base_source"]) == (base, "the merge base with origin/main")
    assert changes["files"] == [
        {"path": ".gitlab-ci.yml", "pattern": ".gitlab-ci.yml"},
        {"path": "tests/test_calc.py", "pattern": "tests/"},
    ]
    assert doc["mutants"][0]["sensitive_files"] == ["tests/test_calc.py"]
    assert any(
        "edits files that judge the change" in p for p in verify_for_handoff(doc, sha=doc["sha"])
    )
    explicit = collect(Request(pkg.repo, "true", patches(touches_tests), base=doc["sha"]))
    assert explicit["sensitive_changes"]["files"] == []
    assert explicit["sensitive_changes"]["base_source"] == "--base"


def test_without_origin_main_nothing_is_compared(pkg: Package) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    changes = collect(Request(pkg.repo, "true", patches(kill)))["sensitive_changes"]
    assert (changes["base"], changes["files"]) == (None, [])
    assert changes["base_source"] == "none: no --base, and no origin/main"


# -- a re-run ---------------------------------------------------------------------------------


def test_a_rerun_takes_the_offered_mutant_only_under_its_recorded_hash(pkg: Package) -> None:
    offered, own = patches(
        pkg.calc("kill.patch", "a + b", "a - b"), pkg.calc("mine.patch", "min(x, hi)", "x")
    )
    doc = rerun(Request(pkg.repo, PYTEST, (offered, own)), offered_sha256=offered.sha256.upper())
    assert [m["verdict"] for m in doc["mutants"]] == ["killed", "killed"]
    with pytest.raises(Refusal, match="it is not the patch the evidence ran") as raised:
        rerun(Request(pkg.repo, PYTEST, (offered, own)), offered_sha256=own.sha256)
    assert raised.value.exit_code == 1
    with pytest.raises(UsageError, match="the offer's mutant and one of yours"):
        rerun(Request(pkg.repo, PYTEST, (offered,)), offered_sha256=offered.sha256)


def test_a_linked_worktree_is_run_at_its_own_head(pkg: Package, tmp_path: Path) -> None:
    """Agents work in worktrees: --repo names one, and its HEAD (not the main checkout's) runs."""
    worktree = tmp_path / "feature"
    git(pkg.repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    commit(worktree, {"value": "feature\n"}, "on the feature branch")
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    doc = collect(Request(worktree, 'test "$(cat value)" = feature', patches(kill)))
    assert doc["sha"] == git(worktree, "rev-parse", "HEAD") != pkg.sha()
    assert doc["repository"]["path"] == str(worktree)
    assert doc["baseline"]["outcome"] == "passed"


def test_each_run_says_what_it_changed_and_what_it_was_not_allowed_to(pkg: Package) -> None:
    kill = pkg.calc("kill.patch", "a + b", "a - b")
    command = (
        "echo out > build.log && mkdir -p dist && echo x > dist/pkg.whl && rm tests/test_calc.py "
        "&& mkdir -p .pytest_cache && touch .pytest_cache/x && exit 1"
    )
    doc = collect(Request(pkg.repo, command, patches(kill), may_change=("dist/",)))
    base = doc["baseline"]
    assert base["changed_files"] == [
        ".pytest_cache/x",
        "build.log",
        "dist/pkg.whl",
        "tests/test_calc.py",
    ]
    assert base["unexpected_changes"] == ["build.log", "tests/test_calc.py"]
    assert doc["may_change"][-1] == "dist/" and ".pytest_cache/" in doc["may_change"]
    assert doc["status"] == "fail" and doc["mutants"][0]["verdict"] == "refused"
