"""The watcher: merge request and ledger changes delivered to the agent who owes the next move.

``pairgate watch`` polls GitLab (``read``), compares what it read with the last snapshot
(``diff``), writes the events to a local store before any delivery (``store``), groups them into
batches for the agent the ledger names (``routing``, ``batches``), and pushes or lets the agent
pull them (``delivery``, ``hooks``, ``notify``) until that agent acknowledges each batch.
``runner`` joins one poll together; ``pairgate/commands/watch.py`` is the command line.
"""
