"""GPU memory of a LoRA run on one training GPU, from arithmetic: each term from the model's
config and the run's lengths, labelled with its sum, so a refusal (training/gpu_budget.py), a
preset's figure (training/presets.py) and the GPU bench (bench/gpu/) show the same numbers.

A step has two phases that do not hold their big tensors at once:

- always: the policy's bf16 weights; the LoRA with its float32 gradients and Adam states
  (16 bytes a parameter); the CUDA context and library workspaces; a colocated vLLM's share of
  the GPU; HPSv3 where a score worker shares the GPU.
- generation (GRPO, generating in the trainer): the KV cache, layers with attention × KV heads
  × head size × 2 (K and V) × 2 bytes × sequences × (prompt + completion) tokens, for every turn;
  a linear-attention layer's fixed recurrent state instead (Qwen3.5); one layer's prefill
  working set; one folded LoRA delta in float32 (training/trainer/generation.py folds the adapter
  into the weights for decoding and keeps the exact bf16 originals in host memory).
- training: with activation checkpointing, every layer's input kept (tokens × hidden × 2 bytes)
  and one layer recomputed with its gradients; TRL 1.16's fused LM head, which never holds a
  sequence's logits whole but projects at most 4,096 tokens × 32,768 vocabulary columns in
  float32 at a time, forward and backward (trl/trainer/utils.py `_CHUNKED_LOGPROB_CHUNK_SIZE`,
  trl/kernels/chunked_logprob.py `TOKEN_CHUNK_SIZE`).

The peak is `always + max(generation, training)`. Prompts count PROMPT_TOKENS a turn: the chat
is ~1.1K tokens (4.6K characters), a revision turn's feedback up to ~2K. Measured on one H200
(FIELD-NOTES, 2026-12-04): a Qwen3-4B-shaped GRPO step of 8 × 1,024-token completions peaked at
12.3 GiB (nvidia-smi), its prompt's length not recorded; this arithmetic gives 10.7 GiB for a
245-token prompt (the tiny painter's tokenizer) and 13.8 GiB at the launch budget's 2,048.
bench/gpu/ measures the peak of each generation backend against this arithmetic for its own
prompt.

Django-free: the GPU bench imports it on a box without the web app.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.arguments import SFT, VLLM_BACKENDS, RunArguments

GIB = 1024**3
BF16 = 2
FP32 = 4
LORA_STATE_BYTES = FP32 * 4  # the parameter, its gradient, Adam's two moments
PROMPT_TOKENS = 2048  # per turn: the chat (~1.1K tokens) or a revision turn's feedback (~2K)
CUDA_CONTEXT_GIB = 1.0  # the CUDA context, cuBLAS/cuDNN workspaces, allocator slack: assumed, not computed
HPSV3_GIB = 17.0  # HPSv3 on Qwen2-VL-7B: 8.29B parameters in bf16 (15.4 GiB) + one painting's activations
LM_HEAD_TOKENS = 4096  # TRL's fused LM head: tokens per projection tile
LM_HEAD_COLUMNS = 32_768  # ... and vocabulary columns per tile
_SAFETENSORS_DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                            "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


@dataclass(frozen=True)
class ModelShape:
    """What the arithmetic reads of a model: its text config's sizes and its parameter count."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int  # a dense MLP's width, or an MoE's shared expert's
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    attention_layers: int  # layers with a KV cache; the rest are linear attention (Qwen3.5)
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_dim: int = 0
    linear_value_dim: int = 0
    linear_conv_kernel: int = 0
    source: str = ""  # where the figures come from, for the labels

    @classmethod
    def from_config(cls, config: dict[str, Any], *, parameters: int, source: str) -> ModelShape:
        """From a config.json's dict (a vision-language model's `text_config` is read)."""
        text = config.get("text_config") or config
        layers = int(text["num_hidden_layers"])
        heads = int(text["num_attention_heads"])
        hidden = int(text["hidden_size"])
        types = text.get("layer_types")
        if types:
            attention = sum(1 for kind in types if kind != "linear_attention")
        elif text.get("full_attention_interval") and text.get("linear_num_value_heads"):
            attention = layers // int(text["full_attention_interval"])
        else:
            attention = layers
        return cls(
            parameters=parameters, layers=layers, hidden=hidden,
            intermediate=int(text.get("shared_expert_intermediate_size") or text.get("intermediate_size") or 0),
            heads=heads, kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads), vocab=int(text["vocab_size"]),
            attention_layers=attention, experts=int(text.get("num_experts") or 0),
            experts_per_token=int(text.get("num_experts_per_tok") or 0),
            expert_intermediate=int(text.get("moe_intermediate_size") or 0),
            linear_key_heads=int(text.get("linear_num_key_heads") or 0),
            linear_value_heads=int(text.get("linear_num_value_heads") or 0),
            linear_key_dim=int(text.get("linear_key_head_dim") or 0),
            linear_value_dim=int(text.get("linear_value_head_dim") or 0),
            linear_conv_kernel=int(text.get("linear_conv_kernel_dim") or 0), source=source,
        )

    @classmethod
    def weights_only(cls, parameters: int, *, source: str) -> ModelShape:
        """A model whose sizes are not known: the budget counts its weights and the CUDA context alone."""
        return cls(parameters=parameters, layers=0, hidden=0, intermediate=0, heads=0, kv_heads=0, head_dim=0,
                   vocab=0, attention_layers=0, source=source)

    @property
    def kv_bytes_per_token(self) -> int:
        """One token's K and V over every attention layer, in bf16."""
        return self.attention_layers * self.kv_heads * self.head_dim * 2 * BF16

    @property
    def linear_layers(self) -> int:
        return self.layers - self.attention_layers

    @property
    def active_intermediate(self) -> int:
        """MLP width a token goes through: the dense MLP, or the shared expert and its routed experts."""
        return self.intermediate + self.experts_per_token * self.expert_intermediate

    def lora_parameters(self, r: int, *, experts: bool = False) -> int:
        """LoRA A and B of every linear layer of the language model (r × (in + out) each): q, k, v, o
        on attention layers, the linear-attention projections, the MLP's (or shared expert's) gate,
        up and down, and with `experts` every routed expert's."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = (h + q) + 2 * (h + kv) + (q + h)
        keys, values = self.linear_key_heads * self.linear_key_dim, self.linear_value_heads * self.linear_value_dim
        linear = (h + 2 * keys + values) + (h + values) + 2 * (h + self.linear_value_heads) + (values + h)
        mlp = 2 * (h + self.intermediate) + (self.intermediate + h)
        routed = self.experts * ((h + 2 * self.expert_intermediate) + (self.expert_intermediate + h)) if experts else 0
        per_layers = self.attention_layers * attention + self.linear_layers * linear + self.layers * (mlp + routed)
        return r * per_layers

    def widest_adapted(self) -> int:
        """Elements of the largest weight the LoRA adapts (the one folded at a time)."""
        return self.hidden * max(self.heads * self.head_dim, self.intermediate, 1)


@dataclass(frozen=True)
class Term:
    name: str
    gib: float
    arithmetic: str
    phase: str = "always"  # always | generation | training

    def label(self) -> str:
        return f"{self.name} {self.gib:.1f} GiB ({self.arithmetic})"


@dataclass(frozen=True)
class Budget:
    terms: tuple[Term, ...]

    def phase(self, name: str) -> float:
        return sum(t.gib for t in self.terms if t.phase == name)

    @property
    def total_gib(self) -> float:
        return self.phase("always") + max(self.phase("generation"), self.phase("training"))

    def explain(self) -> str:
        """Every term with its sum: the always-held ones, then the larger of the two phases' (the other in brackets)."""
        always = [t.label() for t in self.terms if t.phase == "always"]
        generation, training = self.phase("generation"), self.phase("training")
        larger, smaller = ("generation", "training") if generation >= training else ("training", "generation")
        parts = [t.label() for t in self.terms if t.phase == larger]
        held = " + ".join(always)
        if parts:
            others = ", ".join(t.label() for t in self.terms if t.phase == smaller)
            held += f" + {larger} phase: " + " + ".join(parts)
            if others:
                held += f" [{smaller} phase, smaller: {others}]"
        return held


def _gib(n_bytes: float) -> float:
    return n_bytes / GIB


def sequence_tokens(args: RunArguments, *, prompt_tokens: int = PROMPT_TOKENS) -> int:
    """Tokens one GRPO sequence may hold: every turn's prompt (the chat, or a turn's feedback) and
    completion. What the KV cache is counted for here, and what a static or paged cache is sized to
    (training/trainer/backends.py)."""
    return args.turns * (prompt_tokens + args.max_completion_length)


def run_budget(shape: ModelShape, args: RunArguments, *, kind: str = "grpo", processes: int = 1,
               gpu_gib: float | None = None, hpsv3: bool = False, prompt_tokens: int = PROMPT_TOKENS) -> Budget:
    """The memory one training GPU needs for `args` on a model of `shape` (GiB, with the arithmetic)."""
    sft = kind == SFT
    count = f"{shape.parameters / 1e9:.2f}B" if shape.parameters >= 1e9 else f"{shape.parameters / 1e6:.2f}M"
    terms = [Term("weights", _gib(shape.parameters * BF16), f"{count} parameters × 2 bytes (bf16)")]
    if shape.layers:
        lora = shape.lora_parameters(args.lora_r, experts=args.lora_target_experts)
        terms.append(Term(
            "LoRA and Adam", _gib(lora * LORA_STATE_BYTES),
            f"{lora / 1e6:.1f}M LoRA parameters (r {args.lora_r}) × 16 bytes: float32 weight, gradient, 2 moments"))
    terms.append(Term("CUDA context", CUDA_CONTEXT_GIB, "context, cuBLAS workspaces and allocator slack, assumed"))
    if not sft and args.generation == "vllm-colocate":
        share = args.vllm_gpu_memory_utilization
        terms.append(Term("colocated vLLM", share * gpu_gib if gpu_gib else 0.0,
                          f"{share:g} × {gpu_gib:.1f} GiB: its weights and KV cache" if gpu_gib
                          else f"{share:g} of the GPU, whose size is not known here"))
    if hpsv3:
        terms.append(Term("HPSv3", HPSV3_GIB, "Qwen2-VL-7B in bf16 + a painting's activations, a score worker on this GPU"))
    if not shape.layers:
        terms.append(Term("activations and KV cache", 0.0, "not counted: the model's config gives no sizes"))
        return Budget(tuple(terms))
    if not sft and args.generation not in VLLM_BACKENDS:
        terms += _generation_terms(shape, args, processes=processes, prompt_tokens=prompt_tokens)
    sequence = args.sft_max_length if sft else sequence_tokens(args, prompt_tokens=prompt_tokens)
    trained = args.per_device_train_batch_size * sequence
    scored = args.per_device_train_batch_size * (args.sft_max_length if sft else args.turns * args.max_completion_length)
    checkpointed = shape.layers * trained * shape.hidden * BF16
    recomputed = trained * (4 * shape.hidden + 2 * shape.kv_heads * shape.head_dim + 3 * shape.active_intermediate)
    terms.append(Term(
        "activations", _gib(checkpointed + recomputed * BF16 * 2),
        f"{shape.layers} layers' checkpointed inputs, {trained:,} tokens × {shape.hidden:,} × 2 bytes, + one layer "
        "recomputed with its gradients", phase="training"))
    tile = min(scored, LM_HEAD_TOKENS) * min(shape.vocab, LM_HEAD_COLUMNS)
    terms.append(Term(
        "LM-head tiles", _gib(tile * FP32 * 2),
        f"TRL's fused head: {min(scored, LM_HEAD_TOKENS):,} tokens × {min(shape.vocab, LM_HEAD_COLUMNS):,} "
        f"vocabulary columns × 4 bytes, forward and backward (the {shape.vocab:,}-token logits never whole)",
        phase="training"))
    return Budget(tuple(terms))


def _generation_terms(shape: ModelShape, args: RunArguments, *, processes: int, prompt_tokens: int) -> list[Term]:
    """The trainer's own generation: every sequence of the process's share of a step at once."""
    sequences = max(1, args.generation_batch_size // max(1, processes))
    per_sequence = sequence_tokens(args, prompt_tokens=prompt_tokens)
    terms = [Term(
        "KV cache", _gib(shape.kv_bytes_per_token * sequences * per_sequence),
        f"{shape.attention_layers} attention layers × {shape.kv_heads} KV heads × {shape.head_dim} × 2 × 2 bytes "
        f"= {shape.kv_bytes_per_token / 1024:.0f} KiB a token × {sequences} sequences × {per_sequence:,} tokens "
        f"({args.turns} × ({prompt_tokens:,} prompt + {args.max_completion_length:,} completion))", phase="generation")]
    if shape.linear_layers and shape.linear_value_heads:
        conv = 2 * shape.linear_key_heads * shape.linear_key_dim + shape.linear_value_heads * shape.linear_value_dim
        state = shape.linear_value_heads * shape.linear_key_dim * shape.linear_value_dim + conv * shape.linear_conv_kernel
        terms.append(Term(
            "linear-attention state", _gib(shape.linear_layers * sequences * state * BF16),
            f"{shape.linear_layers} linear-attention layers × {sequences} sequences × {state:,} values × 2 bytes",
            phase="generation"))
    prefill = sequences * min(per_sequence, prompt_tokens) * (4 * shape.hidden + 3 * shape.active_intermediate)
    terms.append(Term("prefill", _gib(prefill * BF16),
                      f"one layer's working set for {sequences} × {prompt_tokens:,} prompt tokens", phase="generation"))
    terms.append(Term("folding", _gib(shape.widest_adapted() * FP32 * 2),
                      "one adapted weight's LoRA delta and sum in float32 (the bf16 originals wait in host memory)",
                      phase="generation"))
    return terms


# --- a model on this machine --------------------------------------------------------------

def weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))


def safetensors_parameters(path: Path) -> int | None:
    """Parameters in a .safetensors file, from its header alone; None when it has no readable header."""
    try:
        with open(path, "rb") as fh:
            (length,) = struct.unpack("<Q", fh.read(8))
            if not 0 < length < 100 * 1024**2:
                return None
            header = json.loads(fh.read(length))
    except (OSError, struct.error, ValueError):
        return None
    count = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        elements = 1
        for size in tensor.get("shape", []):
            elements *= int(size)
        count += elements
    return count


def parameters_on_disk(folder: Path, dtype: str | None) -> tuple[int, str] | None:
    """The model's parameter count from its weight files: their safetensors headers, else their size
    over the config's dtype (bf16 when it says none); None when it has no weight files."""
    files = weight_files(folder)
    if not files:
        return None
    counted = [safetensors_parameters(f) for f in files]
    if all(c is not None for c in counted) and sum(counted):
        return sum(counted), "counted from the safetensors headers"
    size = sum(f.stat().st_size for f in files)
    per = {"float32": 4, "float16": 2, "bfloat16": 2}.get(str(dtype or "bfloat16"), 2)
    return size // per, f"{size / GIB:.1f} GiB of weight files / {per} bytes"
