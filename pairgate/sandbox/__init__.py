"""A GitLab stand-in on loopback (built by the sandbox issue)."""
