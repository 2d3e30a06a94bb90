"""Each run's document, kept under the state directory by repository and SHA, and the last one
read back (``evidence report``).

``$XDG_STATE_HOME/pairgate/evidence/<root commit>/<sha>/<created>-<kind>-<digest>.json`` (else
``~/.local/state/...``; a relative XDG_STATE_HOME is ignored, as the XDG rule says). The
repository is named by the first root commit of the SHA's history, which stays the same across
clones and moves. A kept document is a copy for the one who ran it: it is read back checked
(schema and digest) like any other, and proves no more than the document itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pairgate.evidence.schema import write_json
from pairgate.standalone.errors import state_home

_STAMP = re.compile(r"[^0-9TZ]")


def state_dir(env: Mapping[str, str]) -> Path | None:
    """Where documents are kept, or None when there is no state directory (no usable
    XDG_STATE_HOME and no HOME)."""
    home = state_home(env)
    return None if home is None else home / "pairgate" / "evidence"


def keep(doc: Mapping[str, Any], kind: str, *, root: Path) -> Path:
    """Write ``doc`` (an evidence or a re-run document) under ``root``; its path."""
    evidence = doc["evidence"] if kind == "rerun" else doc
    where = root / str(evidence["repository"]["root_commit"]) / str(evidence["sha"])
    where.mkdir(parents=True, exist_ok=True)
    stamp = _STAMP.sub("", str(doc["created_at"]))
    path = where / f"{stamp}-{kind}-{str(doc['digest'])[7:19]}.json"
    write_json(doc, path)
    return path


def last(root: Path, root_commit: str, sha: str | None = None) -> Path | None:
    """The document kept last for this repository (at ``sha`` when given), or None."""
    where = root / root_commit
    pattern = f"{sha}/*.json" if sha else "*/*.json"
    found = [p for p in where.glob(pattern) if p.is_file()]
    if not found:
        return None
    return max(found, key=lambda p: (p.stat().st_mtime_ns, p.name))
