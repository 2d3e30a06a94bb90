"""GitLab's webhooks in: ``watch --listen HOST:PORT``.

One small HTTP server in a thread of its own, with a store connection of its own. Each POST is
checked and stored, and answered, before any work: GitLab waits 10 s at most by default and
counts a slow answer as a failure (four in a row disable the hook for a while), so the answer
never waits on a read of GitLab. The watcher's loop is woken to turn it into observations.

- ``X-Gitlab-Token`` is compared in constant time (the digests of both, so not even the length
  shows). Missing or wrong: 401, counted in the store with the reason and the sender; the body
  is not read.
- A body that is not a JSON object: 400. Over 25 MB (more than GitLab sends): 413.
- Stored, or a redelivery of a stored one (``webhook.key``): 200. The store failing: 503, which
  GitLab records as a failed delivery; the watcher then ends with the store's message
  (``failure``, raised in its loop by ``check``), and the poll after its restart sees the change.

Each connection has a thread (a sender that keeps its connection open, as GitLab's HTTP client
may, holds up no other), and a sender silent for READ_TIMEOUT seconds is cut off. The store's
one connection is used under a lock: each use is one short insert. Every thread here is a daemon
and ``stop`` is bounded: a thread stuck on a database that stopped answering never keeps the
watcher from ending.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import select
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pairgate.standalone.errors import PairgateError, UsageError
from pairgate.watch import webhook
from pairgate.watch.store import Store, StoreError

READ_TIMEOUT = 10.0
STOP_WAIT = 2.0  # seconds ``stop`` waits for a handler to let go of the store's connection


def parse_address(text: str, cli: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(
            f"{cli} watch: --listen wants HOST:PORT, such as 127.0.0.1:8080, not {text!r}"
        )
    return host, int(port)


def same_secret(given: str | None, token: str) -> bool:
    if given is None:
        return False
    digest = hashlib.sha256
    return hmac.compare_digest(digest(given.encode()).digest(), digest(token.encode()).digest())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver

    def server_bind(self) -> None:
        if ":" in self.server_address[0]:
            self.socket.close()
            self.socket = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        super().server_bind()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in separate writes; without this, Nagle and delayed ACKs
        # cost 40 ms per hook on a kept-alive connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _answer(self, status: int, doc: dict[str, Any], *, close: bool = False) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        receiver = self.server.receiver
        given = self.headers.get("X-Gitlab-Token")
        if not same_secret(given, receiver.token):
            reason = "no X-Gitlab-Token" if given is None else "wrong X-Gitlab-Token"
            receiver.refused(reason, self.client_address[0])
            return self._answer(401, {"error": reason}, close=True)
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return self._answer(411, {"error": "Content-Length required"}, close=True)
        if int(length) > webhook.BODY_MAX:
            return self._answer(413, {"error": "body too large"}, close=True)
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return self._answer(400, {"error": "the body is not a JSON object"})
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            stored = receiver.store_hook(headers, body, raw.decode("utf-8", "replace"))
        except PairgateError as exc:
            return self._answer(503, {"error": exc.message})
        self._answer(200, {"stored": stored} if stored else {"duplicate": True})

    def do_GET(self) -> None:
        self._answer(405, {"error": "POST GitLab's webhooks here"})

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the store counts what came and what was refused; watch --status says it


class Receiver:
    """The server, on ``address``, storing into the store ``open_store`` opens in its thread."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        token: str,
        open_store: Callable[[], Store],
        now: Callable[[], float],
    ) -> None:
        self.token = token
        self.now = now
        # The loop's bell: a byte is written for each hook stored (or the store failing), and
        # ``wait`` selects on it together with the stores' sockets.
        self._bell, self._ring = socket.socketpair()
        self._ring.setblocking(False)
        self.failure: StoreError | None = None  # the store failing under a handler
        self._store = open_store()
        self._lock = threading.Lock()
        self._server = _Server(address, _Handler, bind_and_activate=True)
        self._server.receiver = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name="pairgate-hooks",
        )  # fmt: skip

    @property
    def url(self) -> str:
        host, port = str(self._server.server_address[0]), self._server.server_address[1]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}"

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        # A handler stuck in a query to a server that stopped answering holds the lock for
        # ever: then the connection is left to the process's exit, which closes it.
        if self._lock.acquire(timeout=STOP_WAIT):
            try:
                self._store.close()
            finally:
                self._lock.release()
        self._bell.close()
        self._ring.close()

    def _rang(self) -> None:
        with contextlib.suppress(BlockingIOError):  # a full bell has rung already
            self._ring.send(b"!")

    def wait(self, timeout: float, store: Store) -> None:
        """Until a hook is stored, the store fails here, either store's connection is ended by
        its server, or ``timeout`` seconds pass."""
        watched = [self._bell] + [
            fd for fd in (store.fileno(), self._store.fileno()) if fd is not None
        ]
        ready, _, _ = select.select(watched, [], [], timeout)
        if self._bell in ready:
            with contextlib.suppress(BlockingIOError):
                self._bell.recv(4096, socket.MSG_DONTWAIT)

    def check(self) -> None:
        """Raise the store's failure, met under a handler or found now: the receiver's
        connection is asked once when its server sent something while it was idle (which,
        idle, is the server ending it)."""
        if self.failure is None and self._lock.acquire(blocking=False):
            try:
                fd = self._store.fileno()
                if fd is not None and select.select([fd], [], [], 0)[0]:
                    self._store.ping()
            except StoreError as exc:
                self.failure = exc
            finally:
                self._lock.release()
        if self.failure is not None:
            raise self.failure

    def store_hook(self, headers: dict[str, str], body: dict[str, Any], raw: str) -> bool:
        try:
            with self._lock:
                stored = self._store.add_hook(
                    key=webhook.key(headers, body),
                    event=headers.get("x-gitlab-event", ""),
                    body=raw,
                    now=self.now(),
                )
        except StoreError as exc:
            # The loop ends the watcher with this message; a supervisor starts it again on a
            # fresh connection (a broken one never comes back).
            if self.failure is None:
                self.failure = exc
            self._rang()
            raise
        if stored:
            self._rang()
        return stored

    def refused(self, reason: str, remote: str) -> None:
        with self._lock, contextlib.suppress(PairgateError):  # the 401 goes out all the same
            self._store.refuse_hook(reason=reason, remote=remote, now=self.now())
