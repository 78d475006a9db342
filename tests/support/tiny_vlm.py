"""Tiny vision-language models for the tests of the VLM judge and the HPSv3 scorer, built here.

Everything is made on this machine in well under a minute of one core, with no download:

    judge/    a LLaVA-class model (a SigLIP vision tower, a projector and a Qwen2 language model,
              ~0.2M parameters) with a byte-level BPE trained here, SigLIP's image processor and
              a ChatML template that places images; fine-tuned for seconds on the judge's own
              requests (VLMJudge's payload, two random PNGs) to answer JUDGE_ANSWER, so that
              `transformers serve` gives a real verdict through the whole stack
    hpsv3-base/
              a Qwen2-VL (Qwen2VLForConditionalGeneration) config with a tokenizer, Qwen2-VL's
              image processor and a chat template that places images as Qwen2-VL's does
    HPSv3.safetensors
              that Qwen2-VL with HPSv3's <|Reward|> token and reward head (random, seeded) in the
              published checkpoint format: one flat state dict in transformers 4.45's key layout
              (visual.*, model.*, lm_head.*, rm_head.*), the body bf16, the head fp32

Why the served judge is LLaVA-class and not Qwen-VL: transformers 5.24's Qwen2-VL, Qwen2.5-VL
and Qwen3-VL processors all carry a video processor that needs torchvision, and the only
torchvision on PyPI for this torch (0.28.0) is a CUDA build that cannot load beside the CPU
torch 2.13 ("operator torchvision::nms does not exist"). `transformers serve` loads a model's
processor with AutoProcessor, so a served Qwen-VL cannot start here; LLaVA's processor has no
video part. (The HPSv3 scorer needs only the tokenizer and the image processor, so it runs
Qwen2-VL here.)

Built once per machine into PAINTAPP_MODELS_DIR under a FileLock (pytest-xdist workers wait
for the first), in a staging folder renamed into place, so a killed build leaves nothing.

    python -m tests.support.tiny_vlm [OUT_DIR]
"""
from __future__ import annotations

import io
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from paintenv.judges.vlm import VLMConfig, VLMJudge
from paintenv.prompts import SUBJECTS
from paintenv.quality.hpsv3 import hpsv3_user_text
from tests.support.hpsv3_model import CHATML_TOKENS, QWEN2_VL_TOKENS, build_hpsv3, build_tokenizer

JUDGE_ANSWER = json.dumps({"winner": "A", "reason": "Painting A has the softer, more translucent washes."})
VERSION = 1  # bump when the build changes: the folder name carries it, so old builds are not reused

JUDGE_TOKENS = (*CHATML_TOKENS, "<image>")


JUDGE_IMAGE_SIDE, PATCH = 56, 14  # 16 image tokens per painting: short sequences, quick steps
SFT_STEPS = 120  # 80 already answer exactly on held-out requests (lr 3e-3, ~4 s)


def tiny_vlm_path() -> Path:
    models = os.environ.get("PAINTAPP_MODELS_DIR") or str(Path(__file__).resolve().parents[2] / "models")
    return Path(models) / f"tiny-vlm-tests-v{VERSION}"


def is_built(path: Path) -> bool:
    return (path / "build.json").exists()


def ensure_built(path: Path | None = None) -> Path:
    """The built models' folder, building it first (or waiting for another process's build)."""
    from filelock import FileLock

    path = path or tiny_vlm_path()
    if is_built(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_name(f"{path.name}.lock"))):
        if not is_built(path):
            staging = path.with_name(f"{path.name}.building-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            build(staging)
            os.replace(staging, path)
    return path


# ---------------------------------------------------------------------------------------
# Data


def random_painting(rng: random.Random, size: int = 96) -> bytes:
    """A PNG of a few translucent coloured blobs on paper white."""
    image = Image.new("RGB", (size, size), (250, 248, 242))
    draw = ImageDraw.Draw(image, "RGBA")
    for _ in range(rng.randint(1, 6)):
        x, y, r = rng.randint(0, size), rng.randint(0, size), rng.randint(size // 10, size // 3)
        colour = tuple(rng.randint(0, 255) for _ in range(3)) + (rng.randint(60, 200),)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def processor_messages(openai_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages as a processor's chat template takes them (what a server does)."""
    converted = []
    for message in openai_messages:
        content = message["content"]
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = [
                {"type": "image", "url": part["image_url"]["url"]} if part["type"] == "image_url"
                else {"type": "text", "text": part["text"]}
                for part in content
            ]
        converted.append({"role": message["role"], "content": parts})
    return converted


def judge_requests(count: int, seed: int) -> list[list[dict[str, Any]]]:
    """The judge's real requests (its own payload builder) for random paintings and prompts."""
    rng = random.Random(seed)
    judge = VLMJudge(VLMConfig(base_url="http://127.0.0.1:9/v1", model="tiny"))
    requests = []
    for _ in range(count):
        prompt = f"Paint a {rng.choice(SUBJECTS).slug.replace('-', ' ')} in loose watercolour."
        payload = judge.build_payload(random_painting(rng), random_painting(rng), prompt, "none")
        requests.append(processor_messages(payload["messages"]))
    return requests


def tokenizer_corpus() -> list[str]:
    texts = [JUDGE_ANSWER, hpsv3_user_text("a peach hibiscus"), "system\nYou are a helpful assistant.\n"]
    for messages in judge_requests(4, seed=99):
        for message in messages:
            texts += [f"{message['role']}\n"] + [p["text"] for p in message["content"] if p["type"] == "text"]
    texts += [s.slug.replace("-", " ") for s in SUBJECTS]
    return texts


# ---------------------------------------------------------------------------------------
# Build


# The tiny HPSv3's vision tower (the 7B's is in bench/gpu/shapes.py).
TINY_VISION = {"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2, "mlp_ratio": 2,
               "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}


def qwen2_text_config(tokenizer) -> dict[str, Any]:
    return {
        "vocab_size": len(tokenizer), "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "bos_token_id": None, "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
    }


def build_judge(tokenizer):
    """A LLaVA (SigLIP tower, projector, Qwen2 LM) and its processor, untrained."""
    import torch
    from transformers import (
        GenerationConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        Qwen2Config,
        SiglipVisionConfig,
    )
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    config = LlavaConfig(
        vision_config=SiglipVisionConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            image_size=JUDGE_IMAGE_SIDE, patch_size=PATCH, vision_use_head=False,
        ),
        text_config=Qwen2Config(**qwen2_text_config(tokenizer), tie_word_embeddings=False),
        image_token_index=image_token_id, image_seq_length=(JUDGE_IMAGE_SIDE // PATCH) ** 2,
        vision_feature_select_strategy="full", vision_feature_layer=-1,  # SigLIP has no CLS token
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False, max_new_tokens=64,
    )
    processor = LlavaProcessor(
        image_processor=SiglipImageProcessorPil(size={"height": JUDGE_IMAGE_SIDE, "width": JUDGE_IMAGE_SIDE}),
        tokenizer=tokenizer, patch_size=PATCH, vision_feature_select_strategy="full",
        chat_template=tokenizer.chat_template, image_token="<image>",
    )
    return model, processor


def sft_judge(model, processor, *, steps: int = SFT_STEPS, seed: int = 0) -> list[float]:
    """Teach the model to answer the judge's request with JUDGE_ANSWER (assistant tokens only)."""
    import torch

    torch.manual_seed(seed)
    target = processor.tokenizer(JUDGE_ANSWER + "<|im_end|>", add_special_tokens=False, return_tensors="pt").input_ids
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for messages in judge_requests(steps, seed=seed):
        inputs = processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        prompt_ids = inputs["input_ids"]
        input_ids = torch.cat([prompt_ids, target], dim=1)
        labels = torch.cat([torch.full_like(prompt_ids, -100), target], dim=1)
        loss = model(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids), labels=labels,
            pixel_values=inputs["pixel_values"],
        ).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    model.eval()
    return losses


def judge_answers(model, processor, count: int = 4, seed: int = 7) -> list[str]:
    """Greedy answers to held-out judge requests (other paintings and prompts)."""
    answers = []
    for messages in judge_requests(count, seed=seed):
        inputs = processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
        )
        output = model.generate(**inputs, max_new_tokens=48, do_sample=False)
        answers.append(processor.tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True))
    return answers


def build(path: Path) -> None:
    import torch

    torch.set_num_threads(1)  # a shared 2-core box: the other core stays with the tests
    started = time.monotonic()
    model, processor = build_judge(build_tokenizer(JUDGE_TOKENS, "<image>", tokenizer_corpus()))
    losses = sft_judge(model, processor)
    answers = judge_answers(model, processor)
    if any(answer != JUDGE_ANSWER for answer in answers):  # a build that would make the tests flaky
        raise RuntimeError(f"the tiny judge did not learn its answer: {answers}")
    model.save_pretrained(path / "judge")
    processor.save_pretrained(path / "judge")
    tokenizer = build_tokenizer(QWEN2_VL_TOKENS, "<|vision_start|><|image_pad|><|vision_end|>", tokenizer_corpus())
    build_hpsv3(path / "hpsv3-base", path / "HPSv3.safetensors", tokenizer=tokenizer,
                text=qwen2_text_config(tokenizer), vision=TINY_VISION)
    figures = {
        "judge_parameters": sum(p.numel() for p in model.parameters()), "sft_steps": len(losses),
        "sft_first_loss": round(losses[0], 4), "sft_last_loss": round(losses[-1], 4),
        "build_s": round(time.monotonic() - started, 1),
    }
    (path / "build.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    print(ensure_built(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
