"""Does the tiny painter revise? Turn 1 vs turn 2 of a revision chat (issue #16).

    .venv/bin/python bench/revision_warm_start.py --model models/tiny-painter [--samples 16]
                                                  [--size 256] [--seed 0] [--json OUT]

For each sample (the model's warm-start subjects in turn): sample a first sketch from the
subject's chat, paint it with the studio's pipeline in-process (`paint_reply`: the gate,
then the real renderer when the gate passed), score it with the embedded reward recipe
that needs no references (`studio-hps-only`: gate, length and the features quality
scorer), write the feedback the trainer writes (`feedback_text`, with that reward), then
sample a second sketch from `revision_messages(...)` rendered by the chat template with
the generation prompt: the exact turn-2 prompt of the trainer. It prints the gate pass,
render pass and mean reward of turn 1 and turn 2, and how many failed first sketches the
second turn fixed (and how many passing ones it broke). Sampling as the trainer does:
temperature 1, top_p 0.95, top_k 20. The judge is left out (it needs references and a
server), so the reward here is the quality-led one.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")


def _judge(reply: str, subject: str, *, renderer, seed: int, size: int, recipe, quality):
    from paintenv.feedback import Turn
    from paintenv.paint import paint_reply
    from paintenv.reward import combine

    painting = paint_reply(reply, renderer=renderer, seed=seed, size=size)
    score = quality.score(painting.png, prompt=subject) if painting.passed else None
    reward = combine(recipe, painting.passed, recipe.length_part(painting.painting_tokens), None, score)
    return Turn(painting=painting, reward=reward)


def _figures(turns) -> dict:
    rewards = [t.reward.reward for t in turns if t.reward.reward is not None]
    return {
        "gate_pass": sum(t.painting.gate.passed for t in turns) / len(turns),
        "render_pass": sum(t.painting.passed for t in turns) / len(turns),
        "reward_mean": round(statistics.mean(rewards), 4) if rewards else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a built tiny painter")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--size", type=int, default=256, help="render size in pixels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: twice the longest SFT reply")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write every sample's replies and feedback here")
    args = parser.parse_args()

    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    import torch
    from transformers import AutoTokenizer

    from demo.pass_rate import sample_chats
    from demo.tiny_model import HIBISCUS_SUBJECTS, read_model_info
    from paintenv.feedback import feedback_text, revision_messages
    from paintenv.prompts import build_messages, subject_by_slug
    from paintenv.quality import load_quality
    from paintenv.renderer import Renderer
    from paintenv.reward import PRESETS
    from training.trainer.model_loading import architecture

    torch.set_num_threads(args.threads)
    info = read_model_info(args.model)
    slugs = info.get("spec", {}).get("sft_subjects") or list(HIBISCUS_SUBJECTS)
    subjects = [subject_by_slug(slugs[i % len(slugs)]) for i in range(args.samples)]
    longest = info.get("build", {}).get("sft", {}).get("completion_tokens_max") or 1024
    max_new = args.max_new_tokens or int(longest * 2)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.padding_side = "left"
    model = architecture(args.model).from_pretrained(args.model, dtype="float32").eval()
    recipe, quality = PRESETS["studio-hps-only"], load_quality("features")
    print(f"model {args.model}: {info.get('spec', {}).get('sft_revisions', 0)} revision examples in its warm start "
          f"({info.get('build', {}).get('sft', {}).get('revision_examples', 0)} kept)")

    torch.manual_seed(args.seed)
    started = time.perf_counter()
    firsts_chat = [build_messages(s) for s in subjects]
    replies1 = [r for r, _n, _end in sample_chats(model, tokenizer, firsts_chat, max_new_tokens=max_new)]
    with Renderer() as renderer:
        turns1 = [_judge(r, s.text, renderer=renderer, seed=i, size=args.size, recipe=recipe, quality=quality)
                  for i, (r, s) in enumerate(zip(replies1, subjects))]
        feedbacks = [feedback_text(t) for t in turns1]
        chats2 = [revision_messages(c, r, f) for c, r, f in zip(firsts_chat, replies1, feedbacks)]
        replies2 = [r for r, _n, _end in sample_chats(model, tokenizer, chats2, max_new_tokens=max_new)]
        turns2 = [_judge(r, s.text, renderer=renderer, seed=i, size=args.size, recipe=recipe, quality=quality)
                  for i, (r, s) in enumerate(zip(replies2, subjects))]
    seconds = time.perf_counter() - started

    one, two = _figures(turns1), _figures(turns2)
    fixed = sum(not a.painting.passed and b.painting.passed for a, b in zip(turns1, turns2))
    broke = sum(a.painting.passed and not b.painting.passed for a, b in zip(turns1, turns2))
    failed = sum(not t.painting.passed for t in turns1)
    better = sum((b.reward.reward or 0) > (a.reward.reward or 0) for a, b in zip(turns1, turns2))
    for name, fig in (("turn 1", one), ("turn 2", two)):
        print(f"{name}: gate {fig['gate_pass']:.0%}, render {fig['render_pass']:.0%}, "
              f"reward {fig['reward_mean'] if fig['reward_mean'] is not None else 'n/a'} (studio-hps-only, no judge)")
    print(f"fixed: {fixed} of {failed} failed first sketches; broke: {broke} of {args.samples - failed} passing ones; "
          f"reward up in {better} of {args.samples}")
    print(f"{args.samples} samples, {args.size} px renders, {seconds:.0f} s")
    if args.json:
        rows = [{"subject": s.slug, "reply1": r1, "feedback": f, "reply2": r2,
                 "passed1": a.painting.passed, "passed2": b.painting.passed,
                 "reward1": a.reward.reward, "reward2": b.reward.reward}
                for s, r1, f, r2, a, b in zip(subjects, replies1, feedbacks, replies2, turns1, turns2)]
        args.json.write_text(json.dumps({"turn1": one, "turn2": two, "fixed": fixed, "broke": broke,
                                         "samples": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
