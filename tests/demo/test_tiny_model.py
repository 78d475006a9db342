"""The embedded tiny painter: tokenizer, chat template, model size, a quick build that
loads by path like any checkpoint, and the build command. No database, no network."""
from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from demo.management.commands.demo_setup import Command as DemoSetup
from demo.management.commands.seed_pool import Command as SeedPool
from demo.tiny_model import (
    PAINTER_TEST_SPEC,
    QUICK_SPEC,
    SPEC_FILE,
    TinyModelSpec,
    build_model,
    count_parameters,
    sft_config,
    sft_examples,
    warm_start_references,
    warm_start_sketches,
)
from demo.tokenizer import EOS_TOKEN, PAD_TOKEN, build_tokenizer, tokenizer_corpus
from paintenv import seedgen
from paintenv.extraction import extract_sketch
from paintenv.feedback import REVISE_INSTRUCTION
from paintenv.prompts import SUBJECTS, build_messages
from paintenv.seedgen.revisions import GATE_KINDS, revision_examples
from tests.support.painter import is_built


@pytest.fixture(scope="module")
def examples():
    return sft_examples(8)


@pytest.fixture(scope="module")
def tokenizer(examples):
    return build_tokenizer(tokenizer_corpus(examples), vocab_size=2048)


def test_sft_examples_keep_only_the_asked_subjects_in_the_seed_pools_order():
    rows = sft_examples(5, subjects=("peach-hibiscus", "red-rose"))
    users = [row["prompt"][1]["content"] for row in rows]
    assert len(rows) == 5
    assert set(users) == {"Paint a peach hibiscus in loose watercolour.", "Paint a red rose in loose watercolour."}
    assert all(row["completion"][0]["content"].startswith("```js\n") for row in rows)


def _normalised(sketch: str) -> str:
    """The sketch without its fence, comments and layout: what the painting depends on."""
    code = extract_sketch(sketch) or sketch
    return " ".join(re.sub(r"//[^\n]*", "", code).split())


def test_the_default_warm_start_shares_no_sketch_with_the_demo_pool():
    """The demo pool is what `make demo` seeds (demo_setup's count, seed_pool's generator
    seed); a model warm-started on its sketches would be evaluated on paintings it learned."""
    count = DemoSetup().create_parser("manage.py", "demo_setup").parse_args([]).count
    pool_seed = SeedPool().create_parser("manage.py", "seed_pool").parse_args([]).seed
    demo_pool = {_normalised(sk.code) for sk in seedgen.generate_pool(count, seed=pool_seed)}
    spec = TinyModelSpec()
    good, drafts = warm_start_sketches(spec.sft_sketches, seed=spec.sft_generator_seed, subjects=spec.sft_subjects,
                                       revisions=spec.sft_revisions)
    warm_start = {_normalised(sk.reply) for sk in good}
    revised_to = {_normalised(d.target.reply) for d in drafts}  # the revision examples' answers
    assert len(demo_pool) == count and len(warm_start) == spec.sft_sketches
    assert len(drafts) == spec.sft_revisions > 0
    assert not demo_pool & warm_start
    assert not demo_pool & revised_to
    # the check can see a shared sketch: the demo pool's own seed would share its hibiscus ones
    leaked = {_normalised(ex["completion"][0]["content"])
              for ex in sft_examples(spec.sft_sketches, seed=pool_seed, subjects=spec.sft_subjects)}
    assert demo_pool & leaked


def test_the_tokenizer_round_trips_sketch_code_and_text_it_never_saw(tokenizer, examples):
    sketch = examples[0]["completion"][0]["content"]
    unseen = 'const Ω = "naïve — 汉字 🎨";\tlet x = 1e-3; // <|im_end|> in a comment stays text\r\n'
    for text in (sketch, unseen):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == text


def test_the_tokenizer_compresses_sketches_well_below_four_characters_a_token(tokenizer, examples):
    sketch = examples[1]["completion"][0]["content"]
    assert len(sketch) / len(tokenizer(sketch)["input_ids"]) > 4


def test_the_chat_template_is_chatml_and_ends_with_the_assistant_header_when_asked(tokenizer):
    messages = build_messages(SUBJECTS[0])
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                         enable_thinking=False)  # Qwen3 kwargs are ignored, not errors
    assert text.startswith("<|im_start|>system\n")
    assert "<|im_end|>\n<|im_start|>user\nPaint a peach hibiscus in loose watercolour.<|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\n")
    assert not tokenizer.apply_chat_template(messages, tokenize=False).endswith("assistant\n")


def test_the_special_tokens_are_single_ids_with_eos_im_end_and_pad_endoftext(tokenizer):
    assert tokenizer.eos_token == EOS_TOKEN and tokenizer.pad_token == PAD_TOKEN
    assert tokenizer.eos_token_id != tokenizer.pad_token_id
    for token in ("<|im_start|>", EOS_TOKEN, PAD_TOKEN):
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1


def test_the_prompt_is_a_token_prefix_of_prompt_plus_reply_so_trl_masks_cleanly(tokenizer, examples):
    for ex in examples[:3]:
        prompt = tokenizer.apply_chat_template(ex["prompt"], add_generation_prompt=True, tokenize=True,
                                               return_dict=True)["input_ids"]
        full = tokenizer.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=True,
                                             return_dict=True)["input_ids"]
        assert full[: len(prompt)] == prompt


def test_the_assistant_mask_covers_the_reply_and_ends_on_im_end_so_the_model_learns_to_stop(tokenizer, examples):
    ex = examples[0]
    out = tokenizer.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True)
    ids, mask = out["input_ids"], out["assistant_masks"]
    trained = [i for i, m in zip(ids, mask) if m]
    assert trained[-1] == tokenizer.eos_token_id
    assert tokenizer.decode(trained[:-1]) == ex["completion"][0]["content"]


# ---------------------------------------------------------------------------------------
# Revision examples (issue #16)


@pytest.fixture(scope="module")
def revision_rows():
    """Revision rows of the gate-refused kinds (judged in-process: no renderer needed)."""
    _good, drafts = warm_start_sketches(0, revisions=24)
    rows = revision_examples([d for d in drafts if d.kind in GATE_KINDS])
    assert len(rows) >= 8
    return rows


def test_the_demo_spec_warm_starts_on_revisions_and_the_test_specs_on_none():
    assert TinyModelSpec().sft_revisions >= 32 and TinyModelSpec().sft_keeps >= 16
    assert PAINTER_TEST_SPEC.sft_revisions == 0 and QUICK_SPEC.sft_revisions == 0
    assert PAINTER_TEST_SPEC.sft_keeps == 0 and QUICK_SPEC.sft_keeps == 0
    # so the tests' painter trains on exactly the examples it did before revisions existed
    rows = sft_examples(5, revisions=PAINTER_TEST_SPEC.sft_revisions)
    assert [(row["prompt"], row["completion"][0]["content"]) for row in rows] == seedgen.sft_pairs(5)


def test_revision_examples_follow_the_plain_ones_and_answer_with_other_good_sketches():
    good, drafts = warm_start_sketches(4, revisions=9, keeps=3)
    assert [sk.reply for sk in good] == [ex["completion"][0]["content"] for ex in sft_examples(4)]
    assert len(drafts) == 12 and [d.kind for d in drafts[9:]] == ["keep"] * 3
    assert not {d.target.id for d in drafts} & {sk.id for sk in good}
    assert len({d.target.id for d in drafts}) == 12  # each good sketch is used once
    references = warm_start_references(4, revisions=9, keeps=3, references=2)
    assert len(references) == 2
    assert not {sk.id for sk in references} & ({d.target.id for d in drafts} | {sk.id for sk in good})


def test_the_tokenizer_learns_the_feedback_so_the_revise_instruction_is_a_few_tokens(examples, revision_rows):
    corpus = tokenizer_corpus(examples + revision_rows)
    assert any(text == f"user\n{row['prompt'][3]['content']}" for row in revision_rows for text in corpus)
    feedback = revision_rows[0]["prompt"][3]["content"]  # ~320 characters
    with_feedback = build_tokenizer(corpus, vocab_size=8192)
    without = build_tokenizer(tokenizer_corpus(examples), vocab_size=8192)
    # measured: 5 tokens against 44 for the instruction, 10 against 89 for the whole feedback
    assert len(with_feedback(REVISE_INSTRUCTION, add_special_tokens=False)["input_ids"]) <= 8
    assert 3 * len(with_feedback(feedback)["input_ids"]) < len(without(feedback)["input_ids"])


@pytest.mark.slow
def test_the_sft_loss_of_a_revision_example_covers_only_its_last_assistant_turn(tmp_path, examples, revision_rows):
    """What TRL trains on, read from the SFTTrainer's own prepared dataset: the labels
    (not -100) are the answer and its <|im_end|>, never the draft reply in the prompt."""
    from datasets import Dataset
    from trl import SFTTrainer

    rows = [examples[0], *revision_rows[:2]]
    tokenizer = build_tokenizer(tokenizer_corpus(examples + revision_rows), vocab_size=8192)
    spec = dataclasses.replace(QUICK_SPEC, sft_max_length=8192)  # TRL would cut a longer row; the build leaves it out
    model = build_model(spec, tokenizer)
    trainer = SFTTrainer(model=model, args=sft_config(spec, tmp_path, len(rows)),
                         train_dataset=Dataset.from_list(rows), processing_class=tokenizer)
    for row, prepared in zip(rows, trainer.train_dataset):
        trained = [t for t in prepared["labels"] if t != -100]
        assert trained[-1] == tokenizer.eos_token_id
        assert tokenizer.decode(trained[:-1]) == row["completion"][0]["content"]
        # one contiguous run at the end (the template's newline after <|im_end|> is not trained):
        # nothing of the prompt, the draft included, is a target
        labelled = [i for i, t in enumerate(prepared["labels"]) if t != -100]
        assert labelled == list(range(labelled[0], labelled[0] + len(trained)))
        assert labelled[-1] >= len(prepared["labels"]) - 2
    draft = revision_rows[0]["prompt"][2]["content"]
    assert draft in tokenizer.decode(trainer.train_dataset[1]["input_ids"])


def test_a_cached_painter_built_from_another_spec_is_built_again(tmp_path):
    path = tmp_path / "tiny-painter-tests"
    path.mkdir()
    (path / "config.json").write_text("{}")
    old = {k: v for k, v in json.loads(json.dumps(PAINTER_TEST_SPEC.to_dict())).items() if k != "sft_revisions"}
    (path / SPEC_FILE).write_text(json.dumps({"spec": old}))
    assert not is_built(path)
    (path / SPEC_FILE).write_text(json.dumps({"spec": PAINTER_TEST_SPEC.to_dict()}))
    assert is_built(path)


@pytest.mark.slow
def test_the_default_spec_has_a_few_million_parameters_and_ties_its_embeddings():
    spec = TinyModelSpec()
    corpus = tokenizer_corpus(sft_examples(spec.sft_sketches, subjects=spec.sft_subjects))
    tokenizer = build_tokenizer(corpus, vocab_size=spec.vocab_size)
    model = build_model(spec, tokenizer)
    assert 2048 < len(tokenizer) <= spec.vocab_size
    assert model.config.vocab_size == len(tokenizer)
    assert 1_000_000 <= count_parameters(model) <= 10_000_000
    assert model.config.tie_word_embeddings
    assert model.config.eos_token_id == tokenizer.eos_token_id
    assert model.config.pad_token_id == tokenizer.pad_token_id
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


# ---------------------------------------------------------------------------------------
# Builds (slow: real SFT on CPU)


@pytest.fixture(scope="module")
def quick_model(tmp_path_factory) -> Path:
    from demo.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "quick", QUICK_SPEC)


@pytest.mark.slow
def test_a_quick_build_saves_a_checkpoint_that_the_auto_classes_load_by_path_and_that_generates(quick_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(quick_model)
    model = AutoModelForCausalLM.from_pretrained(quick_model)
    assert type(model).__name__ == "Qwen3ForCausalLM"
    assert tokenizer.eos_token == EOS_TOKEN and tokenizer.chat_template

    prompt = tokenizer.apply_chat_template(build_messages(SUBJECTS[0]), add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    torch.manual_seed(0)
    out = model.generate(**prompt, max_new_tokens=24, do_sample=True, top_k=20, top_p=0.95)
    new = out[0, prompt["input_ids"].shape[1]:]
    assert 0 < len(new) <= 24
    assert tokenizer.decode(new, skip_special_tokens=True).strip()

    info = json.loads((quick_model / SPEC_FILE).read_text())
    assert info["spec"]["hidden_size"] == QUICK_SPEC.hidden_size
    sft = info["build"]["sft"]
    assert sft["examples"] == QUICK_SPEC.sft_sketches and sft["steps"] > 0
    assert sft["train_loss"] > 0 and sft["completion_tokens_mean"] > 0


@pytest.mark.slow
def test_sample_pass_rate_reports_shares_and_every_reply(quick_model):
    from demo.pass_rate import sample_pass_rate

    result = sample_pass_rate(quick_model, n=3, max_new_tokens=48)
    assert result["n"] == 3 and len(result["samples"]) == 3
    assert 0.0 <= result["gate_pass"] <= 1.0
    assert result["render_pass"] is None  # no renderer given
    assert all(isinstance(s["reply"], str) for s in result["samples"])


@pytest.mark.slow
def test_the_build_command_with_quick_builds_and_prints_its_report(tmp_path):
    from django.core.management import call_command

    out, err = io.StringIO(), io.StringIO()
    call_command("build_tiny_model", "--quick", "--out", str(tmp_path / "cmd"), "--samples", "4",
                 stdout=out, stderr=err)
    report = out.getvalue()
    for needle in ("parameters:", "tokens per example:", "train loss:", "build time:",
                   "sampled pass rate (4 samples, temperature 1): gate", "total time:"):
        assert needle in report, report
    assert "SFT" in err.getvalue()  # the progress bar
    assert (tmp_path / "cmd" / "config.json").exists()
    assert "evaluation" in json.loads((tmp_path / "cmd" / SPEC_FILE).read_text())


def test_the_build_command_refuses_a_negative_revision_count_before_building(tmp_path):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--revisions must not be negative"):
        call_command("build_tiny_model", "--revisions", "-1", "--out", str(tmp_path / "cmd"))
    assert not (tmp_path / "cmd").exists()
