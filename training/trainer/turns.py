"""Revision turns (issue #16): the model sees how its sketch came out and writes it again.

A run with `turns` > 1 gives TRL's GRPOTrainer this `RevisionRollout` as its `rollout_func`
(TRL 1.16). Of TRL's two multi-turn hooks it is the one that keeps generation batched:
`environment_factory` drives tool calls, in a `tool` role, one environment call at a time,
while a revision is a user message after every reply, and each turn's sketches are judged
together (one `paint_batch`, its renders and scores fanned out over the workers at once).

One call makes a generation batch's rollouts, turn by turn:

1. all sketches of turn 1 are generated in one batch (TRL's own `_generate_single_turn`: plain
   generate, continuous batching or vLLM, whichever the run uses), then gated, rendered and
   scored in one batch by the reward function's own painting path (`PaintingReward.paint_turn`);
2. each sketch's feedback (`paintenv.feedback.feedback_text`: gate problems with line:col,
   runtime errors, paint coverage, the judge's verdicts, the reward) is appended to its
   conversation as a user message, and every conversation still going is continued in one
   batch: the next prompt is the previous prompt's tokens + the reply's tokens + the feedback's,
   never a re-tokenised text, so the tokens trained on are the tokens generated;
3. after the last turn, TRL gets one completion per rollout: every turn's reply with the
   feedback between them, and an `env_mask` that is 1 on the model's tokens and 0 on the
   feedback's (and on an end-of-turn token added after a reply that was cut off), which TRL
   multiplies into the loss, so the feedback is never trained on.

A vision-language base model (Qwen-VL style) also sees the painting: its feedback message holds
the painting as an image part, widened to the processor's image tokens, and the next turn is
generated with that painting's pixel values (training/trainer/feedback_images.py). The paintings each
rollout was shown go back in the `feedback_images` column, which the trainer
(training/trainer/revision_trainer.py) feeds to the loss's forward pass; the image tokens are feedback
tokens, outside the loss like the rest of it. A text model gets the text alone.

A revision reply may be KEEP alone (the feedback offers it, `is_keep_reply` reads it): that
turn is stored as kept, with the turn before's painting and reward, and the chain ends there.
Its reward is exactly an exact copy's, so it opens nothing to forge; it spares a model that
cannot copy ~570 tokens token for token from re-sampling every painting it would not change.

A rollout stops revising when a turn's reward is None (an infrastructure failure: the rollout's
reward is None whatever comes next). Each turn generates up to `max_completion_length` tokens,
so a rollout's completion holds up to `turns` replies plus the feedback between them.

The chain (per turn: the reply, its painting and the feedback) reaches the reward function as
the `revision_chain` column TRL forwards from the rollout function; the reward function combines
it (`rollout_reward`), stores it and adds the revision metrics, without painting anything again.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from paintenv.extraction import is_keep_reply, reply_text
from paintenv.feedback import revision_messages
from paintenv.prompts import build_messages, make_subject
from painting.pipeline import JudgedSketch, render_png
from training.recording import TurnOutcome, turn_feedback
from training.trainer import together
from training.trainer.feedback_images import FEEDBACK_IMAGES, EncodedPainting, PaintingEncoder, stacked

REVISION_CHAIN = "revision_chain"  # the column TRL hands from the rollout function to the reward function
_SENTINEL = "\u2063revision-turn-reply\u2063"  # a reply text no chat template changes


def painting_png(painted: JudgedSketch) -> bytes | None:
    """The PNG a turn's sketch painted (a blank canvas too: that is worth seeing), or None
    when nothing was rendered."""
    return render_png(painted.render or {})


class RevisionRollout:
    """TRL's `rollout_func(prompts, trainer) -> dict` for runs with revision turns.

    `prompts` are this process's share of the generation batch, each prompt repeated for its
    group's G completions, in the order the reward function receives them."""

    def __init__(self, reward, *, turns: int, subjects: Sequence[str], paintings: PaintingEncoder | None = None):
        self.reward = reward  # training.trainer.rewarding.PaintingReward: paints each turn and stores the chains
        self.turns = turns
        self.paintings = paintings  # a vision-language base model's: it sees its painting (None: text only)
        # The dataset's prompts are build_messages(subject): the painting pipeline wants the subject.
        self.subject_of = {_user_text(build_messages(make_subject(s))): s for s in subjects}

    def __call__(self, prompts: list, trainer) -> dict[str, Any]:
        step = trainer.state.global_step + 1
        subjects = [self.subject_of.get(_user_text(p), _user_text(p)) for p in prompts]
        prompt_ids, _images, _fields = trainer._tokenize_prompts(prompts)
        prompt_ids = [list(ids) for ids in prompt_ids]
        n = len(prompts)
        eos = _eos_ids(trainer)

        ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, trainer.num_generations)
        completion_ids = [list(c) for c in ids]
        env_mask = [[1] * len(c) for c in completion_ids]
        logps = None if logprobs is None else [list(lp) for lp in logprobs]
        replies = _decode(trainer, completion_ids)
        chains: list[list[TurnOutcome]] = [[] for _ in range(n)]
        shown: list[list[EncodedPainting]] = [[] for _ in range(n)]  # the paintings each conversation holds
        going = list(range(n))
        self.reward.begin_turns(step)
        for turn in range(1, self.turns + 1):
            if turn > 1:  # a KEEP reply ends its chain with the painting before: nothing to paint
                kept = [i for i in going if is_keep_reply(replies[i])]
                for i in kept:
                    chains[i].append(TurnOutcome(reply=replies[i], painted=chains[i][-1].painted, kept=True))
                going = [i for i in going if i not in kept]
            painted = self.reward.paint_turn(step, n, [(i, subjects[i], replies[i]) for i in going])
            for i, outcome in zip(going, painted, strict=True):
                chains[i].append(TurnOutcome(reply=replies[i], painted=outcome))
            going = [i for i in going if chains[i][-1].reward is not None]
            # Every process of a multi-process run goes on to the next turn while any has a
            # rollout going: paint_turn gathers all of them, even those with nothing to paint.
            if turn == self.turns or not any(together.gather(bool(going))):
                break
            if not going:
                continue
            next_ids = []
            for i in going:
                last = chains[i][-1]
                last.feedback = turn_feedback(last.painted)
                painting = self._encoded(last.painted)
                cut_off = not completion_ids[i] or completion_ids[i][-1] not in eos  # no end-of-turn: add one
                between = ([trainer._tokenizer.eos_token_id] if cut_off else []) + \
                    _feedback_ids(trainer, prompts[i], last.feedback, painting, self.paintings)
                if painting is not None:
                    shown[i].append(painting)
                completion_ids[i] += between
                env_mask[i] += [0] * len(between)
                if logps is not None:
                    logps[i] += [0.0] * len(between)
                next_ids.append(prompt_ids[i] + completion_ids[i])
            images, fields = self._image_inputs([shown[i] for i in going], next_ids)
            new_ids, new_logprobs = trainer._generate_single_turn(next_ids, images, fields, 1)
            new_replies = _decode(trainer, [list(c) for c in new_ids])
            for k, i in enumerate(going):
                completion_ids[i] += list(new_ids[k])
                env_mask[i] += [1] * len(new_ids[k])
                if logps is not None:
                    logps[i] = logps[i] + list(new_logprobs[k]) if new_logprobs is not None else None
                replies[i] = new_replies[k]
            if logps is not None and any(lp is None for lp in logps):
                logps = None
        out = {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": logps,
            "env_mask": env_mask,
            REVISION_CHAIN: chains,
        }
        if self.paintings is not None:
            out[FEEDBACK_IMAGES] = shown
        return out

    def _encoded(self, painted: JudgedSketch) -> EncodedPainting | None:
        if self.paintings is None:
            return None
        png = painting_png(painted)
        return None if png is None else self.paintings.encode(png)

    def _image_inputs(self, shown: list[list[EncodedPainting]], ids: list[list[int]]) -> tuple[list | None, dict]:
        """What `_generate_single_turn` takes for conversations that hold paintings, as TRL builds
        it for tool images: the images (for vLLM, which processes them itself) and the model's
        image inputs (for transformers' generate: pixel values, patch grids, and the token types
        Qwen's multimodal RoPE reads, which TRL left-pads with the ids)."""
        inputs = stacked(shown)
        if inputs is None:
            return None, {}
        inputs.pop("num_images")
        images = [[p.image for p in row] or None for row in shown]
        return images, {**inputs, "mm_token_type_ids": [self.paintings.token_types(row) for row in ids]}


def _user_text(prompt: Any) -> str:
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if message.get("role") == "user":
                content = message.get("content", "")
                if isinstance(content, list):  # a vision-language processor's parts
                    return "".join(p.get("text", "") for p in content if isinstance(p, dict))
                return content
    return str(prompt)


def _eos_ids(trainer) -> set[int]:
    ids = getattr(trainer, "eos_token_ids", None)
    if ids:
        return set(ids) if isinstance(ids, (list, tuple, set)) else {int(ids)}
    return {trainer._tokenizer.eos_token_id}


def _decode(trainer, ids: list[list[int]]) -> list[str]:
    return [reply_text(r) for r in trainer.processing_class.batch_decode(ids, skip_special_tokens=True)]


def _feedback_ids(trainer, prompt: list, feedback: str, painting: EncodedPainting | None = None,
                  encoder: PaintingEncoder | None = None) -> list[int]:
    """The tokens the chat template puts after an assistant reply's end-of-turn token: the
    user's feedback message, then the next assistant header (the generation prompt). With a
    painting, the message begins with its image, each placeholder widened as the processor
    widens it.

    Found by rendering the conversation with a sentinel reply and taking what follows its
    end-of-turn token, so templates that render earlier assistant turns differently (Qwen3's
    thinking blocks) cannot break it; the text is tokenised on its own, as it begins right
    after a special token."""
    tokenizer = trainer._tokenizer
    messages = revision_messages(prompt, _SENTINEL, feedback, painting_png=painting.png if painting else None)
    if getattr(trainer, "_is_vlm", False):
        from trl.data_utils import prepare_multimodal_messages

        messages = prepare_multimodal_messages(messages)
    text = trainer.processing_class.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False,
        chat_template=getattr(trainer, "chat_template", None), **(getattr(trainer, "chat_template_kwargs", None) or {}),
    )
    if isinstance(text, list):
        text = text[0]
    after = text[text.rindex(_SENTINEL) + len(_SENTINEL):]
    end = tokenizer.eos_token or ""
    if not end or not after.startswith(end):
        raise ValueError(f"the chat template does not end an assistant turn with {end!r}: cannot append feedback")
    after = after[len(end):]
    if painting is not None:
        after = encoder.expand(after, [painting])
    return tokenizer(after, add_special_tokens=False)["input_ids"]
