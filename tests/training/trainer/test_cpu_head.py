"""The plain LM head on a CPU against TRL's fused one: the same fields, gradients, losses and metrics."""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from datasets import Dataset
from trl import SFTTrainer
from trl.trainer.utils import add_fused_lm_head

from demo.tiny_model import QUICK_SPEC, build_model, sft_config, sft_examples
from demo.tokenizer import build_tokenizer, tokenizer_corpus
from training.trainer.cpu_head import StudioSFTTrainer, plain_head_on_cpu

pytestmark = pytest.mark.slow  # TRL's trainers and a model built here (~10 s)

FIELDS = ("log_probs", "entropy", "is_top1")


@pytest.fixture(scope="module")
def rows():
    return sft_examples(3, subjects=QUICK_SPEC.sft_subjects)


@pytest.fixture(scope="module")
def tokenizer(rows):
    return build_tokenizer(tokenizer_corpus(rows), vocab_size=QUICK_SPEC.vocab_size)


def model_of(tokenizer):
    torch.manual_seed(0)
    return build_model(QUICK_SPEC, tokenizer)


def batch_of(tokenizer, rows):
    """Two conversations of different lengths: right padding, and labels only on the replies."""
    texts = [tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False) for row in rows[:2]]
    prompts = [len(tokenizer.apply_chat_template(row["prompt"], tokenize=True)) for row in rows[:2]]
    tokenizer.padding_side = "right"
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    for row, prompt in enumerate(prompts):
        labels[row, :prompt] = -100
    assert batch["attention_mask"].eq(0).any() and (labels != -100).any()
    return batch["input_ids"], batch["attention_mask"], labels


def scored(model, ids, mask, labels):
    model.zero_grad()
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    (out.loss + 0.1 * out.entropy.sum()).backward()  # GRPO's entropy bonus: the entropy carries a gradient
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out, grads


@pytest.mark.parametrize("temperature", [1.0, 0.7])  # SFT's; a GRPO run's sampling temperature
def test_the_plain_head_gives_trls_fields_and_gradients_on_a_cpu(tokenizer, rows, temperature):
    ids, mask, labels = batch_of(tokenizer, rows)
    trls = model_of(tokenizer)
    ours = copy.deepcopy(trls)
    for model in (trls, ours):
        add_fused_lm_head(model, temperature=temperature, outputs=FIELDS)
    assert plain_head_on_cpu(ours, temperature=temperature)
    expected, expected_grads = scored(trls, ids, mask, labels)
    got, grads = scored(ours, ids, mask, labels)
    torch.testing.assert_close(got.loss, expected.loss, rtol=1e-5, atol=1e-6)
    for field in ("log_probs", "entropy"):
        torch.testing.assert_close(getattr(got, field), getattr(expected, field), rtol=1e-4, atol=1e-5, msg=field)
    assert torch.equal(got.is_top1.bool(), expected.is_top1.bool()) and torch.equal(got.label_mask, expected.label_mask)
    assert got.log_probs[labels[:, 1:] == -100].abs().sum() == 0  # nothing where nothing is scored
    assert set(grads) == set(expected_grads)
    for name, grad in expected_grads.items():
        torch.testing.assert_close(grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)
    # without the flag the model is the model: generation and evaluation read plain logits
    torch.testing.assert_close(ours(input_ids=ids).logits, trls(input_ids=ids).logits)


def test_a_model_whose_logits_are_transformed_keeps_trls_head(tokenizer):
    model = model_of(tokenizer)
    model.config.final_logit_softcapping = 30.0
    add_fused_lm_head(model)
    trls = model.forward
    assert not plain_head_on_cpu(model) and model.forward == trls


def test_a_studio_sft_step_has_trls_loss_and_metrics(tokenizer, rows, tmp_path):
    args = dataclasses.replace(sft_config(QUICK_SPEC, tmp_path, len(rows)), per_device_train_batch_size=3)
    trainers = [cls(model=model_of(tokenizer), args=args, train_dataset=Dataset.from_list(rows),
                    processing_class=tokenizer) for cls in (SFTTrainer, StudioSFTTrainer)]
    batch = next(iter(trainers[0].get_train_dataloader()))
    assert (batch["labels"] == -100).any() and batch["attention_mask"].eq(0).any()  # prompts and padding in it
    losses, metrics = [], []
    for trainer in trainers:
        trainer.model.train()
        losses.append(trainer.compute_loss(trainer.model, dict(batch)).item())
        metrics.append({name: values[-1] for name, values in trainer._metrics["train"].items()})
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    assert metrics[1]["entropy"] == pytest.approx(metrics[0]["entropy"], rel=1e-5)
    assert metrics[1]["mean_token_accuracy"] == metrics[0]["mean_token_accuracy"]
    assert metrics[1]["num_tokens"] == metrics[0]["num_tokens"] == int(batch["attention_mask"].sum())
