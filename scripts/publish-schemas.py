#!/usr/bin/env python3
"""Publish the JSON Schemas that live as data in the code under docs/schemas/: one per record
kind (<kind>.schema.json), the configuration's (pairgate-config.schema.json), the mutation
evidence document's (evidence.schema.json), the re-run document's (evidence-rerun.schema.json)
and the CI re-run's result, which its job prints and publishes (evidence-ci.schema.json).
``--check`` writes nothing and exits 1 when a published file is missing, differs or is extra."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pairgate.evidence.ci_result import CI_RESULT_SCHEMA  # noqa: E402
from pairgate.evidence.rerun import RERUN_SCHEMA  # noqa: E402
from pairgate.evidence.schema import EVIDENCE_SCHEMA  # noqa: E402
from pairgate.standalone.config import CONFIG_SCHEMA  # noqa: E402
from pairgate.standalone.records import RECORD_SCHEMAS  # noqa: E402

OUT = ROOT / "docs" / "schemas"


def rendered() -> dict[str, str]:
    schemas = {f"{kind}.schema.json": schema for kind, schema in RECORD_SCHEMAS.items()}
    schemas["pairgate-config.schema.json"] = CONFIG_SCHEMA
    schemas["evidence.schema.json"] = EVIDENCE_SCHEMA
    schemas["evidence-rerun.schema.json"] = RERUN_SCHEMA
    schemas["evidence-ci.schema.json"] = CI_RESULT_SCHEMA
    return {name: json.dumps(s, indent=2, ensure_ascii=False) + "\n" for name, s in schemas.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/schemas is stale")
    parser.add_argument("--out", type=Path, default=OUT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    want = rendered()
    have = {p.name: p.read_text(encoding="utf-8") for p in args.out.glob("*.json")}
    drift = sorted(n for n in set(want) | set(have) if want.get(n) != have.get(n))
    if args.check:
        for name in drift:
            why = "missing" if name not in have else "extra" if name not in want else "differs"
            print(f"docs/schemas/{name}: {why}", file=sys.stderr)
        if drift:
            print("run: python3 scripts/publish-schemas.py", file=sys.stderr)
        return 1 if drift else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in drift:
        if name in want:
            (args.out / name).write_text(want[name], encoding="utf-8")
        else:
            (args.out / name).unlink()
        print(f"wrote docs/schemas/{name}" if name in want else f"removed docs/schemas/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
