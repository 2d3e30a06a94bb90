"""The /-/sandbox/ endpoints: faults, the clock, the request log, options, reset, --state."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest
import requests

from pairgate.sandbox.model import World
from pairgate.sandbox.server import Sandbox
from pairgate.sandbox.testing import RunningSandbox


def get(sandbox: RunningSandbox, path: str, **kw):
    return requests.get(
        sandbox.api_url + path, headers={"PRIVATE-TOKEN": sandbox.token()}, timeout=5, **kw
    )


def test_injected_429_carries_retry_after_and_the_next_call_succeeds(
    sandbox: RunningSandbox,
) -> None:
    sandbox.fault(path=r"/issues/1$", status=429, retry_after=7, count=1)
    limited = get(sandbox, "/projects/1/issues/1")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "7"
    assert limited.json() == {"message": "429 Too Many Requests"}
    assert get(sandbox, "/projects/1/issues/1").status_code == 200


def test_python_gitlab_waits_out_a_429(sandbox: RunningSandbox) -> None:
    sandbox.fault(path=r"/issues/1$", status=429, retry_after=0, count=2)
    issue = sandbox.gitlab().projects.get(1, lazy=True).issues.get(1)
    assert issue.iid == 1
    statuses = [r["status"] for r in sandbox.requests()]
    assert statuses == [429, 429, 200]


def test_fault_matches_method_and_the_decoded_path(sandbox: RunningSandbox) -> None:
    sandbox.fault(method="POST", path="acme/tracker/issues", status=500, count=1)
    assert get(sandbox, "/projects/acme%2Ftracker/issues").status_code == 200
    posted = requests.post(
        sandbox.api_url + "/projects/acme%2Ftracker/issues",
        headers={"PRIVATE-TOKEN": sandbox.token()},
        json={"title": "t"},
        timeout=5,
    )
    assert (posted.status_code, posted.json()) == (500, {"message": "500 Internal Server Error"})
    assert len(sandbox.api("GET", "/projects/1/issues")) == 1  # the faulted write never ran


def test_gateway_errors_are_not_json(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user", status=502)
    response = get(sandbox, "/user")
    assert response.status_code == 502 and response.headers["Content-Type"] == "text/html"


def test_dropped_connection(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user$", drop=True)
    with pytest.raises(requests.ConnectionError):
        get(sandbox, "/user")
    assert get(sandbox, "/user").status_code == 200
    assert [r["status"] for r in sandbox.requests()] == [0, 200]


def test_a_write_whose_response_is_lost_still_happened(sandbox: RunningSandbox) -> None:
    sandbox.fault(method="POST", path=r"/issues/1/notes$", drop=True, after=True)
    with pytest.raises(requests.ConnectionError):
        requests.post(
            sandbox.api_url + "/projects/1/issues/1/notes",
            json={"body": "once"},
            headers={"PRIVATE-TOKEN": sandbox.token()},
            timeout=5,
        )
    assert [n["body"] for n in sandbox.api("GET", "/projects/1/issues/1/notes")] == ["once"]


def test_delay(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user$", delay_ms=150)
    started = time.monotonic()
    assert get(sandbox, "/user").status_code == 200
    assert time.monotonic() - started >= 0.15


def test_hold_lets_the_held_requests_go_on_together(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user$", hold=2, count=2)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(get, sandbox, "/user")
        done, _ = wait([first], timeout=0.5)
        assert not done  # held until a second one comes
        assert get(sandbox, "/user").status_code == 200
        assert first.result(timeout=5).status_code == 200
    assert sandbox.control("GET", "faults") == []  # both were counted


def test_a_hold_the_rest_never_fill_ends_after_delay_ms(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user$", hold=2, count=2, delay_ms=150)
    started = time.monotonic()
    assert get(sandbox, "/user").status_code == 200
    assert time.monotonic() - started >= 0.15


def test_clear_faults_and_bad_fault_specs(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/user", status=500, count=5)
    assert len(sandbox.control("GET", "faults")) == 1
    sandbox.clear_faults()
    assert get(sandbox, "/user").status_code == 200
    bad = requests.post(sandbox.sandbox_api + "/faults", json={"status": 500}, timeout=5)
    assert bad.status_code == 400
    typo = requests.post(
        sandbox.sandbox_api + "/faults", json={"path": "x", "stauts": 1}, timeout=5
    )
    assert "stauts" in typo.json()["error"]
    more = requests.post(
        sandbox.sandbox_api + "/faults", json={"path": "x", "hold": 3, "count": 2}, timeout=5
    )
    assert more.status_code == 400 and "hold must be between 0 and count" in more.json()["error"]


def test_clock_moves_every_server_timestamp(sandbox: RunningSandbox) -> None:
    before = sandbox.note(1, "before")["created_at"]
    now = sandbox.advance_clock(86_400)
    after = sandbox.note(1, "after")["created_at"]
    assert after[:10] > before[:10] and now[:10] == after[:10]


def test_request_log_counts_and_clears(sandbox: RunningSandbox) -> None:
    get(sandbox, "/user")
    get(sandbox, "/projects/1", params={"statistics": "false"})
    assert sandbox.requests() == [
        {"method": "GET", "path": "/api/v4/user", "query": "", "status": 200},
        {"method": "GET", "path": "/api/v4/projects/1", "query": "statistics=false", "status": 200},
    ]
    sandbox.clear_requests()
    assert sandbox.requests() == []


@pytest.mark.timing
def test_reset_restores_the_default_world_quickly(sandbox: RunningSandbox) -> None:
    sandbox.create_issue("extra")
    sandbox.fault(path="/user", status=500)
    sandbox.set_options(scoped_labels="premium")
    started = time.monotonic()
    sandbox.reset()
    assert time.monotonic() - started < 0.1
    assert [i["iid"] for i in sandbox.api("GET", "/projects/1/issues")] == [1]
    assert get(sandbox, "/user").status_code == 200
    assert sandbox.control("GET", "options")["scoped_labels"] == "free"
    assert [r["path"] for r in sandbox.requests()] == ["/api/v4/projects/1/issues", "/api/v4/user"]


def test_unknown_option_is_refused(sandbox: RunningSandbox) -> None:
    response = requests.post(sandbox.sandbox_api + "/options", json={"nope": 1}, timeout=5)
    assert response.status_code == 400 and "nope" in response.json()["error"]


def test_a_mirrored_commit_has_the_id_given_and_moves_the_branch(
    sandbox: RunningSandbox,
) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    main = sandbox.api("GET", "/projects/acme%2Fapp/repository/branches/main")["commit"]["id"]
    made = sandbox.mirror_commit(sha, "fix", {"calc.py": "x = 1\n"})
    assert made == {"id": sha, "parent_ids": [main], "branch": "fix"}
    mr = sandbox.create_mr("fix", title="t")
    assert mr["sha"] == sha
    raw = "/projects/acme%2Fapp/repository/files/calc.py/raw"
    assert get(sandbox, raw, params={"ref": sha}).text == "x = 1\n"
    # another commit on the branch is a push: the MR's head follows it
    second = "f" * 40
    sandbox.mirror_commit(second, "fix", {"calc.py": None, "b.py": "y\n"})
    assert sandbox.api("GET", f"/projects/acme%2Fapp/merge_requests/{mr['iid']}")["sha"] == second
    assert get(sandbox, raw, params={"ref": second}).status_code == 404


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"sha": "abc"}, "sha must be a full commit id"),
        ({"sha": "A" * 40}, "sha must be a full commit id"),
        ({"files": {"a": 1}}, "files must be an object"),
        ({"start_branch": "nope"}, "Invalid reference name: nope"),
        ({"git_dir": "repo"}, "git_dir must be the absolute path of the git repository"),
        ({"git_dir": 5}, "git_dir must be the absolute path of the git repository"),
    ],
)
def test_a_mirrored_commit_is_checked(sandbox: RunningSandbox, body: dict, said: str) -> None:
    full = {"project": "acme/app", "sha": "1" * 40, "branch": "fresh", "files": {}, **body}
    response = requests.post(sandbox.sandbox_api + "/commits", json=full, timeout=5)
    assert response.status_code == 400 and said in response.json()["error"]


def test_a_mirrored_commit_id_is_unique(sandbox: RunningSandbox) -> None:
    sandbox.mirror_commit("2" * 40, "fix", {})
    body = {"project": "acme/app", "sha": "2" * 40, "branch": "other", "files": {}}
    response = requests.post(sandbox.sandbox_api + "/commits", json=body, timeout=5)
    assert response.status_code == 400 and "already exists" in response.json()["error"]


def test_state_file_round_trip(tmp_path: Path) -> None:
    state = tmp_path / "world.json"
    first = Sandbox(state=state).start()
    requests.post(
        first.url + "/api/v4/projects/1/issues",
        json={"title": "kept"},
        headers={"PRIVATE-TOKEN": "sandbox-agents-token"},
        timeout=5,
    )
    requests.post(
        first.url + "/api/v4/projects/1/issues/2/notes",
        json={"body": "a note"},
        headers={"PRIVATE-TOKEN": "sandbox-agents-token"},
        timeout=5,
    )
    first.stop()
    assert World.load(state).issues[502].title == "kept"
    second = Sandbox(state=state).start()
    try:
        notes = requests.get(
            second.url + "/api/v4/projects/1/issues/2/notes",
            headers={"PRIVATE-TOKEN": "sandbox-agents-token"},
            timeout=5,
        ).json()
        assert [n["body"] for n in notes] == ["a note"]  # the index is rebuilt on load
        titles = [
            i["title"]
            for i in requests.get(
                second.url + "/api/v4/projects/1/issues",
                headers={"PRIVATE-TOKEN": "sandbox-agents-token"},
                timeout=5,
            ).json()
        ]
        assert titles == ["kept", "Automation tracking issue"]
    finally:
        second.stop()


# -- strictness: requests no route serves --------------------------------------------------------


@pytest.mark.sandbox_unserved_ok(r"^PATCH /api/v4/projects/1$", r"^GET /acme/app\.git/info/refs$")
def test_unserved_requests_are_answered_as_gitlab_and_listed(sandbox: RunningSandbox) -> None:
    sandbox.control("DELETE", "unserved")
    served = get(sandbox, "/projects/1")
    assert served.status_code == 200
    patch = requests.patch(sandbox.api_url + "/projects/1", timeout=5)
    assert (patch.status_code, patch.json()) == (404, {"error": "404 Not Found"})
    git = requests.get(sandbox.url + "/acme/app.git/info/refs", params={"service": "x"}, timeout=5)
    assert git.status_code == 404
    sandbox.reset()  # a reset does not hide them
    assert sandbox.control("GET", "unserved") == [
        {"method": "PATCH", "path": "/api/v4/projects/1", "query": ""},
        {"method": "GET", "path": "/acme/app.git/info/refs", "query": "service=x"},
    ]
    sandbox.control("DELETE", "unserved")
    assert sandbox.control("GET", "unserved") == []


@pytest.mark.sandbox_unserved_ok(r"^GET /api/v4/nowhere$")
def test_a_faulted_unserved_request_is_still_unserved(sandbox: RunningSandbox) -> None:
    sandbox.fault(path="/nowhere", status=503)
    assert get(sandbox, "/nowhere").status_code == 503
    assert sandbox.control("GET", "unserved")[-1]["path"] == "/api/v4/nowhere"


STRICT_CASES = """
import requests
import pytest

def test_unmarked(sandbox):
    requests.get(sandbox.api_url + "/nowhere", timeout=5)

@pytest.mark.sandbox_unserved_ok
def test_marked(sandbox):
    requests.get(sandbox.api_url + "/nowhere", timeout=5)

@pytest.mark.sandbox_unserved_ok(r"^GET /api/v4/elsewhere$")
def test_marked_for_another_path(sandbox):
    requests.get(sandbox.api_url + "/nowhere", timeout=5)

def test_own_sandbox_unmarked():
    from pairgate.sandbox.testing import running_sandbox
    with running_sandbox() as mine:
        requests.get(mine.api_url + "/projects/1/nowhere", timeout=5)

def test_served_only(sandbox):
    assert requests.get(sandbox.api_url + "/projects/1", timeout=5).status_code == 404
"""


@pytest.mark.slow
def test_the_suite_fails_a_test_that_reached_no_route(tmp_path: Path) -> None:
    """tests/conftest.py's autouse check, run as a plugin over a file of its own."""
    import subprocess
    import sys

    from tests.kit.names import ROOT
    from tests.kit.run import clean_env

    (tmp_path / "test_strict.py").write_text(STRICT_CASES, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-q", "-rE", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path)],
        env=clean_env(PYTHONPATH=str(ROOT)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "5 passed, 3 errors" in out, out
    errors = sorted(
        line.split("::")[1].split()[0] for line in out.splitlines() if line.startswith("ERROR")
    )
    assert errors == ["test_marked_for_another_path", "test_own_sandbox_unmarked", "test_unmarked"]
    assert "GET /api/v4/nowhere" in out and "mark the test sandbox_unserved_ok" in out


def test_the_index_follows_the_tables() -> None:
    """Lookups go through World's index; it follows adds and deletes and a save and load."""
    from pairgate.sandbox import defaults

    world = defaults.build()
    tracker, agents = world.projects[1], world.users[10]
    issue = world.issue(tracker, 1)
    assert issue is not None and world.issue(world.projects[2], 1) is None
    first = world.add_note(issue, agents, "one")
    second = world.add_note(issue, agents, "two", internal=True)
    assert [n.body for n in world.notes_on(issue)] == ["one", "two"]
    world.delete_note(first)
    assert world.notes_on(issue) == [second] and first.id not in world.notes
    loaded = World.from_json(world.to_json())
    again = loaded.issue(loaded.projects[1], 1)
    assert again is not None and [n.body for n in loaded.notes_on(again)] == ["two"]
    assert "index" not in world.to_json()


def test_members_sets_and_removes_a_direct_membership_as_an_administrator(
    sandbox: RunningSandbox,
) -> None:
    made = sandbox.control(
        "POST", "members", json={"user": "reporter", "access_level": 40, "project": "acme/app"}
    )
    assert made == {"user_id": 14, "access_level": 40}
    assert sandbox.api("GET", "/projects/2/members/14")["access_level"] == 40
    sandbox.control("POST", "members", json={"user": 14, "access_level": 0, "project": "2"})
    gone = sandbox.request("GET", "/projects/2/members/14", "agents")
    assert gone.status_code == 404
    assert sandbox.api("GET", "/projects/2/members/all/14")["access_level"] == 20  # via acme
    sandbox.set_member("reporter", 50, group="partner")
    assert (
        sandbox.api("GET", "/groups/partner/members/14", as_user="maintainer")["access_level"] == 50
    )


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        ({"user": "nobody", "access_level": 30, "group": "acme"}, 404, "404 User Not Found"),
        ({"user": "reporter", "access_level": 30, "group": "nowhere"}, 404, "404 Group Not Found"),
        ({"user": "reporter", "access_level": 30, "project": "acme/none"}, 404,
         "404 Project Not Found"),
        ({"user": "reporter", "access_level": 30}, 404, "404 Project Not Found"),
        ({"user": "reporter", "access_level": 45, "group": "acme"}, 400,
         "access_level must be 0 (none), 5, 10, 15, 20, 30, 40 or 50"),
    ],
)  # fmt: skip
def test_members_refuses_what_it_cannot_do(
    sandbox: RunningSandbox, body: dict[str, object], code: int, says: str
) -> None:
    answer = requests.post(f"{sandbox.sandbox_api}/members", json=body, timeout=5)
    assert answer.status_code == code
    assert says in answer.text
    assert sandbox.api("GET", "/groups/100/members/14")["access_level"] == 20  # unchanged
