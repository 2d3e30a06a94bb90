"""A host that answers as a GitLab instance would, or not: the URL variables of a gate job can
name it, and the tests see what it was sent (which path, with which token)."""

from __future__ import annotations

import contextlib
import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class FakeInstance(http.server.BaseHTTPRequestHandler):
    """Answers GET /job as GitLab would (a copy of the real answer, its URLs moved here, with
    its Content-Length); records every request and its credentials, and answers 404 to
    everything else."""

    seen: list[dict[str, Any]]
    job: dict[str, Any] | None
    status: int = 200  # what GET /job answers with, when it answers a job
    retry_after: str | None = None  # and the Retry-After it sends
    location: str | None = None  # and the Location

    def do_GET(self) -> None:
        self.seen.append(
            {
                "path": self.path,
                "private": self.headers.get("PRIVATE-TOKEN"),
                "job": self.headers.get("JOB-TOKEN"),
            }
        )
        body = json.dumps(self.job).encode() if self.path == "/api/v4/job" and self.job else b""
        self.send_response(self.status if body else 404)
        self.send_header("Content-Type", "application/json")
        if self.retry_after is not None:
            self.send_header("Retry-After", self.retry_after)
        if self.location is not None:
            self.send_header("Location", self.location)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serving(
    job: dict[str, Any] | None = None,
    tls: ssl.SSLContext | None = None,
    kind: type[FakeInstance] = FakeInstance,
    host: str = "127.0.0.1",
) -> Iterator[tuple[str, type[FakeInstance]]]:
    """A fake of its own (a ``kind``), served on ``host`` (over ``tls`` when given): (its URL,
    its handler class)."""
    handler = type("Fake", (kind,), {"seen": [], "job": job})
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://{host}:{server.server_address[1]}", handler
    finally:
        server.shutdown()


def private_ca(
    directory: Path, name: str = "127.0.0.1", san: str | None = "127.0.0.1"
) -> tuple[Path, Path, Path]:
    """A CA of its own, and a certificate it signed for 127.0.0.1 (as an instance with a
    private CA has, which the runner names in CI_SERVER_TLS_CA_FILE): (CA, cert, key). The
    certificate's common name is ``name``, its subject alternative name ``san`` (an address or
    a DNS name; None: none)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key: Any, issuer: Any, signer: Any, ca: bool) -> Any:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca and san is not None:
            try:
                alternative: Any = x509.IPAddress(ipaddress.ip_address(san))
            except ValueError:
                alternative = x509.DNSName(san)
            extension = x509.SubjectAlternativeName([alternative])
            builder = builder.add_extension(extension, critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "a private CA")])
    ca = certificate("a private CA", ca_key, ca_name, ca_key, True)
    leaf = certificate(name, leaf_key, ca_name, ca_key, False)
    paths = directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@contextlib.contextmanager
def serving_tls(
    directory: Path,
    name: str = "127.0.0.1",
    san: str | None = "127.0.0.1",
    kind: type[FakeInstance] = FakeInstance,
) -> Iterator[tuple[str, type[FakeInstance], Path]]:
    """A fake instance (a ``kind``) over HTTPS, its certificate (``name`` and ``san``, as
    private_ca makes them) from a private CA made in ``directory``: (its URL, its handler
    class, the CA's certificate)."""
    ca, cert, key = private_ca(directory, name=name, san=san)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serving(tls=context, kind=kind) as (url, handler):
        yield url, handler, ca
