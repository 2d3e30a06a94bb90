"""The merge hook's command reader: bash read the way bash would run it (pure)."""
