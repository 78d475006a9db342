"""Every metric key a step stores, in one place: TRL's own and the studio's.

The reward function and the callback write them, the metrics endpoint and the CLI read them,
and the run page's charts get `CHARTS` through `json_script`, so a key is typed once.
"""
from __future__ import annotations

# TRL's GRPOTrainer logs these.
REWARD = "reward"
REWARD_STD = "reward_std"
MEAN_LENGTH = "completions/mean_length"
LOSS = "loss"
KL = "kl"
GRAD_NORM = "grad_norm"
LEARNING_RATE = "learning_rate"
# TRL's SFTTrainer logs these too (with LOSS, GRAD_NORM and LEARNING_RATE).
TOKEN_ACCURACY = "mean_token_accuracy"
NUM_TOKENS = "num_tokens"
ENTROPY = "entropy"

# Ours: what the reward function measured (training/trainer/rewarding.py).
GATE_PASS_RATE = "ours/gate_pass_rate"
NONE_COUNT = "ours/none_count"
LATE_COUNT = "ours/late_count"  # renders and scores back after their stage's deadline: not used
LOW_COUNT = "ours/low_count"
PAINT_FRACTION = "ours/paint_fraction"
DIVERSITY = "ours/diversity"
REWARD_VALID_STD = "ours/reward_valid_std"
REWARD_ERROR = "ours/reward_error"
JUDGE = "ours/judge"
QUALITY = "ours/quality"
LENGTH = "ours/length"
PART = {"judge": JUDGE, "quality": QUALITY, "length": LENGTH}
# Ours: revision turns (runs with turns > 1; training/trainer/turns.py).
REVISION_GAIN = "ours/revision_gain"  # mean of final - first turn reward
IMPROVED_SHARE = "ours/improved_share"  # share of rollouts whose final turn beat their first
FIXED_SHARE = "ours/fixed_share"  # of rollouts whose first sketch failed the gate, the share whose final passed
KEPT_SHARE = "ours/kept_share"  # share of rollouts that ended with KEEP: an earlier painting stands
TURN_REWARD_PREFIX = "ours/turn_reward/"  # mean reward of each turn's paintings: ours/turn_reward/1, /2...
# Ours: where a step's seconds went (the callback adds update, step and other).
GENERATION_S = "ours/generation_s"
RENDER_S = "ours/render_s"
SCORE_S = "ours/score_s"
REWARD_S = "ours/reward_s"
UPDATE_S = "ours/update_s"
STEP_S = "ours/step_s"
OTHER_S = "ours/other_s"
# Ours: the trainer's own generation (training/trainer/generation.py), per step.
COMPLETION_TOKENS = "ours/completion_tokens"  # tokens generated (every turn)
TOKENS_PER_S = "ours/tokens_per_s"  # completion tokens over the seconds in generation, folding included
FOLD_S = "ours/fold_s"  # seconds folding the adapter in and restoring the base weights
# One count per violation code: violations/<code>.
VIOLATION_PREFIX = "violations/"

# The published results count rollouts under this reward ("fell from 99 to 16").
LOW_REWARD = 0.3


def violation(code: str) -> str:
    return f"{VIOLATION_PREFIX}{code}"


def turn_reward(turn: int) -> str:
    return f"{TURN_REWARD_PREFIX}{turn}"


TURN_REWARDS = tuple(turn_reward(t) for t in (1, 2, 3))  # MAX_TURNS of training/arguments.py


# The run page's charts (static/js/curves.js draws them; the endpoint serves their keys).
CHARTS = (
    {"id": "chart-reward", "title": "Mean group reward (± std)", "series": [REWARD], "band": REWARD_STD,
     "range": [0, 1]},
    {"id": "chart-parts", "title": "Components", "series": [JUDGE, QUALITY, LENGTH, GATE_PASS_RATE], "range": [0, 1]},
    {"id": "chart-counts", "title": f"Rollouts: None, late and under {LOW_REWARD}",
     "series": [NONE_COUNT, LATE_COUNT, LOW_COUNT]},
    {"id": "chart-turns", "title": "Revision turns: mean reward per turn, gain, improved, fixed, kept",
     "series": [*TURN_REWARDS, REVISION_GAIN, IMPROVED_SHARE, FIXED_SHARE, KEPT_SHARE], "range": [-0.5, 1],
     "turns": True},
    {"id": "chart-paint", "title": "Paint fraction (share of the canvas painted)", "series": [PAINT_FRACTION]},
    {"id": "chart-diversity", "title": "Diversity (mean pairwise feature distance)", "series": [DIVERSITY]},
    # The trainer's own figures ("trainer": a run trained elsewhere logs them where it trains).
    {"id": "chart-length", "title": "Completion length (tokens)", "series": [MEAN_LENGTH], "trainer": True},
    # (an SFT run draws these two too: it has no KL)
    {"id": "chart-optim", "title": "Loss, KL, grad norm", "series": [LOSS, KL, GRAD_NORM], "trainer": True,
     "kinds": ("grpo", "sft")},
    {"id": "chart-lr", "title": "Learning rate", "series": [LEARNING_RATE], "trainer": True, "kinds": ("grpo", "sft")},
    {"id": "chart-time", "title": "Seconds per step", "series": [GENERATION_S, RENDER_S, SCORE_S, UPDATE_S],
     "stacked": True, "trainer": True},
    {"id": "chart-speed", "title": "Generation speed (completion tokens/s)", "series": [TOKENS_PER_S], "trainer": True},
    # An SFT run's own (kinds: the run kinds that draw a chart; GRPO when not said).
    {"id": "chart-sft-accuracy", "title": "Token accuracy (share of completion tokens predicted) and entropy",
     "series": [TOKEN_ACCURACY, ENTROPY], "kinds": ("sft",)},
)
CHART_KEYS = tuple(dict.fromkeys(
    key for chart in CHARTS for key in (*chart["series"], *([chart["band"]] if "band" in chart else []))
))



def charts(*, turns: int, trained_here: bool = True, kinds: set[str] | frozenset[str] = frozenset({"grpo"})
           ) -> tuple[dict, ...]:
    """The charts a run's page draws: those of the run kinds shown, the revision chart only for
    runs with revision turns, the trainer's own figures only for runs the studio trains."""
    return tuple(chart for chart in CHARTS
                 if set(kinds) & set(chart.get("kinds", ("grpo",)))
                 and (turns > 1 or not chart.get("turns")) and (trained_here or not chart.get("trainer")))


# For templates: `{{ step.metrics|get_item:keys.gate_pass_rate }}`.
TEMPLATE_KEYS = {
    "gate_pass_rate": GATE_PASS_RATE, "none_count": NONE_COUNT, "late_count": LATE_COUNT, "low_count": LOW_COUNT,
    "paint_fraction": PAINT_FRACTION, "step_s": STEP_S, "generation_s": GENERATION_S, "render_s": RENDER_S,
    "score_s": SCORE_S, "update_s": UPDATE_S, "reward": REWARD, "low_reward": LOW_REWARD,
    "token_accuracy": TOKEN_ACCURACY, "learning_rate": LEARNING_RATE, "grad_norm": GRAD_NORM, "num_tokens": NUM_TOKENS,
}
