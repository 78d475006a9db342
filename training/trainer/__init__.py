"""The trainer side of a run: the TRL scripts (`grpo`, `sft`), the reward function
(`rewarding`), callbacks, revision turns, checkpoints, model loading, tracking, and the
processes of a multi-process run (`launching`, `together`). The run's lifecycle around it (which
delivery trains, heartbeat, reaping, recording the end) is training/trainer/lifecycle.py."""
