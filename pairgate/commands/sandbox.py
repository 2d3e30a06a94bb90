"""``pairgate sandbox``: serve a GitLab stand-in until SIGINT or SIGTERM (docs/sandbox.md)."""

from __future__ import annotations

import ipaddress
import json
import signal
import threading
from pathlib import Path

from pairgate.sandbox import defaults, kit
from pairgate.sandbox.server import Sandbox
from pairgate.standalone.config import validate_config
from pairgate.standalone.errors import Context, PairgateError


def serve(
    *,
    ctx: Context,
    host: str,
    port: int,
    state: Path | None,
    config_out: Path | None,
    with_example: bool = False,
) -> int:
    if with_example and state is not None and state.exists():
        raise PairgateError(
            f"pairgate sandbox: --with-example builds on the default world, and {state} holds "
            "a saved one; drop --state, or give a new state file. Nothing was started."
        )
    try:
        sandbox = Sandbox(host, port, state=state)
    except OSError as error:
        raise PairgateError(f"pairgate sandbox: cannot listen on {host}:{port}: {error}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise PairgateError(f"pairgate sandbox: unreadable --state {state}: {error}") from None
    if not _loopback(host):
        print(f"pairgate sandbox: warning: listening on {host}, beyond loopback", file=ctx.stderr)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    try:
        if with_example:
            sandbox.app.example = kit.add_example(sandbox.app)
        sandbox.start()
        if config_out is not None:
            config = defaults.pairgate_config(sandbox.app.world)
            validate_config(config, source=str(config_out))
            config_out.parent.mkdir(parents=True, exist_ok=True)
            kit.write_deployment(config_out, config)
        print(json.dumps(sandbox.info()), file=ctx.stdout, flush=True)
        stop.wait()  # the signal handler sets it; the wait wakes at once
    finally:
        sandbox.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
