"""Mutation evidence: run a change's tests, and its mutants, where the agent cannot touch them.

``runner.collect`` builds the evidence document (``schema``): ``copies`` and ``workspace`` make
each run's fresh copy (``gitops``, with no way back to the caller's repository), ``one_run`` runs
one baseline or mutant in it, ``isolation`` runs the command in the sandbox (``bwrap``, else
namespaces, else the environment only; ``proclimit`` caps its processes), ``changes`` says what
it changed, ``mutant_rules`` refuses a mutant that proves nothing and ``verdict`` says what a run
showed. ``patches`` reads a mutant's patch; ``sensitive`` names the files that judge a change;
``plan`` is ``evidence plan``; ``store`` keeps each run's document for ``evidence report``.
``handoff`` holds what an offer does with a document (check it against the offered SHA, render
it into the note, read its patches back); ``rerun`` the reviewer's re-run document and what an
approval checks of it; ``ci`` the evaluator in CI and ``ci_result`` its result; ``surface`` the
record fields and the words every surface shows.
"""

# A run longer than this is killed, with its whole process tree (evidence run --timeout).
DEFAULT_TIMEOUT = 300.0
# At most this many processes per run (evidence run --pids), where the machine can cap them.
DEFAULT_PIDS = 256
