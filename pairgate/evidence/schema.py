"""The evidence document: its JSON Schema (as data), its digest, and reading and writing it.

The schema is checked with jsonschema when a document is written and when one is read, like the
ledger's records. The digest is the SHA-256 of the document's canonical JSON (sorted keys, no
spaces, ASCII) without the ``digest`` key, so an accidental edit after the run is visible. It is
not a signature: anyone can edit a document and seal it again. Evidence from an agent's session
is self-reported; the reviewer's re-run, and the CI re-run, are the checks.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate.standalone.errors import UsageError

SCHEMA_NAME = "pairgate-evidence"
SCHEMA_VERSION = 2
STATUSES = ("pass", "fail", "error")
VERDICTS = ("killed", "survived", "error", "refused")
OUTCOMES = ("passed", "assertion-failed", "failed", "crashed", "timed-out", "error")

SHA_FIELD = {"type": "string", "pattern": "^[0-9a-f]{40}([0-9a-f]{24})?$"}
SHA256_FIELD = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
DIGEST_FIELD = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_TEXT = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}
_LINE = {"type": "integer", "minimum": 0}


def strict_object(properties: Mapping[str, Any]) -> dict[str, Any]:
    """An object with exactly these keys: a document that adds or drops one is not this one."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": dict(properties),
    }


ISOLATION_MODES = ["bubblewrap", "namespaces", "env-only"]
_ISOLATION = strict_object(
    {
        "mode": {"enum": ISOLATION_MODES},
        "filesystem": {"enum": ["sealed", "open"]},
        "network": {"enum": ["blocked", "allowed", "not-blocked"]},
        "tree_kill": {"enum": ["pid-namespace", "cgroup", "process-group"]},
        "processes": strict_object(
            {
                "max": {"type": "integer", "minimum": 1},
                "by": {"enum": ["pids-cgroup", "rlimit-nproc", "none"]},
                "why": _TEXT,
            }
        ),
        "description": _TEXT,
    }
)

_FAILED_TEST = strict_object(
    {
        "id": _TEXT,
        "kind": {"enum": ["assertion", "crash", "error"]},
        "message": _TEXT,
        "frame": _TEXT,
    }
)
_PATHS = {"type": "array", "items": _TEXT}

_RUN = strict_object(
    {
        "command": _TEXT,
        "runner": {"enum": ["pytest", "exit-code"]},
        "exit_code": {"type": ["integer", "null"]},
        "timed_out": {"type": "boolean"},
        "duration_ms": _COUNT,
        "isolation": _ISOLATION,
        "outcome": {"enum": list(OUTCOMES)},
        "detail": _TEXT,
        "failed_tests": {"type": "array", "items": _FAILED_TEST},
        "output_tail": _TEXT,
        "log_path": {"type": ["string", "null"]},
        "changed_files": _PATHS,
        "unexpected_changes": _PATHS,
    }
)

_HUNK = strict_object(
    {"file": _TEXT, "old_start": _LINE, "old_lines": _LINE, "new_start": _LINE, "new_lines": _LINE}
)

_MUTANT = strict_object(
    {
        "index": {"type": "integer", "minimum": 1},
        "name": _TEXT,
        "patch": strict_object(
            {
                "sha256": SHA256_FIELD,
                "text": _TEXT,
                "files": {"type": "array", "items": _TEXT},
                "hunks": {"type": "array", "items": _HUNK},
            }
        ),
        "sensitive_files": {"type": "array", "items": _TEXT},
        "applied": {"type": "boolean"},
        "apply_error": {"type": ["string", "null"]},
        "run": {"oneOf": [{"type": "null"}, _RUN]},
        "verdict": {"enum": list(VERDICTS)},
        "reason": _TEXT,
        "killed_by": {"type": "array", "items": _TEXT},
    }
)

EVIDENCE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "pairgate mutation evidence",
    **strict_object(
        {
            "schema": {"const": SCHEMA_NAME},
            "v": {"const": SCHEMA_VERSION},
            "created_at": _TEXT,
            "status": {"enum": list(STATUSES)},
            "weak": {"type": "boolean"},
            "repository": strict_object({"path": _TEXT, "root_commit": SHA_FIELD}),
            "sha": SHA_FIELD,
            "command": {"type": "string", "minLength": 1},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
            "network": {"type": "boolean"},
            "pids": {"type": "integer", "minimum": 1},
            "environment": {"type": "array", "items": _TEXT},
            "workspace": strict_object({"kind": {"enum": ["tmpfs", "disk"]}, "path": _TEXT}),
            "may_change": _PATHS,
            "baseline": _RUN,
            "mutants": {"type": "array", "minItems": 1, "items": _MUTANT},
            "sensitive_changes": strict_object(
                {
                    "base": {"oneOf": [{"type": "null"}, SHA_FIELD]},
                    "base_source": _TEXT,
                    "patterns": {"type": "array", "items": _TEXT},
                    "files": {
                        "type": "array",
                        "items": strict_object({"path": _TEXT, "pattern": _TEXT}),
                    },
                }
            ),
            "summary": strict_object({v: _COUNT for v in VERDICTS}),
            "digest": DIGEST_FIELD,
        }
    ),
}


@functools.cache
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(EVIDENCE_SCHEMA)


def check_evidence(doc: object) -> str | None:
    """None when ``doc`` is an evidence document by the schema, else the first problem."""
    return first_problem(_validator(), doc)


def first_problem(validator: Any, doc: object) -> str | None:
    """None when ``validator`` finds ``doc`` valid, else its first problem (the shallowest, so
    the message names the outermost thing that is wrong)."""
    if validator.is_valid(doc):
        return None
    error = min(validator.iter_errors(doc), key=lambda e: (len(e.path), e.message))
    where = "/".join(str(p) for p in error.path) or "document"
    return f"schema: {where}: {error.message}"


def evidence_digest(doc: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` over the canonical JSON of everything but the digest."""
    content = {k: v for k, v in doc.items() if k != "digest"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()


def digest_problem(doc: Mapping[str, Any]) -> str | None:
    if doc.get("digest") != evidence_digest(doc):
        return "its digest does not match its content (it was changed after it was run)"
    return None


def sealed(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document with its digest, checked: a document that would fail on read is never
    written."""
    out = {k: v for k, v in doc.items() if k != "digest"}
    out["digest"] = evidence_digest(out)
    problem = check_evidence(out)
    if problem:
        raise ValueError(f"refusing to write invalid evidence: {problem}")
    return out


def write_evidence(doc: Mapping[str, Any], path: Path) -> None:
    """Write atomically: a reader sees the old file or the whole new one, never a part."""
    problem = check_evidence(doc) or digest_problem(doc)
    if problem:
        raise ValueError(f"refusing to write invalid evidence: {problem}")
    write_json(doc, path)


def write_json(doc: Mapping[str, Any], path: Path) -> None:
    """``doc`` as indented JSON, written atomically (a temporary file beside it, then a
    rename)."""
    import tempfile  # only a writer pays for it (and for shutil's, which it imports)

    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    target = path.resolve()
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def load_json(path: Path, what: str) -> Any:
    """The JSON in ``path``; UsageError (exit 2) naming ``what`` when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"cannot read {what} in {path}: {exc}") from None


def read_evidence(path: Path) -> dict[str, Any]:
    """A document read back, schema and digest checked; UsageError (exit 2) naming the file
    otherwise."""
    doc = load_json(path, "the evidence")
    problem = check_evidence(doc) or digest_problem(doc)
    if problem:
        raise UsageError(f"{path} is not valid mutation evidence: {problem}")
    assert isinstance(doc, dict)
    return doc
