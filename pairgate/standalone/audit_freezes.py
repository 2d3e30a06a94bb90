"""Freezes the audit finds through label history, so erasing a freeze cannot clear a merge.

merge-check finds freeze windows through the issues labelled FROZEN_LABEL now (reads.py).
That is enough before a merge; after one, either trace can be erased. Remove the label and the
issue's windows are no longer looked at; delete the freeze note and the window is gone. So the
audit reads each candidate issue's label history (resource label events) and works out when
the label was held:

- an issue whose label was held at a merge is read for windows like a labelled one, so a merge
  made while its ``mr:`` (or issue, or board) window held stays a finding after the label is
  removed (judge_merged folds the notes written at or before the merge);
- a span the label was held whose freeze note is gone (no freeze note on the issue written
  since the previous span ended and before this one did; freeze adds the label, then writes
  the note) makes every gated merge inside it undecided, never clean: what it froze cannot be
  told.

Candidates: the issues labelled now and the tracker's issues updated in the window (a label
removed after a merge updates the issue after it). A label taken off before the window began
is not seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, Freeze, stamp_epoch

__all__ = [
    "LabelSpan",
    "SpansRead",
    "frozen_spans",
    "held_at",
    "label_candidates",
    "read_label_spans",
    "unexplained",
]


class LabelSpan(NamedTuple):
    """One stretch of time the issue carried FROZEN_LABEL; None at an end: unbounded."""

    start: float | None  # None: held from before its label history begins
    end: float | None  # None: held still
    previous_end: float | None  # when the span before it ended (None: there was none)

    def holds(self, moment: float) -> bool:
        return (self.start is None or self.start <= moment) and (
            self.end is None or moment < self.end
        )


SpansRead = tuple[LabelSpan, ...] | PairgateError


def frozen_spans(events: Sequence[Mapping[str, Any]], labelled_now: bool) -> tuple[LabelSpan, ...]:
    """The spans FROZEN_LABEL was held, from the issue's label events (oldest first) and
    whether it carries the label now. Pure."""
    spans: list[LabelSpan] = []
    start: float | None = None
    held = False
    previous: float | None = None
    for event in sorted(events, key=lambda e: int(e.get("id") or 0)):
        if (event.get("label") or {}).get("name") != FROZEN_LABEL:
            continue
        when = stamp_epoch(str(event.get("created_at") or ""))
        if event.get("action") == "add" and not held:
            held, start = True, when
        elif event.get("action") == "remove":
            # A removal with no add before it: held from before the history began.
            spans.append(LabelSpan(start if held else None, when, previous))
            held, start, previous = False, None, when
    if held:
        spans.append(LabelSpan(start, None, previous))
    elif labelled_now:
        # Labelled now with no add in its history since the last removal (or at all): held
        # since then (or always).
        spans.append(LabelSpan(previous, None, previous))
    return tuple(spans)


def held_at(spans: Sequence[LabelSpan], moment: float) -> LabelSpan | None:
    return next((s for s in spans if s.holds(moment)), None)


def unexplained(span: LabelSpan, freezes: Sequence[Freeze]) -> bool:
    """No freeze note left for the span: none written after the span before it ended and
    before this one did. Pure."""
    for window in freezes:
        written = stamp_epoch(window.created_at)
        if written is None:
            return False  # a note whose time cannot be read may be this span's: not erased
        after = span.previous_end is None or written >= span.previous_end
        before = span.end is None or written < span.end
        if after and before:
            return False
    return True


def label_candidates(client: GitLab, config: Config, *, since: str) -> tuple[set[int], list[int]]:
    """The issues labelled FROZEN_LABEL now, and every candidate whose label history to read
    (those and the tracker's issues updated since ``since``): two listings."""
    issues = f"projects/{encode_project(config.tracker_project)}/issues"
    labelled = {
        int(i["iid"])
        for i in client.get_all(issues, labels=FROZEN_LABEL, state="all", per_page=100)
    }
    updated = {
        int(i["iid"])
        for i in client.get_all(issues, updated_after=since, state="all", per_page=100)
    }
    return labelled, sorted(labelled | updated)


def read_label_spans(client: GitLab, config: Config, issue: int, labelled: bool) -> SpansRead:
    """The spans ``issue`` held FROZEN_LABEL, from its label history (one listing), or the
    error reading it."""
    path = f"projects/{encode_project(config.tracker_project)}/issues/{issue}"
    try:
        events = client.get_all(f"{path}/resource_label_events", per_page=100)
    except PairgateError as exc:
        return exc
    return frozen_spans(events, labelled)
