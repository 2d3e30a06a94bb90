"""An adversarial corpus of merge request CI files, run by gitlab-ci-local against the sandbox,
two ways:

- **Tracker-held**: the pipeline GitLab runs when the project's CI/CD configuration file is
  ``<path>@<tracker>`` is the tracker's file (rendered here by deploy-pipeline, with the
  mr-evidence job, which the corpus cannot change either); the merge
  request's ``.gitlab-ci.yml`` only becomes its child pipeline. gitlab-ci-local 4.73.0 runs
  the tracker's file as the pipeline but not ``trigger: include: project`` (it warns that the
  child is a no-op), so each case runs the merge request's file a second time, as the child
  GitLab starts: the same commit, ``CI_PIPELINE_SOURCE`` ``parent_pipeline``, the merge
  request's variables and the project's (the read token among them), a job token of a
  pipeline of its own, and none of the tracker's YAML variables. Here: every gate job of the
  parent still runs, fetches the tracker's files at one commit, and fails the unapproved merge
  request, whatever the merge request's file says; and the child runs no gate job, reads
  nothing from GitLab and reaches no host the merge request chose.
- **Plain include**: the merge request's own file includes both components, as a project
  without the tracker-held pipeline does. The suite records which cases get past it.

Every case also checks that the read token never reaches a host the merge request chose (a
trap server the attacks point at), and that every Python the gate runs never sees a variable
the merge request set (a python3 that logs its argv and environment, one file a start, stands
for the image's). gitlab-ci-local runs no ``hooks:`` at all, so the default-hooks case holds
there trivially; what keeps GitLab from adding them is ``inherit: default: false``, asserted on
the rendered jobs.
"""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pairgate.sandbox.testing import RunningSandbox
from tests.kit.gate_cases import approved_at_head, ci_variables, ref
from tests.kit.gcl import (
    APPROVAL,
    GATE_INPUTS,
    MERGE_CHECK,
    MERGE_CHECK_INPUTS,
    RECORD,
    Pipeline,
    component_files,
    component_include,
    dump,
    publish,
    repository,
    run,
)
from tests.kit.names import FIXTURE_CONFIG, TRACKER
from tests.kit.run import run_cli
from tests.kit.world import World

pytestmark = pytest.mark.slow

JOBS = (RECORD, APPROVAL, MERGE_CHECK)
EVIDENCE = "rerun-mr-evidence"
TRACKER_FILE = ".tracker/pipeline.yml"
EVIL = {
    "evil/sitecustomize.py": "print('PWNED: sitecustomize')\nimport os\nos._exit(0)\n",
    "evil/requests.py": "print('PWNED: requests')\nimport os\nos._exit(0)\n",
    "evil/startup.py": "print('PWNED: startup')\n",
}
# What the merge request's file may set that the gate's Python must never see.
FORBIDDEN = (
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "LD_PRELOAD",
    "REQUESTS_CA_BUNDLE",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "PAIRGATE_TEST_GITLAB_URL",
)


@dataclass(frozen=True)
class Case:
    """One attack: what it adds to the merge request's CI file, and what each gate job shows
    under the plain include (PASS, FAIL, WARN, or absent)."""

    name: str
    batch: str  # cases of one batch share one CI file and one run
    adds: dict[str, Any] = field(default_factory=dict)
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # merged into gate jobs
    plain: dict[str, str] = field(default_factory=dict)  # the jobs it concerns, by status
    held: bool = True  # does the plain include hold?
    # The jobs the merge request's file runs as the tracker-held pipeline's child, by status.
    # None (the gate jobs admit merge request pipelines only): GitLab creates no child, "no
    # stages / jobs for this pipeline", and project-pipeline fails.
    child: dict[str, str] = field(default_factory=dict)


def each(change: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: change for name in JOBS}


TRAP = "http://127.0.0.1:{trap}"
CASES = [
    Case("redefine the record job's script", "scripts", jobs={RECORD: {"script": ["echo ok"]}},
         plain={RECORD: "PASS"}, held=False),
    Case("redefine the approval job's script", "scripts",
         jobs={APPROVAL: {"script": ["echo ok"]}}, plain={APPROVAL: "PASS"}, held=False),
    Case("redefine the merge-check job's script", "scripts",
         jobs={MERGE_CHECK: {"script": ["echo ok"]}}, plain={MERGE_CHECK: "PASS"}, held=False),
    Case("rules: [{when: never}]", "never", jobs=each({"rules": [{"when": "never"}]}),
         plain=dict.fromkeys(JOBS, "absent"), held=False),
    Case("allow_failure: true", "allowed", jobs=each({"allow_failure": True}),
         plain=dict.fromkeys(JOBS, "WARN"), held=False),
    Case("when: manual", "manual", jobs=each({"when": "manual"}),
         plain=dict.fromkeys(JOBS, "absent"), held=False),
    Case("variables: CI_MERGE_REQUEST_IID (an approved MR's)", "variables",
         adds={"variables": {"CI_MERGE_REQUEST_IID": "{victim}"}}),
    Case("variables: CI_API_V4_URL", "variables",
         adds={"variables": {"CI_API_V4_URL": TRAP + "/api/v4"}}),
    Case("variables: <env_prefix>_GITLAB_URL", "variables",
         adds={"variables": {"PAIRGATE_TEST_GITLAB_URL": TRAP}}),
    Case("variables: PYTHONPATH", "variables",
         adds={"variables": {"PYTHONPATH": "$CI_PROJECT_DIR/evil"}}),
    Case("variables: PYTHONSTARTUP", "variables",
         adds={"variables": {"PYTHONSTARTUP": "$CI_PROJECT_DIR/evil/startup.py"}}),
    Case("variables: LD_PRELOAD", "variables",
         adds={"variables": {"LD_PRELOAD": "/nonexistent/pwned.so"}}),
    Case("variables: REQUESTS_CA_BUNDLE", "variables",
         adds={"variables": {"REQUESTS_CA_BUNDLE": "$CI_PROJECT_DIR/evil/ca.pem"}}),
    Case("variables: HTTPS_PROXY (and HTTP_PROXY)", "variables",
         adds={"variables": {"HTTPS_PROXY": TRAP, "HTTP_PROXY": TRAP}}),
    Case("default: image", "default", adds={"default": {"image": "registry.invalid/pwned"}}),
    Case("default: services", "default", adds={"default": {"services": ["registry.invalid/db"]}}),
    Case("default: before_script", "default",
         adds={"default": {"before_script": ["echo PWNED: before_script", "exit 0"]}}),
    Case("default: hooks", "default",
         adds={"default": {"hooks": {"pre_get_sources_script": ["echo PWNED: hooks"]}}}),
    Case("workflow: rules that skip merge request pipelines", "workflow",
         adds={"workflow": {"rules": [
             {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"', "when": "never"},
             {"when": "always"},
         ]}}, plain=dict.fromkeys(JOBS, "absent"), held=False),
    Case("the include dropped", "dropped", plain=dict.fromkeys(JOBS, "absent"), held=False,
         child={"own-job": "PASS"}),
    Case("job variables: CI_MERGE_REQUEST_IID (an approved MR's)", "job-variables",
         jobs=each({"variables": {"CI_MERGE_REQUEST_IID": "{victim}"}})),
    Case("job variables: PYTHONPATH", "job-variables",
         jobs=each({"variables": {"PYTHONPATH": "$CI_PROJECT_DIR/evil"}})),
]  # fmt: skip
BATCHES = sorted({c.batch for c in CASES}, key=[c.batch for c in CASES].index)


def ci_file(batch: str, *, victim: int, trap: int) -> str:
    """The merge request's CI file for one batch of cases."""
    cases = [c for c in CASES if c.batch == batch]
    document: dict[str, Any] = {}
    if batch != "dropped":
        document["include"] = [
            component_include("mr-ownership-gate", GATE_INPUTS),
            component_include("mr-merge-check", MERGE_CHECK_INPUTS),
        ]
    for case in cases:
        for key, value in case.adds.items():
            document.setdefault(key, {}).update(value)
        for job, change in case.jobs.items():
            document.setdefault(job, {})
            for key, value in change.items():
                if isinstance(value, dict):
                    document[job].setdefault(key, {}).update(value)
                else:
                    document[job][key] = value
    if batch == "dropped":  # a file with a job of its own, and not the gate's
        document["own-job"] = {"script": ["echo the project runs its own jobs"]}
    return dump(document).replace("{victim}", str(victim)).replace("{trap}", str(trap))


# -- the world ----------------------------------------------------------------------------------


class _Trap(http.server.BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(f"{self.command} {self.path} token={self.headers.get('PRIVATE-TOKEN')}")
        self.send_response(404)
        self.end_headers()

    do_POST = do_PUT = do_CONNECT = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def trap() -> Iterator[tuple[int, list[str]]]:
    """A host the attacks point the gate at; it records whatever reaches it."""
    seen: list[str] = []
    handler = type("Trap", (_Trap,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()


@dataclass
class Setting:
    sandbox: RunningSandbox
    mr: tuple[str, int]
    victim: int
    ci: dict[str, str]
    tracker_sha: str


@pytest.fixture
def setting(sandbox: RunningSandbox) -> Setting:
    """The tracker's files; an approved merge request (the victim some attacks name); and the
    attacked one, which every gate job fails: it cites an issue nobody holds, and one whose
    only approval is a self-approval."""
    tracker_sha = publish(sandbox)
    world = World(sandbox)
    victim = approved_at_head(world)
    unclaimed, selfed = world.issue(), world.issue()
    mr = world.mr(f"Related to {TRACKER}#{unclaimed} and {TRACKER}#{selfed}")
    world.trail(selfed).solo(sha=mr["sha"], mr=ref(mr))
    return Setting(sandbox, ref(mr), victim[1], ci_variables(sandbox, ref(mr)), tracker_sha)


def logging_python(directory: Path) -> tuple[Path, Path]:
    """A python3 that writes its argv and environment to a file of its own in the log
    directory (the jobs run at once), then runs this interpreter."""
    log = directory / "calls"
    log.mkdir(parents=True)
    script = directory / "python3"
    script.write_text(
        "#!/bin/sh\n"
        f"{{ echo \"ARGV $*\"; env | sed 's/^/ENV /'; }} > \"$(mktemp '{log}/call.XXXXXX')\"\n"
        f"exec '{sys.executable}' \"$@\"\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return directory, log


def tracker_pipeline(sandbox: RunningSandbox, path: Path) -> str:
    """deploy-pipeline's file, pinned to the sandbox, with the gate's files in gate/."""
    flags = ["--image", "python:3.11-slim", "--runner-tag", "pairgate", "--gate-dir", "gate"]
    flags += ["--read-token-variable", "GATE_READ_TOKEN", "--gitlab-url", sandbox.url]
    flags += ["--evidence-image", "python:3.11-slim"]
    result = run_cli(
        ["deploy-pipeline", "--target", str(path), *flags],
        env={"PAIRGATE_CONFIG": str(FIXTURE_CONFIG)},
    )
    assert result.code == 0, result.err
    return path.read_text(encoding="utf-8")


@dataclass(frozen=True)
class Run:
    """One gitlab-ci-local run: the pipeline, the sandbox's request log, and each start of the
    gate's Python (its argv and environment)."""

    pipeline: Pipeline
    requests: list[dict[str, Any]]
    calls: list[str]


def checkout(
    batch: str, mode: str, setting: Setting, tmp_path: Path, trap: tuple[int, list[str]]
) -> Path:
    """The merge request's commit: the components, the payloads, and its CI file for
    ``batch`` (with the tracker's rendered file beside it, for the tracker-held runs)."""
    files: dict[str, str | bytes] = {
        **component_files("mr-ownership-gate", "mr-merge-check"),
        **EVIL,
        ".gitlab-ci.yml": ci_file(batch, victim=setting.victim, trap=trap[0]),
    }
    if mode == "tracker-held":
        files[TRACKER_FILE] = tracker_pipeline(setting.sandbox, tmp_path / "rendered.yml")
    return repository(tmp_path / "mr", setting.sandbox, files)


def run_pipeline(
    repo: Path,
    setting: Setting,
    ci: dict[str, str],
    *,
    name: str,
    file: str | None = None,
    source: str = "merge_request_event",
    schema: bool = False,
) -> Run:
    sandbox = setting.sandbox
    python, log = logging_python(repo.parent / f"{name}-python")
    sandbox.clear_requests()
    result = run(
        repo,
        sandbox,
        ci,
        file=file,
        python=python,
        variables={"CI_PIPELINE_SOURCE": source},
        schema=schema,
    )
    return Run(result, sandbox.requests(), [call.read_text() for call in sorted(log.iterdir())])


def run_batch(
    batch: str, mode: str, setting: Setting, tmp_path: Path, trap: tuple[int, list[str]]
) -> Run:
    """The pipeline GitLab starts for the merge request: the tracker's file, or its own."""
    repo = checkout(batch, mode, setting, tmp_path, trap)
    # The workflow case leaves GitLab only the branch pipeline; the tracker's own workflow
    # keeps the merge request pipeline, where the merge request's workflow never reaches.
    source = "push" if batch == "workflow" and mode == "plain" else "merge_request_event"
    return run_pipeline(
        repo,
        setting,
        setting.ci,
        name="pipeline",
        file=TRACKER_FILE if mode == "tracker-held" else None,
        source=source,
        schema=batch == "scripts",  # GitLab's CI schema accepts both kinds of file
    )


def run_child(setting: Setting, tmp_path: Path) -> Run:
    """The tracker-held pipeline's child, which gitlab-ci-local does not start: the merge
    request's own file at the same commit, run as GitLab runs what project-pipeline triggers.
    It gets ``CI_PIPELINE_SOURCE`` ``parent_pipeline``, the parent's ``CI_MERGE_REQUEST_*``,
    the project's CI/CD variables (the read token's too) and its own pipeline's job token;
    ``inherit`` and ``forward: yaml_variables: false`` keep every YAML variable of the
    tracker's file out, and a merge request pipeline has no pipeline variables to forward."""
    child = ci_variables(
        setting.sandbox, setting.mr, jobs=("project-job",), source="parent_pipeline"
    )
    return run_pipeline(tmp_path / "mr", setting, child, name="child", source="parent_pipeline")


def assert_nothing_leaked(
    result: Pipeline,
    calls: list[str],
    trap: tuple[int, list[str]],
    setting: Setting,
    *,
    iid: int | None = None,
    evidence: bool = False,
) -> None:
    """No request reached the trap, no payload ran, and every Python the gate started ran
    isolated, saw none of the merge request's variables, the sandbox's URL, and the merge
    request ``iid`` (the attacked one's unless given). Each gate job starts Python three
    times (the image check, the fetch, its validator), the ``evidence`` job four (the image
    check, the fetch, the check that the image has pairgate, ``-m pairgate.evidence.ci``), and
    every start is checked."""
    assert trap[1] == [], trap[1]  # no request reached the merge request's host
    assert "PWNED" not in result.output and "pwned.so" not in result.output, result.output
    started = sorted(call.split("\n", 1)[0].split()[2] for call in calls)
    expected = ["-c", "fetch.py"] * len(JOBS) + [f"{job}.py" for job in JOBS]
    assert started == sorted(expected + (["-c", "fetch.py", "-c", "-m"] if evidence else []))
    for call in calls:
        argv, *env = call.splitlines()
        assert " -I " in f"{argv} ", argv
        names = {line[4:].split("=", 1)[0] for line in env}
        assert names.isdisjoint(FORBIDDEN), (argv, sorted(names & set(FORBIDDEN)))
        values = dict(line[4:].split("=", 1) for line in env if "=" in line[4:])
        assert values.get("CI_API_V4_URL", setting.sandbox.api_url) == setting.sandbox.api_url
        expected = str(setting.mr[1] if iid is None else iid)
        assert values.get("CI_MERGE_REQUEST_IID", expected) == expected, argv


@pytest.mark.parametrize("batch", BATCHES)
def test_through_the_tracker_held_pipeline_every_gate_job_runs_and_fails(
    batch: str, setting: Setting, tmp_path: Path, trap: tuple[int, list[str]]
) -> None:
    trap[1].clear()
    parent = run_batch(batch, "tracker-held", setting, tmp_path, trap)
    result = parent.pipeline
    assert {job: result.job(job) for job in JOBS} == dict.fromkeys(JOBS, "FAIL"), result.output
    assert result.code == 1
    for job in JOBS:
        assert f"{job}: {setting.mr[0]}!{setting.mr[1]} at" in result.lines(job), result.output
    # The evidence job ran as the tracker wrote it, for the merge request its token proves
    # (whose offers carry no evidence: nothing to re-run).
    assert result.job(EVIDENCE) == "PASS", result.output
    said = result.lines(EVIDENCE)
    assert f"{EVIDENCE}: {setting.mr[0]}!{setting.mr[1]} at " in said, result.output
    assert "nothing to re-run" in said, result.output
    # Each job resolved the tracker's default branch once and read every file at that commit.
    heads = [
        r
        for r in parent.requests
        if r["path"] == "/api/v4/projects/acme%2Ftracker/repository/branches/main"
    ]
    files = [r for r in parent.requests if "/repository/files/" in r["path"]]
    assert len(heads) == 4 and len(files) == 5 + 5 + 4 + 1
    assert all(f"ref={setting.tracker_sha}" in r["query"] for r in files), files
    assert_nothing_leaked(result, parent.calls, trap, setting, evidence=True)
    # The child, which gitlab-ci-local leaves out, run as GitLab would start it: each case is
    # judged with the merge request's own file running too.
    assert "`project-pipeline.trigger.include.*.project` will be no-op" in result.output
    child = run_child(setting, tmp_path)
    for case in (c for c in CASES if c.batch == batch):
        assert child.pipeline.jobs() == case.child, (case.name, child.pipeline.output)
    assert child.pipeline.code == 0, child.pipeline.output
    assert child.calls == [] and child.requests == []  # no gate Python, nothing read
    assert trap[1] == [], trap[1]
    assert "PWNED" not in child.pipeline.output, child.pipeline.output


@pytest.mark.parametrize("batch", BATCHES)
def test_through_the_plain_include_the_suite_records_which_cases_get_past(
    batch: str, setting: Setting, tmp_path: Path, trap: tuple[int, list[str]]
) -> None:
    trap[1].clear()
    plain = run_batch(batch, "plain", setting, tmp_path, trap)
    result, calls = plain.pipeline, plain.calls
    cases = [c for c in CASES if c.batch == batch]
    statuses = {job: result.job(job) for job in JOBS}
    if all(c.held for c in cases):
        assert statuses == dict.fromkeys(JOBS, "FAIL"), result.output
        # A job's own variable reaches it (the merge request redefines the job), and GET /job
        # refuses it; a global one never reaches the job.
        victim = setting.victim if batch == "job-variables" else None
        assert_nothing_leaked(result, calls, trap, setting, iid=victim)
        if victim:
            assert (
                f"CI_MERGE_REQUEST_IID is {setting.victim}, but the job token proves the merge "
                f"request {setting.mr[1]}"
            ) in result.output
    else:
        for case in cases:
            for job, status in case.plain.items():
                assert statuses[job] == status, (case.name, result.output)
        assert result.code == 0  # the pipeline would count as green: the case got past
    assert trap[1] == []


def test_the_corpus_has_at_least_fifteen_cases_and_says_which_get_past_the_plain_include() -> None:
    assert len(CASES) >= 15
    past = [c.name for c in CASES if not c.held]
    assert past == [
        "redefine the record job's script",
        "redefine the approval job's script",
        "redefine the merge-check job's script",
        "rules: [{when: never}]",
        "allow_failure: true",
        "when: manual",
        "workflow: rules that skip merge request pipelines",
        "the include dropped",
    ]
