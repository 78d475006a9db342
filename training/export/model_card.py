"""The model card of a run's merged model, from huggingface_hub's own model card template.

Every section the run can answer is filled from its rows: base model, recipe, pool,
hyper-parameters, the reward curve in thirds, and the held-out evaluation. What the studio
cannot know (license of the base model, compute emissions...) keeps the template's
"[More Information Needed]".
"""
from __future__ import annotations

import platform
from importlib.metadata import version
from pathlib import Path

from huggingface_hub import ModelCard, ModelCardData

from training.arguments import RunArguments
from training.models import Run, Step
from training.stats import format_number, run_thirds
from training.trainer.model_loading import architecture

_HUB_ID_PARTS = 2


def hub_base_model(base_model: str) -> str | None:
    """The base model as a Hub id, or None for a local folder (the Hub's metadata takes ids only)."""
    local = Path(base_model).is_absolute() or base_model.startswith(".") or Path(base_model).exists()
    return None if local or len(base_model.split("/")) != _HUB_ID_PARTS else base_model


def model_card(run: Run, *, repo_id: str | None = None) -> ModelCard:
    args = run.arguments
    base = hub_base_model(run.base_model)
    data = ModelCardData(
        language=["en", "code"], library_name="transformers", pipeline_tag="text-generation",
        base_model=base, tags=["trl", "grpo", "peft", "lora", "p5js", "watercolour", "paint-with-code"],
    )
    return ModelCard.from_template(
        data,
        model_id=repo_id or f"paint-with-code run {run.id}",
        model_summary=(f"`{run.base_model}` with the LoRA adapter of Paint with Code Studio run #{run.id} "
                       f"(\"{run.name}\") merged in: it answers a request for a flower with a complete p5.js 2.x "
                       "+ p5.brush 2.x sketch that paints it in loose watercolour."),
        model_description=(f"Trained with GRPO (TRL) for {run.steps_done} of {args.max_steps} steps, "
                           f"{args.num_generations} completions per prompt, rewarded by rendering each sketch in "
                           f"headless Chromium and scoring the painting with the recipe `{run.recipe_name}` "
                           f"against the reference pool `{run.pool.label}`."),
        developers=f"Paint with Code Studio, run #{run.id} launched by "
                   f"{run.created_by.get_username() if run.created_by else 'the command line'}",
        model_type="causal language model, LoRA adapter merged into the base weights",
        language="English prompts; JavaScript (p5.js 2.x + p5.brush 2.x) replies",
        base_model=base or f"`{run.base_model}` (a local model; not on the Hub)",
        direct_use=("Generating p5.js + p5.brush watercolour sketches from the studio's prompt (the system "
                    "prompt with the allowed API, then \"Paint {subject} in loose watercolour.\")."),
        out_of_scope_use="Anything but sketches in the studio's allowed API: the reward never saw other code.",
        bias_risks_limitations=(f"The reward reflects one curator's grades in pool `{run.pool.label}` and the "
                                f"recipe's judge; {len(run.subjects)} subject(s) were trained. Sketches should "
                                "still be run in a sandbox like the studio's renderer."),
        get_started_code=_get_started(repo_id or "PATH_OR_REPO_ID", vision=_is_vision_language(run.base_model)),
        training_data=_training_data(run),
        preprocessing=f"Chat prompts of the subjects {', '.join(f'`{s}`' for s in run.subjects)}.",
        training_regime=_training_regime(args),
        speeds_sizes_times=_times(run),
        testing_data=f"The eval split of pool `{run.pool.label}` (never used as reward references).",
        testing_metrics=_metrics(run),
        results=_results(run),
        results_summary=_eval_summary(run),
        model_specs=f"LoRA r {args.lora_r}, α {args.lora_alpha} on all linear layers, merged with PEFT's `merge_and_unload`.",
        software=", ".join(f"{name} {version(name)}" for name in ("trl", "peft", "transformers", "torch"))
                 + f"; Python {platform.python_version()}",
    )


def _is_vision_language(base_model: str) -> bool:
    """Whether the base model is a vision-language class (Qwen3.5's `…ForConditionalGeneration`),
    which loads with AutoModelForImageTextToText; False where its config cannot be read here."""
    try:
        return architecture(base_model).__name__.endswith("ForConditionalGeneration")
    except (OSError, ValueError):
        return False


def _get_started(where: str, *, vision: bool = False) -> str:
    model_class, processing = (("AutoModelForImageTextToText", "AutoProcessor") if vision
                               else ("AutoModelForCausalLM", "AutoTokenizer"))
    return (
        "```python\n"
        f"from transformers import {model_class}, {processing}\n\n"
        f'model = {model_class}.from_pretrained("{where}")\n'
        f'{"processor" if vision else "tokenizer"} = {processing}.from_pretrained("{where}")\n'
        "```"
    )


def _training_data(run: Run) -> str:
    pool = run.pool
    counts = {tier: pool.members.filter(split="train", tier=tier).count() for tier in ("love", "okay")}
    return (f"Reference pool `{pool.label}` (frozen curator grades): {counts['love']} love and "
            f"{counts['okay']} okay paintings in its train split, drawn as the judge's references.")


def _training_regime(args: RunArguments) -> str:
    rows = "\n".join(f"| `{name}` | `{value}` |" for name, value in args.to_dict().items())
    precision = "bf16" if args.bf16 else "fp32 on CPU, bf16 on a GPU" if args.bf16 is None else "fp32"
    # The blank line ends the table before the template's comment that follows this value.
    return f"{precision}\n\n| run argument | value |\n|---|---|\n{rows}\n\n"


def _times(run: Run) -> str:
    if run.started_at and run.finished_at:
        return f"{run.steps_done} steps in {(run.finished_at - run.started_at).total_seconds() / 60:.1f} minutes."
    return f"{run.steps_done} steps."


def _metrics(run: Run) -> str:
    parts = ", ".join(f"{k} {v}" for k, v in run.recipe.items() if k.startswith("w_"))
    return f"The run's reward: recipe `{run.recipe_name}` ({parts}); 0 for a sketch that fails the gate or the render."


def _results(run: Run) -> str:
    rewards = list(Step.objects.filter(run=run).exclude(reward_mean=None).values_list("step", "reward_mean"))
    if not rewards:
        return "No step with a reward was recorded."
    best_step, best = max(rewards, key=lambda pair: pair[1])
    t = run_thirds(run)
    lines = [f"Mean group reward: step {rewards[0][0]} {rewards[0][1]:.3f}, step {rewards[-1][0]} "
             f"{rewards[-1][1]:.3f}, best {best:.3f} at step {best_step} ({len(rewards)} steps)."]
    if t.first_mean is None:
        lines.append(f"Thirds: none ({t.reason}).")
    else:
        lines += [
            "", "| first third | middle third | last third | last − first | slope / step (t) | < 0.3 first / last |",
            "|---|---|---|---|---|---|",
            f"| {format_number(t.first_mean)} | {format_number(t.middle_mean)} | {format_number(t.last_mean)} | "
            f"{format_number(t.change, '+.3f')} | {format_number(t.slope, '.4f')} ({format_number(t.t_stat, '.2f')}) | "
            f"{t.first_low} / {t.last_low} |",
        ]
    return "\n".join(lines)


def _eval_summary(run: Run) -> str:
    result = run.eval_result or {}
    if not result:
        return "No held-out evaluation was recorded for this run."
    if "error" in result:
        return f"The held-out evaluation failed: {result['error']}"
    mean = result.get("mean_reward")
    per = ", ".join(f"{name} {format_number(s.get('mean_reward'))}" for name, s in result.get("per_subject", {}).items())
    summary = (f"Held-out mean reward {format_number(mean)} over {result.get('samples')} samples "
               f"({result.get('none', 0)} left out: infrastructure failed). Per subject: {per}.")
    if result.get("turn_mean_rewards"):
        by_turn = " → ".join(f"turn {t} {format_number(m)}" for t, m in enumerate(result["turn_mean_rewards"], start=1))
        summary += (f" With {result['turns']} turns the mean is the final sketch's; each turn's mean on the same "
                    f"samples: {by_turn}.")
    return summary
