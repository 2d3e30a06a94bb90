"""What every surface says about the records a fold left out of the state (status, the verbs'
warnings, the evidence re-run). A module of its own: status reads no verb's turn."""

from __future__ import annotations

from pairgate.standalone.ledger import Ledger


def damage(ledger: Ledger) -> list[str]:
    """What every surface says about records that are not part of the state."""
    lines = [f"note {s.note_id} skipped ({s.kind}): {s.reason}" for s in ledger.skipped]
    lines += [f"note {b.note_id} breaks the chain: {b.reason}" for b in ledger.breaks]
    lines += [f"note {n} was edited after it was written" for n in ledger.edited]
    if ledger.unbound_notice:
        lines.append(ledger.unbound_notice)
    return lines
