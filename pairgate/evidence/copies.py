"""Fresh copies of the pristine checkout, made ahead of the runs that take them and removed
behind them, each on a thread of its own.

A run's own cost beyond its test command is mostly copying the checkout and removing it again.
Here the next copies are made while a test command runs (``ahead`` of them: one per run in
flight, and one more), and a finished run's copy is removed while the next one runs, so on a
machine with a processor to spare neither is on the way of the runs.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from pairgate.evidence import gitops
from pairgate.evidence.one_run import remove


class Copies:
    def __init__(
        self, pristine: Path, work: Path, *, total: int, ahead: int, makers: int = 1
    ) -> None:
        self._pristine, self._work, self._total = pristine, work, total
        self._maker = ThreadPoolExecutor(max_workers=makers, thread_name_prefix="evidence-copy")
        self._remover = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evidence-remove")
        self._lock = threading.Lock()
        self._made = 0
        self._queue: deque[Future[Path]] = deque()
        with self._lock:
            for _ in range(min(ahead, total)):
                self._submit()

    def _submit(self) -> None:
        where = self._work / f"run-{self._made}"
        self._made += 1
        self._queue.append(self._maker.submit(self._copy, where))

    def _copy(self, where: Path) -> Path:
        where.mkdir()
        gitops.copy_checkout(self._pristine, where / "repo")
        return where

    def take(self) -> Path:
        """A directory holding a fresh copy at ``repo`` (waiting for it, if need be)."""
        with self._lock:
            if not self._queue:
                self._submit()
            future = self._queue.popleft()
            if self._made < self._total:
                self._submit()
        return future.result()

    def give_back(self, where: Path) -> None:
        """Remove a run's directory, behind the runs."""
        self._remover.submit(remove, where)

    def close(self) -> None:
        """Wait for the copies and removals in flight, and remove the copies nobody took."""
        self._maker.shutdown(wait=True, cancel_futures=True)
        for future in self._queue:
            if not future.cancelled() and future.exception() is None:
                self._remover.submit(remove, future.result())
        self._remover.shutdown(wait=True)
