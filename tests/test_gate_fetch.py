"""The gate jobs' fetch (the pairgate-fetch block the components share), run as deployed: the
script the mr-merge-check component writes, in an empty directory, isolated, in the cleared
environment pairgate_run gives it, the two tokens on its stdin. Each refusal of the instance it
is pointed at has its message and exit 2, and sends the read token nowhere else.

The gitlab-ci-local runs (tests/test_component.py and the rest) show the same script at work in
a whole job; these run it alone, in milliseconds, against the sandbox or a fake instance."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

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


@pytest.fixture(scope="module")
def unpinned() -> str:
    return fetch_script()


@pytest.fixture
def world(sandbox: RunningSandbox) -> World:
    publish(sandbox)
    return World(sandbox)


@pytest.fixture
def job(sandbox: RunningSandbox, world: World) -> dict[str, str]:
    """The variables pairgate_run passes a job of an approved merge request's pipeline."""
    return ci_variables(sandbox, approved_at_head(world), jobs=(MERGE_CHECK,))


@pytest.fixture
def read_token(sandbox: RunningSandbox) -> str:
    return str(sandbox.info["users"]["agents"]["read_token"])


def test_the_files_are_fetched_at_the_head_of_the_default_branch(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    result = fetch(tmp_path, unpinned, job, read_token=read_token)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(
        rf"{NAME}: fetched 4 files from acme/tracker at [0-9a-f]{{40}} \(the head of main\)\n",
        result.stdout,
    )
    for path, source in TRACKER_FILES.items():
        if path.endswith(("ownership.py", "config.json", "families.py", f"{MERGE_CHECK}.py")):
            assert (tmp_path / Path(path).name).read_bytes() == source.read_bytes(), path


def test_no_proxy_from_the_environment_is_used(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    """As a requests session with trust_env off: the instance is read directly."""
    with serving() as (url, proxy):
        proxies = {name: url for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY")}
        result = fetch(tmp_path, unpinned, {**job, **proxies}, read_token=read_token)
    assert result.returncode == 0, result.stderr
    assert proxy.seen == []


def test_url_variables_that_disagree_are_refused_before_any_request(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    with serving() as (url, fake):
        forged = {**job, "CI_API_V4_URL": f"{url}/api/v4"}
        result = fetch(tmp_path, unpinned, forged, read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == (
        f"{NAME}: refused: CI_API_V4_URL '{url}/api/v4' and CI_SERVER_URL "
        f"'{job['CI_SERVER_URL']}' disagree\n"
    )
    assert fake.seen == []


def test_an_instance_that_is_not_the_pinned_one_is_refused_before_any_request(
    tmp_path: Path, sandbox: RunningSandbox, job: dict[str, str], read_token: str
) -> None:
    pinned = fetch_script(**{"gitlab-url": sandbox.url})
    with serving() as (url, fake):
        result = fetch(tmp_path, pinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == (
        f"{NAME}: refused: CI_SERVER_URL '{url}' is not the instance this pipeline pins, "
        f"'{sandbox.url}'\n"
    )
    assert fake.seen == []
    assert fetch(tmp_path, pinned, job, read_token=read_token).returncode == 0


def test_plain_http_to_a_host_that_is_not_loopback_is_refused(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    forged = elsewhere(job, "http://gitlab.example.com")
    result = fetch(tmp_path, unpinned, forged, read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == (
        f"{NAME}: refused: 'http://gitlab.example.com' is not https; the read token goes over "
        "https only\n"
    )


@pytest.mark.parametrize("loopback", ["127.0.0.1", "localhost", "[::1]"])
def test_plain_http_to_another_host_named_after_a_loopback_userinfo_is_refused(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    loopback: str,
) -> None:
    """``http://localhost:@host`` begins as a loopback URL does, but names ``host`` (127.0.0.2
    stands for any host here): the connection, both tokens in clear, would go there."""
    with serving(host="127.0.0.2") as (url, fake):
        forged = url.replace("http://", f"http://{loopback}:@")
        fake.job = moved_job(sandbox, job, forged)
        result = fetch(tmp_path, unpinned, elsewhere(job, forged), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == (
        f"{NAME}: refused: CI_SERVER_URL {forged!r} is not an instance's URL (scheme://host, "
        "an optional port and path, no user, query or fragment)\n"
    )
    assert fake.seen == []


@pytest.mark.parametrize(
    "server",
    [
        "https://gitlab.example.com@127.0.0.1",
        "https://gitlab.example.com?private_token=x",
        "https://gitlab.example.com#",
        "https://gitlab.example.com/a b",
        "https://gitlab.example.com\n",
        "https://gitlab.example.com//127.0.0.1",
        "https://gitlab%2eexample.com",
        "https:///gitlab.example.com",
        "HTTPS://gitlab.example.com",
    ],
)
def test_a_server_url_of_another_shape_is_refused_before_any_request(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str, server: str
) -> None:
    """What the connection would make of it (its host, or its path without the query or the
    fragment) is not what the checks read: refused as it stands, with no traceback."""
    result = fetch(tmp_path, unpinned, elsewhere(job, server), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == (
        f"{NAME}: refused: CI_SERVER_URL {server!r} is not an instance's URL (scheme://host, "
        "an optional port and path, no user, query or fragment)\n"
    )


def test_a_job_on_another_instance_is_refused_before_the_read_token_is_sent(
    tmp_path: Path, sandbox: RunningSandbox, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    """A forged instance that answers GET /job with the real job (its URLs on the real one)."""
    with serving(job=moved_job(sandbox, job, sandbox.url)) as (url, fake):
        result = fetch(tmp_path, unpinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    web_url = moved_job(sandbox, job, sandbox.url)["web_url"]
    assert result.stderr == (
        f"{NAME}: refused: GET /job names its job {web_url!r}, not one on {url}\n"
    )
    assert [(r["path"], r["private"]) for r in fake.seen] == [("/api/v4/job", None)]


def test_a_redirect_of_get_job_is_not_followed(
    tmp_path: Path, sandbox: RunningSandbox, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    with serving() as (to, target), serving(job=moved_job(sandbox, job, "x")) as (url, fake):
        fake.status, fake.location = 302, f"{to}/api/v4/job"
        result = fetch(tmp_path, unpinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr.startswith(f"{NAME}: {url}/api/v4/job answered 302: ")
    assert target.seen == []


class _Redirecting(FakeInstance):
    """An instance that proves the job, then redirects every read of the tracker."""

    def do_GET(self) -> None:
        if self.path == "/api/v4/job":
            super().do_GET()
            return
        self.seen.append({"path": self.path, "private": self.headers.get("PRIVATE-TOKEN")})
        self.send_response(301)
        self.send_header("Location", f"{self.location}{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_a_redirect_of_a_read_is_not_followed_so_the_read_token_stays_on_the_instance(
    tmp_path: Path, sandbox: RunningSandbox, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    with serving() as (to, target), serving(kind=_Redirecting) as (url, fake):
        fake.job, fake.location = moved_job(sandbox, job, url), to
        result = fetch(tmp_path, unpinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    project = f"{url}/api/v4/projects/acme%2Ftracker"
    assert result.stderr == f"{NAME}: {project} answered 301: \n"
    assert target.seen == []
    assert not list(tmp_path.glob("*.json"))  # nothing fetched


def test_an_error_answer_is_refused_with_its_status_and_body(
    tmp_path: Path, sandbox: RunningSandbox, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    sandbox.fault(path=r"/repository/files/.*automation_mr_families\.py/raw", status=500)
    result = fetch(tmp_path, unpinned, job, read_token=read_token)
    assert result.returncode == 2
    assert re.fullmatch(
        rf"{NAME}: {re.escape(sandbox.api_url)}/projects/acme%2Ftracker/repository/files/"
        r'gate%2Fautomation_mr_families\.py/raw answered 500: \{"message": ?"500 Internal '
        r'Server Error"\}\n',
        result.stderr,
    ), result.stderr
    assert result.stdout == ""


def test_a_dropped_connection_is_refused(
    tmp_path: Path, sandbox: RunningSandbox, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    sandbox.fault(path=r"/repository/branches/", drop=True)
    result = fetch(tmp_path, unpinned, job, read_token=read_token)
    assert result.returncode == 2
    branch = f"{sandbox.api_url}/projects/acme%2Ftracker/repository/branches/main"
    assert re.fullmatch(rf"{NAME}: cannot read {re.escape(branch)}: \w+\n", result.stderr)


def test_an_answer_that_is_no_json_object_is_refused(
    tmp_path: Path, unpinned: str, job: dict[str, str], read_token: str
) -> None:
    with serving(job=["not", "a", "job"]) as (url, _):  # type: ignore[arg-type]
        result = fetch(tmp_path, unpinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == f"{NAME}: {url}/api/v4/job answered 200 with no JSON object\n"


class _Tracker(FakeInstance):
    """An instance that proves the job, then answers for a tracker: ``answers`` by path."""

    answers: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        if self.path not in self.answers:
            super().do_GET()
            return
        self.seen.append({"path": self.path, "private": self.headers.get("PRIVATE-TOKEN")})
        body = json.dumps(self.answers[self.path]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        ({"": {"id": 1, "default_branch": None}}, " answered with no default branch"),
        ({"": {"id": 1}}, " answered with no default branch"),
        (
            {"": {"default_branch": "main"}, "/repository/branches/main": {"commit": None}},
            "/repository/branches/main answered with no commit id",
        ),
        (
            {"": {"default_branch": "main"}, "/repository/branches/main": {"commit": "main"}},
            "/repository/branches/main answered with no commit id",
        ),
    ],
    ids=["an-empty-repository", "no-default-branch", "no-commit", "a-commit-that-is-no-object"],
)
def test_a_tracker_answer_without_what_the_fetch_needs_is_refused_by_name(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    answers: dict[str, Any],
    says: str,
) -> None:
    """A tracker whose repository is empty (GitLab's default_branch is then null), or an
    answer short of its field: exit 2 with a sentence, not a traceback."""
    project = "/api/v4/projects/acme%2Ftracker"
    with serving(kind=_Tracker) as (url, fake):
        fake.job = moved_job(sandbox, job, url)
        fake.answers = {f"{project}{path}": answer for path, answer in answers.items()}
        result = fetch(tmp_path, unpinned, elsewhere(job, url), read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == f"{NAME}: {url}{project}{says}\n"
    assert result.stdout == ""


@pytest.fixture
def private_instance(tmp_path: Path) -> Iterator[tuple[str, type[FakeInstance], Path]]:
    with serving_tls(tmp_path) as served:
        yield served


def test_an_instance_with_a_private_ca_is_read_with_the_jobs_bundle_only(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    private_instance: tuple[str, type[FakeInstance], Path],
) -> None:
    """The components hand the job CI_SERVER_TLS_CA_FILE as REQUESTS_CA_BUNDLE; without it,
    certifi's bundle does not trust the instance and nothing is sent."""
    url, fake, ca = private_instance
    fake.job = moved_job(sandbox, job, url)
    work = tmp_path / "work"
    work.mkdir()
    refused = fetch(work, unpinned, elsewhere(job, url), read_token=read_token)
    assert refused.returncode == 2
    assert re.fullmatch(rf"{NAME}: cannot read {url}/api/v4/job: SSL\w*Error\n", refused.stderr)
    assert fake.seen == []
    bundled = {**elsewhere(job, url), "REQUESTS_CA_BUNDLE": str(ca)}
    result = fetch(work, unpinned, bundled, read_token=read_token)
    # The job is proven over TLS; the fake holds no tracker, so the next read is its 404.
    assert result.stderr == f"{NAME}: {url}/api/v4/projects/acme%2Ftracker answered 404: \n"
    assert [r["private"] for r in fake.seen] == [None, read_token]


@pytest.mark.parametrize(
    ("host", "san"),
    [("127.0.0.1", "gitlab.example.com"), ("localhost", None)],
    ids=["for-another-name", "named-in-its-common-name-only"],
)
def test_a_certificate_the_jobs_bundle_trusts_but_not_for_the_instance_is_refused(
    tmp_path: Path,
    sandbox: RunningSandbox,
    unpinned: str,
    job: dict[str, str],
    read_token: str,
    host: str,
    san: str | None,
) -> None:
    """A host on the way to the instance with a certificate from the CA the job trusts, made
    out to another name, or naming the instance in its common name only (matched by the
    subject alternative name or not at all, as urllib3): nothing is sent to it."""
    work = tmp_path / "work"
    work.mkdir()
    with serving_tls(tmp_path, name=host, san=san) as (served, fake, ca):
        url = served.replace("127.0.0.1", host)
        fake.job = moved_job(sandbox, job, url)
        bundled = {**elsewhere(job, url), "REQUESTS_CA_BUNDLE": str(ca)}
        result = fetch(work, unpinned, bundled, read_token=read_token)
    assert result.returncode == 2
    assert result.stderr == f"{NAME}: cannot read {url}/api/v4/job: SSLCertVerificationError\n"
    assert fake.seen == []


# -- the merge-audit job's fetch: its own script, the read token in the job's environment ----------


@pytest.fixture(scope="module")
def audit_script() -> str:
    return audit_fetch_script()


def test_the_audit_fetches_its_three_files_directly(
    tmp_path: Path, sandbox: RunningSandbox, world: World, read_token: str, audit_script: str
) -> None:
    with serving() as (url, proxy):
        proxies = {name: url for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY")}
        result = audit_fetch(tmp_path, audit_script, sandbox.api_url, read_token, **proxies)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("merge-audit: fetched 3 files from acme/tracker at ")
    assert proxy.seen == []
    assert (tmp_path / "ownership.py").read_bytes() == (
        ROOT / "pairgate" / "ownership.py"
    ).read_bytes()


@pytest.mark.parametrize("shape", ["http://{}", "http://localhost:@{}", "https://{}#"])
def test_the_audit_sends_its_read_token_in_clear_to_no_host_but_loopback(
    tmp_path: Path, read_token: str, audit_script: str, shape: str
) -> None:
    """The audit that runs next refuses plain http to a host that is not loopback; its fetch,
    which runs first with the same token, refuses it too, and any URL the connection would
    read otherwise than the check (127.0.0.2 stands for any host here)."""
    with serving(host="127.0.0.2") as (url, fake):
        api = shape.format(url.removeprefix("http://")) + "/api/v4"
        result = audit_fetch(tmp_path, audit_script, api, read_token)
    assert result.returncode == 2  # could not decide
    assert result.stderr == (
        f"merge-audit: refused: CI_API_V4_URL {api!r} is not an instance's API URL over https "
        "(plain http to loopback only; scheme://host, an optional port and path, no user, query "
        "or fragment)\n"
    )
    assert fake.seen == []


def test_the_audit_without_an_api_url_is_refused_by_name(
    tmp_path: Path, read_token: str, audit_script: str
) -> None:
    result = audit_fetch(tmp_path, audit_script, None, read_token)
    assert result.returncode == 2  # could not decide, not a KeyError's traceback
    assert result.stderr.startswith("merge-audit: refused: CI_API_V4_URL '' is not an instance's")


@pytest.mark.parametrize("token", ["glpat-x\r\nX-Sudo: root", "glpat-x\n folded"])
def test_the_audit_sends_no_read_token_with_a_line_break_nor_names_it(
    tmp_path: Path, audit_script: str, token: str
) -> None:
    """http.client would send it folded, or refuse it naming it in its error (a value with a
    line break cannot be masked in the job log); requests refuses it before sending anything."""
    with serving() as (url, fake):
        result = audit_fetch(tmp_path, audit_script, f"{url}/api/v4", token)
    assert result.returncode == 2  # could not decide
    assert result.stderr == (
        "merge-audit: the CI variable AUDIT_READ_TOKEN (input read-token-variable) holds a line "
        "break, which no header can carry: it is not sent\n"
    )
    assert fake.seen == []


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        ({"": ["acme/tracker"]}, " answered 200 with no JSON object"),
        ({"": {"id": 1, "default_branch": None}}, " answered with no default branch"),
        (
            {"": {"default_branch": "main"}, "/repository/branches/main": {"commit": None}},
            "/repository/branches/main answered with no commit id",
        ),
    ],
    ids=["no-json-object", "an-empty-repository", "no-commit"],
)
def test_the_audit_refuses_a_tracker_answer_without_what_it_needs_by_name(
    tmp_path: Path, read_token: str, audit_script: str, answers: dict[str, Any], says: str
) -> None:
    project = "/api/v4/projects/acme%2Ftracker"
    with serving(kind=_Tracker) as (url, fake):
        fake.answers = {f"{project}{path}": answer for path, answer in answers.items()}
        result = audit_fetch(tmp_path, audit_script, f"{url}/api/v4", read_token)
    assert result.returncode == 2  # could not decide
    assert result.stderr == f"merge-audit: {url}{project}{says}\n"
    assert result.stdout == ""


def test_the_audit_follows_no_redirect_with_its_read_token(
    tmp_path: Path, read_token: str, audit_script: str
) -> None:
    with serving() as (to, target), serving(kind=_Redirecting) as (url, fake):
        fake.location = to
        result = audit_fetch(tmp_path, audit_script, f"{url}/api/v4", read_token)
    assert result.returncode == 2  # could not decide
    assert result.stderr == f"merge-audit: {url}/api/v4/projects/acme%2Ftracker answered 301: \n"
    assert [r["private"] for r in fake.seen] == [read_token]
    assert target.seen == []


def test_the_audit_refuses_an_error_answer_and_a_dropped_connection(
    tmp_path: Path, sandbox: RunningSandbox, world: World, read_token: str, audit_script: str
) -> None:
    sandbox.fault(path=r"/repository/files/.*ownership\.py/raw", status=500)
    result = audit_fetch(tmp_path, audit_script, sandbox.api_url, read_token)
    assert result.returncode == 2
    raw = f"{sandbox.api_url}/projects/acme%2Ftracker/repository/files/gate%2Fownership.py/raw"
    assert re.fullmatch(
        rf"merge-audit: {re.escape(raw)} answered 500: \{{\"message\": ?\"500 Internal Server "
        r"Error\"\}\n",
        result.stderr,
    ), result.stderr
    sandbox.fault(path=r"/repository/branches/", drop=True)
    result = audit_fetch(tmp_path, audit_script, sandbox.api_url, read_token)
    assert result.returncode == 2
    branch = f"{sandbox.api_url}/projects/acme%2Ftracker/repository/branches/main"
    assert re.fullmatch(rf"merge-audit: cannot read {re.escape(branch)}: .+\n", result.stderr)
