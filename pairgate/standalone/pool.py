"""Reads side by side: a function over items through a bounded thread pool, the results in the
items' order. Every door loads the reader, and only the audit and the CLI's readers run threads,
so concurrent.futures is imported only when there are two items and two workers or more."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["pooled"]

T = TypeVar("T")
R = TypeVar("R")


def pooled(func: Callable[[T], R], items: Iterable[T], *, workers: int) -> list[R]:
    """``func`` over ``items``, at most ``workers`` at a time, results in the items' order."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [func(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(func, items))
