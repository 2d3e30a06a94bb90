"""doctor: every way around the merge gate that the gated projects' settings (and the group's)
leave open, with the fix. ``reads`` reads GitLab and runs every check; the checks are pure
functions of what GitLab answered (``checks``: settings, pipeline file, roles, tokens;
``branches``: the protected-branch rules). The command, pairgate/commands/doctor.py, prints
them."""
