"""The automation roster of the example deployment (see examples/pairgate-config.json).

It names the unattended merge request families the merge gate leaves alone, beside Renovate
(which the configuration's renovate_* keys cover). A merge request belongs to a family when all
three hold: GitLab says its author is ``author_id``; its source branch starts with
``branch_prefix``; and the tracker issues it cites are exactly ``cites_issue`` (``None``: it
cites none). Anything else stays in the gate's scope and needs an independent review.

This file is data: the gate reads FAMILIES as a Python literal and never runs the file, so it
holds that one assignment (comments and this docstring aside). Protect each branch prefix so
that only the family's account can push to it: the gate cannot see who pushed a commit.
"""

FAMILIES = [
    {
        # The nightly job that refreshes the lock files; its merge requests cite no issue.
        "name": "nightly-lockfiles",
        "author_id": 5150,
        "branch_prefix": "automation/lockfiles/",
        "cites_issue": None,
    },
    {
        # The schema mirror, which always cites its standing issue in the tracker.
        "name": "schema-mirror",
        "author_id": 5151,
        "branch_prefix": "automation/schema-mirror/",
        "cites_issue": 12,
    },
]
