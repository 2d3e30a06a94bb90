"""pairgate deploy-hooks: copy the merge hook and the files it runs into a flat hooks directory.

Exactly four files, byte for byte and mode 0755: the hook, ownership.py, the record validator and
deployed_currency.py. The other three files the hook runs beside (pairgate-config.json,
_hooklib.sh, automation_mr_families.py) are the deployment's own and are never touched here.

The refusals and the writing are pairgate.deployment.install's, shared with deploy-agents. Exit
codes: 0 done, in line or listed; 1 drift (--check); 2 cannot deploy.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from pairgate.deployment import install
from pairgate.resources import package_file, resource_dir
from pairgate.standalone.config import Config
from pairgate.standalone.errors import Context, Exit, PairgateError, UsageError

MODE = 0o755


def sources() -> dict[str, Path]:
    """<deployed name> -> where the installed package holds it, in deploy order."""
    return {
        "block-unapproved-merge.sh": resource_dir("hooks") / "block-unapproved-merge.sh",
        "ownership.py": package_file("ownership.py"),
        "validate-mr-carries-ownership-record.py": (
            resource_dir("validators") / "validate-mr-carries-ownership-record.py"
        ),
        "deployed_currency.py": package_file("currency/deployed_currency.py"),
    }


def read_sources(command: str, install_command: str) -> dict[str, bytes]:
    contents, missing = {}, []
    for name, path in sources().items():
        try:
            contents[name] = path.read_bytes()
        except OSError as exc:
            missing.append(f"{path} ({exc.strerror or exc})")
    if missing:
        raise PairgateError(
            f"{command}: this installation lacks files it deploys: {'; '.join(missing)}. "
            f"Reinstall: {install_command}. Nothing was written."
        )
    return contents


def check_target(ctx: Context, command: str, target: Path, contents: dict[str, bytes]) -> int:
    """Compare the four, byte for byte; read nothing else; never compare the mode."""
    drift = install.check(command, target, contents)
    if drift:
        for line in drift:
            print(line, file=ctx.stdout)
        print(f"run {command} --target {target} to update them", file=ctx.stdout)
        return Exit.REFUSED
    print(f"in line: the {len(contents)} deployed hook files in {target}", file=ctx.stdout)
    return Exit.OK


def install_target(
    ctx: Context,
    command: str,
    target: Path,
    contents: dict[str, bytes],
    *,
    write: install.Writer | None = None,
) -> int:
    again = f"{command} --target {target}"
    for line in install.install(
        command, target, contents, mode=MODE, again=again, fix_mode=True, write=write
    ):
        print(line, file=ctx.stdout)
    # The hook runs python3 from the sessions' PATH unless _hooklib.sh names one: say which
    # Python has pairgate and its tree-sitter, the one this install runs under.
    print(
        f"the hook's Python: put this line in {target / '_hooklib.sh'} unless python3 on the "
        f"sessions' PATH can import this installation:\nhooklib_python={shlex.quote(sys.executable)}",
        file=ctx.stdout,
    )
    return Exit.OK


def deploy_hooks(
    *, ctx: Context, config: Config, target: Path | None, list: bool, check: bool
) -> int:
    """``deploy-hooks --target DIR [--check] | --list``."""
    command = f"{config.cli} deploy-hooks"
    if list:
        if check:
            raise UsageError(f"{command}: --check compares a --target; it does not go with --list")
        read_sources(command, config.cli_install_command)  # a missing source is refused, not listed
        for name, path in sources().items():
            print(f"{name}\t{path}", file=ctx.stdout)
        return Exit.OK
    assert target is not None  # argparse requires --target or --list
    contents = read_sources(command, config.cli_install_command)
    if check:
        return check_target(ctx, command, target, contents)
    return install_target(ctx, command, target, contents)
