"""scripts/check-issue-reference.py: a merge request of this project cites an issue as #NN."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.names import ROOT
from tests.kit.run import run_program

SCRIPT = ROOT / "scripts" / "check-issue-reference.py"
_spec = importlib.util.spec_from_file_location("check_issue_reference", SCRIPT)
assert _spec and _spec.loader
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Related to #12", [12]),
        ("Fixes #3, #4 and #3 again", [3, 4]),
        ("(#7)", [7]),
        ("group/project#12 is another project's", []),
        ("see acme#12 or foo#12", []),
        ("&#39;quoted&#39;", []),
        ("issue 12, #twelve, #0, #12abc", []),
        ("", []),
    ],
)
def test_issue_references(text: str, expected: list[int]) -> None:
    assert check.issue_references(text) == expected


def mr_env(title: str, description: str, **extra: str) -> dict[str, str]:
    return {
        "CI_MERGE_REQUEST_IID": "3",
        "CI_MERGE_REQUEST_TITLE": title,
        "CI_MERGE_REQUEST_DESCRIPTION": description,
        **extra,
    }


def test_a_cited_issue_passes() -> None:
    result = run_program([sys.executable, "-B", str(SCRIPT)], mr_env("Gate", "Related to #5"))
    assert (result.code, result.out.strip()) == (0, "check-issue-reference: cites #5")


def test_the_title_counts_too() -> None:
    result = run_program([sys.executable, "-B", str(SCRIPT)], mr_env("Fix #8", ""))
    assert result.code == 0


def test_no_citation_is_refused_with_the_remedy() -> None:
    result = run_program([sys.executable, "-B", str(SCRIPT)], mr_env("Gate", "acme/other#5"))
    assert result.code == 1
    assert "cites no issue as #NN" in result.err and "'Related to #12'" in result.err


def test_outside_a_merge_request_pipeline_it_cannot_check() -> None:
    result = run_program([sys.executable, "-B", str(SCRIPT)], {})
    assert result.code == 2 and "not a merge request pipeline" in result.err


def test_text_mode() -> None:
    args = [sys.executable, "-B", str(SCRIPT), "--text"]
    assert run_program([*args, "Related to #1"]).code == 0
    assert run_program([*args, "nothing"]).code == 1


def test_a_truncated_description_is_read_whole_with_the_job_token(
    sandbox: RunningSandbox,
) -> None:
    sandbox.commit("long", {"a.txt": "a\n"})
    mr = sandbox.create_mr("long", description="x" * 3000 + "\n\nRelated to #9")
    job = sandbox.pipeline("acme/app", "long", [{"name": "issue-reference", "status": "running"}])
    env = mr_env(
        "Long",
        "x" * 2697 + "...",
        CI_MERGE_REQUEST_DESCRIPTION_IS_TRUNCATED="true",
        CI_API_V4_URL=sandbox.api_url,
        CI_MERGE_REQUEST_PROJECT_ID=str(mr["project_id"]),
        CI_JOB_TOKEN=job["jobs"][0]["token"],
    )
    env["CI_MERGE_REQUEST_IID"] = str(mr["iid"])
    result = run_program([sys.executable, "-B", str(SCRIPT)], env)
    assert (result.code, result.out.strip()) == (0, "check-issue-reference: cites #9")
