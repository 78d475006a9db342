"""Moved to training/trainer/rewarding.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.rewarding; nothing in training/ or
serving/ imports it."""
from training.trainer.rewarding import completion_text

__all__ = ['completion_text']
