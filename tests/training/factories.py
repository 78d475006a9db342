"""Small builders for training tests: a finished run with real steps and rollouts (real PNGs).

No training happens here: the rows look like what the trainer and the reward function write,
so pages, exports and statistics can be tested quickly.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from paintapp.lib.storage import store_content_addressed
from paintenv.feedback import feedback_text, turn_from_records
from paintenv.gate import gate_source
from paintenv.image import paint_fraction
from paintenv.length import length_score
from paintenv.paint import Painting
from paintenv.reward import PRESETS
from tests.curation.factories import png_bytes
from training import metrics as keys
from training.arguments import RunArguments
from training.models import Revision, Rollout, RolloutTurn, Run, Step
from training.recording import rollout_reward
from training.trainer.checkpoints import seal

CORPUS = Path(__file__).resolve().parents[1] / "paintenv" / "corpus"
GOOD = (CORPUS / "good" / "hibiscus.js").read_text()  # a complete sketch that passes the gate
LOOP_FOREVER = """function setup() {
  createCanvas(600, 600, WEBGL);
  brush.scaleBrushes(3);
  brush.fill("#c2185b", 230);
  brush.circle(300, 300, 140, 0.4);
  while (true) { brush.noStroke(); }
}
"""
# A sketch the gate refuses (a bare p5 rect): what a failed rollout's code looks like.
BARE_RECT = """function setup() {
  createCanvas(600, 600, WEBGL);
  brush.fill("#c2410c", 80);
  brush.circle(200, 200, 90);
  rect(0, 0, 10, 10);
}
"""
# BARE_RECT revised: the bare rect replaced by brush calls, which the gate passes.
FIXED_RECT = BARE_RECT.replace("  rect(0, 0, 10, 10);\n", '  brush.fill("#7c3aed", 120);\n  brush.circle(320, 260, 60);\n')
# Rows carry the gate's real verdicts on their code, so a "passed" rollout's code passes.
GOOD_VERDICT = gate_source(GOOD)
BARE_RECT_VERDICT = gate_source(BARE_RECT)
assert GOOD_VERDICT.passed and BARE_RECT_VERDICT.codes == ["bare_primitives"]


def make_run(pool, *, steps: int = 3, generations: int = 4, status: str = "finished", seed: int = 0,
             name: str = "judge-led test run", rewards: list[list[float | None]] | None = None,
             created_by=None) -> Run:
    """A run with `steps` Step rows and `generations` rollouts per step.

    `rewards[s][i]` sets rollout i of step s+1; None is an infrastructure failure and 0.0 a
    failed gate. Without it rewards rise slowly with noise (seeded).
    """
    recipe = PRESETS["studio-judge-led"]
    # One group a step, 1 × G; generated as the trainer resolves `auto` on a CPU box.
    args = RunArguments.from_dict({"num_generations": generations, "gradient_accumulation_steps": generations,
                                   "max_steps": max(1, steps), "generation": "generate"})
    run = Run.objects.create(
        name=name, pool=pool, base_model=str(Path(settings.MODELS_DIR) / "tiny-painter"),
        recipe_name=recipe.name, recipe=recipe.to_dict(), subjects=["a peach hibiscus"],
        hyperparameters=args.to_dict(), seed=seed, status=status, steps_done=steps, created_by=created_by,
    )
    rng = random.Random(seed)
    references = list(pool.members.filter(split="train").values_list("reference_id", flat=True)[:4])
    for s in range(1, steps + 1):
        step_rewards = rewards[s - 1] if rewards else [
            round(min(1.0, max(0.0, 0.3 + 0.04 * s + rng.gauss(0, 0.1))), 4) for _ in range(generations)
        ]
        rows = []
        for i, reward in enumerate(step_rewards):
            passed = reward is not None and reward > 0.0
            code, verdict = (BARE_RECT, BARE_RECT_VERDICT) if reward == 0.0 else (GOOD, GOOD_VERDICT)
            png = store_content_addressed(png_bytes(size=48), folder="renders") if reward is None or passed else ""
            judge = round(min(1.0, (reward or 0) * 1.1), 4) if passed else None
            rows.append(Rollout(
                run=run, step=s, group=0, position=i, subject="a peach hibiscus",
                prompt="Paint a peach hibiscus in loose watercolour.",
                reply=f"Here is my painting.\n```javascript\n{code}```\n",
                code=code, png=png, passed=passed, violations=verdict.codes,
                reward=reward,
                parts={"gate": 1.0 if reward != 0.0 else 0.0, "length": 0.2, "judge": judge,
                       "quality": 0.5 if passed else None,
                       "unavailable": ["render: TimeoutError: no render worker answered"] if reward is None else []},
                judge_detail={"score": judge, "dropped": 0, "references": [
                    {"reference_id": rid, "score": 0.5, "orders": [
                        {"candidate_first": True, "p_candidate": 1.0, "reason": "looser, more alive washes"},
                        {"candidate_first": False, "p_candidate": 0.0, "reason": "the reference has cleaner edges"},
                    ]} for rid in references
                ]} if passed else {},
                reference_ids=references, paint_fraction=0.2 if png else None,
                stats=verdict.stats,
                timings={"render_ms": 900}, failure="render: TimeoutError: no render worker answered" if reward is None else "",
            ))
        Rollout.objects.bulk_create(rows)
        valid = [r for r in step_rewards if r is not None]
        mean = sum(valid) / len(valid) if valid else None
        std = (sum((r - mean) ** 2 for r in valid) / len(valid)) ** 0.5 if valid else None
        Step.objects.create(run=run, step=s, reward_mean=mean, reward_std=std, metrics={
            "reward": mean, "reward_std": std, "loss": 0.01 * s, "kl": 0.001 * s, "grad_norm": 0.5,
            "learning_rate": 5e-5, keys.GATE_PASS_RATE: sum(1 for r in step_rewards if r) / len(step_rewards),
            keys.NONE_COUNT: float(sum(1 for r in step_rewards if r is None)),
            keys.LOW_COUNT: float(sum(1 for r in valid if r < keys.LOW_REWARD)),
            keys.STEP_S: 20.0, keys.GENERATION_S: 5.0, keys.RENDER_S: 10.0, keys.SCORE_S: 2.0, keys.UPDATE_S: 3.0,
        })
    return run


def make_measured_run(pool, *, host: str, base_model: str, generation: str, rates: list[float]) -> Run:
    """A finished GRPO run trained on `host` whose steps logged these generation speeds, in order
    (ours/tokens_per_s, as StudioGRPOTrainer logs them)."""
    run = make_run(pool, steps=0)
    run.trainer, run.base_model = f"{host}:4242", base_model
    run.hyperparameters = {**run.hyperparameters, "generation": generation, "max_steps": len(rates)}
    run.steps_done = len(rates)
    run.save()
    for step, rate in enumerate(rates, start=1):
        Step.objects.create(run=run, step=step, metrics={keys.TOKENS_PER_S: rate, keys.COMPLETION_TOKENS: 8192.0,
                                                         keys.FOLD_S: 0.2})
    return run


def make_chain_run(pool, *, turns: int = 2, weight: float = 0.5, name: str = "revising run", **kwargs) -> Run:
    """A run of `turns`-turn rollouts (no rollouts yet: add them with make_chain_rollout)."""
    run = make_run(pool, steps=0, name=name, **kwargs)
    args = RunArguments.from_dict({**run.hyperparameters, "turns": turns, "revision_gain_weight": weight})
    run.hyperparameters = args.to_dict()
    run.save(update_fields=["hyperparameters"])
    return run


def make_chain_rollout(run: Run, codes: Sequence[str], rewards: Sequence[float | None], *, step: int = 1,
                       group: int = 0, position: int = 0, pngs: Sequence[bytes | None] | None = None,
                       subject: str = "a peach hibiscus", kept: bool = False) -> Rollout:
    """A multi-turn rollout whose rows are what the trainer writes: one RolloutTurn per code.

    Each turn's `passed`/`violations` are the real gate's verdict on its code; a turn whose
    code the gate refuses gets reward 0 and no painting (its entry in `rewards` must be 0).
    A passed turn is painted with `pngs[i]` (a real render, say) or a small test PNG, and its
    reward is `rewards[i]` (None: infrastructure failure). Every turn but the last carries the
    feedback `paintenv.feedback` writes from that turn's own fields. The Rollout repeats
    the last turn, with the combined reward final + w × (final − first) of the run's weight.
    `kept`: the last turn answered KEEP (its code, painting and reward are the turn before's).
    """
    assert len(codes) == len(rewards) >= 2, "a chain has two turns or more, one reward each"
    assert not kept or (codes[-1], rewards[-1]) == (codes[-2], rewards[-2]), "a kept turn repeats the turn before"
    weight = run.arguments.revision_gain_weight
    references = list(run.pool.members.filter(split="train").values_list("reference_id", flat=True)[:2])
    rows = []
    for index, (code, reward) in enumerate(zip(codes, rewards, strict=True)):
        verdict = gate_source(code)
        assert verdict.passed or reward == 0.0, f"turn {index + 1} fails the gate: its reward is 0"
        painted = verdict.passed and reward is not None
        png = (pngs[index] if pngs and pngs[index] else png_bytes(size=48)) if painted else None
        judge = round(min(1.0, reward * 1.1), 4) if painted else None
        judge_detail = {"score": judge, "dropped": 0, "references": [
            {"reference_id": rid, "score": judge, "orders": [
                {"candidate_first": True, "p_candidate": judge, "reason": "looser, more alive washes"},
                {"candidate_first": False, "p_candidate": judge, "reason": "the reference has cleaner edges"},
            ]} for rid in references]} if painted else {}
        length = round(length_score(code), 4)
        parts = {"gate": 1.0 if verdict.passed else 0.0, "length": length, "judge": judge,
                 "quality": 0.5 if painted else None,
                 "unavailable": ["render: TimeoutError: no render worker answered"] if reward is None else []}
        fraction = round(paint_fraction(png), 4) if painted else None
        render = {"png": png, "paint_fraction": fraction, "errors": [], "violations": []} if verdict.passed else None
        feedback = feedback_text(turn_from_records(
            Painting(code=code, gate=verdict, render=None, length_score=length),
            render=render, score={"judge": judge_detail} if painted else None, reward=reward, parts=parts,
        )) if index < len(codes) - 1 else ""
        rows.append(RolloutTurn(
            turn=index + 1, reply=f"```js\n{code}```", code=code,
            png=store_content_addressed(png, folder="renders") if png else "",
            passed=painted, violations=verdict.codes, reward=reward, parts=parts, judge_detail=judge_detail,
            paint_fraction=fraction, stats=verdict.stats, timings={"render_ms": 900} if painted else {},
            failure="render: TimeoutError: no render worker answered" if reward is None else "", feedback=feedback,
        ))
    last = rows[-1]
    if kept:
        last.reply, last.kept, last.png = "KEEP", True, rows[-2].png
    combined = rollout_reward([row.reward for row in rows], gain_weight=weight)
    rollout = Rollout.objects.create(
        run=run, step=step, group=group, position=position, subject=subject,
        prompt=f"Paint {subject} in loose watercolour.", reply=last.reply, code=last.code, png=last.png,
        passed=last.passed, violations=last.violations, reward=combined, parts=last.parts,
        judge_detail=last.judge_detail, reference_ids=references, paint_fraction=last.paint_fraction,
        stats=last.stats, timings=last.timings, failure=last.failure, turns=len(rows),
    )
    for row in rows:
        row.rollout = rollout
    RolloutTurn.objects.bulk_create(rows)
    if run.steps_done < step:
        run.steps_done = step
        run.save(update_fields=["steps_done"])
    return rollout


def make_revision(rollout: Rollout, curator, *, reward: float = 0.6, color: tuple[int, int, int] = (40, 90, 160)) -> Revision:
    """A scored revision of `rollout` by `curator`, with its own painting."""
    png = store_content_addressed(png_bytes(color, size=48), folder="renders")
    return Revision.objects.create(
        rollout=rollout, code=f"// edited: a looser wash\n{GOOD}", status=Revision.Status.DONE, png=png, passed=True,
        reward=reward, parts={"gate": 1.0, "length": 0.2, "judge": reward, "quality": 0.5}, created_by=curator,
    )


# The files of a checkpoint the Trainer writes, in miniature.
CHECKPOINT_FILES = {"adapter_model.safetensors": b"a" * 64, "optimizer.pt": b"o" * 128, "scheduler.pt": b"s" * 8,
                    "trainer_state.json": b'{"global_step": 1}'}


def write_checkpoint(output_dir, step: int, *, sealed: bool = True, files: dict[str, bytes] = CHECKPOINT_FILES):
    """`output_dir/checkpoint-<step>/`, sealed as training.trainer.checkpoints' callback seals one."""
    folder = Path(output_dir) / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_bytes(content)
    if sealed:
        seal(folder, step)
    return folder


def trained_adapter(base_model: str, out_dir) -> None:
    """A LoRA adapter as the trainer saves one, with non-zero B weights (as after training)."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from training.trainer.grpo import lora_config

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_model), lora_config(RunArguments()))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.05)
    model.save_pretrained(out_dir)
