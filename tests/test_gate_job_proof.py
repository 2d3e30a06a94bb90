"""What a gate job's credentials prove (GET /job with its job token), and each refusal when a CI
variable disagrees with it: exit 2, "could not decide", with a message naming the variable. The
validators run in-process (validator_main) against the sandbox, in the environment a running
job of a sandbox merge request pipeline has."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairgate.sandbox.testing import RunningSandbox
from pairgate.standalone.ci_job import NotProven, read_job
from pairgate.standalone.doors import validator_main
from pairgate.standalone.errors import Context
from pairgate.standalone.gitlab import read_retry
from tests.kit.fake_instance import FakeInstance, serving, serving_tls
from tests.kit.gate_cases import approved_at_head, ci_variables, never_approved
from tests.kit.names import FIXTURE_CONFIG, mr_path
from tests.kit.world import World

MERGE_CHECK = "validate-mr-merge-check"
FAILS_CLOSED = "validate-mr-merge-check: could not decide; this job fails closed.\n"


def job_env(sandbox: RunningSandbox, mr: tuple[str, int], **change: str) -> dict[str, str]:
    return {
        "PAIRGATE_CONFIG": str(FIXTURE_CONFIG),
        "GATE_READ_TOKEN": sandbox.info["users"]["agents"]["read_token"],
        **ci_variables(sandbox, mr, jobs=(MERGE_CHECK,)),
        **change,
    }


def validate(env: dict[str, str], *argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = list(argv) or ["--read-token-variable", "GATE_READ_TOKEN"]
    code = validator_main(
        MERGE_CHECK, args, Context(env=env, stdout=out, stderr=err), stdin=io.StringIO(stdin)
    )
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def world(sandbox: RunningSandbox) -> World:
    return World(sandbox)


def test_an_approved_merge_request_passes_as_its_job_token_proves_it(
    sandbox: RunningSandbox, world: World
) -> None:
    mr = approved_at_head(world)
    env = job_env(sandbox, mr)
    code, out, err = validate(env)
    assert (code, err) == (0, ""), err
    assert out.startswith(
        f"{MERGE_CHECK}: acme/app!{mr[1]} at {env['CI_COMMIT_SHA']} (pipeline "
        f"{env['CI_PIPELINE_ID']} on {sandbox.url}, as the job token proves)\n"
    )
    assert "\npassed: " in out and "may merge: acme-review approved its head" in out


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CI_MERGE_REQUEST_IID", "{victim}", "CI_MERGE_REQUEST_IID is {victim}, but the job "
         "token proves the merge request {iid}"),
        ("CI_MERGE_REQUEST_PROJECT_PATH", "outside/app", "CI_MERGE_REQUEST_PROJECT_PATH is "
         "'outside/app', but the job token proves the project 'acme/app'"),
        ("CI_COMMIT_SHA", "0" * 40, f"CI_COMMIT_SHA is '{'0' * 40}', but the job token proves "
         "the commit"),
        ("CI_PROJECT_ID", "4", "CI_PROJECT_ID is 4, but the job token proves the project id 2"),
        ("CI_MERGE_REQUEST_PROJECT_ID", "4", "CI_MERGE_REQUEST_PROJECT_ID is 4, but the job "
         "token proves the project id 2"),
        ("CI_PIPELINE_ID", "1", "CI_PIPELINE_ID is 1, but the job token proves the pipeline"),
        ("CI_API_V4_URL", "https://elsewhere.example/api/v4", "CI_API_V4_URL is "
         "'https://elsewhere.example/api/v4' but CI_SERVER_URL is"),
    ],
)  # fmt: skip
def test_a_variable_that_disagrees_with_the_job_token_decides_nothing(
    sandbox: RunningSandbox, world: World, variable: str, value: str, says: str
) -> None:
    victim = approved_at_head(world)  # what an attack would have the job judge instead
    mr = never_approved(world)
    fill = {"victim": str(victim[1]), "iid": str(mr[1])}
    env = job_env(sandbox, mr, **{variable: value.format(**fill)})
    code, out, err = validate(env)
    assert (code, out) == (2, "")
    assert err.startswith(FAILS_CLOSED)
    assert says.format(**fill) in err, err


def test_a_pinned_instance_is_the_only_one_the_job_runs_on(
    sandbox: RunningSandbox, world: World
) -> None:
    env = job_env(sandbox, approved_at_head(world))
    code, _, err = validate(
        env, "--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", "https://gitlab.example"
    )
    assert code == 2
    assert (
        f"CI_SERVER_URL is {sandbox.url!r}, but this pipeline pins the instance "
        "'https://gitlab.example': the read token goes to the pinned instance only"
    ) in err
    pinned = validate(env, "--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sandbox.url)
    assert pinned[0] == 0, pinned[2]


def test_plain_http_to_a_host_that_is_not_loopback_is_refused(
    sandbox: RunningSandbox, world: World
) -> None:
    env = job_env(
        sandbox,
        approved_at_head(world),
        CI_SERVER_URL="http://gitlab.example",
        CI_API_V4_URL="http://gitlab.example/api/v4",
    )
    code, _, err = validate(env)
    assert code == 2 and "refusing to send a token over plain http" in err


# -- a host the URL variables name ------------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[tuple[str, type[FakeInstance]]]:
    with serving() as served:
        yield served


def test_without_a_pin_a_host_every_url_variable_names_can_answer_as_gitlab(
    sandbox: RunningSandbox, world: World, fake: tuple[str, type[FakeInstance]]
) -> None:
    """The residual risk the components' READMEs state: a host named consistently by every URL
    variable (which only whoever can set the job's variables can do) that answers GET /job as
    GitLab does is sent the read token. The pin of the tracker-held pipeline closes it."""
    url, handler = fake
    env = job_env(sandbox, approved_at_head(world))
    real = sandbox.http.get(f"{sandbox.api_url}/job", headers={"JOB-TOKEN": env["CI_JOB_TOKEN"]})
    handler.job = json.loads(real.text.replace(sandbox.url, url))
    moved = {**env, "CI_SERVER_URL": url, "CI_API_V4_URL": f"{url}/api/v4"}
    code, _, _ = validate(moved)
    assert code == 2  # the fake cannot serve the merge request: no pass
    assert any(r["private"] for r in handler.seen)  # but it was sent the read token
    handler.seen.clear()
    pinned = validate(
        moved, "--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sandbox.url
    )
    assert pinned[0] == 2 and "pins the instance" in pinned[2]
    assert handler.seen == []  # refused before any request


def test_a_host_that_cannot_answer_get_job_is_sent_no_read_token(
    sandbox: RunningSandbox, world: World, fake: tuple[str, type[FakeInstance]]
) -> None:
    url, handler = fake
    env = job_env(
        sandbox, approved_at_head(world), CI_SERVER_URL=url, CI_API_V4_URL=f"{url}/api/v4"
    )
    code, _, err = validate(env)
    assert code == 2
    assert f"GET {url}/api/v4/job answered HTTP 404: the job token proves no running job" in err
    # GET /job twice, never with the read token: http.client's first attempt, then requests',
    # which OneAttempt leaves a 404 to; and nothing after it.
    assert [(r["path"], r["private"]) for r in handler.seen] == [("/api/v4/job", None)] * 2


def test_the_configured_gitlab_url_variable_is_not_read_by_the_job(
    sandbox: RunningSandbox, world: World, fake: tuple[str, type[FakeInstance]]
) -> None:
    url, handler = fake
    env = job_env(sandbox, approved_at_head(world), PAIRGATE_TEST_GITLAB_URL=url)
    assert validate(env)[0] == 0
    assert handler.seen == []


# -- the job token's own job ------------------------------------------------------------------


def test_a_finished_jobs_token_proves_nothing(sandbox: RunningSandbox, world: World) -> None:
    mr = approved_at_head(world)
    env = job_env(sandbox, mr)
    job = sandbox.api("GET", f"/projects/acme%2Fapp/pipelines/{env['CI_PIPELINE_ID']}/jobs")[0]
    sandbox.set_job(job["id"], "success")
    code, _, err = validate(env)
    assert code == 2 and "answered HTTP 401: the job token proves no running job there" in err


@pytest.mark.parametrize(
    ("ref", "source"),
    [("main", "push"), ("refs/merge-requests/{iid}/head", "parent_pipeline")],
    ids=["branch pipeline", "child pipeline"],
)
def test_a_token_of_a_pipeline_that_is_not_the_merge_requests_cannot_stand_for_it(
    sandbox: RunningSandbox, world: World, ref: str, source: str
) -> None:
    mr = approved_at_head(world)
    env = job_env(sandbox, mr)
    other = sandbox.pipeline(
        "acme/app",
        ref.format(iid=mr[1]),
        [{"name": MERGE_CHECK, "status": "running"}],
        sha=env["CI_COMMIT_SHA"],
        source=source,
    )
    env.update(CI_JOB_TOKEN=other["jobs"][0]["token"], CI_PIPELINE_ID=str(other["id"]))
    code, _, err = validate(env)
    assert code == 2
    assert f"the job token's pipeline is a {source!r} pipeline for {ref.format(iid=mr[1])!r}" in err


def test_a_pipeline_behind_the_head_cannot_pass(sandbox: RunningSandbox, world: World) -> None:
    mr = approved_at_head(world)
    env = job_env(sandbox, mr)
    branch = sandbox.api("GET", mr_path(*mr))["source_branch"]
    new = world.push("acme/app", branch)
    code, _, err = validate(env)
    assert code == 2
    assert (
        f"this pipeline ran for {env['CI_COMMIT_SHA']}, but the head of acme/app!{mr[1]} is now "
        f"{new}: only a pipeline at the head decides"
    ) in err


def test_a_merged_results_pipeline_stands_for_the_head_it_merges(
    sandbox: RunningSandbox, world: World
) -> None:
    mr = approved_at_head(world)
    sandbox.api(
        "PUT", "/projects/acme%2Fapp", as_user="maintainer", json={"merge_pipelines_enabled": True}
    )
    sandbox.set_ci("acme/app", [{"name": MERGE_CHECK}])
    pipeline = sandbox.api("POST", f"{mr_path(*mr)}/pipelines")
    assert pipeline["ref"] == f"refs/merge-requests/{mr[1]}/merge"
    (job,) = sandbox.api("GET", f"/projects/acme%2Fapp/pipelines/{pipeline['id']}/jobs")
    token = sandbox.set_job(job["id"], "running")["token"]
    env = job_env(sandbox, mr)
    env.update(
        CI_JOB_TOKEN=token, CI_PIPELINE_ID=str(pipeline["id"]), CI_COMMIT_SHA=pipeline["sha"]
    )
    code, out, err = validate(env)
    assert (code, err) == (0, ""), err
    head = sandbox.api("GET", mr_path(*mr))["sha"]
    assert f"acme/app!{mr[1]} at {head}" in out and pipeline["sha"] != head


# -- the tokens on stdin (the components' form) -----------------------------------------------


def test_the_tokens_on_stdin_need_no_variable(sandbox: RunningSandbox, world: World) -> None:
    env = job_env(sandbox, approved_at_head(world))
    job_token, read_token = env.pop("CI_JOB_TOKEN"), env.pop("GATE_READ_TOKEN")
    code, _, err = validate(env, "--tokens-on-stdin", stdin=f"{job_token}\n{read_token}\n")
    assert (code, err) == (0, "")
    code, _, err = validate(env, "--tokens-on-stdin", stdin=f"{job_token}\n")
    assert code == 2 and "the read token (the second line on stdin) is empty" in err


def test_a_refused_read_token_is_named_as_it_was_passed(
    sandbox: RunningSandbox, world: World
) -> None:
    # The job reads GitLab with the read token it was given: an error about that token names
    # where it came from, never the <env_prefix>_TASK_API_TOKEN the job did not read.
    env = job_env(sandbox, approved_at_head(world), GATE_READ_TOKEN="not-a-token")
    code, _, err = validate(env)
    assert code == 2 and "HTTP 401" in err
    assert "The token in GATE_READ_TOKEN was refused: set GATE_READ_TOKEN to a token" in err
    assert "TASK_API_TOKEN" not in err
    job_token = env.pop("CI_JOB_TOKEN")
    code, _, err = validate(env, "--tokens-on-stdin", stdin=f"{job_token}\nnot-a-token\n")
    assert code == 2 and "HTTP 401" in err
    assert (
        "The token in the CI variable the component's read-token-variable input names was "
        "refused" in err
    )


@pytest.mark.parametrize("status", [201, 203, 500])
def test_get_job_takes_a_200_alone_and_asks_as_many_times_as_requests_would(
    fake: tuple[str, type[FakeInstance]], status: int
) -> None:
    """Only a 200 answers GET /job (requests' path says so for any other status); a status
    requests retries is asked the policy's attempts over, and once more: the first attempt."""
    url, handler = fake
    handler.job, handler.status = {"id": 1, "status": "running"}, status
    with pytest.raises(NotProven, match=f"answered HTTP {status}: the job token proves no"):
        read_job(f"{url}/api/v4", "a-job-token", retry=read_retry(attempts=2, backoff_factor=0))
    attempts = 1 + (3 if status == 500 else 1)
    assert [r["job"] for r in handler.seen] == ["a-job-token"] * attempts
    handler.seen.clear()
    handler.status = 200
    assert read_job(f"{url}/api/v4", "a-job-token") == handler.job
    assert len(handler.seen) == 1  # answered by its first attempt


@pytest.fixture
def tls_fake(tmp_path: Path) -> Iterator[tuple[str, type[FakeInstance], Path]]:
    """The fake GET /job over HTTPS, its certificate from a private CA: (url, handler, CA)."""
    with serving_tls(tmp_path) as served:
        yield served


def test_get_job_on_an_instance_with_a_private_ca_verifies_with_the_jobs_bundle(
    tls_fake: tuple[str, type[FakeInstance], Path],
) -> None:
    """The components hand the job CI_SERVER_TLS_CA_FILE as REQUESTS_CA_BUNDLE: GET /job is
    verified with it (its first attempt and requests' both), and fails closed without it."""
    url, handler, ca = tls_fake
    handler.job = {"id": 1, "status": "running"}
    assert read_job(f"{url}/api/v4", "a-job-token", bundle=str(ca)) == handler.job
    handler.status = 503  # the first attempt refused: requests asks, with the same bundle
    with pytest.raises(NotProven, match="answered HTTP 503"):
        read_job(f"{url}/api/v4", "a-job-token", bundle=str(ca), retry=read_retry(attempts=0))
    assert len(handler.seen) == 3  # one answered, then the first attempt and requests' one
    with pytest.raises(NotProven, match=r"no answer \(SSLError\)"):
        read_job(f"{url}/api/v4", "a-job-token", retry=read_retry(attempts=0))
    assert len(handler.seen) == 3  # certifi's bundle does not trust it: nothing was read


def test_a_validator_proves_its_job_with_the_ca_bundle_it_is_given(
    sandbox: RunningSandbox,
    world: World,
    tls_fake: tuple[str, type[FakeInstance], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, handler, ca = tls_fake
    env = job_env(sandbox, approved_at_head(world))
    real = sandbox.http.get(f"{sandbox.api_url}/job", headers={"JOB-TOKEN": env["CI_JOB_TOKEN"]})
    handler.job = json.loads(real.text.replace(sandbox.url, url))
    moved = {**env, "CI_SERVER_URL": url, "CI_API_V4_URL": f"{url}/api/v4"}
    code, _, err = validate(moved)
    assert code == 2 and f"GET {url}/api/v4/job: no answer (SSLError)" in err
    assert all(r["private"] is None for r in handler.seen)  # nothing past GET /job
    handler.seen.clear()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca))  # as the job's process has it
    code, _, err = validate({**moved, "REQUESTS_CA_BUNDLE": str(ca)})
    assert code == 2  # the fake serves no merge request: no pass
    assert "/job" not in err  # but the job was proven, and the reads went on
    assert handler.seen[0]["job"] == env["CI_JOB_TOKEN"] and any(r["private"] for r in handler.seen)


def test_get_job_waits_the_retry_after_its_first_attempt_is_given(
    fake: tuple[str, type[FakeInstance]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, handler = fake
    handler.job, handler.status, handler.retry_after = {"id": 1}, 503, "7"
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    with pytest.raises(NotProven, match="answered HTTP 503"):
        read_job(f"{url}/api/v4", "a-job-token", retry=read_retry(attempts=1, backoff_factor=0))
    # Before requests' first attempt, then before its retry: as requests alone waits once.
    assert (len(handler.seen), slept) == (3, [7.0, 7.0])


def test_get_job_follows_no_redirect_so_the_job_token_stays_on_the_instance(
    fake: tuple[str, type[FakeInstance]],
) -> None:
    url, handler = fake
    with serving(job={"id": 1}) as (elsewhere_url, elsewhere):
        handler.job, handler.status = {"id": 1}, 302
        handler.location = f"{elsewhere_url}/api/v4/job"
        with pytest.raises(NotProven, match="answered HTTP 302: the job token proves no"):
            read_job(f"{url}/api/v4", "a-job-token", retry=read_retry(attempts=0))
    assert len(handler.seen) == 2  # the first attempt's, then requests'
    assert elsewhere.seen == []
