"""The refusal of a registered command whose behaviour a later issue builds."""

from __future__ import annotations

from pairgate.ownership import NotImplementedYet


def not_yet(command: str, issue: str) -> NotImplementedYet:
    return NotImplementedYet(
        f"pairgate {command}: not implemented yet ({issue} builds it); nothing was done"
    )
