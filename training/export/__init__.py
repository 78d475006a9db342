"""Exports of a run: its rollouts as a Hugging Face dataset folder or zip (`dataset`, the columns
declared once in `columns`), and its adapter merged into the base model, pushed to the Hub with a
model card (`model`, `model_card`)."""
