"""What main does with the currency check before a command that reads the configuration.

A writing command on a STALE copy is refused (the refusal ends with the configured
``cli_install_command``); a reading command on one runs after a warning; UNVERIFIABLE is one line
on stderr and never fatal. The measuring itself is ``deployed_currency``, which is standalone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from pairgate import deployed_currency
from pairgate.ownership import Config, Refusal

# A long list of missing commits says nothing a short one does not.
SHOWN = 10


def check_currency(
    checkout: Path,
    config: Config,
    *,
    command: str,
    writes: bool,
    env: Mapping[str, str],
    stderr: TextIO,
) -> deployed_currency.Currency:
    """Measure ``checkout``; refuse a writing ``command`` when it is STALE, else say what was
    found (nothing when it is CURRENT)."""
    currency = deployed_currency.measure(checkout, config["deployed_paths"], env=env)
    if currency.state == deployed_currency.UNVERIFIABLE:
        where = f" ({currency.checkout})" if currency.checkout else ""
        reason = " ".join(currency.reason.split())
        note = f"{config.cli}: note: this copy's currency is UNVERIFIABLE{where}: {reason}"
        print(note, file=stderr)
    elif currency.state == deployed_currency.STALE:
        listing = _listing(currency)
        update = f"Update it: {config['cli_install_command']}"
        if writes:
            raise Refusal(
                f"{config.cli} {command}: refused: this copy is STALE ({currency.checkout}): "
                f"{currency.reason}:\n{listing}\n"
                f"A writing command does not run on a stale copy. {update}"
            )
        print(
            f"{config.cli}: warning: this copy is STALE ({currency.checkout}): "
            f"{currency.reason}:\n{listing}\n{update}",
            file=stderr,
        )
    return currency


def _listing(currency: deployed_currency.Currency) -> str:
    lines = [f"  {c.sha} {c.subject}" for c in currency.missing[:SHOWN]]
    if len(currency.missing) > SHOWN:
        lines.append(f"  ... and {len(currency.missing) - SHOWN} more")
    return "\n".join(lines)
