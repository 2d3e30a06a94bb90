"""Installing files into a deployment's directory: what deploy-hooks and deploy-agents share.

Every refusal comes before the first write: a target that is not a directory, a destination that
is not a regular file. Each file is written beside its destination and renamed over it, so a
reader never sees half a file; a write that fails anyway removes its temporary file and reports
the install as PARTIAL, naming what was already replaced. ``--check`` compares bytes only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from pairgate.standalone.errors import PairgateError

Writer = Callable[[Path, bytes], None]


def atomic_write(dest: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write beside the destination, set the mode, rename over it; on any failure remove the
    temporary file."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def destinations(command: str, target: Path, names: list[str]) -> dict[str, Path]:
    """name -> destination, once the target and every destination pass the refusals."""
    if not target.exists():
        raise PairgateError(
            f"{command}: the target {target} does not exist; create it first "
            f"(mkdir -p {target}). Nothing was written."
        )
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


def check(command: str, target: Path, files: Mapping[str, bytes]) -> list[str]:
    """What differs from ``files`` in ``target`` ("missing: ...", "differs: ..."); reads
    nothing else and never compares the mode."""
    drift = []
    for name, dest in destinations(command, target, list(files)).items():
        if not dest.exists():
            drift.append(f"missing: {dest}")
        elif dest.read_bytes() != files[name]:
            drift.append(f"differs: {dest}")
    return drift


def install(
    command: str,
    target: Path,
    files: Mapping[str, bytes],
    *,
    mode: int,
    again: str,
    fix_mode: bool = False,
    write: Writer | None = None,
) -> list[str]:
    """Write every file of ``files`` that differs, with ``mode``; a file in line keeps its
    bytes, and gets ``mode`` when ``fix_mode``. ``again`` is the command that repeats the
    install, for the PARTIAL message."""
    found = destinations(command, target, list(files))
    lines: list[str] = []
    replaced: list[str] = []
    for index, (name, dest) in enumerate(found.items()):
        data = files[name]
        if dest.exists() and dest.read_bytes() == data:
            if fix_mode and stat.S_IMODE(dest.stat().st_mode) != mode:
                os.chmod(dest, mode)
            lines.append(f"in line: {dest}")
            continue
        try:
            if write is None:
                atomic_write(dest, data, mode=mode)
            else:
                write(dest, data)
        except OSError as exc:
            done = ", ".join(replaced) or "nothing"
            rest = ", ".join(list(found)[index:])
            raise PairgateError(
                f"{command}: PARTIAL install in {target}: writing {name} failed "
                f"({exc.strerror or exc}). Already replaced: {done}. Not written: {rest}. "
                f"Fix the cause and run {again} again."
            ) from None
        replaced.append(name)
        lines.append(f"wrote: {dest}")
    return lines
