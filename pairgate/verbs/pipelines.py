"""Re-judging after a ledger write: a new merge request pipeline for each open merge request the
write can affect. GitLab's "Pipelines must succeed" reads only the latest pipeline, so the green
pipeline of an approval would outlive a withdrawal (or any write that turns the verdict to
refused); a new pipeline makes the merge wait until the gate jobs have judged again.

The judging pipeline must start after the write (its gate jobs read the note), which left the
old green pipeline standing while the note landed. So a verb first starts a "hold": one more
merge request pipeline per affected merge request, BEFORE the write. While it is the head
pipeline it is pending or running, so "Pipelines must succeed" refuses a merge and auto-merge
waits; the judging pipeline then takes its place and the hold is cancelled (``holding``).
GitLab makes a new pipeline the head pipeline in a background worker after creating it, so the
hold holds from then, normally before the note lands; and it would be green only if its gate
jobs all ran and passed in the moment before the judging pipeline replaced it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from pairgate.standalone.errors import Exit
from pairgate.standalone.gitlab import GitLab, GitLabError, WriteUncertain, encode_project
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.tracker import mr_path, pooled
from pairgate.verbs.turn import Turn

# A board freeze reaches every open merge request of the group: start them a batch at a time
# (each batch through tracker.pooled's bounded pool), never one burst of hundreds.
BATCH = 10

NO_MR_JOB = (
    "the project's CI has no merge request job: GitLab answers 405 when no job of its CI "
    "configuration runs in merge request pipelines"
)
MR_JOB_FIX = (
    "Fix the project's CI first: set its CI/CD configuration file to the tracker-held gate "
    "pipeline ({cli} deploy-pipeline renders it), or give its .gitlab-ci.yml a job with "
    "rules: [{{if: '$CI_PIPELINE_SOURCE == \"merge_request_event\"'}}]."
)


@dataclass(frozen=True)
class Started:
    """One attempt: the pipeline's id when GitLab made one, else why not."""

    project: str
    iid: int
    sha: str
    pipeline: int | None
    why: str | None = None
    uncertain: bool = False  # the answer was lost: it may have started all the same

    @property
    def ref(self) -> str:
        return f"{self.project}!{self.iid}"

    @property
    def no_mr_job(self) -> bool:
        return self.why == NO_MR_JOB

    def fix(self, cli: str) -> str:
        """What to change before asking again ("" when asking again is the fix)."""
        return " " + MR_JOB_FIX.format(cli=cli) if self.no_mr_job else ""

    @property
    def maybe(self) -> str:
        if not self.uncertain:
            return ""
        return " It may have started all the same: look at the merge request's pipelines first."


def start(client: GitLab, project: str, iid: int, sha: str) -> Started:
    """POST .../merge_requests/:iid/pipelines (GitLab makes it at the MR's head, ``sha`` as the
    caller read it); a failure is returned, not raised."""
    try:
        answer = client.write("POST", f"{mr_path(project, iid)}/pipelines", {})
    except GitLabError as exc:
        why = NO_MR_JOB if exc.status == 405 else exc.message
        return Started(project, iid, sha, None, why, isinstance(exc, WriteUncertain))
    if not isinstance(answer, dict):
        return Started(project, iid, sha, None)
    number = answer.get("id")
    return Started(project, iid, str(answer.get("sha") or sha), int(number) if number else None)


def _start_mr(client: GitLab, mr: MergeRequestFacts) -> Started:
    return start(client, mr.project, mr.iid, mr.head_sha or "")


def start_command(project: str, iid: int) -> str:
    """What a person runs to start one by hand (any Developer of the project may)."""
    return (
        f"glab api --method POST projects/{encode_project(project)}/merge_requests/{iid}/pipelines"
    )


def _started_all(turn: Turn, mrs: Sequence[MergeRequestFacts]) -> list[Started]:
    outcomes: list[Started] = []
    for first in range(0, len(mrs), BATCH):
        outcomes += pooled(partial(_start_mr, turn.client), mrs[first : first + BATCH])
    return outcomes


def cancel_command(project: str, pipeline: int) -> str:
    return f"glab api --method POST projects/{encode_project(project)}/pipelines/{pipeline}/cancel"


def _cancel(client: GitLab, held: Started) -> str | None:
    """POST /projects/:id/pipelines/:pipeline_id/cancel (any Developer); why not, else None."""
    try:
        client.write(
            "POST", f"projects/{encode_project(held.project)}/pipelines/{held.pipeline}/cancel", {}
        )
    except GitLabError as exc:
        return exc.message
    return None


@contextmanager
def holding(turn: Turn, mrs: Sequence[MergeRequestFacts]) -> Iterator[list[Started]]:
    """Hold each of ``mrs`` with a merge request pipeline started before the write the block
    makes (and the judging pipelines it starts, ``rejudge(..., holds=)``), then cancel the
    holds, whatever the block did: a hold only ever waits, so one that fails to start or to
    stop never stands in the write's way. One that could not be cancelled is said quietly: its
    gate jobs judge the ledger as they find it, so it costs CI minutes and lets nothing through."""
    holds = [o for o in _started_all(turn, mrs) if o.pipeline is not None]
    try:
        yield holds
    finally:
        reasons = pooled(partial(_cancel, turn.client), holds) if holds else []
        for held, why in zip(holds, reasons, strict=True):
            if why is not None:
                turn.warn(
                    f"note: the hold pipeline {held.pipeline} of {held.ref} was not cancelled "
                    f"({why}); its gate jobs only judge the ledger once more, which costs CI minutes "
                    f"and lets nothing through. "
                    f"Cancel it: {cancel_command(held.project, held.pipeline or 0)}"
                )


def rejudge(
    turn: Turn,
    mrs: Sequence[MergeRequestFacts],
    *,
    what: str,
    holds: Sequence[Started] = (),
) -> int:
    """Start a pipeline for each of ``mrs`` after ``what`` (the write, named for the user), with
    the caller's own write token (GitLab lets any Developer of the project start one), say
    each one started, and say loudly each one that did not: exit 2 then, since until a pipeline
    runs, the last green one still lets the merge through. The write stands either way.
    ``holds``: the pipelines ``holding`` started before the write, named on the same line."""
    if not mrs:
        turn.say(f"No open merge request is affected by {what}: no pipeline to start.")
        return Exit.OK
    outcomes = _started_all(turn, mrs)
    held = {h.ref: h.pipeline for h in holds}
    started = [o for o in outcomes if o.why is None]
    for o in started:
        number = f" {o.pipeline}" if o.pipeline else ""
        hold = held.get(o.ref)
        turn.say(
            f"started merge request pipeline{number} of {o.ref} at {o.sha[:12]}, so the gate "
            f"judges it again after {what} and a merge waits for that verdict"
            + (f" (pipeline {hold}, started before it, held the merge meanwhile)" if hold else "")
        )
    # 405: the project's CI has no merge request job, so no gate job judges its merge requests
    # in CI at all and there is no merge request verdict to outlive. Said, not an error of this
    # write: the deployment is what is missing.
    for o in outcomes:
        if o.no_mr_job:
            turn.warn(
                f"warning: no merge request pipeline of {o.ref} started after {what} ({o.why}), "
                f"so no gate job judges it in CI.{o.fix(turn.cli)}"
            )
    failed = [o for o in outcomes if o.why is not None and not o.no_mr_job]
    for o in failed:
        # With a hold, the newest pipeline is the hold, cancelled next (``holding``): a cancelled
        # head pipeline refuses the merge, so the old green one no longer decides.
        hold = held.get(o.ref)
        stands = (
            f"Its hold pipeline {hold}, started before {what}, is cancelled next: then, with "
            f'"Pipelines must succeed", GitLab refuses the merge until a new pipeline succeeds.'
            if hold
            else 'Its last pipeline may still be green, and with "Pipelines must succeed" '
            "GitLab merges on that old verdict until the gate runs again."
        )
        turn.warn(
            f"WARNING: {what} stands, but GitLab started NO new merge request pipeline of "
            f"{o.ref} ({o.why}). {stands}{o.maybe} Start one now: "
            f"{start_command(o.project, o.iid)}"
        )
    return Exit.ERROR if failed else Exit.OK
