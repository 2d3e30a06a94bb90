"""The wheel's version: the release version on a tagged release, ``<version>+<hash>`` otherwise.

A hatchling metadata hook (pyproject.toml: ``[tool.hatch.metadata.hooks.custom]``). The release
version is written once, in that table's ``release-version``. A build is a release when HEAD
carries the tag ``v<release-version>`` and nothing the wheel ships differs from that commit;
every other build gets the content hash of what it ships (scripts/content-hash.sh) as its local
version label (GitLab's PyPI registry takes it, PyPI does not: RELEASING.md), so two different
payloads never share a version. A wheel built from an sdist keeps the sdist's version (hatchling
reads it from PKG-INFO and does not call this hook).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

SHIPPED = (
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "pairgate",
    "validators",
    "hooks",
    "agents",
    "templates/mr-ownership-gate/template.yml",
    "templates/mr-merge-check/template.yml",
    "templates/merge-audit/template.yml",
    "templates/mr-evidence/template.yml",
)
RELEASE = re.compile(r"\d+\.\d+\.\d+")


class VersionHook(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        release = str(self.config.get("release-version", ""))
        if not RELEASE.fullmatch(release):
            raise ValueError(f"release-version must be X.Y.Z, not {release!r}")
        root = Path(self.root)
        if is_tagged_release(root, release):
            metadata["version"] = release
        else:
            metadata["version"] = f"{release}+{content_hash(root)}"


def git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def is_tagged_release(root: Path, release: str) -> bool:
    if (git(root, "rev-parse", "--show-toplevel") or "").strip() != str(root.resolve()):
        return False
    tags = (git(root, "tag", "--points-at", "HEAD") or "").split()
    if f"v{release}" not in tags:
        return False
    # A tagged HEAD with edits to what ships is not that release.
    changes = git(root, "status", "--porcelain", "--untracked-files=all", "--", *SHIPPED)
    return changes == ""


def content_hash(root: Path) -> str:
    proc = subprocess.run(
        ["bash", str(root / "scripts" / "content-hash.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scripts/content-hash.sh failed: {proc.stderr.strip()}")
    return proc.stdout.strip()
