"""The revision rollout (training/trainer/turns.py) on a real GRPOTrainer, tiny model and in-process painting."""
from __future__ import annotations

import pytest

from paintenv.feedback import REVISE_INSTRUCTION, revision_messages
from paintenv.render_config import RendererConfig
from paintenv.renderer import Renderer
from paintenv.reward import PRESETS
from painting.pipeline import InProcess
from tests.curation.factories import make_pool
from tests.support.runs import FAST
from training import metrics as keys
from training.arguments import RunArguments
from training.management.follow import step_line
from training.models import Run, Step
from training.recording import revision_metrics, turn_feedback
from training.trainer.feedback_images import FEEDBACK_IMAGES
from training.trainer.grpo import build_trainer, training_dataset
from training.trainer.rewarding import PaintingReward
from training.trainer.turns import RevisionRollout

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def quick_renderer():
    """The quick test model's sketches that pass the gate may loop: a render here ends in 3 s."""
    with Renderer(RendererConfig(timeout_s=3)) as renderer:
        yield renderer


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def revision_setup(curator, tiny_model, renderer, media, **arguments):
    recipe = PRESETS["studio-hps-only"]  # judged in-process: no taste model needed
    args = RunArguments.from_dict(FAST | {"max_steps": 1, "turns": 2} | arguments)
    run = Run.objects.create(name="turns", pool=make_pool(curator, name="turns"), base_model=tiny_model,
                             recipe_name=recipe.name, recipe=recipe.to_dict(), subjects=["a peach hibiscus"],
                             hyperparameters=args.to_dict(), output_dir=str(media / "runs" / "turns"))
    trainer = build_trainer(run, args, task_id="test")
    rollout = RevisionRollout(PaintingReward(run, executor=InProcess(renderer)), turns=args.turns, subjects=run.subjects)
    prompts = [training_dataset(run, args)[0]["prompt"]] * args.num_generations
    return trainer, prompts, rollout


def revision_rollout(curator, tiny_model, renderer, media, **arguments):
    trainer, prompts, rollout = revision_setup(curator, tiny_model, renderer, media, **arguments)
    return trainer, prompts, rollout(prompts, trainer)


def test_the_model_sees_its_reply_and_the_feedback_as_the_chat_template_writes_them_and_trains_only_on_its_replies(
    curator, tiny_model, quick_renderer, media
):
    trainer, prompts, out = revision_rollout(curator, tiny_model, quick_renderer, media, max_completion_length=128)
    assert trainer.rollout_func.paintings is None and FEEDBACK_IMAGES not in out  # a text model: text feedback only
    tokenizer = trainer._tokenizer
    for prompt, ids, completion, mask, chain in zip(prompts, out["prompt_ids"], out["completion_ids"], out["env_mask"],
                                                    out["revision_chain"], strict=True):
        assert len(mask) == len(completion)
        first, second = chain
        assert first.feedback == turn_feedback(first.painted) and second.feedback == ""
        assert first.feedback.endswith(REVISE_INSTRUCTION) and not first.kept
        turn_two = mask.index(0) + mask[mask.index(0):].index(1)  # where the model writes again
        seen = tokenizer.decode(ids + completion[:turn_two], skip_special_tokens=False)
        assert seen == trainer.processing_class.apply_chat_template(
            revision_messages(prompt, first.reply, first.feedback), add_generation_prompt=True, tokenize=False,
            **trainer.chat_template_kwargs)
        assert set(mask[turn_two:]) == {1} and set(mask[mask.index(0):turn_two]) == {0}
        model_tokens = [t for t, m in zip(completion, mask, strict=True) if m]
        assert tokenizer.decode(model_tokens[-(len(completion) - turn_two):], skip_special_tokens=True) == second.reply


def test_a_keep_reply_ends_its_chain_with_the_painting_before_which_is_not_painted_again(
    curator, tiny_model, quick_renderer, media
):
    trainer, prompts, rollout = revision_setup(curator, tiny_model, quick_renderer, media, max_completion_length=64,
                                               turns=3)
    tokenizer = trainer._tokenizer
    keep_ids = tokenizer("KEEP", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    generate, paint_turn = trainer._generate_single_turn, rollout.reward.paint_turn
    calls, painted_items = [], []

    def generate_keeping_even_rollouts(ids, images, fields, n):  # the model's own sampling, KEEP where asked
        out, logprobs = generate(ids, images, fields, n)
        calls.append(len(ids))
        if len(calls) == 1:
            return out, logprobs
        out = [keep_ids if k % 2 == 0 else row for k, row in enumerate(out)]
        return out, None if logprobs is None else [[0.0] * len(row) for row in out]

    def recording_paint_turn(step, share, items):
        painted_items.append([i for i, _, _ in items])
        return paint_turn(step, share, items)

    trainer._generate_single_turn, rollout.reward.paint_turn = generate_keeping_even_rollouts, recording_paint_turn
    out = rollout(prompts, trainer)

    going_after_one = [i for i in painted_items[0] if out["revision_chain"][i][0].reward is not None]
    kept_at_two = going_after_one[0::2]  # the even ones of the turn-2 batch answered KEEP
    assert painted_items[1] == going_after_one[1::2]  # only the sketches that were not KEEP are painted
    for i in kept_at_two:
        first, second = out["revision_chain"][i]  # the chain ends at the KEEP: no turn 3
        assert second.kept and second.reply == "KEEP" and second.painted is first.painted
        assert second.reward == first.reward and second.feedback == ""
        mask = out["env_mask"][i]
        assert out["completion_ids"][i][-len(keep_ids):] == keep_ids and set(mask[-len(keep_ids):]) == {1}
    assert calls[1] == len(going_after_one)
    for i in painted_items[1]:
        assert not out["revision_chain"][i][1].kept
    figures = revision_metrics(out["revision_chain"])
    whole = [c for c in out["revision_chain"] if len(c) > 1 and all(t.reward is not None for t in c)]
    assert figures[keys.KEPT_SHARE] == pytest.approx(sum(1 for c in whole if c[-1].kept) / len(whole))


def test_a_reply_cut_at_the_length_limit_gets_an_end_of_turn_the_model_is_not_trained_on(curator, tiny_model, quick_renderer, media):
    trainer, _, out = revision_rollout(curator, tiny_model, quick_renderer, media, max_completion_length=16)
    eos = trainer._tokenizer.eos_token_id
    for completion, mask in zip(out["completion_ids"], out["env_mask"], strict=True):
        cut = mask.index(0)
        assert cut == 16 and completion[cut - 1] != eos  # the first reply was cut off...
        assert completion[cut] == eos  # ...and closed by an end-of-turn outside the loss


def test_following_a_multi_turn_run_prints_each_turns_reward_the_gain_and_the_share_improved():
    metrics = {keys.GATE_PASS_RATE: 0.75, keys.turn_reward(1): 0.41, keys.turn_reward(2): 0.58,
               keys.REVISION_GAIN: 0.17, keys.IMPROVED_SHARE: 0.625}
    line = step_line(Step(step=3, reward_mean=0.58, reward_std=0.1, metrics=metrics | {keys.KEPT_SHARE: 0.25}))
    assert line.endswith("turns 0.410 → 0.580  gain 0.170  improved 0.62  kept 0.25")
    assert "turns" not in step_line(Step(step=3, reward_mean=0.58, reward_std=0.1, metrics={keys.GATE_PASS_RATE: 0.75}))
