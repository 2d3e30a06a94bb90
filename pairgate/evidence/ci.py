"""The evaluator in CI: ``rerun-mr-evidence`` (templates/mr-evidence/) re-runs the offer's
recorded mutants at the merge request's head, in the runner, where no agent's session reaches.

    python3 -I -m pairgate.evidence.ci --tokens-on-stdin --gitlab-url URL --repo DIR --out FILE

As the gate jobs do, it takes the instance, the project, the merge request and the pipeline
from what its job token proves (``GET /job``), and refuses when a CI variable disagrees. Then
it reads the merge request (its head must be the pipeline's), the ledgers of the tracker issues
it cites, and takes the offer under review of that merge request at that head which carries
evidence (the pending handoff, else the one the holder accepted, else the one an approval
answered). Every recorded patch is read from the offer's note and checked against the hash
its record holds; the offer's command runs unmutated and with each patch, in a copy of the
job's checkout at the head, in this machine's sandbox (``runner.collect``), with the network
as the evidence had it.

It writes the result with the whole evidence document to ``--out`` (the job's artifact), and
prints it as one line (``ci_result.result_line``), bound to the job and the pipeline its token
proved and to the SHA. Exit 0 when every recorded mutant was killed again, 1 when not, 2 when
it could not run (and 0, saying so, when no offer of the merge request carries evidence).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT
from pairgate.evidence.ci_result import CI_JOB, CI_SCHEMA_NAME, result_line
from pairgate.evidence.handoff import patches_from_block
from pairgate.evidence.patches import Patch, patch_sha256
from pairgate.evidence.runner import Request, collect
from pairgate.evidence.schema import write_json
from pairgate.evidence.surface import approved_offer, offer_under_review, record_field
from pairgate.standalone.ci_job import NotProven, ProvenJob, prove_job
from pairgate.standalone.config import CONFIG_ENV, Config, load_config
from pairgate.standalone.errors import ConfigError, Context, Exit, PairgateError, report
from pairgate.standalone.fold import fold
from pairgate.standalone.gitlab import GitLab, encode_project
from pairgate.standalone.gitlab_env import gitlab_from_env
from pairgate.standalone.ledger import Event, Ledger, Note
from pairgate.standalone.merge_request import MergeRequestFacts
from pairgate.standalone.reads import read_notes
from pairgate.standalone.scope import cited_issues

NAME = CI_JOB


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m pairgate.evidence.ci", description=__doc__)
    parser.add_argument("--tokens-on-stdin", action="store_true", required=True)
    parser.add_argument("--gitlab-url", default="", metavar="URL")
    parser.add_argument("--repo", type=Path, required=True, metavar="DIR")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S")
    parser.add_argument("--pids", type=int, default=DEFAULT_PIDS, metavar="N")
    parser.add_argument("--jobs", type=int, default=1, metavar="N")
    return parser


def _is_offer_of(event: Event | None, project: str, iid: int, head: str) -> bool:
    if event is None or event.event != "handoff":
        return False
    mr = event.record.get("mr") or {}
    same = (str(mr.get("project", "")).casefold(), mr.get("iid")) == (project.casefold(), iid)
    return same and event.record.get("sha") == head


def offer_to_rerun(ledger: Ledger, project: str, iid: int, head: str) -> Event | None:
    """The handoff of this merge request at ``head`` carrying evidence that a re-run answers:
    the offer under review, else the one the pending approval's offer back answered."""
    candidates = [offer_under_review(ledger)]
    if ledger.offer is not None and ledger.offer.event == "approve":
        candidates.append(approved_offer(ledger, ledger.offer.note_id))
    for event in candidates:
        if event is None or not _is_offer_of(event, project, iid, head):
            continue
        if record_field(ledger, event.note_id, "evidence") is not None:
            return event
    return None


def find_offer(
    client: GitLab, config: Config, mr: MergeRequestFacts
) -> tuple[int, Event, list[Note], Ledger] | None:
    tracker = config.tracker_project
    generic = config.generic_tracking_issue
    for issue in cited_issues(mr.text, mr_project=mr.project, tracker=tracker):
        if issue == generic:
            continue
        notes = read_notes(client, config, issue)
        ledger = fold(notes, config=config, issue=issue)
        assert mr.head_sha is not None
        event = offer_to_rerun(ledger, mr.project, mr.iid, mr.head_sha)
        if event is not None:
            return issue, event, notes, ledger
    return None


def recorded_patches(
    event: Event, notes: Sequence[Note], evidence: Mapping[str, Any]
) -> tuple[Patch, ...]:
    """Every patch of the offer, from its note, each checked against its record's hash."""
    body = next(n.body for n in notes if n.id == event.note_id)
    block = patches_from_block(body)
    patches = []
    for mutant in evidence["mutants"]:
        index, wanted = mutant["index"], mutant["sha256"]
        text = block.get(index, ("", None))[1]
        if text is None or patch_sha256(text) != wanted:
            raise PairgateError(
                f"the note of the offer (note {event.note_id}) holds no patch hashing to the "
                f"SHA-256 its record holds for mutant {index}: the note is not as pairgate "
                "writes it, so nothing is re-run"
            )
        patches.append(Patch(f"note-{event.note_id}-mutant-{index}", text))
    return tuple(patches)


def result_of(
    doc: Mapping[str, Any], proven: ProvenJob, *, issue: int, event: Event, digest: str
) -> dict[str, Any]:
    """The job's result: what the line prints and the artifact holds (ci_result's schema)."""
    iso = doc["baseline"]["isolation"]
    mutants = [{"index": i, "verdict": m["verdict"]} for i, m in enumerate(doc["mutants"], 1)]
    return {
        "schema": CI_SCHEMA_NAME,
        "v": 1,
        "job": proven.job_id,
        "pipeline": proven.pipeline_id,
        "project": proven.project,
        "mr": proven.iid,
        "sha": doc["sha"],
        "issue": issue,
        "offer_note": event.note_id,
        "evidence_digest": digest,
        "status": doc["status"],
        "killed": sum(m["verdict"] == "killed" for m in mutants),
        "total": len(mutants),
        "mutants": mutants,
        "isolation": iso["mode"],
        "network": iso["network"],
        "weak": doc["weak"],
        "digest": doc["digest"],
    }


def run_ci(args: argparse.Namespace, ctx: Context, stdin: TextIO) -> int:
    if not ctx.env.get(CONFIG_ENV, "").strip():
        raise ConfigError(f"{NAME}: {CONFIG_ENV} is not set: it names the fetched configuration")
    config = load_config(ctx.env)
    job_token, read_token = ([*stdin.read().splitlines(), "", ""])[:2]
    if not read_token.strip():
        raise ConfigError(f"{NAME}: the read token (the second line on stdin) is empty")
    proven = prove_job(ctx.env, job_token, pinned=args.gitlab_url)
    client = gitlab_from_env(
        config,
        {
            config.env_name("GITLAB_URL"): proven.server_url,
            config.env_name("TASK_API_TOKEN"): read_token.strip(),
        },
    )
    path = f"projects/{encode_project(proven.project)}/merge_requests/{proven.iid}"
    mr = MergeRequestFacts.from_api(client.get(path), proven.project)
    if mr.head_sha != proven.head:
        raise NotProven(
            f"this pipeline ran for {proven.head}, but the head of {mr.ref} is now "
            f"{mr.head_sha}: only a pipeline at the head re-runs its evidence"
        )
    found = find_offer(client, config, mr)
    where = f"{mr.ref} at {proven.head} (job {proven.job_id}, pipeline {proven.pipeline_id})"
    if found is None:
        print(
            f"{NAME}: {where}: nothing to re-run: no offer of it at its head carries mutation "
            "evidence",
            file=ctx.stdout,
        )
        return Exit.OK
    issue, event, notes, ledger = found
    evidence = record_field(ledger, event.note_id, "evidence")
    assert evidence is not None
    request = Request(
        repo=args.repo,
        command=str(evidence["command"]),
        patches=recorded_patches(event, notes, evidence),
        sha=proven.head,
        timeout=args.timeout,
        jobs=args.jobs,
        network=evidence["network"] == "allowed",
        pids=args.pids,
    )
    print(
        f"{NAME}: {where}: re-running the {len(request.patches)} mutants of the offer in note "
        f"{event.note_id} ({config.tracker_project}#{issue}, evidence {evidence['digest']})",
        file=ctx.stdout,
    )
    doc = collect(request, now=ctx.now)
    result = result_of(doc, proven, issue=issue, event=event, digest=str(evidence["digest"]))
    write_json({"result": result, "evidence": doc}, args.out)
    iso = doc["baseline"]["isolation"]
    for m in doc["mutants"]:
        print(f"{NAME}: mutant {m['index']}: {m['verdict']}: {m['reason']}", file=ctx.stdout)
    print(f"{NAME}: isolation: {iso['description']}", file=ctx.stdout)
    print(result_line(result), file=ctx.stdout)
    return Exit.OK if result["status"] == "pass" and not result["weak"] else Exit.REFUSED


def main(
    argv: Sequence[str] | None = None, ctx: Context | None = None, stdin: TextIO | None = None
) -> int:
    ctx = ctx or Context()
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return run_ci(args, ctx, stdin or sys.stdin)
    except Exception as exc:  # the one translation point: never a silent pass
        print(f"{NAME}: could not re-run the evidence.", file=ctx.stderr)
        return int(report(exc, ctx, program=NAME))


if __name__ == "__main__":
    sys.exit(main())
