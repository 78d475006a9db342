"""The painting environment: prompts, static gate, sandboxed renderer, rewards.

A plain Python library — it must never import Django, so the trainer, the workers and
the tests can use it directly.
"""
