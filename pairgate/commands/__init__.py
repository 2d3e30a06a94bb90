"""One module per command family; main.py dispatches to them by name."""
