"""What main does with the currency check before a command that reads the configuration.

A writing command on a STALE copy is refused (the refusal ends with the configured
``cli_install_command``); a reading command on one runs after a warning; UNVERIFIABLE is one line
on stderr and never fatal. The measuring itself is ``deployed_currency``, which is standalone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from pairgate.currency import deployed_currency
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Refusal, first_today

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
    now: float,
    verbose: bool = False,
) -> deployed_currency.Currency:
    """Measure ``checkout``; refuse a writing ``command`` when it is STALE, else say what was
    found (nothing when it is CURRENT). A copy in no checkout at all (an installed copy nobody
    pointed at its checkout) says so once a day, and under ``verbose`` every time."""
    currency = deployed_currency.measure(checkout, config.deployed_paths, env=env)
    if currency.state == deployed_currency.UNVERIFIABLE and _in_no_checkout(currency, checkout):
        if verbose or first_today(env, str(checkout), now):
            print(
                f"{config.cli}: note: this copy ({checkout}) is in no git checkout, so whether "
                f"it is current cannot be measured ({' '.join(currency.reason.split())}). If "
                f"it is installed from a checkout of the deployment, name that checkout: "
                f"{config.env_name('CHECKOUT')}=<a path inside it>. This note comes once a "
                f"day; --verbose shows it every time.",
                file=stderr,
            )
    elif currency.state == deployed_currency.UNVERIFIABLE:
        where = f" ({currency.checkout})" if currency.checkout else ""
        reason = " ".join(currency.reason.split())
        print(
            f"{config.cli}: note: this copy's currency is UNVERIFIABLE{where}: {reason}",
            file=stderr,
        )
    elif currency.state == deployed_currency.STALE:
        listing = _listing(currency)
        update = f"Update it: {config.cli_install_command}"
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


def _in_no_checkout(currency: deployed_currency.Currency, checkout: Path) -> bool:
    """The copy exists, but git finds no checkout around it: an installed copy."""
    return currency.checkout is None and checkout.exists()


def _listing(currency: deployed_currency.Currency) -> str:
    lines = [f"  {c.sha} {c.subject}" for c in currency.missing[:SHOWN]]
    if len(currency.missing) > SHOWN:
        lines.append(f"  ... and {len(currency.missing) - SHOWN} more")
    return "\n".join(lines)
