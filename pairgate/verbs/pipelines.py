"""Re-judging after a ledger write: a new merge request pipeline for each open merge request the
write can affect. GitLab's "Pipelines must succeed" reads only the latest pipeline, so the green
pipeline of an approval would outlive a withdrawal (or any write that turns the verdict to
refused); a new pipeline makes the merge wait until the gate jobs have judged again."""

from __future__ import annotations

from collections.abc import Sequence
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


def rejudge(turn: Turn, mrs: Sequence[MergeRequestFacts], *, what: str) -> int:
    """Start a pipeline for each of ``mrs`` after ``what`` (the write, named for the user), with
    the caller's own write token (GitLab lets any Developer of the project start one), say
    each one started, and say loudly each one that did not: exit 2 then, since until a pipeline
    runs, the last green one still lets the merge through. The write stands either way."""
    if not mrs:
        turn.say(f"No open merge request is affected by {what}: no pipeline to start.")
        return Exit.OK
    outcomes: list[Started] = []
    for first in range(0, len(mrs), BATCH):
        outcomes += pooled(partial(_start_mr, turn.client), mrs[first : first + BATCH])
    started = [o for o in outcomes if o.why is None]
    for o in started:
        number = f" {o.pipeline}" if o.pipeline else ""
        turn.say(
            f"started merge request pipeline{number} of {o.ref} at {o.sha[:12]}, so the gate "
            f"judges it again after {what} and a merge waits for that verdict"
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
        turn.warn(
            f"WARNING: {what} stands, but GitLab started NO new merge request pipeline of "
            f'{o.ref} ({o.why}). Its last pipeline may still be green, and with "Pipelines must '
            f'succeed" GitLab merges on that old verdict until the gate runs again.{o.maybe} '
            f"Start one now: {start_command(o.project, o.iid)}"
        )
    return Exit.ERROR if failed else Exit.OK
