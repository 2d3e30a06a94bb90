"""Freeze windows as the writing commands meet them: read once per turn, checked before anything
is written. The records and the pure rules are in ownership.py (section 5b), where the merge
gate reads them too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pairgate.standalone.config import Config
from pairgate.standalone.errors import Refusal
from pairgate.standalone.fold import binding_freeze, freeze_refusal
from pairgate.standalone.gitlab import GitLab
from pairgate.standalone.ledger import Freeze, Ledger, MrRef
from pairgate.standalone.reads import read_freezes

if TYPE_CHECKING:
    from pairgate.turn import Turn


def windows_for(
    client: GitLab, config: Config, issue: int, ledger: Ledger
) -> list[tuple[int, Freeze]]:
    """Every window that can bind a write on ``issue``: its own (already folded) and those on
    the issues labelled as holding one."""
    return read_freezes(client, config, known={issue: ledger})


def refuse_if_frozen(turn: Turn, *, mr: MrRef | None) -> None:
    """Refuse the turn when another agent's live window covers its issue (or ``mr``)."""
    now = turn.ctx.now()
    found = binding_freeze(turn.freezes, now=now, agent=turn.agent, issue=turn.issue, mr=mr)
    if found is not None:
        holder, window = found
        raise Refusal(
            f"{turn.cli}: refused on #{turn.issue}: "
            + freeze_refusal(holder, window, now=now, config=turn.config)
        )
