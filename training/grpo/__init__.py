"""Moved to training/trainer/ (the trainer side of every run kind) and training/arguments.py.
What is left here re-exports what bench/, demo/ and system/ still import from the old paths."""
