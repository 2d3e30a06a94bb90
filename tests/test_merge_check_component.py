"""The mr-merge-check component, run by gitlab-ci-local against the sandbox: its one job,
validate-mr-merge-check, gives merge-check's verdict for the merge request its job token
proves."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.gate_cases import (
    approval_one_push_behind,
    approved_at_head,
    automation_family,
    ci_variables,
    claim_as_review_then_approve,
    generic_issue_by_automation,
    generic_issue_only,
    never_approved,
    outside_the_group,
    renovate_exempt,
    self_approval_only,
)
from tests.kit.gcl import (
    MERGE_CHECK,
    MERGE_CHECK_INPUTS,
    component_files,
    component_include,
    dump,
    publish,
    repository,
    run,
)
from tests.kit.world import World

pytestmark = pytest.mark.slow

BACKGROUND = "Background: docs/agent-handoff.md."


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory, sandbox_server: RunningSandbox) -> Path:
    """The consumer, made once for the module (seven git programs); no run happens in it."""
    ci = {"include": [component_include("mr-merge-check", MERGE_CHECK_INPUTS)]}
    files = {**component_files("mr-merge-check"), ".gitlab-ci.yml": dump(ci)}
    return repository(tmp_path_factory.mktemp("checkout") / "consumer", sandbox_server, files)


@pytest.fixture
def repo(checkout: Path, tmp_path: Path) -> Path:
    """A copy of that consumer, git directory and all, for one test's runs."""
    return Path(shutil.copytree(checkout, tmp_path / "consumer", symlinks=True))


@pytest.fixture
def world(sandbox: RunningSandbox) -> World:
    publish(sandbox)
    return World(sandbox)


@pytest.mark.parametrize(
    ("build", "status", "says"),
    [
        (never_approved, "FAIL", "no approval in acme/tracker#"),
        (approved_at_head, "PASS", "may merge: acme-review approved its head"),
        (approval_one_push_behind, "FAIL", "a push after an approval voids it"),
        (self_approval_only, "FAIL", "is a self-approval"),
        (outside_the_group, "PASS", "not gated: outside/app is not in group acme"),
        (claim_as_review_then_approve, "FAIL", "is the only agent on the trail"),
        (generic_issue_only, "FAIL", "which exempts unattended automation alone"),
        (generic_issue_by_automation, "PASS", "not gated"),
        (renovate_exempt, "PASS", "not gated"),
        (automation_family, "PASS", "not gated"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_the_job_gives_merge_checks_verdict(
    repo: Path,
    sandbox: RunningSandbox,
    world: World,
    build: Callable[[World], tuple[str, int]],
    status: str,
    says: str,
) -> None:
    mr = build(world)
    result = run(repo, sandbox, ci_variables(sandbox, mr, jobs=(MERGE_CHECK,)))
    assert result.job(MERGE_CHECK) == status, result.output
    assert result.code == (1 if status == "FAIL" else 0)
    printed = result.lines(MERGE_CHECK)
    assert says in printed, result.output
    assert printed.endswith(BACKGROUND) == (status == "FAIL")
    assert f"{MERGE_CHECK}: {mr[0]}!{mr[1]}" in printed  # the merge request its token proves
