"""Moved to training/trainer/generation.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.generation; nothing in training/ or
serving/ imports it."""
from training.trainer.generation import StudioGRPOTrainer

__all__ = ['StudioGRPOTrainer']
