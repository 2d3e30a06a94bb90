"""The gate jobs' fetch and merge-audit's, run as deployed (tests/test_gate_fetch.py says how),
against a host that answers the tracker's files as GitLab never does: without end, a byte at a
time, framed by nothing but the connection's close, or cut short. Each is refused with exit 2
and a message naming the URL and the bound, and neither token; a whole answer, chunked or with
its Content-Length, still passes. An image that lacks what the fetch's TLS needs is named, not
a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import time
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote

import certifi
import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.fake_instance import FakeInstance, serving, serving_tls
from tests.kit.gate_cases import approved_at_head, ci_variables
from tests.kit.gate_fetch import (
    NAME,
    audit_fetch,
    audit_fetch_script,
    elsewhere,
    fetch,
    fetch_script,
    moved_job,
)
from tests.kit.gcl import MERGE_CHECK, TRACKER_FILES, publish
from tests.kit.names import ROOT
from tests.kit.world import World

MAX_BODY = 4 * 1024 * 1024  # the scripts' constant, which the messages name
PROJECT = "/api/v4/projects/acme%2Ftracker"
SHA = "0123456789abcdef0123456789abcdef01234567"
READER = f"{PROJECT}/repository/files/gate%2Fownership.py/raw"  # the first file read


class _Tracker(FakeInstance):
    """Proves the job (as FakeInstance), answers the tracker's project and branch, and serves
    its files from TRACKER_FILES as ``how`` says: ``length`` or ``chunked``, as GitLab frames
    them, or one of the ways a host in its place could answer instead."""

    protocol_version = "HTTP/1.1"
    how: ClassVar[str] = "length"

    def do_GET(self) -> None:
        path = self.path.partition("?")[0]
        answers = {PROJECT: {"default_branch": "main"}, f"{PROJECT}/repository/branches/main": {
            "commit": {"id": SHA}
        }}  # fmt: skip
        source = TRACKER_FILES.get(
            unquote(path.removeprefix(f"{PROJECT}/repository/files/").removesuffix("/raw"))
        )
        if path in answers:
            self._head(200, **{"Content-Length": str(len(json.dumps(answers[path])))})
            self.wfile.write(json.dumps(answers[path]).encode())
        elif source is None:
            super().do_GET()  # GET /job, or a 404
        else:
            try:
                getattr(self, self.how.replace("-", "_"))(source.read_bytes())
            except OSError:  # the fetch gave up and closed the connection
                self.close_connection = True

    def _head(self, status: int, **headers: str) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def length(self, body: bytes) -> None:
        self._head(200, **{"Content-Length": str(len(body))})
        self.wfile.write(body)

    def chunked(self, body: bytes) -> None:
        self._head(200, **{"Transfer-Encoding": "chunked"})
        for start in range(0, len(body), 50_000):
            self._chunk(body[start : start + 50_000])
        self.wfile.write(b"0\r\n\r\n")

    def close_framed(self, body: bytes) -> None:
        self._head(200, Connection="close")
        self.wfile.write(body)
        self.close_connection = True

    def endless_close_framed(self, body: bytes) -> None:
        self._head(200, Connection="close")
        while True:
            self.wfile.write(body)

    def endless_chunked(self, body: bytes) -> None:
        self._head(200, **{"Transfer-Encoding": "chunked"})
        while True:
            self._chunk(body)

    def too_long(self, body: bytes) -> None:
        self._head(200, **{"Content-Length": str(MAX_BODY + 1)})
        self.wfile.write(body)
        self.close_connection = True

    def cut_short(self, body: bytes) -> None:
        self._head(200, **{"Content-Length": str(len(body))})
        self.wfile.write(body[:1000])
        self.close_connection = True

    def cut_chunked(self, body: bytes) -> None:
        self._head(200, **{"Transfer-Encoding": "chunked"})
        self._chunk(body[:1000])
        self.close_connection = True

    def trickle_body(self, body: bytes) -> None:
        self._head(200, **{"Content-Length": str(len(body))})
        for byte in body:
            self.wfile.write(bytes([byte]))
            time.sleep(0.05)

    def trickle_headers(self, body: bytes) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while True:
            self.wfile.write(b"a")
            time.sleep(0.05)


def quick(script: str) -> str:
    """The script with a deadline of half a second, so that a trickle outlasts it quickly."""
    assert script.count("\nDEADLINE = 60  #") == 1
    return script.replace("\nDEADLINE = 60  #", "\nDEADLINE = 0.5  #")


REFUSALS = {
    "endless-chunked": f"refused: {{}} answered more than {MAX_BODY} bytes (4 MiB), the most "
    "the fetch reads of one file",
    "too-long": f"refused: {{}} answered more than {MAX_BODY} bytes (4 MiB), the most the "
    "fetch reads of one file",
    "close-framed": "refused: {} answered 200 with neither a Content-Length nor chunked "
    "encoding, so a cut connection would end its body unseen",
    "endless-close-framed": "refused: {} answered 200 with neither a Content-Length nor "
    "chunked encoding, so a cut connection would end its body unseen",
    "cut-short": "refused: {} answered 1000 of the "
    f"{TRACKER_FILES['gate/ownership.py'].stat().st_size} bytes its Content-Length announced: "
    "the connection was cut",
    "cut-chunked": "refused: {} ended its body early: the connection was cut",
    "trickle-body": "refused: {} did not answer in full within 0.5 seconds",
    "trickle-headers": "refused: {} did not answer in full within 0.5 seconds",
}


@pytest.fixture(scope="module")
def unpinned() -> str:
    return fetch_script()


@pytest.fixture(scope="module")
def audit_script() -> str:
    return audit_fetch_script()


@pytest.fixture
def job(sandbox: RunningSandbox) -> dict[str, str]:
    """The variables pairgate_run passes a job of an approved merge request's pipeline."""
    publish(sandbox)
    return ci_variables(sandbox, approved_at_head(World(sandbox)), jobs=(MERGE_CHECK,))


@pytest.fixture
def read_token(sandbox: RunningSandbox) -> str:
    return str(sandbox.info["users"]["agents"]["read_token"])


@pytest.fixture
def tracker() -> Iterator[tuple[str, type[_Tracker]]]:
    with serving(kind=_Tracker) as served:
        yield served  # type: ignore[misc]


def test_the_three_gate_components_carry_one_fetch() -> None:
    """These tests run mr-merge-check's copy; mr-ownership-gate's and mr-evidence's are the same
    text but for the job's name and the files it reads, so every bound holds in each."""

    def body(name: str) -> list[str]:
        text = (ROOT / "templates" / name / "template.yml").read_text(encoding="utf-8")
        found = re.search(r"<<'PAIRGATE_FETCH'\n(.*?)\n *PAIRGATE_FETCH\n", text, re.DOTALL)
        assert found is not None, name
        lines = found.group(1).splitlines()
        end = lines.index("      }")  # the end of FILES: the rest is one script
        assert lines[0] == f'      NAME = "{name}"', lines[0]
        return lines[end:]

    first, *rest = (body(n) for n in ("mr-merge-check", "mr-ownership-gate", "mr-evidence"))
    assert all(other == first for other in rest)
    assert any("MAX_BODY" in line for line in first) and any("DEADLINE" in line for line in first)


@pytest.mark.parametrize("how", REFUSALS)
def test_the_gate_refuses_an_answer_beyond_its_bounds_or_framed_by_the_close(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    tracker: tuple[str, type[_Tracker]],
    how: str,
) -> None:
    url, fake = tracker
    fake.job, fake.how = moved_job(sandbox, job, url), how
    started = time.monotonic()
    result = fetch(tmp_path, quick(unpinned), elsewhere(job, url), read_token=read_token)
    assert time.monotonic() - started < 10
    assert result.returncode == 2
    assert result.stderr == f"{NAME}: {REFUSALS[how].format(url + READER)}\n"
    assert read_token not in result.stderr and job["CI_JOB_TOKEN"] not in result.stderr
    assert not (tmp_path / "ownership.py").exists()


@pytest.mark.parametrize("how", REFUSALS)
def test_the_audit_refuses_an_answer_beyond_its_bounds_or_framed_by_the_close(
    tmp_path: Path,
    read_token: str,
    audit_script: str,
    tracker: tuple[str, type[_Tracker]],
    how: str,
) -> None:
    url, fake = tracker
    fake.how = how
    result = audit_fetch(tmp_path, quick(audit_script), f"{url}/api/v4", read_token)
    assert result.returncode == 2
    assert result.stderr == f"merge-audit: {REFUSALS[how].format(url + READER)}\n"
    assert read_token not in result.stderr
    assert not (tmp_path / "ownership.py").exists()


@pytest.mark.parametrize("how", ["length", "chunked"])
def test_a_whole_answer_with_its_length_or_chunked_is_fetched(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    audit_script: str,
    job: dict[str, str],
    read_token: str,
    tracker: tuple[str, type[_Tracker]],
    how: str,
) -> None:
    url, fake = tracker
    fake.job, fake.how = moved_job(sandbox, job, url), how
    gate = tmp_path / "gate"
    gate.mkdir()
    result = fetch(gate, unpinned, elsewhere(job, url), read_token=read_token)
    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout == f"{NAME}: fetched 4 files from acme/tracker at {SHA} (the head of main)\n"
    )
    audited = audit_fetch(tmp_path, audit_script, f"{url}/api/v4", read_token)
    assert (audited.returncode, audited.stderr) == (0, "")
    for directory in (gate, tmp_path):
        reader = (directory / "ownership.py").read_bytes()
        assert reader == TRACKER_FILES["gate/ownership.py"].read_bytes()
        assert len(reader) > 100_000  # more than one chunk, and far below the bound


@pytest.mark.parametrize("how", ["close-framed", "cut-short"])
def test_over_tls_a_body_framed_by_the_close_or_cut_short_is_refused(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    how: str,
) -> None:
    """Where a cut connection ends the body, the cut cannot be told from its end: refused."""
    work = tmp_path / "work"
    work.mkdir()
    with serving_tls(tmp_path, kind=_Tracker) as (url, fake, ca):
        fake.job, fake.how = moved_job(sandbox, job, url), how  # type: ignore[attr-defined]
        bundled = {**elsewhere(job, url), "REQUESTS_CA_BUNDLE": str(ca)}
        result = fetch(work, unpinned, bundled, read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == f"{NAME}: {REFUSALS[how].format(url + READER)}\n"


# -- an image without what TLS needs -------------------------------------------------------------


def image_python(directory: Path) -> Path:
    """A python3 with the standard library only (an environment of its own, no pip): its
    site-packages directory, where a test adds what the image has."""
    venv.create(directory, with_pip=False)
    return next(directory.glob("lib/python3*/site-packages"))


@pytest.fixture(scope="module")
def without_certifi(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("without-certifi")
    image_python(directory)
    return str(directory / "bin" / "python")


@pytest.fixture(scope="module")
def without_san_only(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A python3 with certifi whose ssl cannot match a certificate by its subject alternative
    name alone: SSLContext.hostname_checks_common_name a getter only, as ssl.py makes it when
    OpenSSL lacks X509_CHECK_FLAG_NEVER_CHECK_SUBJECT."""
    directory = tmp_path_factory.mktemp("without-san-only")
    site = image_python(directory)
    (site / "certifi").symlink_to(Path(certifi.__file__).parent)
    (site / "sitecustomize.py").write_text(
        "import ssl\nssl.SSLContext.hostname_checks_common_name = property(lambda self: True)\n",
        encoding="utf-8",
    )
    return str(directory / "bin" / "python")


NO_CERTIFI = (
    "the job image's python3 has no certifi, whose CA bundle verifies the instance when the "
    "runner sets no CI_SERVER_TLS_CA_FILE: install certifi in the image (pip install certifi)"
)


def no_san_only(python: str) -> str:
    version = subprocess.run(
        [python, "-I", "-c", "import ssl; print(ssl.OPENSSL_VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return (
        f"the job image's python3 uses {version}, which cannot match a certificate by its "
        "subject alternative name alone (hostname_checks_common_name): use an image whose "
        "python3 is built with OpenSSL 1.1.1 or later"
    )


def test_the_gate_without_certifi_is_refused_by_name_unless_the_runner_names_a_bundle(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    without_certifi: str,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with serving_tls(tmp_path, kind=_Tracker) as (url, fake, ca):
        fake.job = moved_job(sandbox, job, url)
        refused = fetch(work, unpinned, elsewhere(job, url), read_token=read_token,
                        python=without_certifi)  # fmt: skip
        assert fake.seen == []
        bundled = {**elsewhere(job, url), "REQUESTS_CA_BUNDLE": str(ca)}
        result = fetch(work, unpinned, bundled, read_token=read_token, python=without_certifi)
    assert refused.returncode == 2
    assert refused.stderr == f"{NAME}: {NO_CERTIFI}\n"
    assert (result.returncode, result.stderr) == (0, "")  # certifi is not needed then


def test_the_gate_with_an_openssl_that_checks_the_common_name_is_refused_by_name(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    without_san_only: str,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with serving_tls(tmp_path, kind=_Tracker) as (url, fake, ca):
        fake.job = moved_job(sandbox, job, url)
        for env in (elsewhere(job, url), {**elsewhere(job, url), "REQUESTS_CA_BUNDLE": str(ca)}):
            result = fetch(work, unpinned, env, read_token=read_token, python=without_san_only)
            assert result.returncode == 2
            assert result.stderr == f"{NAME}: {no_san_only(without_san_only)}\n"
        assert fake.seen == []


def test_the_audit_without_certifi_or_with_that_openssl_is_refused_by_name(
    tmp_path: Path,
    read_token: str,
    audit_script: str,
    without_certifi: str,
    without_san_only: str,
) -> None:
    with serving_tls(tmp_path, kind=_Tracker) as (url, fake, _):
        api = f"{url}/api/v4"
        refused = audit_fetch(tmp_path, audit_script, api, read_token, python=without_certifi)
        old = audit_fetch(tmp_path, audit_script, api, read_token, python=without_san_only)
        assert fake.seen == []
    assert refused.returncode == 2
    assert refused.stderr == (
        "merge-audit: the job image's python3 has no certifi, whose CA bundle verifies the "
        "instance: install certifi in the image (pip install certifi)\n"
    )
    assert old.returncode == 2
    assert old.stderr == f"merge-audit: {no_san_only(without_san_only)}\n"
