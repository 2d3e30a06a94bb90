"""The names every test shares: where the suite's files are, the agents and projects of the suite
configuration and the sandbox's default world, the commits and the merge request a pure test's
records name, and the sandbox paths of a project, a merge request and an issue's notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from pairgate.standalone.merge_request import MergeRequestFacts

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
FIXTURE_CONFIG = FIXTURES / "pairgate-config.json"
# The same deployment with account-bound roles: review_author_user_ids names the review bot.
ACCOUNT_BOUND_CONFIG = FIXTURES / "pairgate-config-account-bound.json"

# The agents of the suite configuration (agent_identity_prefix acme).
LEAD, REVIEW, SOLO = "acme-lead", "acme-review", "acme-solo"
# The sandbox's projects: the work's, and the tracker that holds the ledger.
APP, TRACKER = "acme/app", "acme/tracker"
# The sandbox's accounts by user id: the ledger author (agents), the review bot (the review
# account of the account-bound configuration), the maintainer, the reporter.
AGENTS_USER, REVIEW_BOT_USER, MAINTAINER, REPORTER = 10, 11, 13, 14

# What a pure test's records name, unless it says otherwise.
SHA, SHA2 = "a" * 40, "b" * 40  # a head, and the next one
BASE = "c" * 40  # the merge base (diff_refs.base_sha and start_sha) an approval records
ISSUE = 4  # the tracker issue
MR = (APP, 7)  # the merge request, as (project, iid)
STAMP = "2026-01-01T00:00:00.000Z"  # every note's created_at and updated_at


def mr_facts(**changes: Any) -> MergeRequestFacts:
    """The merge request ``MR`` as the gate reads it: at ``SHA``, on ``BASE``, citing ``ISSUE``;
    ``changes`` replace fields."""
    facts: dict[str, Any] = {
        "project": MR[0],
        "iid": MR[1],
        "title": "t",
        "description": f"Related to {TRACKER}#{ISSUE}",
        "author_id": AGENTS_USER,
        "source_branch": "fix",
        "labels": (),
        "head_sha": SHA,
        "target_branch": "main",
        "base_sha": BASE,
        "start_sha": BASE,
    }
    return MergeRequestFacts(**(facts | changes))


def project_path(project: str = APP) -> str:
    """A project's API path: ``/projects/acme%2Fapp``."""
    return f"/projects/{quote(project, safe='')}"


def mr_path(project: str, iid: int) -> str:
    """A merge request's API path: ``/projects/acme%2Fapp/merge_requests/7``."""
    return f"{project_path(project)}/merge_requests/{iid}"


def notes_path(issue: int, project: str = TRACKER) -> str:
    """An issue's notes: ``/projects/acme%2Ftracker/issues/4/notes``."""
    return f"{project_path(project)}/issues/{issue}/notes"
