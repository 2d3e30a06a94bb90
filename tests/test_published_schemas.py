"""docs/schemas/ is generated from the schemas inside ownership.py, and --check says when not."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from pairgate.standalone.records import RECORD_SCHEMAS
from tests.kit.names import ROOT
from tests.kit.run import run_program

SCRIPT = [sys.executable, "-B", str(ROOT / "scripts" / "publish-schemas.py")]


def test_the_published_schemas_are_current() -> None:
    result = run_program([*SCRIPT, "--check"])
    assert result.code == 0, result.err


def test_check_names_each_stale_file_and_publishing_fixes_it(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    shutil.copytree(ROOT / "docs" / "schemas", out)
    (out / "ownership.schema.json").write_text("{}\n")
    (out / "approval.schema.json").unlink()
    (out / "gone.schema.json").write_text("{}\n")
    result = run_program([*SCRIPT, "--check", "--out", str(out)])
    assert result.code == 1
    assert result.err.splitlines()[:3] == [
        "docs/schemas/approval.schema.json: missing",
        "docs/schemas/gone.schema.json: extra",
        "docs/schemas/ownership.schema.json: differs",
    ]
    assert run_program([*SCRIPT, "--out", str(out)]).code == 0
    assert run_program([*SCRIPT, "--check", "--out", str(out)]).code == 0
    published = json.loads((out / "ownership.schema.json").read_text())
    assert published == RECORD_SCHEMAS["ownership"]
