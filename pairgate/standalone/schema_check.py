"""The schema checks: jsonschema is the authority for every rejection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _draft_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for one of this file's schemas (all draft 2020-12). Formats are
    not asserted (jsonschema's default): no schema here uses ``format``."""
    import jsonschema

    return jsonschema.Draft202012Validator(schema)
