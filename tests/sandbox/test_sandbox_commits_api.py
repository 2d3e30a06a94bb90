"""The Commits API as deploy-pipeline --publish uses it, and the settings doctor --fix writes,
through python-gitlab: one commit with several actions, base64 contents, the per-file
last_commit_id guard (doc/api/commits.md; GitLab's Files::MultiService compares the path's last
commit on the branch with its last commit as of the given id), and no branch-level
compare-and-swap (start_sha on an existing branch is refused)."""

from __future__ import annotations

import base64

import gitlab
import pytest

from pairgate.sandbox.testing import RunningSandbox


@pytest.fixture
def tracker(sandbox: RunningSandbox) -> object:
    gl = gitlab.Gitlab(sandbox.url, private_token=sandbox.token("maintainer"))
    return gl.projects.get("acme/tracker")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_one_commit_creates_and_updates_files_with_base64_content(tracker: object) -> None:
    made = tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "gate",
        "actions": [
            {"action": "create", "file_path": "gate/a.py", "content": _b64("a\n"),
             "encoding": "base64"},
            {"action": "create", "file_path": "gate/b.py", "content": "b\n"},
        ],
    })  # fmt: skip
    found = tracker.files.get("gate/a.py", ref="main")  # type: ignore[attr-defined]
    assert found.decode() == b"a\n" and found.last_commit_id == made.id
    assert tracker.files.get("gate/b.py", ref=made.id).decode() == b"b\n"  # type: ignore[attr-defined]
    with pytest.raises(gitlab.GitlabCreateError) as bad:
        tracker.commits.create({  # type: ignore[attr-defined]
            "branch": "main", "commit_message": "x",
            "actions": [{"action": "update", "file_path": "gate/a.py", "content": "%%",
                         "encoding": "base64"}],
        })  # fmt: skip
    assert bad.value.response_code == 400


def test_last_commit_id_refuses_a_file_changed_since_it_was_read(tracker: object) -> None:
    first = tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "gate",
        "actions": [{"action": "create", "file_path": "gate/a.py", "content": "1\n"}],
    })  # fmt: skip
    read = tracker.files.get("gate/a.py", ref="main").last_commit_id  # type: ignore[attr-defined]
    assert read == first.id
    tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "someone else",
        "actions": [{"action": "update", "file_path": "gate/a.py", "content": "2\n"}],
    })  # fmt: skip
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        tracker.commits.create({  # type: ignore[attr-defined]
            "branch": "main", "commit_message": "mine",
            "actions": [{"action": "update", "file_path": "gate/a.py", "content": "3\n",
                         "last_commit_id": read}],
        })  # fmt: skip
    assert refused.value.response_code == 400
    assert "The file has changed since you started editing it: gate/a.py" in str(refused.value)
    assert tracker.files.get("gate/a.py", ref="main").decode() == b"2\n"  # type: ignore[attr-defined]


def test_a_branch_that_moved_through_other_files_passes_the_guard(tracker: object) -> None:
    """GitLab compares the path's last commit, not the branch head: no branch-level CAS."""
    first = tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "gate",
        "actions": [{"action": "create", "file_path": "gate/a.py", "content": "1\n"}],
    })  # fmt: skip
    tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "elsewhere",
        "actions": [{"action": "create", "file_path": "other.txt", "content": "x\n"}],
    })  # fmt: skip
    made = tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "main", "commit_message": "mine",
        "actions": [{"action": "update", "file_path": "gate/a.py", "content": "3\n",
                     "last_commit_id": first.id}],
    })  # fmt: skip
    assert made.parent_ids[0] != first.id


def test_start_sha_on_an_existing_branch_is_refused(tracker: object) -> None:
    head = tracker.branches.get("main").commit["id"]  # type: ignore[attr-defined]
    with pytest.raises(gitlab.GitlabCreateError) as refused:
        tracker.commits.create({  # type: ignore[attr-defined]
            "branch": "main", "commit_message": "cas?", "start_sha": head,
            "actions": [{"action": "create", "file_path": "x.txt", "content": "x\n"}],
        })  # fmt: skip
    assert refused.value.response_code == 400
    assert "A branch called 'main' already exists" in str(refused.value)
    made = tracker.commits.create({  # type: ignore[attr-defined]
        "branch": "fresh", "commit_message": "new branch", "start_sha": head,
        "actions": [{"action": "create", "file_path": "x.txt", "content": "x\n"}],
    })  # fmt: skip
    assert made.parent_ids == [head]
    with pytest.raises(gitlab.GitlabCreateError) as both:
        tracker.commits.create({  # type: ignore[attr-defined]
            "branch": "other", "commit_message": "x", "start_sha": head, "start_branch": "main",
            "actions": [{"action": "create", "file_path": "y.txt", "content": "y\n"}],
        })  # fmt: skip
    assert "start_branch, start_sha are mutually exclusive" in str(both.value)


def test_the_settings_doctor_fix_writes_through_python_gitlab(sandbox: RunningSandbox) -> None:
    """PUT /projects/:id with the fields doctor --fix sets (doc/api/projects.md), as a
    Maintainer; a Developer is refused (403), and the two variable fields are shown to
    Maintainers only."""
    gl = gitlab.Gitlab(sandbox.url, private_token=sandbox.token("maintainer"))
    project = gl.projects.get("acme/app")
    project.only_allow_merge_if_pipeline_succeeds = True
    project.allow_merge_on_skipped_pipeline = False
    project.forking_access_level = "disabled"
    project.restrict_user_defined_variables = True
    project.ci_pipeline_variables_minimum_override_role = "maintainer"
    project.ci_config_path = "gate/pipeline.yml@acme/tracker"
    project.save()
    again = gl.projects.get("acme/app")
    assert (again.forking_access_level, again.restrict_user_defined_variables) == ("disabled", True)
    assert again.ci_pipeline_variables_minimum_override_role == "maintainer"
    developer = gitlab.Gitlab(sandbox.url, private_token=sandbox.token("agents"))
    seen = developer.projects.get("acme/app")
    assert not hasattr(seen, "restrict_user_defined_variables")
    seen.forking_access_level = "enabled"
    with pytest.raises(gitlab.GitlabUpdateError) as refused:
        seen.save()
    assert refused.value.response_code == 403
    with pytest.raises(gitlab.GitlabUpdateError) as bad:
        gl.projects.update("acme/app", {"ci_pipeline_variables_minimum_override_role": "guest"})
    assert bad.value.response_code == 400
