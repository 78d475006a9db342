"""The generation backends a run can name (RunArguments.generation) and what each sets on TRL's
GRPOConfig; `auto`'s choice. Light and Django-free: the launch, the trainer and the GPU bench
read it; the trainer's folding and compiled decoding are in training/trainer/generation.py.

- `generate`: transformers' `generate`, eager, with the adapter folded in.
- `compiled`: the same with a static KV cache sized from the run (`max_cache_len`: every turn's
  prompt budget and completion) and the decode step compiled by transformers (`torch.compile`,
  "reduce-overhead": CUDA graphs) on a GPU; on a CPU it decodes eagerly from the static cache.
- `continuous-batching`: transformers' paged continuous batching, its cache sized from the run
  on every device, CUDA graphs on a GPU, the adapter folded in.
- `vllm-colocate`, `vllm-server`: vLLM, with TRL's own weight sync.
- `auto`: see `auto_candidates`.
"""
from __future__ import annotations

from training.arguments import RunArguments
from training.memory import sequence_tokens

CB_PAGE_TOKENS = 256  # transformers' default page size; the static cache's length is rounded up to it too
CB_CPU_BATCH_TOKENS = 512  # tokens a forward pass takes at once on a CPU: a prefill is cut into such batches
CB_GPU_BATCH_TOKENS = 4096  # ... on a GPU


# What each backend sets on TRL's GRPOConfig (the trainer resolves `auto` before it builds one).
TRL_GENERATION = {
    "generate": {"use_vllm": False, "use_transformers_continuous_batching": False},
    "compiled": {"use_vllm": False, "use_transformers_continuous_batching": False, "cache_implementation": "static"},
    "continuous-batching": {"use_vllm": False, "use_transformers_continuous_batching": True},
    "vllm-colocate": {"use_vllm": True, "vllm_mode": "colocate", "use_transformers_continuous_batching": False},
    "vllm-server": {"use_vllm": True, "vllm_mode": "server", "use_transformers_continuous_batching": False},
}
FOLDING_BACKENDS = ("generate", "compiled", "continuous-batching")
# Backends whose KV cache is allocated up front for the run's whole lengths (a static cache, a
# paged one), so they hold the budget's KV term whatever the prompts; `generate` grows its cache.
PREALLOCATED_CACHE = ("compiled", "continuous-batching")


def pages(tokens: int) -> int:
    """Pages of CB_PAGE_TOKENS that hold `tokens`."""
    return -(-tokens // CB_PAGE_TOKENS)


def continuous_batching_config(args: RunArguments, processes: int, *, on_gpu: bool) -> dict:
    """transformers' ContinuousBatchingConfig for a run: a paged cache that holds one process's share
    of a step (each sequence's prompts and completions), not a share of free memory. Told nothing,
    transformers sizes it from free memory: most of a CPU box's RAM (7.5 GB on a 24 GB test box, with
    attention masks of max_batch_tokens × cache tokens set up at every step) or half a GPU (TRL's
    default, 67 GB on an H200)."""
    sequences = max(1, args.generation_batch_size // processes)
    config = {"num_blocks": sequences * pages(sequence_tokens(args)),
              "max_batch_tokens": CB_GPU_BATCH_TOKENS if on_gpu else CB_CPU_BATCH_TOKENS}
    if on_gpu:
        config["use_cuda_graph"] = True
    return config


def trl_generation_arguments(args: RunArguments, processes: int, *, on_gpu: bool) -> dict:
    """The GRPOConfig fields of the run's (resolved) backend."""
    backend = unresolved_auto(on_gpu=on_gpu) if args.generation == "auto" else args.generation
    fields = dict(TRL_GENERATION[backend])
    if backend == "continuous-batching":
        fields["transformers_continuous_batching_config"] = continuous_batching_config(args, processes, on_gpu=on_gpu)
    if backend == "compiled":
        # One cache length for every call, so the compiled decode step is traced once per batch size.
        fields["generation_kwargs"] = {"max_cache_len": pages(sequence_tokens(args)) * CB_PAGE_TOKENS}
    return fields


def unresolved_auto(*, on_gpu: bool) -> str:
    """`auto` where nothing resolved it (a config built outside the trainer, which resolves it with the
    box's measurements first): the first candidate with no measurement and no vLLM."""
    return auto_candidates(cuda=on_gpu, vllm=False, measured={})[0][0]


def auto_candidates(*, cuda: bool, vllm: bool, measured: dict[str, float]) -> list[tuple[str, str]]:
    """The backends `auto` may become on a box, best first, each with why: on a CPU, `generate`
    (compiling and CUDA graphs are for GPUs); on a GPU, those measured there for the run's model,
    fastest first (`measured`: backend -> tokens/s), then vLLM colocated where it is installed,
    then `compiled`, then `generate`. The launch takes the first whose memory budget fits."""
    if not cuda:
        return [("generate", "on a CPU, transformers' generate: compiling and CUDA graphs are for GPUs")]
    ordered: list[tuple[str, str]] = []
    usable = {b: rate for b, rate in measured.items() if b in TRL_GENERATION and (vllm or not b.startswith("vllm"))}
    for backend, rate in sorted(usable.items(), key=lambda item: -item[1]):
        ordered.append((backend, f"the fastest measured on this box for this model: {rate:,.0f} tokens/s"
                        if not ordered else f"measured on this box for this model: {rate:,.0f} tokens/s"))
    if vllm:
        ordered.append(("vllm-colocate", "vLLM is installed on this box (no run there measured yet)"))
    ordered.append(("compiled", "a GPU without vLLM: a static cache and a compiled decode step (CUDA graphs)"))
    ordered.append(("generate", "transformers' eager generate"))
    seen: set[str] = set()
    return [(b, why) for b, why in ordered if not (b in seen or seen.add(b))]
