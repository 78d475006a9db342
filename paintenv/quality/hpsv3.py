"""HPSv3 quality scorer (name "hpsv3"): the published image-preference model, in-process.

HPSv3 (MizzenAI) is Qwen2-VL-7B-Instruct with one added token, <|Reward|>, and a small MLP
head ("rm_head") on the last hidden state at that token, answering (mu, sigma) per image.
Like the published reward we keep mu and map it to [0, 1] with mu_to_score = 1/(1+exp(−mu/4)).

Why not the `hpsv3` package: hpsv3 1.0.0 on PyPI pins transformers==4.45.2 (and brings
deepspeed, diffusers, opencv and a CUDA torch), so it cannot install beside this project's
transformers 5.x. This module runs the published architecture on the installed transformers
and reads the published weights as they are:

  checkpoint  `HPSv3.safetensors` (or a .pth): one flat state dict of the whole model in
              transformers 4.45's key layout (visual.*, model.*, lm_head.*, rm_head.*), renamed
              here to today's (model.visual.*, model.language_model.*); lm_head is not needed
              for a reward and is left out. `PAINTAPP_HPSV3_CHECKPOINT` or checkpoint=.
  base model  Qwen2-VL-7B-Instruct's config and processor (tokenizer, image processor, chat
              template), a folder or a Hub name already in the cache:
              `PAINTAPP_HPSV3_BASE_MODEL` or base_model= (default Qwen/Qwen2-VL-7B-Instruct).
  input       one user turn: the image, resized by Qwen2-VL's rule with min = max = 256·28·28
              pixels in the published float arithmetic (a 600×600 painting becomes 420×420, as
              600/β = 447.99… floors to 15 patches of 28), then the published instruction with
              the prompt and the reward line ending in <|Reward|> (hpsv3_prompt.json, verbatim);
              then the generation prompt. The image processor keeps that size (its own range,
              from the base model, contains it), as in the published pipeline.
  positions   0..n-1 for every token on all three rotary sections, image tokens included: the
              published forward calls the text model without position ids, and transformers
              4.45 counts tokens that way then (not Qwen2-VL's M-RoPE image grid).

Nothing heavy is imported until a scorer is built, so this module loads anywhere; building one
where torch/transformers, CUDA, the weights or the base model are missing, or where the weights
are not HPSv3's, raises `HPSv3Unavailable` saying which.
"""
from __future__ import annotations

import functools
import io
import json
import logging
import math
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_ENV = "PAINTAPP_HPSV3_CHECKPOINT"
BASE_MODEL_ENV = "PAINTAPP_HPSV3_BASE_MODEL"
DEFAULT_BASE_MODEL = "Qwen/Qwen2-VL-7B-Instruct"
REWARD_TOKEN = "<|Reward|>"
IMAGE_PAD = "<|image_pad|>"  # Qwen2-VL's image placeholder, one per merged patch
IMAGE_PIXELS = 256 * 28 * 28  # the published min_pixels = max_pixels
PATCH_FACTOR = 28  # patch 14 × spatial merge 2: image sides are multiples of this
HEAD_WIDTHS = (1024, 16)  # the published "ranknet" head: hidden -> 1024 -> 16 -> (mu, sigma)
PROMPT_FILE = Path(__file__).with_name("hpsv3_prompt.json")
PROMPT_CHECK = "a test of the chat template"


class HPSv3Unavailable(RuntimeError):
    """The HPSv3 scorer cannot be built here (torch/transformers, CUDA, weights or base model
    missing, or weights that are not HPSv3's)."""


def mu_to_score(mu: float) -> float:
    """The published mapping of HPSv3's mu to [0, 1]: 1 / (1 + exp(−mu / 4))."""
    x = -float(mu) / 4.0
    if x > 700:  # exp would overflow; the limit is exactly 0
        return 0.0
    return 1.0 / (1.0 + math.exp(x))


@functools.lru_cache(maxsize=1)
def _published_prompt() -> dict[str, str]:
    return json.loads(PROMPT_FILE.read_text(encoding="utf-8"))


def hpsv3_user_text(prompt: str) -> str:
    """The text part of the user turn: the instruction with the prompt, then the reward line."""
    published = _published_prompt()
    return published["instruction"].replace("{text_prompt}", prompt) + published["reward_line"]


def published_key(key: str) -> str:
    """A transformers 5.x Qwen2-VL key in the published (4.45) layout."""
    for today, then in (("model.visual.", "visual."), ("model.language_model.", "model.")):
        if key.startswith(today):
            return then + key[len(today):]
    return key


def current_key(key: str) -> str:
    """A published (4.45) Qwen2-VL key in transformers 5.x's layout."""
    if key.startswith("visual."):
        return "model." + key
    if key.startswith("model.") and not key.startswith(("model.visual.", "model.language_model.")):
        return "model.language_model." + key[len("model."):]
    return key


def resized_size(width: int, height: int, pixels: int = IMAGE_PIXELS) -> tuple[int, int]:
    """Qwen2-VL's resize rule with min = max = `pixels`, in the published float arithmetic:
    sides multiples of 28, the aspect kept, the area near `pixels` (600×600 -> 420×420)."""
    w = max(PATCH_FACTOR, round(width / PATCH_FACTOR) * PATCH_FACTOR)
    h = max(PATCH_FACTOR, round(height / PATCH_FACTOR) * PATCH_FACTOR)
    if w * h > pixels:
        beta = math.sqrt(width * height / pixels)
        w = max(PATCH_FACTOR, math.floor(width / beta / PATCH_FACTOR) * PATCH_FACTOR)
        h = max(PATCH_FACTOR, math.floor(height / beta / PATCH_FACTOR) * PATCH_FACTOR)
    elif w * h < pixels:
        beta = math.sqrt(pixels / (width * height))
        w = math.ceil(width * beta / PATCH_FACTOR) * PATCH_FACTOR
        h = math.ceil(height * beta / PATCH_FACTOR) * PATCH_FACTOR
    return w, h


def build_reward_head(hidden_size: int):
    """The published head, in float32: Linear-ReLU-Dropout-Linear-ReLU-Linear (keys 0, 3, 5)."""
    from torch import nn

    first, second = HEAD_WIDTHS
    return nn.Sequential(
        nn.Linear(hidden_size, first), nn.ReLU(), nn.Dropout(0.05),
        nn.Linear(first, second), nn.ReLU(), nn.Linear(second, 2),
    ).float()


@functools.lru_cache(maxsize=1)
def _reward_model_class() -> type:
    """Qwen2-VL's backbone with the reward head, made on first use (it needs transformers)."""
    from transformers import Qwen2VLModel
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLPreTrainedModel

    class HPSv3RewardModel(Qwen2VLPreTrainedModel):
        _keep_in_fp32_modules = ["rm_head"]  # published: the body in bf16, the head in fp32

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.model = Qwen2VLModel(config)
            self.rm_head = build_reward_head(config.text_config.hidden_size)
            self.post_init()

    return HPSv3RewardModel


def _load_state(checkpoint: str) -> dict[str, Any]:
    import torch

    if checkpoint.endswith(".safetensors"):
        from safetensors.torch import load_file

        state = load_file(checkpoint, device="cpu")
    else:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and isinstance(state.get("model"), dict):  # a training checkpoint
        state = state["model"]
    return state


def _processor_chat_template(base_model: str) -> str | None:
    """The chat template a processor keeps in chat_template.jinja or chat_template.json."""
    from transformers.utils.hub import cached_file

    for filename in ("chat_template.jinja", "chat_template.json"):
        path = cached_file(base_model, filename, _raise_exceptions_for_missing_entries=False)
        if path:
            text = Path(path).read_text(encoding="utf-8")
            return text if filename.endswith(".jinja") else json.loads(text)["chat_template"]
    return None


class HPSv3Scorer:
    name = "hpsv3"

    def __init__(
        self,
        checkpoint: str | None = None,
        base_model: str | None = None,
        device: str = "cuda",
        params: dict[str, Any] | None = None,
    ) -> None:
        params = dict(params or {})
        checkpoint = checkpoint or params.get("checkpoint") or os.environ.get(CHECKPOINT_ENV)
        base_model = base_model or params.get("base_model") or os.environ.get(BASE_MODEL_ENV) or DEFAULT_BASE_MODEL
        device = params.get("device", device)
        if not checkpoint:
            raise HPSv3Unavailable(
                f"HPSv3 needs its weights: set {CHECKPOINT_ENV} (or pass checkpoint=) to the HPSv3 "
                "checkpoint file (.safetensors or .pth)"
            )
        if not os.path.exists(checkpoint):
            raise HPSv3Unavailable(f"HPSv3 checkpoint not found: {checkpoint} (from {CHECKPOINT_ENV} or checkpoint=)")
        try:
            import torch
            import transformers  # noqa: F401 - only to say what is missing
        except ImportError as exc:
            raise HPSv3Unavailable(f"the HPSv3 scorer needs torch and transformers ({exc})") from exc
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise HPSv3Unavailable(f"HPSv3 was asked for device {device!r} but CUDA is not available")
        self._torch = torch
        self.device = device
        # processor: (tokenizer, image processor)
        self.processor, self.model, self.reward_token_id = self._load(checkpoint, base_model, device)
        try:
            text = self.prompt_text(PROMPT_CHECK)
        except Exception as exc:  # noqa: BLE001 - any template failure means every score would fail
            raise HPSv3Unavailable(f"{base_model!r}'s chat template cannot render HPSv3's turn: {exc}") from exc
        if text.count(IMAGE_PAD) != 1 or text.count(REWARD_TOKEN) != 1:
            raise HPSv3Unavailable(f"{base_model!r}'s chat template does not place one {IMAGE_PAD} for the image")
        self._lock = threading.Lock()  # one forward pass at a time on the shared model

    @staticmethod
    def _load(checkpoint: str, base_model: str, device: str) -> tuple[Any, Any, Any]:
        import torch
        from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer

        # The tokenizer and the image processor, not AutoProcessor: Qwen2-VL's processor also
        # loads a video processor, which needs torchvision, and a reward never sees a video.
        try:
            config = AutoConfig.from_pretrained(base_model)
            tokenizer = AutoTokenizer.from_pretrained(base_model)
            image_processor = AutoImageProcessor.from_pretrained(base_model)
        except (OSError, ValueError) as exc:
            raise HPSv3Unavailable(
                f"HPSv3's base model {base_model!r} (its config, tokenizer and image processor) cannot be "
                f"loaded: set {BASE_MODEL_ENV} to a Qwen2-VL-7B-Instruct folder or download it first ({exc})"
            ) from exc
        if not tokenizer.chat_template:  # some repos keep it beside the processor's config only
            tokenizer.chat_template = _processor_chat_template(base_model)
        tokenizer.add_special_tokens({"additional_special_tokens": [REWARD_TOKEN]})
        state = {current_key(k): v for k, v in _load_state(checkpoint).items() if not k.startswith("lm_head.")}
        embeddings = state.get("model.language_model.embed_tokens.weight")
        if embeddings is None or not any(k.startswith("rm_head.") for k in state):
            raise HPSv3Unavailable(f"{checkpoint} is not an HPSv3 checkpoint (no embed_tokens or rm_head weights)")
        # The published model resized its embeddings to the tokenizer with <|Reward|> added.
        if embeddings.shape[0] != len(tokenizer):
            raise HPSv3Unavailable(
                f"{checkpoint} has {embeddings.shape[0]} token embeddings but {base_model!r}'s tokenizer with "
                f"{REWARD_TOKEN} has {len(tokenizer)} tokens: not HPSv3 weights for this base model"
            )
        config.text_config.vocab_size = embeddings.shape[0]
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        try:
            model, info = _reward_model_class().from_pretrained(
                None, config=config, state_dict=state, dtype=dtype, output_loading_info=True
            )
        except RuntimeError as exc:  # shapes that do not fit the base's config
            raise HPSv3Unavailable(f"{checkpoint} does not fit {base_model!r}: {exc}") from exc
        missing, unexpected = sorted(info["missing_keys"]), sorted(info["unexpected_keys"])
        if missing or unexpected:
            raise HPSv3Unavailable(
                f"{checkpoint} does not fit HPSv3 on {base_model!r}: missing {missing[:5]}, unexpected {unexpected[:5]}"
            )
        return (tokenizer, image_processor), model.to(device).eval(), tokenizer.convert_tokens_to_ids(REWARD_TOKEN)

    def prompt_text(self, prompt: str) -> str:
        """The conversation HPSv3 reads, before the image placeholder is expanded."""
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": hpsv3_user_text(prompt)}]}]
        return self.processor[0].apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def model_inputs(self, image: Any, prompt: str) -> dict[str, Any]:
        """Token ids and pixels as Qwen2-VL's processor makes them: the chat template's one
        <|image_pad|> repeated once per merged 2×2 patch of the resized image."""
        from PIL import Image

        tokenizer, image_processor = self.processor
        image = image.resize(resized_size(*image.size), Image.Resampling.BICUBIC)
        pixels = image_processor(images=[image], return_tensors="pt")
        text = self.prompt_text(prompt)
        image_tokens = int(pixels["image_grid_thw"][0].prod()) // image_processor.merge_size**2
        text = text.replace(IMAGE_PAD, IMAGE_PAD * image_tokens, 1)
        tokens = tokenizer(text, return_tensors="pt", add_special_tokens=False)
        return {**tokens, **pixels}

    def reward(self, png: bytes, *, prompt: str) -> tuple[float, float]:
        """HPSv3's (mu, sigma) for the painting under `prompt`; raises on a bad image."""
        from PIL import Image

        torch = self._torch
        with Image.open(io.BytesIO(png)) as img:
            image = img.convert("RGB")
        batch = {k: v.to(self.device) for k, v in self.model_inputs(image, prompt).items()}
        backbone = self.model.model
        input_ids = batch["input_ids"]
        with self._lock, torch.inference_mode():
            embeds = backbone.get_input_embeddings()(input_ids)
            features = backbone.get_image_features(batch["pixel_values"], batch["image_grid_thw"]).pooler_output
            features = torch.cat(features).to(embeds.dtype)
            image_mask = (input_ids == backbone.config.image_token_id).unsqueeze(-1).expand_as(embeds)
            embeds = embeds.masked_scatter(image_mask, features)
            positions = torch.arange(input_ids.shape[1], device=embeds.device).view(1, 1, -1).expand(3, 1, -1)
            hidden = backbone.language_model(
                inputs_embeds=embeds, attention_mask=batch["attention_mask"], position_ids=positions
            ).last_hidden_state
            at_reward = hidden[input_ids == self.reward_token_id]
            if at_reward.shape[0] != 1:
                raise ValueError(f"expected one {REWARD_TOKEN} token, found {at_reward.shape[0]}")
            mu, sigma = self.model.rm_head(at_reward.float())[0].tolist()
        return mu, sigma

    def score(self, png: bytes, *, prompt: str) -> float | None:
        """mu_to_score(mu) of the painting under `prompt`; None if decoding or inference fails."""
        try:
            mu, _sigma = self.reward(png, prompt=prompt)
        except Exception:  # noqa: BLE001 - a failed inference is "no answer", never a 0
            log.exception("HPSv3 inference failed")
            return None
        if not math.isfinite(mu):
            return None
        return mu_to_score(mu)
