"""Moved to training/trainer/model_loading.py. Kept only so that bench/ (and demo/, system/) keep
importing it from here until they import training.trainer.model_loading; nothing in training/ or
serving/ imports it."""
from training.trainer.model_loading import (
    accepts_images,
    architecture,
    load_adapted_model,
    load_processing_class,
)

__all__ = ['accepts_images', 'architecture', 'load_adapted_model', 'load_processing_class']
