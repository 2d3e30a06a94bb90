"""Value types: the records, facts and verdicts the fold and the gate pass around."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

__all__ = ["value_type"]

_Class = TypeVar("_Class")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def value_type(cls: type[_Class]) -> type[_Class]:
    """A dataclass of values: compared and hashed by its fields, and never assigned to once
    built. mypy holds the last (``frozen_default``: an assignment to a field is a type error,
    and ``bash scripts/check`` runs mypy). At run time it is a plain dataclass with the frozen
    one's hash, because ``dataclass(frozen=True)`` generates two more methods per class when
    the module is imported (the 31 value types cost each merge-hook decision about 4 ms) and
    sets every field through ``object.__setattr__``, which the fold pays for each record."""
    return dataclass(cls, unsafe_hash=True)
