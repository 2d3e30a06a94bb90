"""The one merge-request record: GitLab's merge request, parsed once at the boundary.

The gate, the verbs, the board and status read a merge request through this record, so they
cannot disagree on its head or its project.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["MergeRequestFacts"]


def _project_of(data: Mapping[str, Any], fallback: str) -> str:
    """The full path of the project the MR is in: ``references.full`` (``group/p!7``), else the
    path of its ``web_url`` (``https://host/group/p/-/merge_requests/7``), else ``fallback``
    (the path or id it was asked for by)."""
    full = str((data.get("references") or {}).get("full") or "")
    if "!" in full:
        return full.rpartition("!")[0]
    url = str(data.get("web_url") or "")
    if "/-/merge_requests/" in url and "://" in url:
        path = url.split("://", 1)[1].partition("/")[2]
        return path.rpartition("/-/merge_requests/")[0] or fallback
    return fallback


class MergeRequestFacts(NamedTuple):
    """What pairgate needs to know about one merge request, as GitLab reported it."""

    project: str  # the full path of the project the MR merges into
    iid: int
    title: str
    description: str
    author_id: int | None
    source_branch: str
    labels: tuple[str, ...]
    head_sha: str | None  # None while the MR has no commits
    state: str = ""  # opened, closed, locked, merged
    target_branch: str = ""
    base_sha: str | None = None  # diff_refs: the merge base the diff is taken from
    start_sha: str | None = None  # diff_refs: the target branch's head when the diff was made
    web_url: str = ""
    head_pipeline: Mapping[str, Any] | None = None
    author_username: str = ""

    @classmethod
    def from_api(cls, data: Mapping[str, Any], project: str = "") -> MergeRequestFacts:
        """``project`` is what the merge request was asked for by; GitLab's own answer wins.
        The head is ``sha``, else ``diff_refs.head_sha`` (GitLab fills both for an MR with
        commits; either alone still names the head)."""
        refs = data.get("diff_refs") or {}
        return cls(
            project=_project_of(data, project),
            iid=int(data["iid"]),
            title=data.get("title") or "",
            description=data.get("description") or "",
            author_id=(data.get("author") or {}).get("id"),
            source_branch=data.get("source_branch") or "",
            labels=tuple(data.get("labels") or ()),
            head_sha=data.get("sha") or refs.get("head_sha") or None,
            state=str(data.get("state") or ""),
            target_branch=str(data.get("target_branch") or ""),
            base_sha=refs.get("base_sha") or None,
            start_sha=refs.get("start_sha") or None,
            web_url=str(data.get("web_url") or ""),
            head_pipeline=data.get("head_pipeline") or None,
            author_username=str((data.get("author") or {}).get("username") or ""),
        )

    @property
    def ref(self) -> str:
        return f"{self.project}!{self.iid}"

    @property
    def text(self) -> str:
        """Title and description: where an MR cites its issues."""
        return f"{self.title}\n{self.description}"
