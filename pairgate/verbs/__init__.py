"""What the ownership verbs share: one verb's turn, from identity to the one record it writes
and the re-read after (``turn``); the refusals they share (``preconditions``); the human text
above each record's marker (``note_text``); and what they read about merge requests
(``merge_requests``)."""
