"""The CI re-run's result: the line its job prints, reading it back from GitLab, and the words
every surface shows ("CI re-run: job 57, 2/2 killed").

The job (``rerun-mr-evidence``, templates/mr-evidence/, ``ci.py``) re-runs the offer's recorded
mutants at the merge request's head in the runner, and prints one line into its job log::

    pairgate-evidence-ci: {"schema": "pairgate-evidence-ci", "v": 1, "job": 57, ...}

bound to the job id and the pipeline its job token proved (``GET /job``) and to the SHA it ran
at. Its output reaches the log through the job's own script only: the test command's output
goes to a file (in the sealed mode the code under test cannot reach the job's stdout). A reader
takes the newest merge request pipeline at the head that has the job, reads its log
(``GET /projects/:id/jobs/:job_id/trace``), takes the LAST such line, and counts it only when it
names that job, that pipeline, the SHA, the offer's note and the evidence digest that offer
recorded. This is the one check made outside the agent's session: the job runs from the
tracker-held pipeline, which no merge request can edit.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from pairgate.evidence.schema import DIGEST_FIELD, ISOLATION_MODES, SHA_FIELD, first_problem
from pairgate.evidence.surface import NO_CI_RERUN, ci_words
from pairgate.standalone.gitlab import GitLab, GitLabError, encode_project
from pairgate.standalone.ledger import MrRef

CI_JOB = "rerun-mr-evidence"
LINE_PREFIX = "pairgate-evidence-ci: "
CI_SCHEMA_NAME = "pairgate-evidence-ci"
_LINE = re.compile(r"pairgate-evidence-ci: (\{.*\})\s*$")
_POSITIVE = {"type": "integer", "minimum": 1}
_COUNT = {"type": "integer", "minimum": 0}
_FINISHED = frozenset({"success", "failed", "canceled", "skipped"})
_PIPELINES_READ = 3  # the newest merge request pipelines at the head looked into

CI_RESULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate CI re-run result (the job log line)",
    "type": "object",
    "additionalProperties": False,
    "required": [
        *("schema", "v", "job", "pipeline", "project", "mr", "sha", "issue", "offer_note"),
        *("evidence_digest", "status", "killed", "total", "mutants", "isolation", "network"),
        *("weak", "digest"),
    ],
    "properties": {
        "schema": {"const": CI_SCHEMA_NAME},
        "v": {"const": 1},
        "job": _POSITIVE,
        "pipeline": _POSITIVE,
        "project": {"type": "string", "minLength": 1},
        "mr": _POSITIVE,
        "sha": SHA_FIELD,
        "issue": _POSITIVE,
        "offer_note": _POSITIVE,
        "evidence_digest": DIGEST_FIELD,
        "status": {"enum": ["pass", "fail", "error"]},
        "killed": _COUNT,
        "total": _COUNT,
        "mutants": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["index", "verdict"],
                "properties": {
                    "index": _POSITIVE,
                    "verdict": {"enum": ["killed", "survived", "error", "refused"]},
                },
            },
        },
        "isolation": {"enum": ISOLATION_MODES},
        "network": {"enum": ["blocked", "allowed", "not-blocked"]},
        "weak": {"type": "boolean"},
        "digest": DIGEST_FIELD,
    },
}


@functools.cache
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(CI_RESULT_SCHEMA)


def result_line(result: Mapping[str, Any]) -> str:
    """The one log line (compact JSON, ASCII: nothing a terminal or a log viewer rewrites)."""
    return LINE_PREFIX + json.dumps(result, sort_keys=True, separators=(",", ":"))


def parse_trace(text: str) -> dict[str, Any] | None:
    """The result of the last result line of a job log, when it is one; else None."""
    found = None
    for line in text.splitlines():
        match = _LINE.search(line)
        if match:
            found = match.group(1)
    if found is None:
        return None
    try:
        result = json.loads(found)
    except ValueError:
        return None
    if first_problem(_validator(), result) is not None:
        return None
    return dict(result)


def ci_field(result: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ci_rerun`` field of an approval record, from a result that counted."""
    keys = ("job", "pipeline", "sha", "offer_note", "evidence_digest", "status", "killed")
    field = {k: result[k] for k in keys}
    field.update(
        total=result["total"],
        isolation=result["isolation"],
        network=result["network"],
        weak=result["weak"],
    )
    return field


def state_words(state: Mapping[str, Any]) -> str:
    """One phrase for a ``ci_rerun`` state document (``read_ci_rerun``)."""
    kind = state["state"]
    if kind == "done":
        return ci_words(state["result"])
    if kind == "running":
        return f"CI re-run: job {state['job']} {state['job_status']}"
    if kind == "no-result":
        return (
            f"CI re-run: job {state['job']} {state['job_status']}, without a result for this offer"
        )
    if kind == "unknown":
        return "CI re-run: its pipelines could not be read"
    return NO_CI_RERUN


def counts(
    result: Mapping[str, Any] | None,
    *,
    job: int,
    pipeline: int,
    sha: str,
    offer_note: int,
    evidence_digest: str,
) -> bool:
    """Whether a parsed result is this job's, at this SHA, of this offer's evidence."""
    if result is None:
        return False
    wanted = (job, pipeline, sha, offer_note, evidence_digest)
    got = (
        result["job"],
        result["pipeline"],
        result["sha"],
        result["offer_note"],
        result["evidence_digest"],
    )
    return got == wanted


def _at_head(pipeline: Mapping[str, Any], iid: int, sha: str) -> bool:
    ref = str(pipeline.get("ref") or "")
    if not ref.startswith(f"refs/merge-requests/{iid}/"):
        return False  # a fork's pipeline runs the fork's own CI configuration
    return not ref.endswith("/head") or pipeline.get("sha") == sha


def read_ci_rerun(
    client: GitLab, mr: MrRef, *, sha: str, offer_note: int, evidence_digest: str
) -> dict[str, Any]:
    """The CI re-run of the offer in ``offer_note`` at ``sha``: a state document
    ``{state, job, job_status, pipeline, result}``; ``state`` is ``done`` (``result`` is the
    approval's ``ci_rerun`` field), ``running``, ``no-result``, ``none`` or ``unknown``."""
    empty: dict[str, Any] = {"job": None, "job_status": None, "pipeline": None, "result": None}
    project = encode_project(mr.project)
    try:
        listed = client.get(f"projects/{project}/merge_requests/{mr.iid}/pipelines", per_page=20)
        pipelines = [p for p in listed or [] if isinstance(p, dict) and _at_head(p, mr.iid, sha)]
        seen: dict[str, Any] | None = None
        for pipeline in pipelines[:_PIPELINES_READ]:
            pid = int(pipeline["id"])
            jobs = client.get_all(f"projects/{project}/pipelines/{pid}/jobs")
            job = next((j for j in jobs if j.get("name") == CI_JOB), None)
            if job is None:
                continue
            status, job_id = str(job.get("status")), int(job["id"])
            where = {"job": job_id, "job_status": status, "pipeline": pid}
            if status not in _FINISHED:
                return {"state": "running", **empty, **where}
            result = parse_trace(client.get_text(f"projects/{project}/jobs/{job_id}/trace"))
            if counts(
                result,
                job=job_id,
                pipeline=pid,
                sha=sha,
                offer_note=offer_note,
                evidence_digest=evidence_digest,
            ):
                assert result is not None
                return {"state": "done", **where, "result": ci_field(result)}
            seen = seen or {"state": "no-result", **empty, **where}
    except GitLabError as exc:
        return {"state": "unknown", **empty, "error": exc.message}
    return seen or {"state": "none", **empty}
