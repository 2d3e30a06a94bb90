"""One poll's reads of the tracker: the ledgers that changed, folded, and routed.

Every role-labelled issue on a sweep (and the watched ones no longer listed, to see why);
otherwise only the issues the tracker's listing names as changed since its mark that carry a
role label, are watched, or are cited by a watched merge request; and any cited issue never read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import ROLE_LABELS
from pairgate.tracker import IssueRead, fold_issues, issues_path, pooled, read_issue, read_labelled
from pairgate.watch.read import Marks, Reading, guarded, look_back, next_mark
from pairgate.watch.records import IssueSnap, OfferSnap, issue_subject
from pairgate.watch.routing import ledger_route


def issue_snap(read: IssueRead, tracker: str) -> IssueSnap:
    assert read.ledger is not None
    offer = read.ledger.offer
    created = None
    if offer is not None:
        created = next(
            (e.created_at for e in read.ledger.trail if e.note_id == offer.note_id), None
        )
    return IssueSnap(
        iid=read.iid,
        title=read.title,
        state=read.state,
        updated_at=read.updated_at,
        labels=read.labels,
        route=ledger_route(tracker, read.iid, read.ledger),
        offer=None
        if offer is None
        else OfferSnap(
            offer.note_id,
            offer.sender,
            offer.to,
            offer.role,
            offer.sha,
            str(offer.mr) if offer.mr else None,
            offer.event,
            offer.reason,
            created,
        ),
        sessions=read.ledger.sessions,
    )


def read_issues(
    client: GitLab,
    config: Config,
    *,
    marks: Marks,
    known: Mapping[str, tuple[str | None, int | None, str | None]],
    cited: set[int],
    sweep: bool,
    reading: Reading,
) -> str | None:
    """The ledgers that changed: every role-labelled issue on a sweep, else the issues changed
    since the mark that carry a role label, are watched, or are cited by a watched MR; and any
    cited issue never read. Returns the issue mark to keep."""
    tracker = config.tracker_project
    known_iids = {int(s.rsplit("#", 1)[1]) for s in known if s.startswith("issue:")}
    known_open = {
        int(s.rsplit("#", 1)[1])
        for s, k in known.items()
        if s.startswith("issue:") and k[2] == "opened"
    }
    try:
        if sweep or marks.issues is None:
            reads = read_labelled(client, config, closed=False, labels=ROLE_LABELS)
            listed_iids = {r.iid for r in reads}
            # An issue no longer listed (released, closed) is read once more to see why.
            stale = sorted((known_open | cited) - listed_iids)
            reads += fold_issues(client, config, _issues(client, config, stale, reading))
            stamps = [r.updated_at for r in reads]
        else:
            listed = client.get_all(
                issues_path(config), state="all", updated_after=look_back(marks.issues)
            )
            stamps = [str(i.get("updated_at") or "") for i in listed]
            changed = []
            for issue in listed:
                iid, subject = int(issue["iid"]), issue_subject(tracker, int(issue["iid"]))
                interesting = (
                    iid in known_iids
                    or iid in cited
                    or set(issue.get("labels") or ()) & set(ROLE_LABELS)
                )
                if interesting and (known.get(subject) or (None,))[0] != issue.get("updated_at"):
                    changed.append(issue)
            unread = sorted(cited - known_iids - {int(i["iid"]) for i in changed})
            reads = fold_issues(
                client, config, [*changed, *_issues(client, config, unread, reading)]
            )
    except PairgateError as exc:
        reading.errors.append(exc.message)
        return marks.issues
    held = []
    for read in reads:
        if read.ledger is None:
            reading.errors.append(f"{tracker}#{read.iid}: {read.error}")
            held.append(read.updated_at)
        else:
            reading.issues[issue_subject(tracker, read.iid)] = issue_snap(read, tracker)
    return next_mark(marks.issues, stamps, [h for h in held if h])


def read_some(client: GitLab, config: Config, iids: Sequence[int], reading: Reading) -> None:
    """These tracker issues' ledgers, read and folded into ``reading`` (a webhook's, or a
    re-read after another watcher committed first)."""
    tracker = config.tracker_project
    for read in fold_issues(client, config, _issues(client, config, sorted(iids), reading)):
        if read.ledger is None:
            reading.errors.append(f"{tracker}#{read.iid}: {read.error}")
        else:
            reading.issues[issue_subject(tracker, read.iid)] = issue_snap(read, tracker)


def _issues(
    client: GitLab, config: Config, iids: Sequence[int], reading: Reading
) -> list[dict[str, Any]]:
    found = []
    for issue, error in pooled(lambda i: guarded(read_issue, client, config, i), list(iids)):
        if issue is None:
            reading.errors.append(str(error))
        else:
            found.append(issue)
    return found
