"""``pairgate --version``: the installed distribution's version, and only for the running copy."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from pairgate.standalone.errors import PairgateError

DISTRIBUTION = "pairgate"
RUNNING = Path(__file__).resolve().parent


def installed_version() -> str:
    """The installed version, refusing when nothing is installed or another copy is running."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise PairgateError(
            f"pairgate --version: no copy of pairgate is installed (this one runs from "
            f"{RUNNING}); install it with pip install . (or pip install -e .) first"
        ) from None
    installed = installed_package_dir(dist)
    if installed is None or installed != RUNNING:
        raise PairgateError(
            f"pairgate --version: the copy running ({RUNNING}) is not the installed one "
            f"({installed or 'unknown location'}); run the installed pairgate, or reinstall "
            f"from this checkout"
        )
    return dist.version


def installed_package_dir(dist: metadata.Distribution) -> Path | None:
    """Where the installed distribution's package lives: its checkout for an editable install
    (PEP 610's direct_url.json), else the site-packages directory its RECORD lists."""
    direct = dist.read_text("direct_url.json")
    if direct:
        info = json.loads(direct)
        if info.get("dir_info", {}).get("editable"):
            checkout = Path(unquote(urlparse(info["url"]).path))
            return (checkout / "pairgate").resolve()
    for file in dist.files or ():
        if file.as_posix() == "pairgate/__init__.py":
            return Path(str(dist.locate_file(file))).resolve().parent
    return None


def schema_checker() -> str:
    """Which schema check is active, in words (``--version --verbose`` and doctor say it): the
    fast check (jsonschema-rs) accepting first with jsonschema deciding every rejection, or
    jsonschema alone, and why. Reads nothing but this Python's installed packages."""
    from pairgate.standalone.config import CONFIG_SCHEMA
    from pairgate.standalone.records import RECORD_SCHEMAS
    from pairgate.standalone.schema_check import SchemaCheck

    authority = f"jsonschema {_installed('jsonschema') or '(version unknown)'}"
    fast = _installed("jsonschema-rs")
    if fast is None:
        return (
            f"{authority} alone: jsonschema-rs is not installed (it is a dependency where it "
            f"publishes wheels; elsewhere pip install 'pairgate[fast]' builds it)"
        )
    try:
        import jsonschema_rs  # noqa: F401
    except ImportError as exc:
        return f"{authority} alone: jsonschema-rs {fast} is installed but does not load ({exc})"
    schemas = [*RECORD_SCHEMAS.values(), CONFIG_SCHEMA]
    checked = sum(SchemaCheck(schema).has_fast_check for schema in schemas)
    if checked == 0:
        return f"{authority} alone: jsonschema-rs {fast} builds none of the schemas"
    some = "" if checked == len(schemas) else f" ({checked} of {len(schemas)} schemas)"
    return f"jsonschema-rs {fast} accepts first{some}, {authority} decides every rejection"


def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
