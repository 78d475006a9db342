"""The editor's "Ask the model to revise": the chat is the trainer's turn-2 chat, the run's
latest adapter writes the revision on the train worker (a real tiny model, a real worker),
it then renders like a curator's edit, and a missing train worker fails it with the reason."""
from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
from django.urls import reverse

from paintenv.feedback import feedback_text, revision_messages, turn_from_records
from paintenv.gate import gate_reply
from paintenv.paint import paint_reply, paint_source
from paintenv.prompts import build_messages, make_subject
from tests.curation.factories import make_pool
from tests.training.factories import (
    BARE_RECT,
    GOOD,
    make_chain_rollout,
    make_chain_run,
    make_run,
    trained_adapter,
    write_checkpoint,
)
from training.arguments import RunArguments
from training.editor import presenters, services
from training.editor.model_revision import latest_adapter, revision_write
from training.models import Revision, Rollout, Run
from training.stored_turns import fenced, revision_chat, row_painting, row_turn
from training.trainer import model_loading
from training.trainer.checkpoints import seal
from training.trainer.evaluation import sample_chats
from training.trainer.feedback_images import painting_encoder
from training.trainer.model_loading import load_processing_class

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _unanswered_tasks_flushed(no_worker):
    """Most tests here queue a task no worker takes: it must not reach a later test's worker."""


@pytest.fixture
def run(curator):
    run = make_run(make_pool(curator), steps=1, generations=2, rewards=[[0.55, 0.0]], seed=3)
    run.hyperparameters.update(render_size=128, max_completion_length=96, temperature=1.0)
    run.save(update_fields=["hyperparameters"])
    return run


@pytest.fixture
def rollout(run) -> Rollout:
    return run.rollouts.get(position=0)  # passed, judged against 4 references


@pytest.fixture
def refused(run) -> Rollout:
    return run.rollouts.get(position=1)  # the gate refused its bare rect: never rendered in training


def settle(revision: Revision, *, until=lambda r: not r.is_pending, timeout: float = 120) -> Revision:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        revision = services.revision_sync(revision=Revision.objects.get(pk=revision.pk))
        if until(revision):
            return revision
        time.sleep(0.3)
    raise AssertionError(f"revision {revision.pk} still {revision.status} after {timeout:.0f} s")


# --- the chat: what the trainer gives at turn 2 -------------------------------------------------


def test_the_chat_for_a_rollout_is_the_trainers_turn_2_chat_from_its_records(rollout):
    # What the trainer's pipeline holds for this rollout: the gated reply, the render task's
    # dict, the score task's dict, the reward and its parts.
    records = turn_from_records(
        paint_reply(rollout.reply, renderer=None),
        render={"passed": True, "violations": [], "rendered": True, "paint_fraction": 0.2, "errors": [],
                "png_path": rollout.png},
        score={"judge": rollout.judge_detail}, reward=rollout.reward, parts=rollout.parts,
    )
    trainers = revision_messages(build_messages(make_subject(rollout.subject)), rollout.reply, feedback_text(records))

    chat = revision_chat(rollout.subject, rollout)
    assert chat == trainers
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    feedback = chat[-1]["content"]
    assert "The static check passed." in feedback and "Paint covers 20.0% of the sheet" in feedback
    assert "reference 4: yours first won; yours second lost" in feedback
    assert 'judge, yours first: "looser, more alive washes"' in feedback
    assert "Reward: 0.550 (gate passed, length 0.20, judge 0.60, quality 0.50)." in feedback


def test_a_refused_rollout_is_told_where_the_gate_refused_it_and_that_it_was_not_painted(refused):
    feedback = revision_chat(refused.subject, refused)[-1]["content"]
    assert feedback == feedback_text(turn_from_records(
        paint_reply(refused.reply, renderer=None), render=None, score=None, reward=0.0, parts=refused.parts))
    assert "The static check refused the sketch, so it was not painted (1 problem):" in feedback
    assert "- line 5:3:" in feedback and "5 | rect(0, 0, 10, 10);" in feedback
    assert "Paint covers" not in feedback and "judge" not in feedback.lower()


def test_a_revision_of_a_revision_is_given_its_code_and_the_feedback_on_it(rollout, curator):
    render = {"passed": False, "rendered": True, "violations": ["bare_primitives"], "paint_fraction": 0.31,
              "errors": [], "bare_calls": {}, "gate": {}}
    edited = Revision.objects.create(
        rollout=rollout, code=BARE_RECT, status=Revision.Status.DONE, render=render, violations=["bare_primitives"],
        reward=0.0, parts={"gate": 0.0, "length": 0.1, "judge": None, "quality": None}, created_by=curator,
    )
    revision = services.revision_ask_model(rollout=rollout, source=edited, requested_by=curator, wait_s=60)

    assert revision.status == Revision.Status.WRITING and revision.by_model and revision.parent == edited
    chat = revision_chat(rollout.subject, edited)
    assert chat[2] == {"role": "assistant", "content": fenced(BARE_RECT)}
    expected = feedback_text(turn_from_records(paint_source(BARE_RECT, renderer=None), render=render, score=None,
                                               reward=0.0, parts=edited.parts))
    assert revision.feedback == chat[-1]["content"] == expected
    # The editor renders a refused sketch: the model is told how it came out all the same.
    assert "The static check refused the sketch (1 problem)" in expected and "Paint covers 31.0%" in expected
    assert "Reward: 0.000 (gate failed, length 0.10)." in expected


def test_a_multi_turn_rollout_is_revised_from_its_last_turn_with_that_paintings_own_reward(run, curator):
    chained = make_chain_run(run.pool, turns=2, weight=0.5)
    rollout = make_chain_rollout(chained, [BARE_RECT, GOOD], [0.0, 0.7])
    first = rollout.chain.get(turn=1)
    assert feedback_text(row_turn(first)) == first.feedback  # the feedback the trainer stored after turn 1
    painted = make_chain_rollout(chained, [GOOD, GOOD], [0.4, 0.7], position=1).chain.get(turn=1)
    assert feedback_text(row_turn(painted)) == painted.feedback and "Judge score" in painted.feedback

    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)
    assert rollout.reward == pytest.approx(1.05)  # final + 0.5 × gain: not what the painting earned
    assert "Reward: 0.700 (gate passed" in revision.feedback and "1.050" not in revision.feedback


def test_a_keep_reply_paints_the_sketch_the_model_was_shown_again_and_the_page_says_so(client, rollout, curator):
    edited = Revision.objects.create(rollout=rollout, code=GOOD + "// edited\n", status=Revision.Status.DONE,
                                     reward=0.4, parts={"gate": 1.0, "length": 0.1, "judge": None, "quality": 0.4},
                                     passed=True, created_by=curator)
    for source, shown in ((None, rollout.code), (edited, edited.code)):
        revision = services.revision_ask_model(rollout=rollout, source=source, requested_by=curator, wait_s=60)
        written = services.revision_written(revision=revision, reply="```\nKEEP\n```", adapter="adapter")
        assert written.kept and written.code == shown and written.status == Revision.Status.RENDERING
        assert written.reply == "```\nKEEP\n```" and written.render_task_id
    client.force_login(curator)
    html = client.get(reverse("training:rollout", args=[rollout.run_id, rollout.id]) + f"?revision={written.id}")
    assert 'id="model-kept"' in html.content.decode()
    # Anything more than the word is a reply like any other: its own sketch, or none.
    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)
    reply = "KEEP\n```js\n" + BARE_RECT + "```"
    written = services.revision_written(revision=revision, reply=reply, adapter="")
    assert not written.kept and written.code == gate_reply(reply)[0] != rollout.code


def test_a_revision_still_rendering_cannot_be_revised_yet(client, curator, rollout):
    pending = Revision.objects.create(rollout=rollout, code=GOOD, status=Revision.Status.RENDERING, created_by=curator)
    client.force_login(curator)
    response = client.post(reverse("training:revision-ask-model", args=[rollout.run_id, rollout.id, pending.id]))
    assert response.status_code == 409
    assert "still rendering: ask the model once it has come out" in response.content.decode()
    assert not Revision.objects.filter(author=Revision.Author.MODEL).exists()


# --- which model writes it ------------------------------------------------------------------------


def test_the_latest_adapter_is_the_final_one_else_the_newest_complete_checkpoint_else_none(run, tmp_path):
    run.output_dir = str(tmp_path / "run")
    assert latest_adapter(run) is None  # nothing saved yet: the base model alone
    adapter_files = {"adapter_config.json": b"{}", "trainer_state.json": b"{}"}
    write_checkpoint(run.output_dir, 2, files=adapter_files)
    write_checkpoint(run.output_dir, 4, files=adapter_files)
    write_checkpoint(run.output_dir, 6, files=adapter_files, sealed=False)  # a save cut short
    assert latest_adapter(run) == tmp_path / "run" / "checkpoint-4"
    (tmp_path / "run" / "adapter").mkdir()
    (tmp_path / "run" / "adapter" / "adapter_config.json").write_text("{}")
    assert latest_adapter(run) == tmp_path / "run" / "adapter"
    run.status = Run.Status.RUNNING  # training again: its checkpoints are newer than the old adapter
    assert latest_adapter(run) == tmp_path / "run" / "checkpoint-4"


@pytest.mark.slow
def test_the_runs_adapter_writes_the_reply_in_process_and_its_sketch_goes_on_like_an_edit(
    rollout, curator, tiny_model, tmp_path
):
    run = rollout.run
    run.base_model, run.output_dir = tiny_model, str(tmp_path / "run")
    run.save(update_fields=["base_model", "output_dir"])
    trained_adapter(tiny_model, Path(run.output_dir) / "adapter")
    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)

    started = time.monotonic()
    written = revision_write(revision_id=revision.id)
    seconds = time.monotonic() - started
    assert written.reply and written.adapter == str(Path(run.output_dir) / "adapter")
    code, verdict = gate_reply(written.reply)  # extracted as the pipeline extracts it
    assert written.code == (code or "")
    if written.status == Revision.Status.RENDERING:  # a sketch: rendered like a curator's edit
        assert written.render_task_id and written.stage_started_at
    else:  # nothing renderable in the reply: worth 0 at once, as in training
        assert written.status == Revision.Status.DONE and written.reward == 0.0
        assert written.violations == verdict.codes
    assert presenters.model_used(written) == "the run's final adapter (adapter/)"
    assert seconds < 60, f"writing one revision took {seconds:.1f} s"

    # Asked again once it was cancelled: nothing is written over the cancel.
    again = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)
    services.revision_cancel(revision=again, cancelled_by=curator)
    assert revision_write(revision_id=again.id).status == Revision.Status.CANCELLED


@pytest.mark.slow
@pytest.mark.usefixtures("one_torch_thread")
def test_a_vision_language_model_is_shown_the_rollouts_painting_as_the_trainer_shows_it(
    rollout, curator, tiny_vl_model, monkeypatch
):
    run = rollout.run
    run.base_model = tiny_vl_model
    run.save(update_fields=["base_model"])
    generated = []
    load = model_loading.load_adapted_model

    def load_and_watch(base_model, adapter):
        model, processing_class = load(base_model, adapter)
        generate = model.generate
        model.generate = lambda **kwargs: generated.append(kwargs) or generate(**kwargs)
        return model, processing_class

    monkeypatch.setattr(model_loading, "load_adapted_model", load_and_watch)
    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)

    written = revision_write(revision_id=revision.id)

    assert written.status != Revision.Status.FAILED, written.error
    (inputs,) = generated
    encoder = painting_encoder(tiny_vl_model, model_loading.load_processing_class(tiny_vl_model))
    shown = encoder.encode(row_painting(rollout))
    # The rollout's own painting, as pixels and as as many image tokens as the processor gives it.
    assert torch.equal(inputs["pixel_values"], shown.pixel_values)
    assert torch.equal(inputs["image_grid_thw"], shown.image_grid_thw)
    ids = inputs["input_ids"][0].tolist()
    assert ids.count(encoder.image_token_id) == shown.tokens > 0
    assert inputs["mm_token_type_ids"][0].tolist() == encoder.token_types(ids)
    # ...in front of the feedback text the trainer gives.
    text = model_loading.text_tokenizer(model_loading.load_processing_class(tiny_vl_model)).decode(ids)
    first_line = feedback_text(row_turn(rollout)).splitlines()[0]
    assert text.index("<|image_pad|>") < text.index(first_line)


def test_a_chat_that_shows_a_painting_to_a_text_model_is_refused(rollout, tiny_model):
    chat = revision_chat(rollout.subject, rollout, show_painting=True)
    assert isinstance(chat[-1]["content"], list)  # the painting, then the text
    with pytest.raises(ValueError, match="needs a vision-language base model"):
        sample_chats(None, load_processing_class(tiny_model), [chat], args=RunArguments())


def test_a_model_that_does_not_load_fails_the_revision_with_the_reason(rollout, curator, tmp_path):
    run = rollout.run
    run.base_model = str(tmp_path / "no-such-model")
    run.save(update_fields=["base_model"])
    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=60)
    failed = revision_write(revision_id=revision.id)
    assert failed.status == Revision.Status.FAILED and failed.reward is None
    assert failed.error.startswith(f"The model ({run.base_model}) could not write a revision: ")


# --- through the train worker --------------------------------------------------------------------


@pytest.mark.slow
def test_the_train_worker_writes_with_the_newest_checkpoint_of_a_training_run_and_it_renders(
    start_worker, worker_env, rollout, curator, tiny_model, tmp_path
):
    worker_env["RENDER_TIMEOUT_S"] = "10"
    start_worker("train")
    start_worker("render")
    run = rollout.run
    run.base_model, run.output_dir, run.status = tiny_model, str(tmp_path / "run"), Run.Status.RUNNING
    run.hyperparameters["max_completion_length"] = 1024  # room for a whole sketch (~600 tokens), to render
    run.save(update_fields=["base_model", "output_dir", "status", "hyperparameters"])
    checkpoint = Path(run.output_dir) / "checkpoint-1"
    trained_adapter(tiny_model, checkpoint)
    (checkpoint / "trainer_state.json").write_text("{}")
    seal(checkpoint, 1)

    revision = services.revision_ask_model(rollout=rollout, requested_by=curator)
    assert services.revision_sync(revision=revision).status == Revision.Status.WRITING
    revision = settle(revision)
    assert revision.status in (Revision.Status.DONE, Revision.Status.RENDERED), revision.error
    assert revision.reply and revision.adapter == str(checkpoint)
    assert presenters.model_used(revision) == "the adapter of checkpoint step 1"
    assert presenters.side_of_revision(revision, None).label == f"Revision {revision.id} by the model"
    print(f"the tiny model's reply: {len(revision.reply)} characters, {revision.status}, {revision.violations}")
    if revision.render_task_id:  # its sketch rendered like an edit, with the original's seed and size
        assert revision.render["seed"] == run.seed + rollout.step * 1000 + rollout.position
        assert revision.render["size"] == 128


def test_without_a_train_worker_the_request_fails_with_the_reason_and_no_reward(rollout, curator):
    revision = services.revision_ask_model(rollout=rollout, requested_by=curator, wait_s=1.5)
    assert services.revision_sync(revision=revision).status == Revision.Status.WRITING  # still waiting
    later = revision.stage_started_at + timedelta(seconds=2)
    revision = services.revision_sync(revision=Revision.objects.get(pk=revision.pk), now=later)
    assert revision.status == Revision.Status.FAILED and revision.reward is None and revision.reply == ""
    assert "No train worker took this request within 2 s, so the model wrote nothing" in revision.error
    assert "make worker-train" in revision.error and "while a run trains there" in revision.error


def test_the_buttons_post_without_javascript_and_the_page_shows_the_model_writing(client, curator, rollout):
    client.force_login(curator)
    html = client.get(reverse("training:rollout", args=[rollout.run_id, rollout.id])).content.decode()
    assert 'id="ask-model-button"' in html
    assert reverse("training:rollout-ask-model", args=[rollout.run_id, rollout.id]) in html

    response = client.post(reverse("training:rollout-ask-model", args=[rollout.run_id, rollout.id]))
    revision = Revision.objects.get(author=Revision.Author.MODEL)
    assert response.status_code == 302 and response.url.endswith(f"?revision={revision.id}")
    html = client.get(response.url).content.decode()
    assert 'data-status="writing"' in html and "the model is writing…" in html
    assert "Waiting for the train worker" in html and "by the model (asked by ada) · revising the original" in html
    assert "What the model was told" in html and "The static check passed." in html
    assert 'id="ask-model-revision-button"' not in html  # not while it is being written

    revision.status = Revision.Status.FAILED
    revision.save(update_fields=["status"])
    html = client.get(response.url).content.decode()
    assert reverse("training:revision-ask-model", args=[rollout.run_id, rollout.id, revision.id]) in html
    response = client.post(reverse("training:revision-ask-model", args=[rollout.run_id, rollout.id, revision.id]))
    assert Revision.objects.get(parent=revision).by_model
