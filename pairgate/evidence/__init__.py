"""Mutation evidence: run a change's tests, and its mutants, where the agent cannot touch them.

``runner.collect`` builds the evidence document (``schema``); ``handoff`` holds what an offer
does with one (check it against the offered SHA, render it into the note, read its patches back);
``rerun`` the reviewer's re-run document and what an approval checks of it; ``surface`` the
record fields and the words every surface shows; ``isolation`` runs one command in the sandbox;
``verdict`` says what a run showed.
"""

# A run longer than this is killed, with its whole process tree (evidence run --timeout).
DEFAULT_TIMEOUT = 300.0
# At most this many processes per run (evidence run --pids), where the machine can cap them.
DEFAULT_PIDS = 256
