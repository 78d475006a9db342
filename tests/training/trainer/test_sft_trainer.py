"""StudioSFTTrainer's loss on a CPU against TRL's fused LM head, on one batch of real SFT rows."""
from __future__ import annotations

import dataclasses

import pytest
import torch
from datasets import Dataset
from trl import SFTTrainer

from demo.tiny_model import QUICK_SPEC, build_model, sft_config, sft_examples
from demo.tokenizer import build_tokenizer, tokenizer_corpus
from training.trainer.sft_trainer import StudioSFTTrainer

pytestmark = pytest.mark.slow  # TRL's trainers and a model built here (~10 s)


@pytest.fixture(scope="module")
def rows():
    return sft_examples(3, subjects=QUICK_SPEC.sft_subjects)


def trainer_on(rows, tmp_path, **config) -> StudioSFTTrainer:
    torch.manual_seed(0)
    tokenizer = build_tokenizer(tokenizer_corpus(rows), vocab_size=QUICK_SPEC.vocab_size)
    args = dataclasses.replace(sft_config(QUICK_SPEC, tmp_path, len(rows)), per_device_train_batch_size=3, **config)
    return StudioSFTTrainer(model=build_model(QUICK_SPEC, tokenizer), args=args,
                            train_dataset=Dataset.from_list(rows), processing_class=tokenizer)


def loss_and_grads(trainer, compute_loss, batch):
    trainer.model.zero_grad()
    trainer._metrics["train"].clear()
    loss = compute_loss(trainer, trainer.model, dict(batch), num_items_in_batch=(batch["labels"][:, 1:] != -100).sum())
    loss.backward()
    grads = {name: p.grad.clone() for name, p in trainer.model.named_parameters() if p.grad is not None}
    return loss.item(), grads, {name: values[-1] for name, values in trainer._metrics["train"].items()}


def test_its_cpu_loss_gradients_and_metrics_are_trls_fused_heads(rows, tmp_path):
    trainer = trainer_on(rows, tmp_path)
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    assert (batch["labels"] == -100).any() and batch["attention_mask"].eq(0).any()  # prompts and padding in it
    fused = loss_and_grads(trainer, SFTTrainer.compute_loss, batch)
    tokens_before = trainer._total_train_tokens
    plain = loss_and_grads(trainer, StudioSFTTrainer.compute_loss, batch)
    assert plain[0] == pytest.approx(fused[0], rel=1e-5)
    assert set(plain[1]) == set(fused[1])
    for name, grad in fused[1].items():
        torch.testing.assert_close(plain[1][name], grad, rtol=1e-4, atol=1e-6, msg=name)
    assert plain[2]["entropy"] == pytest.approx(fused[2]["entropy"], rel=1e-5)
    assert plain[2]["mean_token_accuracy"] == pytest.approx(fused[2]["mean_token_accuracy"], abs=1e-6)
    # the tokens seen count on, as TRL's own step counts them
    assert trainer._total_train_tokens - tokens_before == int(batch["attention_mask"].sum())
    assert plain[2]["num_tokens"] == trainer._total_train_tokens


def test_a_loss_it_does_not_reproduce_is_trls_own(rows, tmp_path):
    trainer = trainer_on(rows, tmp_path, loss_type="dft")
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    dft = loss_and_grads(trainer, SFTTrainer.compute_loss, batch)[0]
    assert loss_and_grads(trainer, StudioSFTTrainer.compute_loss, batch)[0] == pytest.approx(dft, rel=1e-6)
    nll = trainer_on(rows, tmp_path)
    assert dft < loss_and_grads(nll, SFTTrainer.compute_loss, batch)[0]  # DFT weighs each token by its probability
