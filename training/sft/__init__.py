"""Moved: the SFT trainer to training/trainer/sft.py, the dataset to training/sft_dataset.py, its
pages to training/sft_views.py. What is left here re-exports what bench/ still imports."""
