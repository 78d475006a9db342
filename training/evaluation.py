"""Moved to training/trainer/evaluation.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.evaluation; nothing in training/ or
serving/ imports it."""
from training.trainer.evaluation import evaluate_replies, sample_replies

__all__ = ['evaluate_replies', 'sample_replies']
