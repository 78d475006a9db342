"""Moved to training/sft_dataset.py. Kept only so that bench/ (and demo/, system/) keep importing
it from here until they import training.sft_dataset; nothing in training/ or serving/ imports
it."""
from training.sft_dataset import SftSources

__all__ = ['SftSources']
