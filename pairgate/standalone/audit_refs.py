"""What the audit needs of each merge request beyond its listing: ``diff_refs`` (the merge base
an approval binds) and the target branch. GitLab's REST listing leaves diff_refs out, so they
are read through GraphQL, a hundred merge requests of one project per query, and through the
single-MR REST read only for one GraphQL does not give (a GitLab without the field, a project
named by id, an answer missing the merge request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.pool import pooled

__all__ = ["DiffRefs", "read_diff_refs"]

# GitLab's max_page_size: one query per hundred merge requests.
REFS_CHUNK = 100

DIFF_REFS_QUERY = """
query($path: ID!, $iids: [String!], $after: String) {
  project(fullPath: $path) {
    mergeRequests(iids: $iids, first: 100, after: $after) {
      nodes { iid targetBranch diffRefs { baseSha startSha } }
      pageInfo { hasNextPage endCursor }
    }
  }
}
"""


class DiffRefs(NamedTuple):
    """What a merged merge request was reviewed against: its target branch and its diff_refs'
    merge base and start."""

    target_branch: str | None
    base_sha: str | None
    start_sha: str | None


Key = tuple[str, int]  # (project path as listed, iid)


def read_diff_refs(
    client: GitLab, wanted: Iterable[Key], *, workers: int = 1
) -> dict[Key, DiffRefs]:
    """(project, iid) -> its diff_refs and target branch, for every merge request ``wanted``
    names. A GitLabError from a REST read propagates, as the single read always did."""
    by_project: dict[str, list[int]] = {}
    for project, iid in dict.fromkeys(wanted):
        by_project.setdefault(project, []).append(iid)
    chunks = [
        (project, iids[i : i + REFS_CHUNK])
        for project, iids in by_project.items()
        for i in range(0, len(iids), REFS_CHUNK)
    ]
    found: dict[Key, DiffRefs] = {}
    for part in pooled(lambda chunk: _graphql_chunk(client, *chunk), chunks, workers=workers):
        found.update(part)
    missing = [(p, i) for p, iids in by_project.items() for i in iids if (p, i) not in found]
    for key, refs in zip(
        missing, pooled(lambda key: _rest_one(client, *key), missing, workers=workers), strict=True
    ):
        found[key] = refs
    return found


def _graphql_chunk(client: GitLab, project: str, iids: list[int]) -> Mapping[Key, DiffRefs]:
    """One project's merge requests by iid; what GraphQL cannot give is left out (and read
    over REST by the caller)."""
    if project.isdigit():
        return {}  # GraphQL names a project by its full path only
    found: dict[Key, DiffRefs] = {}
    after: str | None = None
    while True:
        variables = {"path": project, "iids": [str(i) for i in iids], "after": after}
        try:
            data = client.graphql(DIFF_REFS_QUERY, variables)
        except GitLabError:
            return found  # a GitLab that cannot run the query: the REST reads still can
        listing = (data.get("project") or {}).get("mergeRequests")
        if not isinstance(listing, dict):
            return found
        for node in listing.get("nodes") or ():
            iid = str((node or {}).get("iid") or "")
            refs = node.get("diffRefs") if iid.isdigit() else None
            if isinstance(refs, dict) and int(iid) in iids:
                found[(project, int(iid))] = DiffRefs(
                    node.get("targetBranch") or None,
                    refs.get("baseSha") or None,
                    refs.get("startSha") or None,
                )
        page = listing.get("pageInfo") or {}
        if not page.get("hasNextPage") or not page.get("endCursor"):
            return found
        after = page["endCursor"]


def _rest_one(client: GitLab, project: str, iid: int) -> DiffRefs:
    data = client.get(f"projects/{encode_project(project)}/merge_requests/{iid}")
    refs = data.get("diff_refs") or {}
    return DiffRefs(
        data.get("target_branch") or None,
        refs.get("base_sha") or None,
        refs.get("start_sha") or None,
    )
