"""Moved to training/trainer/trl_config.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.trl_config; nothing in training/ or
serving/ imports it."""
from training.trainer.trl_config import grpo_config_of

__all__ = ['grpo_config_of']
