"""evidence rerun's handler: the reviewer re-runs one of the offer's mutants and one of its own.

The offer is read from the issue's ledger (the pending handoff, else the handoff the holder
accepted); its K-th patch is taken from the offer's note and must hash to what the offer's
RECORD holds (the note's block header is not trusted: the record is what the digest chain
protects). Both run at the offered SHA, in the runner's sandbox; the document binds the result
to the offer, and ``approve --evidence`` records it. Exit 0 when both mutants were killed, 1
when either was not (the document is still printed and written), 2 when it could not be run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate import output as render
from pairgate.commands.evidence_run import evidence_text, keep, read_patch, request_for
from pairgate.evidence import DEFAULT_PIDS, DEFAULT_TIMEOUT
from pairgate.evidence.ci_result import read_ci_rerun, state_words
from pairgate.evidence.handoff import patches_from_block
from pairgate.evidence.patches import Patch
from pairgate.evidence.rerun import offered_mutant, own_mutant, rerun_document, write_rerun
from pairgate.evidence.runner import collect, rerun
from pairgate.evidence.surface import offer_under_review, record_field
from pairgate.output import Style
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, Refusal, UsageError
from pairgate.standalone.fold import fold
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import MrRef
from pairgate.standalone.reads import read_notes
from pairgate.verbs.preconditions import command
from pairgate.views.damage import damage


def reproduce(
    doc: Mapping[str, Any], *, ctx: Context, config: Config, verb: str = "approve"
) -> dict[str, Any]:
    """Run the re-run document's two mutants again, as it ran them (its command, SHA, timeout,
    network and process cap) in the repository it names, in this machine's sandbox: the
    evidence document of that run. approve records a re-run only when this gives what the
    document claims (rerun.py says why)."""
    claimed = doc["evidence"]
    patches = tuple(Patch(m["name"], m["patch"]["text"]) for m in claimed["mutants"])
    request = request_for(
        config,
        ctx,
        repo=Path(claimed["repository"]["path"]),
        test=claimed["command"],
        patches=patches,
        sha=claimed["sha"],
        timeout=claimed["timeout_seconds"],
        jobs=2,
        network=claimed["network"],
        pids=claimed["pids"],
    )
    try:
        return collect(request, now=ctx.now)
    except PairgateError as exc:
        raise type(exc)(
            f"{config.cli} {verb}: cannot run the re-run's mutants again in "
            f"{claimed['repository']['path']} (the clone the re-run names): {exc.message}"
        ) from None


def rerun_text(doc: dict[str, Any], style: Style) -> str:
    offer = doc["offer"]
    head = (
        f"Re-run of mutant {offer['mutant_index']} of the offer in note {offer['note_id']} "
        f"({offer['sender']}, evidence {offer['evidence_digest']}) on "
        f"{doc['issue']['project']}#{doc['issue']['iid']}, and of your own"
    )
    return f"{head}\n{evidence_text(doc['evidence'], style)}\nRe-run digest: {doc['digest']}"


def _verdicts(doc: dict[str, Any], *, cli: str, issue: int, pending: bool) -> Refusal | None:
    """Why the re-run does not support an approval (exit 1), or None when both were killed."""
    offer, offered, own = doc["offer"], offered_mutant(doc), own_mutant(doc)
    sha = doc["evidence"]["sha"]
    base = doc["evidence"]["baseline"]
    if base["outcome"] != "passed":
        return Refusal(
            f"{cli} evidence rerun: the baseline did not pass at {sha}: {base['detail']}\n"
            f"The offered commit's tests fail unmutated in {doc['evidence']['repository']['path']}"
            f": check the clone and the test command; if they fail at that commit, that is a "
            f"BLOCKS: finding."
        )
    problems = []
    if offered["verdict"] != "killed":
        back = (
            f"decline the offer: {command(cli, 'decline', issue)}"
            if pending
            else f"hand the work back: {command(cli, 'handoff', issue, to=offer['sender'], role='lead', sha=sha)} --reason-file <findings>"
        )
        problems.append(
            f"the offer's mutant {offer['mutant_index']} was not killed: {offered['verdict']}, "
            f"{offered['reason']}. The offer's evidence does not hold; that is a BLOCKS: "
            f"finding, and approve --evidence refuses this re-run. {back}"
        )
    if own["verdict"] != "killed":
        problems.append(
            f"your own mutant {own['name']} was not killed: {own['verdict']}, {own['reason']}. "
            f"The tests do not pin that behaviour: write it as a finding (ASKS: or BLOCKS:); "
            f"approve --evidence records this re-run as it is."
        )
    if not problems:
        return None
    return Refusal(f"{cli} evidence rerun: " + "\n".join(problems))


def rerun_evidence(
    *,
    ctx: Context,
    config: Config,
    client: GitLab,
    issue: int,
    mutant_index: int,
    mutant: Path,
    test: str,
    repo: Path = Path("."),
    timeout: float = DEFAULT_TIMEOUT,
    network: bool = False,
    pids: int = DEFAULT_PIDS,
    out: Path | None = None,
    logs: Path | None = None,
    json: bool = False,
) -> int:
    cli = config.cli
    own = read_patch(mutant, cli, "rerun")
    notes = read_notes(client, config, issue)
    ledger = fold(notes, config=config, issue=issue)
    for line in damage(ledger):
        print(f"warning: #{issue}: {line}", file=ctx.stderr)
    event = offer_under_review(ledger)
    if event is None:
        raise Refusal(
            f"{cli} evidence rerun: #{issue} has no offer to review: no handoff is pending, and "
            f"{ledger.holder or 'nobody'} holds it without having accepted one. A re-run answers "
            f"an offer's evidence.\nSee the ledger: {command(cli, 'status', issue)}"
        )
    recorded = record_field(ledger, event.note_id, "evidence")
    if recorded is None:
        raise Refusal(
            f"{cli} evidence rerun: the offer in note {event.note_id} ({event.agent}) carries no "
            f"mutation evidence, so there is no mutant of its to re-run.\n{event.agent} offers "
            f"again with evidence: {cli} evidence run ... --out FILE, then "
            f"{command(cli, 'handoff', issue, to=event.record['to'], role=event.record['role'], sha=event.record['sha'], evidence='FILE')}"
            + (f" --supersede {event.note_id}" if ledger.offer is not None else "")
        )
    mutants = recorded["mutants"]
    if mutant_index > len(mutants):
        raise UsageError(
            f"{cli} evidence rerun: --mutant-index {mutant_index}: the offer in note "
            f"{event.note_id} has {len(mutants)} mutant{'s' * (len(mutants) != 1)} (1 to "
            f"{len(mutants)})"
        )
    body = next(n.body for n in notes if n.id == event.note_id)
    block = patches_from_block(body)
    if mutant_index not in block:
        raise Refusal(
            f"{cli} evidence rerun: the note of the offer (note {event.note_id}) holds no patch "
            f"for mutant {mutant_index}, though its record lists one: the note is not as "
            f"pairgate writes it. Ask {event.agent} to offer again with --evidence."
        )
    sha = str(event.record["sha"])
    offered = Patch(f"note-{event.note_id}-mutant-{mutant_index}", block[mutant_index][1])
    request = request_for(
        config,
        ctx,
        repo=repo,
        test=test,
        patches=(offered, own),
        sha=sha,
        timeout=timeout,
        network=network,
        pids=pids,
        logs=logs,
    )
    try:
        inner = rerun(request, offered_sha256=mutants[mutant_index - 1]["sha256"], now=ctx.now)
    except PairgateError as exc:
        raise type(exc)(f"{cli} evidence rerun: {exc.message}") from None
    doc = rerun_document(
        inner,
        project=config.tracker_project,
        issue=issue,
        offer_note=event.note_id,
        sender=event.agent,
        offered=recorded,
        index=mutant_index,
        now=ctx.now(),
    )
    keep(doc, "rerun", ctx, cli)
    if out is not None:
        try:
            write_rerun(doc, out)
        except OSError as exc:
            raise UsageError(f"{cli} evidence rerun: cannot write {out}: {exc}") from None
    if json:
        render.dump(doc, ctx.stdout)
    else:
        print(rerun_text(doc, Style(render.use_colour(ctx.stdout, ctx.env))), file=ctx.stdout)
        mr = event.record.get("mr") or {}
        if mr:
            ci = read_ci_rerun(
                client,
                MrRef(str(mr["project"]), int(mr["iid"])),
                sha=sha,
                offer_note=event.note_id,
                evidence_digest=str(recorded["digest"]),
            )
            print(f"{state_words(ci)} (the offer's mutants, in CI)", file=ctx.stdout)
        if out is not None:
            mr = event.record.get("mr") or {}
            approve = command(
                cli,
                "approve",
                issue,
                mr=mr.get("iid", "<iid>"),
                mr_project=mr.get("project", "<project>"),
                sha=sha,
                to=event.agent,
                evidence=str(out),
            )
            print(f"Written to {out}; approve with it: {approve}", file=ctx.stdout)
    refused = _verdicts(doc, cli=cli, issue=issue, pending=ledger.offer is not None)
    if refused is not None:
        raise refused
    return Exit.OK
