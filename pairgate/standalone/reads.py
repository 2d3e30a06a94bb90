"""The fold's reads: an issue's notes, its ledger, the board's freeze windows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pairgate.standalone.config import Config
from pairgate.standalone.fold import fold
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, Freeze, Ledger, Note
from pairgate.standalone.pool import pooled

__all__ = [
    "frozen_issues",
    "note_gid_number",
    "notes_path",
    "read_freezes",
    "read_last_edited",
    "read_ledger",
    "read_notes",
]


def notes_path(config: Config, issue: int) -> str:
    return f"projects/{encode_project(config.tracker_project)}/issues/{issue}/notes"


def read_notes(client: GitLab, config: Config, issue: int) -> list[Note]:
    """Every note on a tracker issue, oldest first (``sort=asc``: GitLab's default is newest
    first, and ``created_at`` order is id order)."""
    raw = client.get_all(notes_path(config, issue), sort="asc", order_by="created_at")
    return [Note.from_api(n) for n in raw]


def read_ledger(client: GitLab, config: Config, issue: int) -> Ledger:
    """The I/O edge of the fold: read the issue's notes, fold them."""
    return fold(read_notes(client, config, issue), config=config, issue=issue)


# REST notes carry no edit time (updated_at also moves on an emoji reaction), so whether a note
# was edited comes from GraphQL's Note.lastEditedAt. Newest first, a page at a time, until every
# note asked about is found: the approvals that matter are usually on the last page.
LAST_EDITED_QUERY = """
query($path: ID!, $iid: String!, $before: String) {
  project(fullPath: $path) {
    issue(iid: $iid) {
      notes(last: 100, before: $before) {
        nodes { id lastEditedAt }
        pageInfo { hasPreviousPage startCursor }
      }
    }
  }
}
"""


def note_gid_number(gid: object) -> int | None:
    """``gid://gitlab/Note/123`` (or DiscussionNote, ...) -> 123; None for anything else."""
    text = str(gid)
    kind, _, number = text.removeprefix("gid://gitlab/").partition("/")
    return (
        int(number)
        if text.startswith("gid://gitlab/") and kind.endswith("Note") and number.isdigit()
        else None
    )


def read_last_edited(
    client: GitLab, config: Config, wanted: Mapping[int, Iterable[int]], *, workers: int = 1
) -> dict[int, str | None]:
    """note id -> GitLab's lastEditedAt (None: never edited) for the notes ``wanted`` names per
    tracker issue. One GraphQL query per issue in the common case, up to ``workers`` issues at
    a time; a note GitLab does not list raises GitLabError (whether it was edited is unknown, so
    nothing may pass on it), the first issue's in ``wanted``'s order when several fail."""
    tracker = config.tracker_project
    asked = [(issue, set(ids)) for issue, ids in wanted.items()]
    each = pooled(lambda one: _issue_last_edited(client, tracker, *one), asked, workers=workers)
    return {note: edited for found in each for note, edited in found.items()}


def _issue_last_edited(
    client: GitLab, tracker: str, issue: int, missing: set[int]
) -> dict[int, str | None]:
    """read_last_edited for one issue: newest page first, as far back as the notes asked."""
    found: dict[int, str | None] = {}
    before: str | None = None
    while missing:
        variables = {"path": tracker, "iid": str(issue), "before": before}
        data = client.graphql(LAST_EDITED_QUERY, variables)
        notes = ((data.get("project") or {}).get("issue") or {}).get("notes")
        if not isinstance(notes, dict):
            raise GitLabError(
                f"pairgate: GitLab GraphQL does not show {tracker}#{issue} to this token, so "
                f"whether its approvals were edited is unknown"
            )
        for node in notes.get("nodes") or ():
            number = note_gid_number((node or {}).get("id"))
            if number in missing:
                found[number] = node.get("lastEditedAt")
                missing.discard(number)
        page = notes.get("pageInfo") or {}
        if not missing or not page.get("hasPreviousPage") or not page.get("startCursor"):
            break
        before = page["startCursor"]
    if missing:
        listed = ", ".join(str(n) for n in sorted(missing))
        raise GitLabError(
            f"pairgate: GitLab GraphQL does not list note {listed} of {tracker}#{issue}, "
            f"so whether it was edited is unknown"
        )
    return found


def frozen_issues(client: GitLab, config: Config) -> list[int]:
    """The tracker issues labelled as holding a freeze window (open or closed): one listing."""
    project = encode_project(config.tracker_project)
    listed = client.get_all(f"projects/{project}/issues", labels=FROZEN_LABEL, state="all")
    return sorted({int(i["iid"]) for i in listed})


def read_freezes(
    client: GitLab, config: Config, *, known: Mapping[int, Ledger] | None = None
) -> list[tuple[int, Freeze]]:
    """Every freeze window on the issues labelled FROZEN_LABEL and in ``known`` (ledgers already
    folded, not read again), as (issue, window). One issue listing, then one notes listing per
    labelled issue."""
    ledgers = dict(known or {})
    for issue in sorted(set(frozen_issues(client, config)) - set(ledgers)):
        ledgers[issue] = read_ledger(client, config, issue)
    return [(issue, w) for issue, ledger in sorted(ledgers.items()) for w in ledger.freezes]


# -- end of 5b -----------------------------------------------------------------------------------
