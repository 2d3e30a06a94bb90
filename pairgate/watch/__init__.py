"""The watcher: merge request and ledger changes delivered to the agent who owes the next move.

``pairgate watch`` polls GitLab (``read``), compares what it read with the last snapshot
(``diff``), writes the events to a local store before any delivery (``store``), groups them into
batches for the agent the ledger names (``routing``, ``batches``), and pushes or lets the agent
pull them (``delivery``, ``hooks``, ``notify``) until that agent acknowledges each batch.
``runner`` joins one poll together; ``pairgate/commands/watch.py`` is the command line.

With ``--listen`` it also takes GitLab's webhooks (``listen`` stores them, ``webhook`` says what
each names, ``refresh`` reads that as a poll would), and the store (``store``, on SQLite or
PostgreSQL through ``backends``, its tables in ``schema``) may be shared by a fleet of watchers.
"""

# What the command line needs without importing the watcher (main builds its parser for every
# command): the default wait before an unacknowledged batch is re-sent, and the Claude Code
# hook events inbox speaks.
REMIND_AFTER = 30 * 60.0
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")
