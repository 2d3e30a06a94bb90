"""ownership.py read alone, the way the gate runs it: copied flat into an empty directory, with
no pairgate package anywhere on the path, reading a ledger from the sandbox."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from tests.kit.names import FIXTURE_CONFIG, ROOT
from tests.kit.run import agent_env, run_program
from tests.kit.world import Round

READER = """
import json, os, sys
import ownership
assert "pairgate" not in sys.modules
# What every hook decision and gate job imports: no module a rare path alone needs (the glab
# fallback and the hook's read of a remote's URL start programs; nothing else does).
assert "subprocess" not in sys.modules, "the reader imported subprocess"
config = ownership.load_config(os.environ)
client = ownership.gitlab_from_env(config, os.environ)
ledger = ownership.read_ledger(client, config, int(sys.argv[1]))
print(json.dumps({"holder": ledger.holder, "offer_to": ledger.offer and ledger.offer.to,
                  "skipped": [s.kind for s in ledger.skipped]}))
"""


def test_the_reader_runs_flat(sandbox: Any, tmp_path: Path) -> None:
    world = Round(sandbox)
    world.claim()
    world.offer()
    sandbox.note(world.issue, world.notes()[0]["body"], as_user="maintainer")
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(ROOT / "pairgate" / "ownership.py", flat)
    shutil.copy(FIXTURE_CONFIG, flat / "pairgate-config.json")
    (flat / "read.py").write_text(READER)
    env = agent_env(sandbox, None)
    del env["PAIRGATE_CONFIG"]  # the configuration beside ownership.py
    result = run_program(
        [sys.executable, "-B", "read.py", str(world.issue)], env={**env, "PYTHONPATH": ""}, cwd=flat
    )
    assert result.code == 0, result.err
    assert json.loads(result.out) == {
        "holder": "acme-lead",
        "offer_to": "acme-review",
        "skipped": ["forged"],
    }
