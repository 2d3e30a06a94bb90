"""The job shell of the sandbox's runner: a program named ``bash``, first on gitlab-ci-local's
PATH, through which every job script runs.

gitlab-ci-local starts each job's script as ``bash -c bash`` with the script's path on stdin.
The shell asks the sandbox to start that job (``POST /-/sandbox/runner/start``, which marks it
running and answers its job token, its id and its own fresh HOME), runs the script with them in
the real bash, passes its output on, and reports the exit code and the log (``POST
/-/sandbox/runner/finish``), after which the token is dead. Any other ``bash`` call
(gitlab-ci-local's own rsync and git commands) goes straight to the real bash, with no Python
start.

The sandbox's address and the run are written into the programs, not taken from the
environment, which a job's variables can set.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

_BASH = """#!/bin/sh
# pairgate sandbox: the job shell of one runner run (pairgate/sandbox/shim.py). Generated.
if [ "$#" -eq 2 ] && [ "$1" = "-c" ] && [ "$2" = "bash" ]; then
  exec {python} -IS {job}
fi
exec {bash} "$@"
"""
_JOB = """# pairgate sandbox: a job's script, for one runner run (pairgate/sandbox/shim.py). Generated.
import http.client, json, os, subprocess, sys

HOST, PORT, RUN, BASH = {host!r}, {port!r}, {run_id!r}, {bash!r}
PROMPT = "<gclShellPromptPlaceholder>"


def call(path, body):
    connection = http.client.HTTPConnection(HOST, PORT, timeout=60)
    connection.request("POST", path, json.dumps(body), {{"Content-Type": "application/json"}})
    answer = connection.getresponse()
    data = answer.read()
    return json.loads(data) if 200 <= answer.status < 300 and data else {{}}


script = sys.stdin.read()
phase = "main" if os.environ.get("CI_JOB_STATUS", "running") == "running" else "after"
job = call("/-/sandbox/runner/start", {{"run": RUN, "script": script.strip(), "phase": phase}})
if job.get("canceled"):
    sys.exit(1)
env = dict(os.environ, **job.get("env", {{}}))
if job.get("home"):
    env["HOME"] = job["home"]
shell = subprocess.Popen(
    [BASH], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
)
shell.stdin.write(script.encode())
shell.stdin.close()
log = []
for line in shell.stdout:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    log.append(line.decode("utf-8", "replace").replace(PROMPT, "$", 1))
code = shell.wait()
if job.get("job_id"):
    call(
        "/-/sandbox/runner/finish",
        {{"run": RUN, "job": job["job_id"], "code": code, "trace": "".join(log), "phase": phase}},
    )
sys.exit(code)
"""


def write(directory: Path, *, python: str, url: str, run_id: str) -> None:
    """The shell of one run against the sandbox at ``url`` (http://host:port), in
    ``directory``: ``bash``, and the Python it gives a job's script to."""
    host, _, port = url.removeprefix("http://").partition(":")
    bash = shutil.which("bash") or "/bin/bash"
    job = directory / "job-shell.py"
    text = _JOB.format(host=host, port=int(port), run_id=run_id, bash=bash)
    job.write_text(text, encoding="utf-8")
    entry = directory / "bash"
    quoted = {"python": shlex.quote(python), "job": shlex.quote(str(job))}
    entry.write_text(_BASH.format(bash=shlex.quote(bash), **quoted), encoding="utf-8")
    entry.chmod(0o700)
