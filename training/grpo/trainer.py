"""Moved to training/trainer/lora_reach.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.lora_reach; nothing in training/ or
serving/ imports it."""
from training.trainer.lora_reach import lora_config

__all__ = ['lora_config']
