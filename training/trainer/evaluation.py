"""Held-out evaluation: sample K sketches per subject and score them against the eval split.

The eval split of the run's pool is never a reward reference during training, so this
result compares runs on references none of them was trained toward.

A run with revision turns is evaluated as it trains: each sample's painting is fed back
(`training.trainer.turns.turn_feedback`, the trainer's text) and the model writes the next sketch,
up to the run's `turns`. The result's rewards are then the final paintings' own rewards (a
sample with a None turn is None, as in training, and a sample that answered KEEP keeps the
painting before), and `turn_mean_rewards` gives the mean of each turn over the samples whose
every turn has a reward, so first and final compare on the same samples; `kept` counts the
samples that answered KEEP. Only the sketches still going are painted at each turn. A
vision-language base model is shown each painting with the feedback, as in training.
"""
from __future__ import annotations

import time
from statistics import fmean

from django.utils import timezone

from curation.models import Tier
from paintenv.extraction import is_keep_reply, reply_text
from paintenv.feedback import revision_messages
from paintenv.prompts import build_messages, make_subject
from paintenv.reward import Recipe
from painting.pipeline import Batch, Executor, JudgedSketch, PaintJob, paint_batch, render_seed
from training.arguments import RunArguments
from training.models import Run
from training.trainer.feedback_images import PaintingEncoder, painting_encoder, stacked
from training.trainer.model_loading import text_tokenizer
from training.trainer.turns import painting_png, turn_feedback


def eval_references(run: Run, count: int) -> list[int]:
    ids: list[int] = []
    for tier in (Tier.LOVE, Tier.OKAY):
        ids += list(
            run.pool.members.filter(split="eval", tier=tier).order_by("reference__sha256")
            .values_list("reference_id", flat=True)[: max(1, count // 2)]
        )
    return ids


def sample_replies(model, processing_class, subjects: list[str], *, n: int, args: RunArguments) -> dict[str, list[str]]:
    """`n` replies per subject, sampled as the trainer samples (see `sample_chats`)."""
    jobs = [subject for subject in subjects for _ in range(n)]
    replies: dict[str, list[str]] = {subject: [] for subject in subjects}
    sampled = sample_chats(model, processing_class, [build_messages(make_subject(s)) for s in jobs], args=args)
    for subject, reply in zip(jobs, sampled):
        replies[subject].append(reply)
    return replies


def sample_chats(model, processing_class, chats: list[list[dict]], *, args: RunArguments,
                 paintings: PaintingEncoder | None = None) -> list[str]:
    """One reply to each chat, sampled as the trainer samples (the run's temperature, top-p,
    top-k and completion length, no thinking). `processing_class` is a tokenizer or a VL
    model's processor (its tokenizer does the text). All chats are generated together,
    left-padded, at most G sequences a batch: the trainer generates G at once on the same
    device, so a batch of G fits where training did.

    A chat whose messages hold image parts (a revision turn's painting shown to a
    vision-language model: `revision_messages(painting_png=)`) needs `paintings`, the base
    model's encoder: the model then reads each painting as the trainer shows it at turn k > 1
    (training/trainer/turns.py): the placeholder widened to the painting's tokens, its pixel values and
    patch grid, and the token types Qwen's multimodal RoPE reads."""
    import torch

    tokenizer = text_tokenizer(processing_class)
    rows = [_chat_prompt(tokenizer, chat, paintings) for chat in chats]
    replies: list[str] = []
    batch_size = max(1, args.num_generations)
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        width = max(len(ids) for ids, _ in batch)
        padded = [[tokenizer.pad_token_id] * (width - len(ids)) + ids for ids, _ in batch]
        inputs: dict = {
            "input_ids": torch.tensor(padded, device=model.device),
            "attention_mask": torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids, _ in batch],
                                           device=model.device),
        }
        images = stacked([shown for _, shown in batch], device=model.device)
        if images is not None:
            images.pop("num_images")
            inputs |= images | {"mm_token_type_ids": torch.tensor([paintings.token_types(row) for row in padded],
                                                                   device=model.device)}
        with torch.no_grad():
            out = model.generate(
                **inputs, do_sample=True, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                max_new_tokens=args.max_completion_length,
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
            )
        replies += [reply_text(tokenizer.decode(row, skip_special_tokens=True)) for row in out[:, width:]]
    return replies


def _chat_prompt(tokenizer, chat: list[dict], paintings: PaintingEncoder | None) -> tuple[list[int], list]:
    """A chat's prompt tokens (the generation prompt added) and the paintings its image parts
    show, in order."""
    images = [part["image"] for message in chat if isinstance(message.get("content"), list)
              for part in message["content"] if isinstance(part, dict) and part.get("type") == "image"]
    if images and paintings is None:
        raise ValueError("a chat that shows a painting needs a vision-language base model's painting encoder")
    if images:
        from trl.data_utils import prepare_multimodal_messages  # TRL loads torch: the train worker only

        chat = prepare_multimodal_messages(chat)
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    shown = [paintings.encode_image(image) for image in images]
    if shown:
        text = paintings.expand(text, shown)
    return tokenizer(text, add_special_tokens=False)["input_ids"], shown


# Evaluation renders as step 0 of the run's seeding rule: no training step has that number.
EVAL_STEP = 0


def evaluate_run(run: Run, model, processing_class, *, deadline_s: float = 600.0,
                 executor: Executor | None = None, store: bool = True) -> dict:
    """Score K samples per subject against the eval split (with revision turns, the final
    sketch of each conversation); store (unless not `store`) and return the result.
    `executor`: where renders and scores run (the workers unless given)."""
    args = run.arguments
    n = max(1, args.eval_samples_per_subject)
    replies = sample_replies(model, processing_class, list(run.subjects), n=n, args=args)
    if args.turns == 1:
        return evaluate_replies(run, replies, deadline_s=deadline_s, executor=executor, store=store)
    return _evaluate_turns(run, model, processing_class, replies, deadline_s=deadline_s, executor=executor,
                           store=store)


def evaluate_trained(run: Run, model, processing_class, *, deadline_s: float = 600.0) -> dict:
    """A trained run's held-out evaluation, stored: an SFT run's with its base model's figures
    beside it under "base" (the same prompts, the adapter switched off), so its page shows what
    SFT changed; a GRPO run's as `evaluate_run`."""
    if not run.is_sft:
        return evaluate_run(run, model, processing_class, deadline_s=deadline_s)
    with model.disable_adapter():
        base = evaluate_run(run, model, processing_class, deadline_s=deadline_s, store=False)
    result = {**evaluate_run(run, model, processing_class, deadline_s=deadline_s, store=False), "base": base}
    Run.objects.filter(id=run.id).update(eval_result=result)
    return result


def evaluate_replies(run: Run, replies: dict[str, list[str]], *, deadline_s: float = 600.0,
                     executor: Executor | None = None, store: bool = True) -> dict:
    """Judge each subject's sampled replies through the painting pipeline; store the result.

    A sample whose render or scoring failed for infrastructure reasons has reward None: the
    means leave it out and `none` says how many were left out; `late` counts those of them
    whose result came back after its stage's deadline (not used)."""
    started = time.monotonic()
    references = _references(run)
    samples = [(subject, number, reply) for number, (subject, reply) in
               enumerate((subject, reply) for subject, sampled in replies.items() for reply in sampled)]
    batches = _paint(run, samples, references, deadline_s=deadline_s, executor=executor)
    per_subject = {subject: _subject_figures(batch.paintings, batch.rewards, batch.late_count)
                   for subject, batch in batches.items()}
    return _store(run, per_subject, references, started, store=store)


def _evaluate_turns(run: Run, model, processing_class, replies: dict[str, list[str]], *, deadline_s: float,
                    executor: Executor | None, store: bool = True) -> dict:
    args = run.arguments
    started = time.monotonic()
    references = _references(run)
    paintings = painting_encoder(run.base_model, processing_class)  # a VL model sees each painting, as in training
    samples = [(subject, i) for subject, sampled in replies.items() for i in range(len(sampled))]
    reply = {sample: replies[sample[0]][sample[1]] for sample in samples}
    chat = {sample: build_messages(make_subject(sample[0])) for sample in samples}
    chains: dict[tuple[str, int], list[JudgedSketch]] = {sample: [] for sample in samples}  # each turn's painting
    late = {subject: 0 for subject in replies}
    going = samples
    for turn in range(1, args.turns + 1):
        if turn > 1:  # a KEEP reply ends its sample with the painting before, as in training
            kept = [sample for sample in going if is_keep_reply(reply[sample])]
            for sample in kept:
                chains[sample].append(chains[sample][-1])
            going = [sample for sample in going if sample not in kept]
        batches = _paint(run, [(s[0], samples.index(s), reply[s]) for s in going], references,
                         deadline_s=deadline_s, executor=executor)
        for subject, batch in batches.items():
            late[subject] += batch.late_count
            for sample, painted in zip([s for s in going if s[0] == subject], batch.paintings, strict=True):
                chains[sample].append(painted)
        # A sample whose reward is None has ended: its final reward is None whatever comes next.
        going = [sample for sample in going if chains[sample][-1].reward is not None]
        if turn == args.turns or not going:
            break
        for sample in going:
            painted = chains[sample][-1]
            chat[sample] = revision_messages(chat[sample], reply[sample], turn_feedback(painted),
                                             painting_png=painting_png(painted) if paintings else None)
        sampled = sample_chats(model, processing_class, [chat[sample] for sample in going], args=args,
                               paintings=paintings)
        reply.update(zip(going, sampled, strict=True))
    per_subject = {}
    for subject in replies:
        chains_of = [chains[sample] for sample in samples if sample[0] == subject]
        turn_rewards = [_turn_rewards(chain, args.turns) for chain in chains_of]
        finals = [rewards[-1] for rewards in turn_rewards]
        figures = _subject_figures([chain[-1] for chain in chains_of], finals) | {"late": late[subject]}
        whole = [rewards for rewards in turn_rewards if all(r is not None for r in rewards)]
        figures["turn_mean_rewards"] = [fmean(c[t] for c in whole) if whole else None for t in range(args.turns)]
        figures["turn_rewards"] = turn_rewards
        figures["kept"] = sum(1 for chain in chains_of if len(chain) > 1 and chain[-1] is chain[-2])
        per_subject[subject] = figures
    return _store(run, per_subject, references, started, turns=args.turns, store=store)


def _turn_rewards(chain: list[JudgedSketch], turns: int) -> list[float | None]:
    """A sample's reward at each of the run's turns: a chain ended by None is None from then on,
    and one ended by KEEP keeps its final painting's reward (that painting stands)."""
    rewards = [painted.reward for painted in chain]
    return rewards + [rewards[-1]] * (turns - len(rewards))


def _references(run: Run) -> tuple[int, ...]:
    recipe = Recipe.from_dict(run.recipe)
    return tuple(eval_references(run, recipe.references_per_group)) if recipe.w_judge > 0 else ()


def _paint(run: Run, samples: list[tuple[str, int, str]], references: tuple[int, ...], *, deadline_s: float,
           executor: Executor | None) -> dict[str, Batch]:
    """Each subject's samples (subject, sample number, reply) painted and judged as one batch,
    each with its sample number's render seed (the same at every turn, so a revision is
    painted under the same seed)."""
    args = run.arguments
    recipe = Recipe.from_dict(run.recipe)
    batches: dict[str, Batch] = {}
    for subject in dict.fromkeys(s for s, _, _ in samples):
        jobs = [PaintJob(reply=reply, prompt=subject, seed=render_seed(run.seed, EVAL_STEP, number),
                         reference_ids=references) for s, number, reply in samples if s == subject]
        batches[subject] = paint_batch(jobs, recipe=recipe, pool_id=run.pool_id, size=args.render_size,
                                       executor=executor, render_deadline_s=deadline_s, score_deadline_s=deadline_s,
                                       check_every=1)
    return batches


def _subject_figures(paintings: list[JudgedSketch], rewards: list[float | None], late: int = 0) -> dict:
    """One subject's figures from its samples' (final) paintings and rewards."""
    valid = [r for r in rewards if r is not None]
    samples = len(paintings)
    return {
        "samples": samples,
        "gate_pass_rate": sum(1 for p in paintings if p.gate_passed) / max(1, samples),
        "rendered": sum(1 for p in paintings if p.passed),
        # every painting that passed its first render is rendered again and compared (determinism.py)
        "determinism_checked": sum(1 for p in paintings if "determinism" in (p.render or {}).get("findings", {})),
        "mean_reward": fmean(valid) if valid else None,
        "none": sum(1 for r in rewards if r is None),
        "late": late,
        "failures": [p.failure for p in paintings if p.failure],
        "rewards": rewards,
    }


def _store(run: Run, per_subject: dict[str, dict], references: tuple[int, ...], started: float, *,
           turns: int = 1, store: bool = True) -> dict:
    all_rewards = [r for s in per_subject.values() for r in s["rewards"] if r is not None]
    samples = sum(s["samples"] for s in per_subject.values())
    result = {
        "mean_reward": fmean(all_rewards) if all_rewards else None,
        "gate_pass_rate": sum(s["gate_pass_rate"] * s["samples"] for s in per_subject.values()) / max(1, samples),
        "render_rate": sum(s["rendered"] for s in per_subject.values()) / max(1, samples),
        "none": sum(s["none"] for s in per_subject.values()),
        "late": sum(s["late"] for s in per_subject.values()),
        "determinism_checked": sum(s["determinism_checked"] for s in per_subject.values()),
        "samples": sum(s["samples"] for s in per_subject.values()),
        "references": list(references),
        "per_subject": per_subject,
        "seconds": round(time.monotonic() - started, 1),
        "at": timezone.now().isoformat(),
    }
    if turns > 1:
        chains = [chain for s in per_subject.values() for chain in s["turn_rewards"]
                  if all(r is not None for r in chain)]
        result["turns"] = turns
        result["turn_mean_rewards"] = [fmean(c[t] for c in chains) if chains else None for t in range(turns)]
    if store:
        Run.objects.filter(id=run.id).update(eval_result=result)
    return result
