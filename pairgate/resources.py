"""Where the files the package ships live, in a checkout and in an installed wheel alike.

In the checkout validators/, hooks/, agents/ and the CI components (templates/) sit at the top
of the repository (the layout the user asked for); the wheel carries them inside the package
(pyproject's force-include). These are the functions that know both places.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pairgate.standalone.errors import PairgateError

PACKAGE_DIR = Path(__file__).resolve().parent

ResourceDir = Literal["validators", "hooks", "agents"]


def resource_dir(name: ResourceDir) -> Path:
    """The directory holding the shipped ``validators``, ``hooks`` or ``agents``."""
    for candidate in (PACKAGE_DIR / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise PairgateError(
        f"pairgate: this installation has no {name}/ directory (looked in {PACKAGE_DIR} and "
        f"{PACKAGE_DIR.parent}); reinstall pairgate"
    )


def component_template(name: str) -> Path:
    """A CI component's template: ``templates/<name>/template.yml`` in the checkout, carried
    into the wheel as ``pairgate/components/<name>.yml`` (pyproject's force-include)."""
    for candidate in (
        PACKAGE_DIR / "components" / f"{name}.yml",
        PACKAGE_DIR.parent / "templates" / name / "template.yml",
    ):
        if candidate.is_file():
            return candidate
    raise PairgateError(
        f"pairgate: this installation has no {name} component (looked in "
        f"{PACKAGE_DIR / 'components'} and {PACKAGE_DIR.parent / 'templates'}); reinstall pairgate"
    )


def package_file(name: str) -> Path:
    """A standalone module of the package itself, such as ``ownership.py``."""
    return PACKAGE_DIR / name
