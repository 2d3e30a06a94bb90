"""pairgate's own automation roster: no unattended merge request families gate-free here.

The mr-ownership-gate component in .gitlab-ci.yml fetches it (roster-path); the format is in
docs/agent-handoff-reference.md, "The merge gate and the CI component".
"""

FAMILIES = []
