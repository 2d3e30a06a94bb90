"""The audit: every merge request merged in a window, judged as merge-check would have judged it
at the moment of the merge.

"Prevented where we control the door, detected everywhere else": the hook and the CI jobs stop
the merges they see, and this finds the ones that went around them (curl, the web page, an MCP
tool, a push option, a setting someone changed). It calls the gate's own ``judge``; nothing
here decides whether an approval counts.

What "at the moment of the merge" means: the MR as GitLab keeps it after the merge (``sha``
stays the head it merged at), its ``merged_at`` as the clock freeze windows end by, and the
ledgers of its cited issues folded from the notes written at or before ``merged_at`` (a note
written later, an approval included, never counts). Each issue's notes are read once for the
whole audit, however many merge requests cite it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, NamedTuple

from pairgate.standalone.audit_freezes import (
    SpansRead,
    held_at,
    label_candidates,
    read_label_spans,
    unexplained,
)
from pairgate.standalone.audit_pushes import (
    BranchRead,
    BroughtBy,
    PushFinding,
    default_branches,
    pushed_without_mr,
    read_branch,
    with_pushes,
)
from pairgate.standalone.audit_refs import DiffRefs, read_diff_refs
from pairgate.standalone.config import Config
from pairgate.standalone.errors import PairgateError
from pairgate.standalone.fold import fold
from pairgate.standalone.gate import gate_scope, group_project_paths, judge_merge, ledger_issues
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.ledger import FROZEN_LABEL, Ledger, Note, stamp_epoch
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.pool import pooled
from pairgate.standalone.reads import read_last_edited, read_notes
from pairgate.standalone.scope import (
    RENOVATE_LABEL,
    AutomationFamily,
    renovate_exemption_gaps,
    under,
)
from pairgate.standalone.verdict import GateVerdict

__all__ = [
    "AuditReport",
    "LedgersAt",
    "MergeJudged",
    "MergedMr",
    "audit",
    "audit_stamp",
    "judge_merged",
    "merged_listing_params",
]

# Readers at a time, as many as the board's (pairgate/tracker.py, where the count is sized): the
# client keeps a connection for each (gitlab.POOL_SIZE), for REST and GraphQL alike.
AUDIT_WORKERS = 16


def audit_stamp(seconds: float) -> str:
    """Epoch seconds as the ISO 8601 UTC form GitLab's time filters take and --json prints."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class MergedMr(NamedTuple):
    """One merged merge request, as GitLab's listing shows it after the merge."""

    facts: MergeRequestFacts  # facts.head_sha is ``sha``: the head it merged at
    merged_at: str | None
    merged_by: str | None  # ``merged_by`` (deprecated by GitLab, still filled on a merge)
    merge_user: str | None  # who merged, or who set auto-merge
    merge_commit_sha: str | None
    source_project_id: int | None
    target_project_id: int | None
    squash_commit_sha: str | None = None

    @classmethod
    def from_api(cls, data: Mapping[str, Any], project: str = "") -> MergedMr:
        def username(key: str) -> str | None:
            user = data.get(key) or {}
            return str(user["username"]) if user.get("username") else None

        def number(key: str) -> int | None:
            value = data.get(key)
            return int(value) if isinstance(value, int) else None

        return cls(
            facts=MergeRequestFacts.from_api(data, project),
            merged_at=str(data["merged_at"]) if data.get("merged_at") else None,
            merged_by=username("merged_by"),
            merge_user=username("merge_user"),
            merge_commit_sha=str(data["merge_commit_sha"])
            if data.get("merge_commit_sha")
            else None,
            source_project_id=number("source_project_id"),
            target_project_id=number("target_project_id"),
            squash_commit_sha=str(data["squash_commit_sha"])
            if data.get("squash_commit_sha")
            else None,
        )

    @property
    def moment(self) -> float | None:
        """When it merged, in epoch seconds; None when GitLab gives no readable time."""
        return stamp_epoch(self.merged_at) if self.merged_at else None

    @property
    def fork(self) -> bool:
        """Merged from another project (a fork): its pipeline ran the fork's CI configuration."""
        return None not in (self.source_project_id, self.target_project_id) and (
            self.source_project_id != self.target_project_id
        )

    @property
    def merger(self) -> str | None:
        return self.merged_by or self.merge_user


# -- reading ------------------------------------------------------------------------------------


def merged_listing_params(since: float) -> dict[str, str]:
    """The listing's filters. ``updated_after`` is in every GitLab's documentation, and merging
    updates an MR, so ``updated_at >= merged_at``: it never drops an MR merged after ``since``.
    ``merged_after`` narrows it further where GitLab serves it (the newest REST code; the
    release that added it is not documented) and older servers ignore it, which is safe because
    ``merged_at`` is filtered here anyway."""
    stamp = audit_stamp(since)
    return {"state": "merged", "updated_after": stamp, "merged_after": stamp}


def read_merged(
    client: GitLab, config: Config, *, since: float, projects: Sequence[str] | None = None
) -> list[MergedMr]:
    """Every merge request merged at or after ``since`` in the gated projects (or only in
    ``projects``), oldest merge first. The group's listing covers its projects and subgroups;
    a project shared into the group is listed on its own (GitLab's group listing leaves it
    out)."""
    params = merged_listing_params(since)
    listings: list[tuple[str, str]] = []  # (path to list, the project it names, if one)
    if projects:
        listings = [(f"projects/{encode_project(p)}/merge_requests", p) for p in projects]
    else:
        listings = [(f"groups/{config.group_id}/merge_requests", "")]
        shared = [p for p in group_project_paths(client, config) if not under(p, config.group_path)]
        listings += [(f"projects/{encode_project(p)}/merge_requests", p) for p in shared]
    found: dict[tuple[str, int], MergedMr] = {}
    for path, project in listings:
        extra = {} if project else {"non_archived": "false"}  # archived projects merged too
        for item in client.get_all(path, **params, **extra):
            merged = MergedMr.from_api(item, project)
            moment = merged.moment
            if moment is None or moment >= since:
                found[(merged.facts.project.casefold(), merged.facts.iid)] = merged
    return sorted(found.values(), key=lambda m: (m.moment or 0.0, m.facts.ref))


NotesRead = list[Note] | PairgateError


def read_all_notes(client: GitLab, config: Config, issues: Iterable[int]) -> dict[int, NotesRead]:
    """Each issue's notes, read once, concurrently; an issue that could not be read keeps the
    error (it is never a pass: every merge request that needs it is undecided)."""

    def one(issue: int) -> NotesRead:
        try:
            return read_notes(client, config, issue)
        except PairgateError as exc:
            return exc

    wanted = sorted(set(issues))
    return dict(zip(wanted, pooled(one, wanted, workers=AUDIT_WORKERS), strict=True))


# -- judging (pure) -----------------------------------------------------------------------------


class LedgersAt:
    """The ledger of an issue as it stood at a moment: the fold of the notes written at or
    before it. Pure; folds are remembered, since several merges often see the same notes."""

    def __init__(self, notes: Mapping[int, Sequence[Note]], config: Config) -> None:
        self._notes = notes
        self._config = config
        self._epochs = {
            issue: [stamp_epoch(n.created_at) for n in listed] for issue, listed in notes.items()
        }
        self._folds: dict[tuple[int, tuple[int, ...]], Ledger] = {}

    def known(self, issue: int) -> bool:
        return issue in self._notes

    def at(self, issue: int, moment: float) -> Ledger:
        # A note whose time does not parse is left out: it can only take an approval away.
        kept = tuple(
            i for i, when in enumerate(self._epochs[issue]) if when is not None and when <= moment
        )
        key = (issue, kept)
        if key not in self._folds:
            listed = self._notes[issue]
            self._folds[key] = fold([listed[i] for i in kept], config=self._config, issue=issue)
        return self._folds[key]


class MergeJudged(NamedTuple):
    """One merged merge request and what the audit says about it."""

    mr: MergedMr
    code: str  # "approved", a scope code, or why it is a finding
    finding: bool
    decided: bool  # False: it could not be judged (never a pass)
    why: str
    scope: str
    scope_detail: str
    cited: tuple[int, ...] = ()
    verdict: GateVerdict | None = None


def judge_merged(
    mr: MergedMr,
    *,
    config: Config,
    families: Sequence[AutomationFamily],
    notes: Mapping[int, NotesRead],
    frozen: Sequence[int],
    ledgers_at: LedgersAt,
    edits: Mapping[int, str | None],
    spans: Mapping[int, SpansRead] | None = None,
) -> MergeJudged:
    """merge-check's verdict on ``mr`` at the moment it merged. ``notes`` holds every issue it
    cites and every issue in ``frozen`` (those that carried the freeze label, now or in their
    label history); ``edits``
    GitLab's lastEditedAt of every approval note on them (an approval edited at any time, after
    the merge too, is one whose reviewed text cannot be known: it does not count); ``spans``
    when each candidate issue held the freeze label (audit_freezes.py): a span holding at the
    merge whose freeze note is gone makes an otherwise clean merge undecided. Pure."""
    tracker = config.tracker_project
    cited, scope = gate_scope(mr.facts, in_group=True, config=config, families=families)

    def judged(code: str, why: str, *, finding: bool = True, decided: bool = True) -> MergeJudged:
        return MergeJudged(mr, code, finding, decided, why, scope.code, scope.detail, cited)

    if not scope.in_scope:
        return judged(scope.code, scope.detail, finding=False)
    moment = mr.moment
    if moment is None:
        return judged(
            "merged-at-unknown",
            f"GitLab gives no readable merged_at ({mr.merged_at!r}), so what its ledgers held "
            f"at the merge cannot be told",
            decided=False,
        )
    issues = ledger_issues(cited, config)
    for issue in sorted(set(issues) | set(frozen)):
        read = notes[issue]
        if isinstance(read, PairgateError):
            return judged(
                "ledger-unreadable",
                f"the ledger of {tracker}#{issue} could not be read ({read.message}); an "
                f"unreadable ledger is never a pass",
                decided=False,
            )
    ledgers = {issue: ledgers_at.at(issue, moment) for issue in issues}
    windows = [
        (issue, window)
        for issue in sorted(set(issues) | set(frozen))
        for window in ledgers_at.at(issue, moment).freezes
    ]
    verdict = judge_merge(
        mr.facts,
        cited=cited,
        scope=scope,
        ledgers=ledgers,
        windows=windows,
        edits=edits,
        config=config,
        now=moment,
    )
    if verdict.allowed:
        erased = erased_freeze(spans or {}, moment, ledgers_at, tracker)
        if erased is not None:
            code, why = erased
            return MergeJudged(mr, code, True, False, why, scope.code, scope.detail, cited, verdict)
        return MergeJudged(
            mr, "approved", False, True, verdict.message, scope.code, scope.detail, cited, verdict
        )
    why = finding_reason(verdict, mr.facts, ledgers, tracker)
    gaps = renovate_exemption_gaps(mr.facts, config) if RENOVATE_LABEL in mr.facts.labels else []
    if gaps:
        why += f"; it carries the {RENOVATE_LABEL!r} label but is not exempt: " + "; ".join(gaps)
    if mr.fork:
        why += (
            f" (from a fork, project id {mr.source_project_id}: its pipeline ran the fork's own "
            f"CI configuration, so no gate job held it)"
        )
    return MergeJudged(mr, verdict.code, True, True, why, scope.code, scope.detail, cited, verdict)


def erased_freeze(
    spans: Mapping[int, SpansRead], moment: float, ledgers_at: LedgersAt, tracker: str
) -> tuple[str, str] | None:
    """Why a merge the notes clear cannot be called clean: a freeze label held at it whose
    freeze note is gone, or a label history that could not be read. Pure."""
    for issue, read in sorted(spans.items()):
        if isinstance(read, PairgateError):
            return (
                "label-history-unreadable",
                f"the label history of {tracker}#{issue} could not be read ({read.message}), "
                f"so whether a freeze held at the merge cannot be told",
            )
        span = held_at(read, moment)
        if span is not None and not ledgers_at.known(issue):
            return (
                "ledger-unreadable",
                f"{tracker}#{issue} carried the {FROZEN_LABEL} label at the merge and its notes "
                f"were not read; an unread ledger is never a pass",
            )
        if span is not None and unexplained(span, ledgers_at.at(issue, math.inf).freezes):
            since = "before its label history" if span.start is None else audit_stamp(span.start)
            until = "it is still there" if span.end is None else f"until {audit_stamp(span.end)}"
            return (
                "freeze-note-missing",
                f"{tracker}#{issue} carried the {FROZEN_LABEL} label at the merge (added "
                f"{since}, {until}) but no freeze note is left on it to say what it froze, so "
                f"whether the merge was frozen cannot be told",
            )
    return None


def finding_reason(
    verdict: GateVerdict, mr: MergeRequestFacts, ledgers: Mapping[int, Ledger], tracker: str
) -> str:
    """Why the merge went around the gate, in the past tense, from the verdict and the ledgers
    it was given (the remedies in the gate's own message are for before a merge). A verdict
    this does not know is said in the gate's own words."""
    head = mr.head_sha or "nothing"
    naming = [
        (issue, a)
        for issue, ledger in ledgers.items()
        for a in ledger.approvals
        if a.mr.iid == mr.iid and a.mr.project.casefold() == mr.project.casefold()
    ]
    issues = ", ".join(f"{tracker}#{i}" for i in ledgers) or f"any issue of {tracker}"
    code = verdict.code
    if code == "never-approved":
        return f"never approved: no approval written before the merge in {issues} names it"
    if code == "not-at-head" and naming:
        issue, a = naming[-1]
        return (
            f"approved behind its head: {a.approver} approved {a.sha[:12]} ({tracker}#{issue}, "
            f"note {a.note_id}), but it merged at {head[:12]}, which nobody reviewed"
        )
    if code == "self-approval-only":
        selves = [(i, a) for i, a in naming if a.sha == mr.head_sha and a.self_approval]
        if selves:
            issue, a = selves[-1]
            return (
                f"self-approved: its only approval at the merged head is {a.approver}'s "
                f"({tracker}#{issue}, note {a.note_id}), a self-approval: {a.self_because}"
            )
    if code in ("not-offered", "not-review-account"):
        found = [j for j in verdict.approvals if j.code == code]
        if found:
            j = found[-1]
            return (
                f"not independently approved: its approval at the merged head by {j.approver} "
                f"({tracker}#{j.issue}, note {j.note_id}) did not count: {'; '.join(j.reasons)}"
            )
    if code == "frozen":
        first = verdict.message.splitlines()[0]
        return f"merged while frozen: {first.partition(' is frozen: ')[2] or first}"
    if code == "unclaimed":
        return f"no ownership record: {verdict.record.message.split(':', 1)[0]}"
    if code == "no-citation":
        return f"it cites no issue of {tracker}, so no ledger could carry an approval for it"
    if code == "generic-issue-non-automation":
        generic = verdict.cited_issues[0] if verdict.cited_issues else "?"
        return (
            f"it cites only the generic tracking issue {tracker}#{generic}, which exempts "
            f"unattended automation alone, and {verdict.scope_detail}"
        )
    return verdict.message


# -- the whole audit ----------------------------------------------------------------------------


class AuditReport(NamedTuple):
    """One audit's answer: the window, the projects it read, each merge judged and the pushes no merge request brought."""

    since: float
    until: float
    projects: tuple[str, ...]  # the projects named, or () for every gated project
    judged: tuple[MergeJudged, ...]
    pushes: tuple[PushFinding, ...] = ()  # commits no merge request brought, oldest first

    @property
    def findings(self) -> list[MergeJudged]:
        return [j for j in self.judged if j.finding]

    @property
    def undecided(self) -> list[MergeJudged]:
        return [j for j in self.judged if not j.decided]

    @property
    def clean(self) -> bool:
        return not self.findings and not self.pushes

    @property
    def decided(self) -> bool:
        return not self.undecided and all(p.decided for p in self.pushes)


def with_refs(merged: MergedMr, refs: DiffRefs | None) -> MergedMr:
    """``merged`` with its diff_refs and target branch as read (unchanged when not read)."""
    if refs is None:
        return merged
    facts = merged.facts._replace(
        target_branch=refs.target_branch or merged.facts.target_branch,
        base_sha=refs.base_sha,
        start_sha=refs.start_sha,
    )
    return merged._replace(facts=facts)


def audit(
    client: GitLab,
    config: Config,
    *,
    since: float,
    until: float,
    projects: Sequence[str] = (),
    families: Sequence[AutomationFamily] = (),
) -> AuditReport:
    """Read every merge merged since ``since``, then judge each one, and walk each gated
    project's default branch for what was pushed around them. Requests: the merged listings (a
    page per 100), the group's project listing twice (for the shared-in projects and for the
    default branches; one project read each when ``projects`` are named), per project its
    first-parent commits in the window and, when a commit there needs its pusher named, its
    push events (a page per 100 each); the diff_refs of each gated merge and each
    fast-forwarded one, a GraphQL read per 100 of a project (a REST read for each GraphQL does
    not give); two issue
    listings (labelled frozen now, updated in the window) and one label-history listing per
    issue in them; one notes listing per issue that a gated merge request cites or that held
    the freeze label; one GraphQL read per such issue that holds approvals (whether they were
    edited). The per-project, per-merge and per-issue reads run AUDIT_WORKERS at a time."""
    merged = read_merged(client, config, since=since, projects=projects or None)
    scoped = [
        (m, gate_scope(m.facts, in_group=True, config=config, families=families)) for m in merged
    ]
    stamp = audit_stamp(since)
    branches = default_branches(client, config, projects)
    labelled, candidates = (
        label_candidates(client, config, since=stamp)
        if any(scope.in_scope for _, (_, scope) in scoped)
        else (set(), [])
    )
    # The branches' walks and the label histories share one pool: a walk is a few pages read
    # one after another, a history one request, and together they keep every worker busy.
    work: list[Callable[[], BranchRead | SpansRead]] = [
        partial(read_branch, client, project, branch, since=stamp)
        for project, branch in branches.items()
    ]
    work += [
        partial(read_label_spans, client, config, issue, issue in labelled) for issue in candidates
    ]
    done = pooled(lambda task: task(), work, workers=AUDIT_WORKERS)
    reads = [r for r in done[: len(branches)] if isinstance(r, BranchRead)]
    histories = dict(zip(candidates, done[len(branches) :], strict=True))
    on_branch = {c.sha for r in reads for c in r.history}
    # An approval binds the merge base it reviewed, and GitLab's listing leaves diff_refs out:
    # they are read for each gated merge, and each merge that fast-forwarded the branch (its
    # base says which commits under its head it brought).
    wanted_refs = {id(m) for m, (_, scope) in scoped if scope.in_scope} | {
        id(m) for m in merged if m.facts.head_sha in on_branch
    }
    refs = read_diff_refs(
        client,
        [(m.facts.project, m.facts.iid) for m in merged if id(m) in wanted_refs],
        workers=AUDIT_WORKERS,
    )
    merged = [with_refs(m, refs.get((m.facts.project, m.facts.iid))) for m in merged]
    scoped = [
        (m, gate_scope(m.facts, in_group=True, config=config, families=families)) for m in merged
    ]
    gated = [(m, cited) for m, (cited, scope) in scoped if scope.in_scope]
    # Only the issues that ever carried the label, and those whose history could not be read.
    spans: dict[int, SpansRead] = {
        issue: read
        for issue, read in histories.items()
        if not isinstance(read, BranchRead) and (isinstance(read, PairgateError) or read)
    }
    # Every issue that held the freeze label (now, or in its history) is read for windows.
    frozen = sorted(spans)
    wanted = {i for _, cited in gated for i in ledger_issues(cited, config)} | set(frozen)
    notes = read_all_notes(client, config, wanted)
    readable = {i: n for i, n in notes.items() if not isinstance(n, PairgateError)}
    ledgers_at = LedgersAt(readable, config)
    # Whether each approval note was edited: one GraphQL read per issue that holds approvals,
    # concurrently like the notes reads (each one a round trip, and a window cites hundreds).
    approvals = {
        issue: [a.note_id for a in fold(listed, config=config, issue=issue).approvals]
        for issue, listed in readable.items()
    }
    edits = read_last_edited(
        client,
        config,
        {i: ids for i, ids in approvals.items() if ids},
        workers=AUDIT_WORKERS,
    )
    judged = tuple(
        judge_merged(
            m,
            config=config,
            families=families,
            notes=notes,
            frozen=frozen,
            ledgers_at=ledgers_at,
            edits=edits,
            spans=spans,
        )
        for m in merged
    )

    def brought(read: BranchRead) -> list[BroughtBy]:
        return [
            BroughtBy(m.merge_commit_sha, m.squash_commit_sha, m.facts.head_sha, m.facts.base_sha)
            for m in merged
            if m.facts.project.casefold() == read.project.casefold()
        ]

    reads = pooled(
        lambda r: with_pushes(client, r, brought(r), since=stamp), reads, workers=AUDIT_WORKERS
    )
    pushes = [finding for read in reads for finding in pushed_without_mr(read, brought(read))]
    return AuditReport(since, until, tuple(projects), judged, tuple(pushes))
