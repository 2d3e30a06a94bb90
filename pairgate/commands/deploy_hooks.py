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
    # Python has pairgate and its tree-sitter, the one this install runs under, unless
    # _hooklib.sh names that one already.
    hooklib = target / "_hooklib.sh"
    named = hooklib_python(hooklib)
    if named == sys.executable:
        print(f"the hook's Python: {hooklib} names this installation's ({named})", file=ctx.stdout)
        return Exit.OK
    now = f" (it names {named} now)" if named else ""
    print(
        f"the hook's Python: put this line in {hooklib}{now} unless python3 on the sessions' "
        f"PATH can import this installation:\nhooklib_python={shlex.quote(sys.executable)}",
        file=ctx.stdout,
    )
    return Exit.OK


def hooklib_python(hooklib: Path) -> str | None:
    """The interpreter the deployment's _hooklib.sh names (its last hooklib_python= line), if
    it names one; a file that cannot be read names none."""
    try:
        text = hooklib.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = None
    for line in text.splitlines():
        name, equals, value = line.strip().partition("=")
        if equals and name == "hooklib_python":
            try:
                words = shlex.split(value, comments=True)
            except ValueError:
                continue
            found = words[0] if words else None
    return found


def deploy_hooks(
    *, ctx: Context, config: Config | None, target: Path | None, list: bool, check: bool
) -> int:
    """``deploy-hooks --target DIR [--check] | --list``. --list reads no configuration (main
    gives None): it names the installation's files."""
    if list:
        command = "deploy-hooks --list"  # no configuration, so no cli_command to name
        if check:
            raise UsageError(f"{command}: --check compares a --target; it does not go with --list")
        # A missing source is refused, not listed.
        read_sources(command, "the same installation again")
        for name, path in sources().items():
            print(f"{name}\t{path}", file=ctx.stdout)
        return Exit.OK
    assert config is not None and target is not None  # read for --target; argparse requires one
    command = f"{config.cli} deploy-hooks"
    contents = read_sources(command, config.cli_install_command)
    if check:
        return check_target(ctx, command, target, contents)
    return install_target(ctx, command, target, contents)
