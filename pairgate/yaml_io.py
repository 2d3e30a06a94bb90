"""YAML as pairgate reads and writes it: PyYAML's safe loader and dumper, through libyaml where
PyYAML was built with it (its wheels are). The same documents, parsed and written in C: doctor
renders the tracker pipeline once per project it checks, and the sandbox's runner reads and
writes each pipeline's configuration several times, where the pure-Python parser was most of
their time."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["YAMLError", "dump", "load"]

YAMLError = yaml.YAMLError
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    """``yaml.safe_load``: a safe loader either way."""
    return yaml.load(text, Loader=_LOADER)


def dump(document: Any, *, sort_keys: bool = True) -> str:
    """``yaml.safe_dump``."""
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=sort_keys)
