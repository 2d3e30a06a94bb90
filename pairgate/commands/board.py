"""the board issue"""

from __future__ import annotations

from typing import Any

from pairgate.commands._todo import not_yet


def board(**_: Any) -> int:
    raise not_yet("board", "the board issue")


def waiting(**_: Any) -> int:
    raise not_yet("waiting", "the board issue")


def sync(**_: Any) -> int:
    raise not_yet("sync", "the board issue")


def freeze(**_: Any) -> int:
    raise not_yet("freeze", "the board issue")


def thaw(**_: Any) -> int:
    raise not_yet("thaw", "the board issue")


def identity(**_: Any) -> int:
    raise not_yet("identity", "the board issue")


def impose(**_: Any) -> int:
    raise not_yet("impose", "the board issue")


def lift_check(**_: Any) -> int:
    raise not_yet("lift-check", "the board issue")


def graph(**_: Any) -> int:
    raise not_yet("graph", "the board issue")
