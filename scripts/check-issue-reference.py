#!/usr/bin/env python3
"""check-issue-reference: a merge request of this project must cite the issue it works on.

The form is ``#NN`` (for example ``Related to #12``) in the merge request's title or
description. Run in a merge request pipeline: it reads CI_MERGE_REQUEST_TITLE and
CI_MERGE_REQUEST_DESCRIPTION, and when GitLab truncated the description
(CI_MERGE_REQUEST_DESCRIPTION_IS_TRUNCATED) it reads the whole one through the API with the job
token. ``--text TEXT`` checks a text instead. Exit 0 cited, 1 not cited, 2 could not check.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping

import requests

# A bare #NN that does not continue a path or a word: "group/project#12" cites another
# project's issue, "&#39;" is an HTML entity, "foo#12" is not a reference.
ISSUE_REFERENCE = re.compile(r"(?<![\w.\-/#&])#(\d+)(?!\w)")


def issue_references(text: str) -> list[int]:
    """The issue numbers a text cites as #NN, in order, once each."""
    numbers = (int(m.group(1)) for m in ISSUE_REFERENCE.finditer(text))
    return list(dict.fromkeys(n for n in numbers if n > 0))


class NotAMergeRequestPipeline(Exception):
    pass


def merge_request_text(env: Mapping[str, str]) -> str:
    if "CI_MERGE_REQUEST_IID" not in env:
        raise NotAMergeRequestPipeline(
            "check-issue-reference: not a merge request pipeline (CI_MERGE_REQUEST_IID is not "
            'set); run it under rules: if $CI_PIPELINE_SOURCE == "merge_request_event", or '
            "pass --text"
        )
    description = env.get("CI_MERGE_REQUEST_DESCRIPTION", "")
    if env.get("CI_MERGE_REQUEST_DESCRIPTION_IS_TRUNCATED") == "true":
        url = (
            f"{env['CI_API_V4_URL']}/projects/{env['CI_MERGE_REQUEST_PROJECT_ID']}"
            f"/merge_requests/{env['CI_MERGE_REQUEST_IID']}"
        )
        response = requests.get(url, headers={"JOB-TOKEN": env["CI_JOB_TOKEN"]}, timeout=30)
        response.raise_for_status()
        description = response.json().get("description") or ""
    return f"{env.get('CI_MERGE_REQUEST_TITLE', '')}\n{description}"


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", help="check this text instead of the merge request's")
    args = parser.parse_args(argv)
    try:
        text = args.text if args.text is not None else merge_request_text(env or os.environ)
    except requests.RequestException as exc:
        print(f"check-issue-reference: cannot read the merge request: {exc}", file=sys.stderr)
        return 2
    except NotAMergeRequestPipeline as exc:
        print(exc, file=sys.stderr)
        return 2
    cited = issue_references(text)
    if not cited:
        print(
            "check-issue-reference: this merge request cites no issue as #NN. Add the issue it "
            "works on to its description, for example 'Related to #12' (file an issue first if "
            "there is none), then re-run this job.",
            file=sys.stderr,
        )
        return 1
    print(f"check-issue-reference: cites {', '.join(f'#{n}' for n in cited)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
