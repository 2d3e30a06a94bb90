"""pairgate demo plays a whole round with no configuration; the committed example trail is
what the tool writes now."""

from __future__ import annotations

import re
import sys

import pytest

from tests.kit.names import ROOT
from tests.kit.run import run_cli, run_program


@pytest.mark.slow
def test_demo_plays_a_round_with_no_configuration() -> None:
    result = run_cli(["demo"], env={})
    assert result.code == 0, result.err
    for line in (
        "$ pairgate claim 2 --role lead   (as acme-lead)",
        "acme-review holds #2 as review",
        "-- labels: agent::review",
        "acme-lead holds #2 as lead (note 1006), accepted from acme-review",
        "acme/app!1 may merge: acme-review approved its head",
        "a push after an approval voids it",
        ": stale",
        "merge hook: allowed: the gate passes it",
        "pairgate: the merge hook blocked this command:",
        "acme-lead closed #2",
        "-- labels: pairgate::closed",
    ):
        assert line in result.out
    assert "[exit 1]" not in result.out.split("merge-check after the push")[0]
    blocked = result.out.split("The merge hook blocks the merge of the unreviewed head")[1]
    assert blocked.split("\n== ")[0].rstrip().endswith("[exit 2]")
    # Long lines fold at spaces, never inside an identity.
    assert all(
        len(line) <= 96 or " " not in line.strip()
        for line in result.out.splitlines()
        if not line.startswith(("$ ", "   | "))
    )
    assert "acme-\n" not in result.out
    # Every note id the round makes is shown: GitLab's own notes on the merge request too.
    shown = {int(n) for n in re.findall(r"^-- on [^,]+, note (\d+) by ", result.out, re.M)}
    assert shown == set(range(1001, 1013))
    assert (
        "-- on acme/app!1, note 1004 by review-bot (a system note GitLab writes):\n"
        "   | approved this merge request\n" in result.out
    )
    assert "-- on acme/app!1, note 1007 by agents (a system note GitLab writes):\n" in result.out
    # The reasons claim nothing the records say is absent: the offers carry no mutation
    # evidence and the approvals record no re-run.
    assert "This offer carries no mutation evidence" in result.out
    assert "Mutation:" not in result.out and "Re-ran" not in result.out
    assert (
        result.out.rstrip()
        .split("\n== ")[-1]
        .startswith("19. What to try next\nPlay a round yourself: pairgate sandbox --config-out ")
    )


@pytest.mark.slow
def test_the_example_trail_is_current() -> None:
    result = run_program(
        [sys.executable, "-B", str(ROOT / "examples" / "render_trail.py"), "--check"]
    )
    assert result.code == 0, result.err + "\nrun: python3 examples/render_trail.py"
