"""Watchers as real programs (``pairgate watch --listen``) on one store, for the webhook and
fleet tests: started with a store and a deliver command, stopped with Ctrl-C (SIGINT) or killed.
What they pushed lands in a directory, one file per push."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.kit.names import ROOT
from tests.kit.run import PAIRGATE, clean_env
from tests.kit.world import Round

TOKEN = "hook-secret-0f3a"


class Watcher:
    def __init__(self, world: Round, home: Path, *argv: str, push_to: Path | None = None) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.store_url = world.store_url
        self.err = home / "stderr"
        self.out = home / "stdout"
        command = list(argv)
        if push_to is not None:
            push_to.mkdir(parents=True, exist_ok=True)
            script = (
                "import sys, uuid; "
                f"open({str(push_to)!r} + '/' + uuid.uuid4().hex, 'w').write(sys.stdin.read())"
            )
            command += ["--deliver-command", f"{sys.executable} -c {json.dumps(script)}"]
        env = clean_env(
            PYTHONPATH=str(ROOT),
            **world.env(None, PAIRGATE_TEST_WEBHOOK_TOKEN=TOKEN),
        )
        self.proc = subprocess.Popen(
            [*PAIRGATE, "watch", "--listen", "127.0.0.1:0", *command],
            env=env,
            stdout=self.out.open("w"),
            stderr=self.err.open("w"),
            start_new_session=True,  # its push commands die with it when it is killed
        )
        self.url = self._wait_for_url()

    def _wait_for_url(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"receiving GitLab webhooks at (\S+)", self.err.read_text())
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"the watcher ended: {self.err.read_text()}")
            time.sleep(0.02)
        raise AssertionError(f"the watcher did not start: {self.err.read_text()}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


@contextlib.contextmanager
def watchers(world: Round, root: Path, count: int, *argv: str, push_to: Path | None = None
             ) -> Iterator[list[Watcher]]:  # fmt: skip
    started = [Watcher(world, root / f"w{i}", *argv, push_to=push_to) for i in range(count)]
    try:
        yield started
    finally:
        for w in started:
            w.stop()


def register(world: Round, url: str, project: str = "acme%2Fapp") -> dict[str, Any]:
    """A project hook for the events the watcher takes, with the watcher's token."""
    flags = ("push_events", "merge_requests_events", "note_events", "pipeline_events", "job_events")
    return dict(
        world.sb.api(
            "POST",
            f"/projects/{project}/hooks",
            as_user="maintainer",
            json={"url": url, "token": TOKEN, **dict.fromkeys(flags, True)},
        )
    )


def pushes(where: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(where.glob("*"))] if where.exists() else []


def until(check: Any, timeout: float, step: float = 0.02) -> Any:
    """``check()`` once it is truthy, else fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            assert got, f"not within {timeout}s"
            return got
        time.sleep(step)
