#!/usr/bin/env python3
"""validate-mr-merge-check: the CI gate job of the same name (the mr-merge-check component).

It fails a merge request in the gate's scope that has no independent approval at its head: the
verdict of merge-check itself, with the same scope rules. With "Pipelines must succeed", nothing
in scope merges unreviewed, by whatever door the merge comes.

Deployed flat beside ownership.py, which holds the verdict that merge-check and the merge hook
give too. Configuration: the file PAIRGATE_CONFIG names, and nothing else. The merge request:
what the job token proves (GET /job), which every CI variable must agree with. Exit 0 pass, 1
refused (the message ends with "Background: <handoff_doc>."), 2 could not decide.
"""

import os
import sys

NAME = "validate-mr-merge-check"
HERE = os.path.dirname(os.path.realpath(__file__))

# The ownership.py beside this file, even where PYTHONSAFEPATH (or -I) keeps the script's
# directory off sys.path (python resolves a symlinked script the same way).
sys.path.insert(0, HERE)
try:
    import ownership
except ImportError as exc:
    # Without the reader there is no verdict: "could not decide" (2), never "refused" (1).
    if exc.name == "ownership":
        why = f"{os.path.join(HERE, 'ownership.py')} is missing; deploy it beside this validator"
    else:
        why = f"the ownership.py beside it cannot be imported ({exc})"
    print(f"{NAME}: could not decide; this job fails closed: {why}.", file=sys.stderr)
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(ownership.validator_main(NAME))
