"""Injected faults (``POST /-/sandbox/faults``) and the request log (``GET /-/sandbox/requests``)."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from pairgate.sandbox.httpd import Reply

FAULT_FIELDS = {
    "method", "path", "status", "retry_after", "delay_ms", "drop", "count", "after", "hold"
}  # fmt: skip
# How long a held request waits for the rest when delay_ms does not say.
HOLD_MS = 60_000


@dataclass
class Fault:
    path: re.Pattern[str]
    method: str | None = None
    status: int | None = None
    retry_after: int | None = None
    delay_ms: int = 0
    drop: bool = False
    count: int = 1
    after: bool = False  # act once the request was handled: the write happened, the reply is lost
    hold: int = 0  # hold each request until this many are held, then let them all go on at once

    def __post_init__(self) -> None:
        self._held = threading.Barrier(self.hold) if self.hold > 1 else None

    def wait(self) -> None:
        """The fault's wait before the request is handled: ``delay_ms``, or with ``hold`` until
        ``hold`` requests are held (at most ``delay_ms``, else HOLD_MS; then each goes on)."""
        if self._held is not None:
            with contextlib.suppress(threading.BrokenBarrierError):  # the rest never came
                self._held.wait(timeout=(self.delay_ms or HOLD_MS) / 1000)
        elif self.delay_ms:
            time.sleep(self.delay_ms / 1000)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        unknown = set(data) - FAULT_FIELDS
        if unknown:
            raise ValueError(f"unknown fault field {sorted(unknown)[0]!r}")
        if not isinstance(data.get("path"), str):
            raise ValueError("path (a regular expression) is required")
        fault = cls(
            path=re.compile(data["path"]),
            method=(data.get("method") or None) and str(data["method"]).upper(),
            status=data.get("status"),
            retry_after=data.get("retry_after"),
            delay_ms=int(data.get("delay_ms") or 0),
            drop=bool(data.get("drop")),
            count=int(data.get("count", 1)),
            after=bool(data.get("after")),
            hold=int(data.get("hold") or 0),
        )
        if fault.status is None and fault.retry_after is not None:
            fault.status = 429
        if fault.after and not (fault.drop or fault.status):
            raise ValueError("an after fault needs drop or status")
        if fault.count < 1:
            raise ValueError("count must be at least 1")
        if not 0 <= fault.hold <= fault.count:
            raise ValueError("hold must be between 0 and count: the held requests are counted")
        return fault

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method != method:
            return False
        return bool(self.path.search(path) or self.path.search(unquote(path)))

    def reply(self) -> Reply:
        """The reply a status fault sends, with GitLab's body for that status."""
        status = self.status or 500
        headers = {}
        if status == 429:
            headers["Retry-After"] = str(self.retry_after if self.retry_after is not None else 1)
            body: Any = {"message": "429 Too Many Requests"}
        elif status in (502, 503, 504):
            body = b"<html><body><h1>%d</h1>GitLab is not responding.</body></html>" % status
            headers["Content-Type"] = "text/html"
        else:
            body = {"message": f"{status} {_REASONS.get(status, 'Error')}"}
        return Reply(status, body, headers)


_REASONS = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    500: "Internal Server Error",
}


class Faults:
    """The armed faults, first match wins; each fires ``count`` times and is then spent."""

    def __init__(self) -> None:
        self.armed: list[Fault] = []

    def add(self, fault: Fault) -> None:
        self.armed.append(fault)

    def clear(self) -> None:
        self.armed.clear()

    def take(self, method: str, path: str) -> Fault | None:
        for fault in self.armed:
            if fault.matches(method, path):
                fault.count -= 1
                if fault.count <= 0:
                    self.armed.remove(fault)
                return fault
        return None
