"""What the suite's tests share, besides the fixtures of tests/conftest.py.

Import a name from its module, and only so: ``from tests.kit.world import Round``. ruff refuses
``conftest``, ``tests.conftest`` and the modules this kit replaced (pyproject.toml, banned-api),
and tests/test_kit.py refuses ``from tests.kit import <module>``.

- ``names``: the shared names: paths of the suite's files, the agents and projects (``LEAD``,
  ``REVIEW``, ``APP``, ``TRACKER``...), what a pure test's records name (``SHA``, ``BASE``,
  ``ISSUE``, ``MR``), the merge request as the gate reads it (``mr_facts``), and the sandbox's
  paths (``mr_path``, ``notes_path``).
- ``run``: pairgate in-process (``run_cli``, ``ok``) or as a program (``run_program``), and the
  environments they run in (``agent_env``, ``clean_env``).
- ``trail``: ``Trail``, ledger records written as the verbs write them, kept in memory or posted
  to the sandbox.
- ``world``: the sandbox world (``World``) and one round in it (``Round``), with the verbs'
  steps and the watcher's commands.
- ``gate_cases``, ``audit_cases``: merge request states and merges on the sandbox, each with
  what every door of the gate, or the audit, must answer.
- ``suite_configuration``: the second configuration some modules run under (``acme-pg``).
- ``gcl``: gitlab-ci-local runs of the gate's jobs. ``gate_fetch``: the gate jobs' fetch and
  merge-audit's, as the components write them, run alone as the jobs start them.
  ``gitrepos``, ``evidence_repos``: real git repositories. ``evidence_round``: the evidence round's world (real evidence, collected once a
  session, and a round whose merge request's head is its commit). ``trailgen``, ``schemagen``: generated trails and schema instances.
- ``command_corpus``: the merge hook's corpus of disguised merges and harmless commands.
- ``wiring``: the source repository's wiring tests.
"""
