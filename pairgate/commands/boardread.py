"""Reading the whole board in one pass: the issue listings by label, then every issue's notes
through a bounded thread pool, each folded. The I/O edge of board, waiting, sync and identity.

Cost: one listing per label (a page per 100 issues), one notes listing per issue (a page per 100
notes), and one read per distinct merge request an approval names. Nothing is read twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from pairgate.merge_requests import head_of, mr_path
from pairgate.ownership import (
    FROZEN_LABEL,
    ROLE_LABELS,
    Config,
    GitLab,
    Ledger,
    MrRef,
    PairgateError,
    encode_project,
    read_ledger,
)
from pairgate.turn import read_issue

# requests keeps ten connections per host; more workers than that would open and drop
# connections instead of reusing them.
WORKERS = 10
BOARD_LABELS = (*ROLE_LABELS, FROZEN_LABEL)

T = TypeVar("T")
R = TypeVar("R")


def pooled(func: Callable[[T], R], items: Iterable[T], *, workers: int = WORKERS) -> list[R]:
    """``func`` over ``items`` through a bounded pool, results in the items' order."""
    items = list(items)
    if len(items) <= 1:
        return [func(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(func, items))


@dataclass(frozen=True)
class IssueRead:
    """One tracker issue as the board read it: GitLab's fields and its folded ledger, or why it
    could not be read."""

    iid: int
    title: str
    state: str
    labels: tuple[str, ...]
    web_url: str
    updated_at: str
    ledger: Ledger | None
    error: str | None = None

    @classmethod
    def of(cls, issue: dict[str, Any], ledger: Ledger | None, error: str | None) -> IssueRead:
        return cls(
            iid=int(issue["iid"]),
            title=str(issue.get("title") or ""),
            state=str(issue.get("state") or ""),
            labels=tuple(issue.get("labels") or ()),
            web_url=str(issue.get("web_url") or ""),
            updated_at=str(issue.get("updated_at") or ""),
            ledger=ledger,
            error=error,
        )


def issues_path(config: Config) -> str:
    return f"projects/{encode_project(config['tracker_project'])}/issues"


def list_labelled(
    client: GitLab, config: Config, *, closed: bool, labels: Sequence[str] = BOARD_LABELS
) -> list[dict[str, Any]]:
    """Every issue carrying one of ``labels`` (GitLab ANDs a label list, so one listing per
    label), open ones only unless ``closed``; once each, by iid."""
    state = "all" if closed else "opened"
    listings = pooled(
        lambda label: client.get_all(issues_path(config), labels=label, state=state), labels
    )
    found = {int(issue["iid"]): issue for listing in listings for issue in listing}
    return [found[iid] for iid in sorted(found)]


def read_issues(client: GitLab, config: Config, iids: Sequence[int]) -> list[dict[str, Any]]:
    """The named issues, whatever their labels and state, concurrently."""
    return pooled(lambda iid: read_issue(client, config, iid), sorted(set(iids)))


def fold_issues(
    client: GitLab, config: Config, issues: Sequence[dict[str, Any]]
) -> list[IssueRead]:
    """Each issue's notes read and folded, concurrently. An issue that cannot be read is kept,
    with the reason, so the board says what it could not see instead of leaving it out."""

    def one(issue: dict[str, Any]) -> IssueRead:
        try:
            return IssueRead.of(issue, read_ledger(client, config, int(issue["iid"])), None)
        except PairgateError as exc:
            return IssueRead.of(issue, None, exc.message)

    return pooled(one, issues)


@dataclass(frozen=True)
class MrState:
    """A merge request's head and state as GitLab answers now; ``error`` when it could not."""

    head: str | None
    state: str | None
    error: str | None = None


def read_mr_states(client: GitLab, refs: Iterable[MrRef]) -> dict[MrRef, MrState]:
    """The current head and state of each distinct merge request, concurrently."""

    def one(ref: MrRef) -> MrState:
        try:
            mr = client.get(mr_path(ref.project, ref.iid))
        except PairgateError as exc:
            return MrState(None, None, exc.message)
        return MrState(head_of(mr), mr.get("state"))

    unique = sorted(set(refs), key=lambda r: (r.project, r.iid))
    return dict(zip(unique, pooled(one, unique), strict=True))


def latest_approval_refs(reads: Iterable[IssueRead]) -> set[MrRef]:
    return {r.ledger.approvals[-1].mr for r in reads if r.ledger and r.ledger.approvals}
