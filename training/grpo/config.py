"""Moved to training/arguments.py. Kept only for bench/ (bench/generation.py, model_memory.py,
web.py, gpu/phases.py, gpu/run.py), which still imports it from here; delete it when those
import training.arguments. Nothing in the studio imports this module."""
from training.arguments import MAX_TURNS, RENDER_SIZES, RunArguments, batch_layout

__all__ = ["MAX_TURNS", "RENDER_SIZES", "RunArguments", "batch_layout"]
