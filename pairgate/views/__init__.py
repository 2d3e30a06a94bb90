"""What the reading commands (status, board, waiting, sync) and the watcher show of an issue
beyond its ledger: an approval's standing and independence (``approvals``), whether the head's
pipeline has run the gate since (``gate_runs``), and who owes the next move (``next_move``)."""
