"""What a CI job's own credentials prove, and the variables checked against it.

A merge request's CI file can set any variable its jobs inherit, and YAML variables outrank
GitLab's predefined ones. So a gate job takes the instance and the merge request from what its
job token proves: ``GET /job`` with ``JOB-TOKEN`` names the job that owns the token, its
pipeline (id, project id, sha, ref, source) and its commit. Every CI variable the job was given
must agree with that answer, or the job decides nothing (exit 2).

What this proves, and what it cannot (the components' READMEs say it to operators):
- The token belongs to a running job of a merge request pipeline (``merge_request_event``, so
  not a child pipeline's job) in project ``project_id`` (whose path the job's ``web_url``
  names), at ``refs/merge-requests/<iid>/...`` and commit ``sha``, on the instance that
  answered.
- It does not prove which job of that pipeline holds the token, nor that the instance that
  answered is the one the runner serves: a host named consistently by every URL variable
  could answer the same. The URL the tracker-held pipeline pins (``--gitlab-url``) closes that;
  without a pin the URL variables only have to agree with each other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pairgate.standalone.errors import PairgateError
from pairgate.standalone.gitlab import TIMEOUT, GitLabError, read_retry
from pairgate.standalone.gitlab_env import checked_url
from pairgate.standalone.gitlab_once import OneAttempt, wait_as_requests_would

if TYPE_CHECKING:
    from urllib3.util.retry import Retry

__all__ = ["NotProven", "prove_job", "read_job"]

MR_REF = re.compile(r"refs/merge-requests/([1-9][0-9]*)/(head|merge|train)")


class NotProven(PairgateError):
    """A CI variable disagrees with what the job's credentials prove (exit 2)."""


class ProvenJob(NamedTuple):
    """A gate job's facts as its job token proved them."""

    server_url: str  # the instance, without /api/v4
    api_url: str
    job_id: int
    pipeline_id: int
    project_id: int
    project: str  # its full path, from the job's web_url
    iid: int
    ref: str
    sha: str  # the pipeline's commit
    head: str  # the merge request head it stands for (a merged results commit's second parent)


def instance_urls(env: Mapping[str, str], pinned: str) -> tuple[str, str]:
    """(server, api) from CI_SERVER_URL and CI_API_V4_URL, which must agree with each other and
    with ``pinned`` when one is given."""
    server = env.get("CI_SERVER_URL", "").strip().rstrip("/")
    api = env.get("CI_API_V4_URL", "").strip().rstrip("/")
    if not server or not api:
        raise NotProven(
            "CI_SERVER_URL and CI_API_V4_URL are not both set: this job runs in a GitLab "
            "merge request pipeline"
        )
    if api != f"{server}/api/v4":
        raise NotProven(
            f"CI_API_V4_URL is {api!r} but CI_SERVER_URL is {server!r}: the URL variables "
            "disagree, so neither says which instance this job runs on"
        )
    pin = pinned.strip().rstrip("/")
    if pin and server != pin:
        raise NotProven(
            f"CI_SERVER_URL is {server!r}, but this pipeline pins the instance {pin!r}: the "
            "read token goes to the pinned instance only"
        )
    checked_url(api, "CI_API_V4_URL")
    return server, api


def read_job(
    api_url: str, job_token: str, *, retry: Retry | None = None, bundle: str | None = None
) -> Mapping[str, Any]:
    """``GET /job`` with the job token, retried as every read is (``retry``: read_retry's),
    over HTTPS verified with ``bundle`` (the job's CA bundle), else certifi's. Its first
    attempt goes through http.client (gitlab_once.OneAttempt), as the gate's other reads do;
    requests asks again whatever that does not answer exactly as it would, after any
    Retry-After it was given. Neither reads a proxy or .netrc from the environment."""
    if not job_token.strip():
        raise NotProven("CI_JOB_TOKEN is empty: only a running job's own token proves its job")
    first = OneAttempt(
        _no_library, api_url, job_token.strip(), timeout=TIMEOUT, header="JOB-TOKEN",
        trust_env=False, ask_again_after_timeout=True, bundle=bundle,
    )  # fmt: skip
    try:
        answered = first.answered("job", {})
    except GitLabError:  # the connection timed out: requests would not ask again either
        raise NotProven(f"GET {api_url}/job: no answer (ConnectTimeout)") from None
    if answered is not None and answered[1] == 200 and isinstance(answered[0], dict):
        return answered[0]
    policy = retry if retry is not None else read_retry()
    wait_as_requests_would(first.refused, policy)
    return _read_job_again(api_url, job_token, policy, bundle)


def _no_library() -> Any:
    raise AssertionError("read_job asks requests itself")


def _read_job_again(
    api_url: str, job_token: str, policy: Retry, bundle: str | None
) -> Mapping[str, Any]:
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    session.trust_env = False  # no proxy or netrc from the environment
    session.verify = bundle or True
    session.mount("http://", HTTPAdapter(max_retries=policy))
    session.mount("https://", HTTPAdapter(max_retries=policy))
    try:
        # Not followed: GitLab answers GET /job itself, and the job token would go with a
        # redirect to wherever it points.
        response = session.get(
            f"{api_url}/job",
            headers={"JOB-TOKEN": job_token.strip()},
            timeout=TIMEOUT,
            allow_redirects=False,
        )
    except requests.RequestException as exc:
        raise NotProven(f"GET {api_url}/job: no answer ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise NotProven(
            f"GET {api_url}/job answered HTTP {response.status_code}: the job token proves no "
            "running job there"
        )
    try:
        job = response.json()
    except ValueError:
        raise NotProven(f"GET {api_url}/job answered with non-JSON") from None
    if not isinstance(job, dict):
        raise NotProven(f"GET {api_url}/job answered {job!r:.80}, not a job")
    return job


def _int(env: Mapping[str, str], name: str) -> int:
    value = env.get(name, "").strip()
    if not value.isdigit():
        raise NotProven(f"{name} is {value!r}, not a number: this job runs in a GitLab pipeline")
    return int(value)


def _agree(name: str, value: object, proven: object, what: str) -> None:
    if value != proven:
        raise NotProven(
            f"{name} is {value!r}, but the job token proves {what} {proven!r}: a CI variable "
            "disagrees with what the job's credentials prove"
        )


def checked_job(job: Mapping[str, Any], env: Mapping[str, str], server: str) -> ProvenJob:
    """The facts of ``GET /job``'s answer, once every CI variable agrees with them. Pure."""
    try:
        pipeline = job["pipeline"]
        pipeline_id, project_id = int(pipeline["id"]), int(pipeline["project_id"])
        ref, sha, source = str(pipeline["ref"]), str(pipeline["sha"]), pipeline.get("source")
        status, web_url, job_id = job.get("status"), str(job.get("web_url") or ""), int(job["id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise NotProven(f"GET /job answered without {exc}: not a job") from None
    path, _, number = web_url.removeprefix(f"{server}/").rpartition("/-/jobs/")
    if not web_url.startswith(f"{server}/") or not path or number != str(job_id):
        raise NotProven(
            f"GET /job names its job {web_url!r}, which is not job {job_id} of a project on "
            f"{server}"
        )
    if status != "running":
        raise NotProven(f"GET /job says the token's job is {status!r}, not running")
    match = MR_REF.fullmatch(ref)
    if source != "merge_request_event" or match is None:
        raise NotProven(
            f"the job token's pipeline is a {source!r} pipeline for {ref!r}, not a merge request "
            "pipeline of the project (refs/merge-requests/<iid>/...): a fork's pipeline, a "
            "branch pipeline and a child pipeline cannot stand for the merge request"
        )
    iid, kind = int(match.group(1)), match.group(2)
    _agree("CI_PIPELINE_ID", _int(env, "CI_PIPELINE_ID"), pipeline_id, "the pipeline")
    _agree("CI_PROJECT_ID", _int(env, "CI_PROJECT_ID"), project_id, "the project id")
    _agree(
        "CI_MERGE_REQUEST_PROJECT_ID",
        _int(env, "CI_MERGE_REQUEST_PROJECT_ID"),
        project_id,
        "the project id",
    )
    _agree("CI_MERGE_REQUEST_IID", _int(env, "CI_MERGE_REQUEST_IID"), iid, "the merge request")
    named = env.get("CI_MERGE_REQUEST_PROJECT_PATH", "").strip()
    _agree("CI_MERGE_REQUEST_PROJECT_PATH", named.casefold(), path.casefold(), "the project")
    _agree("CI_COMMIT_SHA", env.get("CI_COMMIT_SHA", "").strip(), sha, "the commit")
    head = sha
    if kind != "head":  # a merged results or train commit: the head is its second parent
        parents = list((job.get("commit") or {}).get("parent_ids") or [])
        if len(parents) != 2:
            raise NotProven(
                f"the {kind} pipeline's commit {sha} has {len(parents)} parents, not the two a "
                "merge of the head into the target has"
            )
        head = str(parents[1])
    return ProvenJob(
        server_url=server,
        api_url=f"{server}/api/v4",
        job_id=job_id,
        pipeline_id=pipeline_id,
        project_id=project_id,
        project=path,
        iid=iid,
        ref=ref,
        sha=sha,
        head=head,
    )


def prove_job(env: Mapping[str, str], job_token: str, *, pinned: str = "") -> ProvenJob:
    """The instance and the merge request pipeline this job's token proves."""
    server, api = instance_urls(env, pinned)
    # The CA bundle the job is given (the components pass CI_SERVER_TLS_CA_FILE as
    # REQUESTS_CA_BUNDLE), as requests reads it for the job's other reads.
    bundle = env.get("REQUESTS_CA_BUNDLE") or env.get("CURL_CA_BUNDLE") or None
    return checked_job(read_job(api, job_token, bundle=bundle), env, server)
