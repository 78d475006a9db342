"""Moved to training/trainer/backends.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.backends; nothing in training/ or
serving/ imports it."""
from training.trainer.backends import FOLDING_BACKENDS, PREALLOCATED_CACHE

__all__ = ['FOLDING_BACKENDS', 'PREALLOCATED_CACHE']
