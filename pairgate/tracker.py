"""The tracker's reads: one issue or merge request a user named, and the whole board in one
pass: the issue listings by label and every issue's notes through a bounded thread pool, each
folded (an issue's notes are read as soon as a listing page names it). The I/O edge of the
verbs, board, waiting, sync, thaw and identity.

Cost: one listing per label (a page per 100 issues), one notes listing per issue (a page per 100
notes), and one read per distinct merge request an approval names. Nothing is read twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from pairgate.standalone import pool as reads_pool
from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError, UsageError
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, ROLE_LABELS, Ledger, MrRef
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_ledger

if TYPE_CHECKING:
    from concurrent.futures import Future

# Sized by benchmarks/board.py (500 issues of 20 notes, 20 ms a request; medians of three):
# 8 readers 2.00 s, 10 1.57 s, 12 1.58 s, 16 1.39 s, 20 1.34 s, 32 1.28 s. Past 16 the server's
# own work bounds the wall time, and more readers only press harder on GitLab. The client keeps
# a connection per reader and per label listing (gitlab.POOL_SIZE).
WORKERS = 16
BOARD_LABELS = (*ROLE_LABELS, FROZEN_LABEL)
# close and sync take the role label off; this one goes on instead, so `board --closed` can
# still find what the ledger closed. An index only, like the others: the notes decide.
CLOSED_LABEL = "pairgate::closed"

T = TypeVar("T")
R = TypeVar("R")


def pooled(func: Callable[[T], R], items: Iterable[T], *, workers: int = WORKERS) -> list[R]:
    """``func`` over ``items`` through a pool of the board's size, results in the items' order."""
    return reads_pool.pooled(func, items, workers=workers)


class IssueRead(NamedTuple):
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


def review_bot_token(config: Config, env: Mapping[str, str]) -> tuple[str, str]:
    """The review bot's token (empty when there is none) and where it was looked for:
    <env_prefix>_REVIEW_BOT_TOKEN, else review_bot_token_file (a relative path is read beside
    the configuration file). approve writes with it; doctor asks GitLab whose it is."""
    variable = config.env_name("REVIEW_BOT_TOKEN")
    token = str(env.get(variable, "")).strip()
    if token:
        return token, variable
    path = Path(config.review_bot_token_file).expanduser()
    path = path if path.is_absolute() else config.path.parent / path
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError:
        token = ""
    return token, f"{path} (review_bot_token_file)"


def issue_path(config: Config, issue: int) -> str:
    return f"projects/{encode_project(config.tracker_project)}/issues/{issue}"


def read_found(client: GitLab, path: str, what: str, *, cli: str) -> dict[str, Any]:
    """One GET of something the user named: a 404 is a usage error naming it."""
    try:
        return dict(client.get(path))
    except GitLabError as exc:
        if exc.status == 404:
            raise UsageError(
                f"{cli}: {what} does not exist (or the read token cannot see it)"
            ) from None
        raise


def read_issue(client: GitLab, config: Config, issue: int) -> dict[str, Any]:
    what = f"{config.tracker_project}#{issue}"
    return read_found(client, issue_path(config, issue), what, cli=config.cli)


def mr_path(project: str, iid: int) -> str:
    return f"projects/{encode_project(project)}/merge_requests/{iid}"


def read_mr(
    client: GitLab, project: str, iid: int, *, cli: str, defaulted: bool = False
) -> MergeRequestFacts:
    """One merge request the user named, as the one record the gate reads too. ``defaulted``:
    the project was not given but defaulted to the tracker, which a 404 then says."""
    what = f"{project}!{iid}"
    try:
        found = read_found(client, mr_path(project, iid), what, cli=cli)
        return MergeRequestFacts.from_api(found, project)
    except UsageError as exc:
        if not defaulted:
            raise
        raise UsageError(
            f"{exc.message}. --mr-project was not given, so the project defaulted to the "
            f"tracker, {project}: name the merge request's project with --mr-project"
        ) from None


def issues_path(config: Config) -> str:
    return f"projects/{encode_project(config.tracker_project)}/issues"


def read_labelled(
    client: GitLab, config: Config, *, closed: bool, labels: Sequence[str] = BOARD_LABELS
) -> list[IssueRead]:
    """Every issue carrying one of ``labels`` (GitLab ANDs a label list, so one listing per
    label), open ones only unless ``closed``, once each, in iid order, with its notes read and
    folded. An issue's notes are read as soon as a listing page names it, not after the last
    page of every listing (five pages of 100 issues are five round trips in a row)."""
    # Imported here: the verbs and status read through this module, and only the board's
    # reads need a pool (concurrent.futures brings logging and traceback: 5 ms a start).
    import threading
    from concurrent.futures import ThreadPoolExecutor

    state = "all" if closed else "opened"
    listings: list[dict[int, dict[str, Any]]] = [{} for _ in labels]
    ledgers: dict[int, Future[tuple[Ledger | None, str | None]]] = {}
    lock = threading.Lock()

    # The listings page on threads of their own, so every reader is left for the notes (a
    # label's pages come one after another, each naming the next).
    with (
        ThreadPoolExecutor(max_workers=WORKERS) as pool,
        ThreadPoolExecutor(max_workers=len(labels)) as listers,
    ):

        def list_label(n: int) -> None:
            for page in client.pages(issues_path(config), labels=labels[n], state=state):
                for issue in page:
                    iid = int(issue["iid"])
                    listings[n][iid] = issue
                    with lock:
                        if iid not in ledgers:
                            ledgers[iid] = pool.submit(_ledger_or_error, client, config, iid)

        try:
            for listing in [listers.submit(list_label, n) for n in range(len(labels))]:
                listing.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
        # An issue listed under two labels: the later label's copy, as read.
        found = {iid: issue for listing in listings for iid, issue in listing.items()}
        return [IssueRead.of(found[iid], *ledgers[iid].result()) for iid in sorted(found)]


def read_issues(client: GitLab, config: Config, iids: Sequence[int]) -> list[dict[str, Any]]:
    """The named issues, whatever their labels and state, concurrently."""
    return pooled(lambda iid: read_issue(client, config, iid), sorted(set(iids)))


def fold_issues(
    client: GitLab, config: Config, issues: Sequence[dict[str, Any]]
) -> list[IssueRead]:
    """Each issue's notes read and folded, concurrently. An issue that cannot be read is kept,
    with the reason, so the board says what it could not see instead of leaving it out."""

    def one(issue: dict[str, Any]) -> IssueRead:
        return IssueRead.of(issue, *_ledger_or_error(client, config, int(issue["iid"])))

    return pooled(one, issues)


def _ledger_or_error(client: GitLab, config: Config, iid: int) -> tuple[Ledger | None, str | None]:
    try:
        return read_ledger(client, config, iid), None
    except PairgateError as exc:
        return None, exc.message


class MrState(NamedTuple):
    """A merge request's head and state as GitLab answers now; ``error`` when it could not."""

    head: str | None
    state: str | None
    error: str | None = None
    facts: MergeRequestFacts | None = None  # the whole record, when it could be read


def read_mr_states(client: GitLab, refs: Iterable[MrRef]) -> dict[MrRef, MrState]:
    """The current head and state of each distinct merge request, concurrently."""

    def one(ref: MrRef) -> MrState:
        try:
            mr = MergeRequestFacts.from_api(client.get(mr_path(ref.project, ref.iid)), ref.project)
        except PairgateError as exc:
            return MrState(None, None, exc.message)
        return MrState(mr.head_sha, mr.state, facts=mr)

    unique = sorted(set(refs), key=lambda r: (r.project, r.iid))
    return dict(zip(unique, pooled(one, unique), strict=True))


def latest_approval_refs(reads: Iterable[IssueRead]) -> set[MrRef]:
    return {r.ledger.approvals[-1].mr for r in reads if r.ledger and r.ledger.approvals}
