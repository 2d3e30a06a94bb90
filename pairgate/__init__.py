"""pairgate: two coding agents as a pair on one GitLab issue, with a merge gate."""
