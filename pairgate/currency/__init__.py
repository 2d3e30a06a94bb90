"""Is this deployed copy current? ``deployed_currency`` measures it with git (standalone: it is
deployed flat beside the merge hook, which runs it too); ``check`` is what main does with the
answer before a command that reads the configuration."""
