"""Held-out evaluation judges samples through the painting pipeline: None is never a 0."""
from __future__ import annotations

import pytest

from tests.curation.factories import make_pool
from tests.training.factories import BARE_RECT, GOOD, make_run
from training.models import Run
from training.trainer.evaluation import evaluate_replies

pytestmark = pytest.mark.django_db


def test_a_sample_lost_to_infrastructure_is_left_out_of_the_mean_and_counted(curator, no_worker):
    run = make_run(make_pool(curator), steps=1, generations=2)
    # No render worker is running: the good sample's render misses its deadline.
    result = evaluate_replies(run, {"a peach hibiscus": [GOOD, BARE_RECT]}, deadline_s=1.0)
    subject = result["per_subject"]["a peach hibiscus"]
    assert subject["rewards"] == [None, 0.0], "the failed gate is a verdict (0); the lost render is None"
    assert subject["none"] == 1 and "not back by the stage's 1 s deadline" in subject["failures"][0]
    assert subject["mean_reward"] == 0.0 and result["mean_reward"] == 0.0
    assert (result["none"], result["late"], result["samples"]) == (1, 0, 2)
    assert Run.objects.get(id=run.id).eval_result["none"] == 1


@pytest.mark.slow
def test_it_samples_through_a_processors_tokenizer_in_batches_of_at_most_g_left_padded(tiny_vl_model):
    from transformers import AutoImageProcessor, AutoTokenizer, LlavaProcessor
    from trl.trainer.utils import create_model_from_path

    from training.arguments import RunArguments
    from training.trainer.evaluation import sample_replies

    # A real transformers processor around the checkpoint's tokenizer and image processor
    # (Qwen3.5's own needs torchvision for its video half, which the CPU machines lack).
    tokenizer = AutoTokenizer.from_pretrained(tiny_vl_model)
    tokenizer.padding_side = "right"  # sampling must pad prompts on the left whatever the tokenizer says
    processor = LlavaProcessor(image_processor=AutoImageProcessor.from_pretrained(tiny_vl_model), tokenizer=tokenizer)
    model = create_model_from_path(tiny_vl_model)
    batches = []
    generate = model.generate

    def recording_generate(**inputs):
        batches.append(inputs["input_ids"].shape[0])
        assert (inputs["attention_mask"][:, -1] == 1).all(), "prompts end where generation starts"
        return generate(**inputs)

    model.generate = recording_generate
    args = RunArguments(num_generations=2, max_completion_length=16)
    replies = sample_replies(model, processor, ["a peach hibiscus", "a red rose"], n=3, args=args)
    assert {subject: len(texts) for subject, texts in replies.items()} == {"a peach hibiscus": 3, "a red rose": 3}
    assert all(isinstance(text, str) for texts in replies.values() for text in texts)
    assert batches == [2, 2, 2]


@pytest.mark.slow
@pytest.mark.parametrize("sees_images", [False, True], ids=["text model", "vision-language model"])
def test_a_run_with_revision_turns_is_evaluated_on_its_final_sketches_after_the_trainers_feedback(
    curator, renderer, settings, tmp_path, monkeypatch, sees_images
):
    """The sampler is scripted (the quick model never writes a passing sketch): the first
    sketches are a refused one and a good one, every revision a good one. A vision-language
    base model (its encoder stood in for) is also shown the good sketch's painting."""
    from paintenv.feedback import revision_messages
    from paintenv.reward import PRESETS
    from painting.pipeline import InProcess
    from training.arguments import RunArguments
    from training.trainer import evaluation

    settings.MEDIA_ROOT = tmp_path / "media"
    run = make_run(make_pool(curator), steps=0, generations=2)
    recipe = PRESETS["studio-hps-only"]  # judged in-process: no taste model needed
    args = RunArguments.from_dict(run.hyperparameters | {"turns": 2, "eval_samples_per_subject": 2, "render_size": 128})
    Run.objects.filter(id=run.id).update(recipe=recipe.to_dict(), hyperparameters=args.to_dict())
    run.refresh_from_db()
    refused, good = f"```js\n{BARE_RECT}```", f"```js\n{GOOD}```"
    asked: list[list[list[dict]]] = []
    given = []  # the painting encoder each call was given

    def scripted(model, processing_class, chats, *, args, paintings=None):
        asked.append(chats)
        given.append(paintings)
        return [refused, good] if len(asked) == 1 else [good] * len(chats)

    encoder = object() if sees_images else None
    monkeypatch.setattr(evaluation, "painting_encoder", lambda base_model, processing_class: encoder)
    monkeypatch.setattr(evaluation, "sample_chats", scripted)
    result = evaluation.evaluate_run(run, None, None, executor=InProcess(renderer))

    first_chats, second_chats = asked
    assert given == [None, encoder]  # turn 1's prompts hold no painting
    assert [len(c) for c in first_chats] == [2, 2]  # system + subject
    assert [c[:2] for c in second_chats] == first_chats
    assert [c[2]["content"] for c in second_chats] == [refused, good]
    refused_feedback, good_feedback = (c[3]["content"] for c in second_chats)
    assert second_chats[0] == revision_messages(first_chats[0], refused, refused_feedback)
    assert refused_feedback.startswith("The static check refused the sketch")  # nothing painted: no image
    if sees_images:  # the painting first, then the same text
        image, text = good_feedback
        assert image["type"] == "image" and image["image"].size == (128, 128) and text["type"] == "text"
        good_feedback = text["text"]
    assert good_feedback.startswith("The static check passed.")
    subject = result["per_subject"]["a peach hibiscus"]
    (first_refused, final_refused), (first_good, final_good) = subject["turn_rewards"]
    assert first_refused == 0.0 and min(final_refused, first_good, final_good) > 0
    assert subject["rewards"] == [final_refused, final_good]
    assert subject["determinism_checked"] == subject["rendered"] == 2  # evaluation paints every one twice
    assert result["turns"] == 2 and result["turn_mean_rewards"] == pytest.approx(
        [(first_refused + first_good) / 2, (final_refused + final_good) / 2])
    assert result["mean_reward"] == pytest.approx((final_refused + final_good) / 2)
    assert Run.objects.get(id=run.id).eval_result["turn_mean_rewards"] == result["turn_mean_rewards"]


@pytest.mark.slow
def test_a_sample_that_answers_keep_keeps_its_painting_and_only_the_sketches_still_going_are_painted(
    curator, renderer, settings, tmp_path, monkeypatch
):
    """Three turns, scripted: turn 1 a refused and a good sketch; turn 2 the refused one's
    revision is good and the good one answers KEEP; turn 3 the revised one answers KEEP."""
    from paintenv.reward import PRESETS
    from painting.pipeline import InProcess
    from training.arguments import RunArguments
    from training.trainer import evaluation

    settings.MEDIA_ROOT = tmp_path / "media"
    run = make_run(make_pool(curator), steps=0, generations=2)
    recipe = PRESETS["studio-hps-only"]
    args = RunArguments.from_dict(run.hyperparameters | {"turns": 3, "eval_samples_per_subject": 2, "render_size": 128})
    Run.objects.filter(id=run.id).update(recipe=recipe.to_dict(), hyperparameters=args.to_dict())
    run.refresh_from_db()
    refused, good = f"```js\n{BARE_RECT}```", f"```js\n{GOOD}```"
    scripts = [[refused, good], [good, "KEEP"], ["**KEEP**"]]
    asked, painted = [], []

    def scripted(model, processing_class, chats, *, args, paintings=None):
        asked.append(len(chats))
        return scripts[len(asked) - 1]

    paint = evaluation._paint

    def recording_paint(run, samples, *rest, **options):
        painted.append([(number, reply) for _, number, reply in samples])
        return paint(run, samples, *rest, **options)

    monkeypatch.setattr(evaluation, "sample_chats", scripted)
    monkeypatch.setattr(evaluation, "_paint", recording_paint)
    result = evaluation.evaluate_run(run, None, None, executor=InProcess(renderer))

    assert asked == [2, 2, 1]  # the sample that kept at turn 2 is not asked again
    assert painted == [[(0, refused), (1, good)], [(0, good)], []]  # a KEEP is never painted again
    subject = result["per_subject"]["a peach hibiscus"]
    (refused_1, revised_2, kept_3), (good_1, kept_2, still_3) = subject["turn_rewards"]
    assert refused_1 == 0.0 and revised_2 > 0 and kept_3 == revised_2
    assert good_1 > 0 and kept_2 == still_3 == good_1
    assert subject["kept"] == 2 and subject["rewards"] == [revised_2, good_1]
    assert result["turn_mean_rewards"] == pytest.approx(
        [(0.0 + good_1) / 2, (revised_2 + good_1) / 2, (revised_2 + good_1) / 2])
