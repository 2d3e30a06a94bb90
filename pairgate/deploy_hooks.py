"""pairgate deploy-hooks: copy the merge hook and the files it runs into a flat hooks directory.

Exactly four files, byte for byte and mode 0755: the hook, ownership.py, the record validator and
deployed_currency.py. The other three files the hook runs beside (pairgate-config.json,
_hooklib.sh, automation_mr_families.py) are the deployment's own and are never touched here.

Every refusal comes before the first write. A write that fails anyway removes its temporary
file and reports the install as PARTIAL, naming what was already replaced. Exit codes: 0 done,
in line or listed; 1 drift (--check); 2 cannot deploy.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from pairgate.ownership import Config, Context, Exit, PairgateError, UsageError
from pairgate.resources import package_file, resource_dir

MODE = 0o755


def sources() -> dict[str, Path]:
    """<deployed name> -> where the installed package holds it, in deploy order."""
    return {
        "block-unapproved-merge.sh": resource_dir("hooks") / "block-unapproved-merge.sh",
        "ownership.py": package_file("ownership.py"),
        "validate-mr-carries-ownership-record.py": (
            resource_dir("validators") / "validate-mr-carries-ownership-record.py"
        ),
        "deployed_currency.py": package_file("deployed_currency.py"),
    }


def read_sources(config: Config) -> dict[str, bytes]:
    contents, missing = {}, []
    for name, path in sources().items():
        try:
            contents[name] = path.read_bytes()
        except OSError as exc:
            missing.append(f"{path} ({exc.strerror or exc})")
    if missing:
        raise PairgateError(
            f"{config.cli} deploy-hooks: this installation lacks files it deploys: "
            f"{'; '.join(missing)}. Reinstall: {config['cli_install_command']}. Nothing was "
            "written."
        )
    return contents


def destinations(target: Path, names: list[str], *, command: str) -> dict[str, Path]:
    """The four destinations, once the target and each destination pass the refusals."""
    if not target.is_dir():
        raise PairgateError(
            f"{command}: the target {target} is not a directory. Nothing was written."
        )
    found = {name: target / name for name in names}
    for dest in found.values():
        if dest.is_symlink() or (dest.exists() and not dest.is_file()):
            raise PairgateError(
                f"{command}: {dest} exists and is not a regular file; remove it first. "
                "Nothing was written."
            )
    return found


def atomic_write(dest: Path, data: bytes) -> None:
    """Write beside the destination, set the mode, rename over it; on any failure remove the
    temporary file."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, MODE)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_target(ctx: Context, target: Path, contents: dict[str, bytes], *, command: str) -> int:
    """Compare the four, byte for byte; read nothing else; never compare the mode."""
    drift = []
    for name, dest in destinations(target, list(contents), command=command).items():
        if not dest.exists():
            drift.append(f"missing: {dest}")
        elif dest.read_bytes() != contents[name]:
            drift.append(f"differs: {dest}")
    if drift:
        for line in drift:
            print(line, file=ctx.stdout)
        print(f"run {command} --target {target} to update them", file=ctx.stdout)
        return Exit.REFUSED
    print(f"in line: the {len(contents)} deployed hook files in {target}", file=ctx.stdout)
    return Exit.OK


def install_target(
    ctx: Context,
    target: Path,
    contents: dict[str, bytes],
    *,
    command: str,
    write: Callable[[Path, bytes], None] = atomic_write,
) -> int:
    found = destinations(target, list(contents), command=command)
    replaced: list[str] = []
    for index, (name, dest) in enumerate(found.items()):
        data = contents[name]
        if dest.exists() and dest.read_bytes() == data:
            if stat.S_IMODE(dest.stat().st_mode) != MODE:
                os.chmod(dest, MODE)
            print(f"in line: {dest}", file=ctx.stdout)
            continue
        try:
            write(dest, data)
        except OSError as exc:
            done = ", ".join(replaced) or "nothing"
            rest = ", ".join(list(found)[index:])
            raise PairgateError(
                f"{command}: PARTIAL install in {target}: writing {name} failed "
                f"({exc.strerror or exc}). Already replaced: {done}. Not written: {rest}. "
                f"Fix the cause and run {command} --target {target} again."
            ) from None
        replaced.append(name)
        print(f"wrote: {dest}", file=ctx.stdout)
    return Exit.OK


def deploy_hooks(
    *, ctx: Context, config: Config, target: Path | None, list: bool, check: bool
) -> int:
    """``deploy-hooks --target DIR [--check] | --list``."""
    command = f"{config.cli} deploy-hooks"
    if list:
        if check:
            raise UsageError(f"{command}: --check compares a --target; it does not go with --list")
        read_sources(config)  # a missing source is refused, not listed
        for name, path in sources().items():
            print(f"{name}\t{path}", file=ctx.stdout)
        return Exit.OK
    assert target is not None  # argparse requires --target or --list
    contents = read_sources(config)
    if check:
        return check_target(ctx, target, contents, command=command)
    return install_target(ctx, target, contents, command=command)
