"""The job shell of the sandbox's runner: a program named ``bash``, first on gitlab-ci-local's
PATH, through which every job script runs.

gitlab-ci-local starts each job's script as ``bash -c bash`` with the script's path on stdin. The
shell asks the sandbox to start that job (``POST /-/sandbox/runner/start``, which marks it
running and answers its job token, its id and its own fresh HOME), runs the script with them in
the real bash, passes its output on, and reports the exit code and the log (``POST
/-/sandbox/runner/finish``), after which the token is dead. Any other ``bash`` call (gitlab-ci-
local's own rsync and git commands) goes straight to the real bash.

The sandbox's address and the run are written into the program, not taken from the
environment, which a job's variables can set.
"""

from __future__ import annotations

import shutil

_PROGRAM = """#!{python} -IS
# pairgate sandbox: the job shell of one runner run (pairgate/sandbox/shim.py). Generated.
import http.client, json, os, subprocess, sys

HOST, PORT, RUN, BASH = {host!r}, {port!r}, {run_id!r}, {bash!r}
PROMPT = "<gclShellPromptPlaceholder>"

if sys.argv[1:] != ["-c", "bash"]:
    os.execv(BASH, [BASH, *sys.argv[1:]])


def call(path, body):
    connection = http.client.HTTPConnection(HOST, PORT, timeout=60)
    connection.request("POST", path, json.dumps(body), {{"Content-Type": "application/json"}})
    answer = connection.getresponse()
    data = answer.read()
    return json.loads(data) if 200 <= answer.status < 300 and data else {{}}


script = sys.stdin.read()
phase = "main" if os.environ.get("CI_JOB_STATUS", "running") == "running" else "after"
job = call("/-/sandbox/runner/start", {{"run": RUN, "script": script.strip(), "phase": phase}})
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


def program(*, python: str, url: str, run_id: str) -> str:
    """The shell's text for one run against the sandbox at ``url`` (http://host:port)."""
    host, _, port = url.removeprefix("http://").partition(":")
    bash = shutil.which("bash") or "/bin/bash"
    return _PROGRAM.format(python=python, host=host, port=int(port), run_id=run_id, bash=bash)
