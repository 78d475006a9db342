"""Run hyper-parameters: the published defaults, validated, stored as JSON on the Run.

Each argument is declared once below, with its bounds, choices and help (TRL's
`field(metadata={"help": ...})` convention). Everything else is derived from that one
declaration: the validation here, the launch form's fields (training/forms.py), `manage.py
train --set` and its help listing, and the arguments GRPOConfig shares (training/trainer/grpo.py).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import MISSING, InitVar, asdict, dataclass, field, fields
from typing import Any, get_type_hints

# The canvas sizes a run can render at, largest first (the sketch always sees 600 units).
RENDER_SIZES = (600, 512, 448, 384, 320, 256, 192, 128)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_NONE = {"none", "null"}
MAX_PROCESSES = 8  # one machine's GPUs
MAX_TURNS = 3  # sketches per rollout: the first and up to two revisions
# How a run generates its completions (training/trainer/backends.py): the fastest measured on the box
# (auto), transformers' generate (eager or with a compiled decode step), its continuous batching,
# or vLLM in the trainer's process or in a `trl vllm-serve` beside it.
GENERATION_BACKENDS = ("auto", "generate", "compiled", "continuous-batching", "vllm-colocate", "vllm-server")
VLLM_BACKENDS = ("vllm-colocate", "vllm-server")
# `trl vllm-serve` listens on 8000 by default, which is the studio's port: serve it on 8002
# (`make trl-vllm-server`).
VLLM_SERVER_URL = "http://127.0.0.1:8002"
# vLLM's context when a run does not say: the chat (~2K tokens a turn) and a published-length
# completion (max_completion_length 4096) per turn, for up to 3 turns, rounded up.
DEFAULT_VLLM_MAX_MODEL_LENGTH = 20_480
# TRL 1.16's loss types but "luspo", which needs sequence-level importance sampling (not a
# run argument). The published runs name none, so theirs is TRL's default, "dapo".
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "vespo")
# The run kinds an argument is for: GRPO runs read them all; an SFT run (training/trainer/sft.py) reads
# those declared for both, and its own.
GRPO, SFT = "grpo", "sft"
BOTH = (GRPO, SFT)

# What a GRPO run from SFT must share with the SFT run whose LoRA it continues.
CONTINUED_LORA = ("lora_r", "lora_alpha", "lora_target_experts")


def argument(
    default: Any,
    *,
    help: str,  # the metadata key TRL and HfArgumentParser use
    min: float | None = None,
    max: float | None = None,
    choices: tuple | None = None,
    label: str | None = None,
    on_form: bool = False,
    kinds: tuple[str, ...] = (GRPO,),
) -> Any:
    """A RunArguments field with its bounds (inclusive), choices, help text and form label.

    `on_form` puts it on the launch form; every argument can be set with `train --set`.
    `kinds`: the run kinds that read it (the form shows it for those).
    """
    return field(default=default, metadata={
        "help": help, "min": min, "max": max, "choices": choices, "label": label, "on_form": on_form,
        "kinds": kinds,
    })


@dataclass(frozen=True)
class ArgumentSpec:
    """One run argument as declared: what the form, the CLI and the validation are built from."""

    name: str
    kind: type  # int, float, bool or str
    optional: bool  # None is a value (it means "decide at run time")
    default: Any
    help: str
    label: str
    min: float | None
    max: float | None
    choices: tuple | None
    on_form: bool
    kinds: tuple[str, ...] = (GRPO,)

    def problem(self, value: Any) -> str | None:
        """Why `value` is not acceptable for this argument, or None."""
        if value is None:
            return None if self.optional else f"{self.name} must be set"
        if self.kind is bool:
            if not isinstance(value, bool):
                return f"{self.name} must be true or false"
        elif self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{self.name} must be a whole number"
        elif self.kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return f"{self.name} must be a number"
        elif not isinstance(value, self.kind):
            return f"{self.name} must be a {self.kind.__name__}"
        if self.choices is not None and value not in self.choices:
            return f"{self.name} must be one of {', '.join(map(str, self.choices))}"
        if self.min is not None and self.max is not None and not self.min <= value <= self.max:
            return f"{self.name} must be between {self.min:g} and {self.max:g}"
        if self.min is not None and value < self.min:
            return f"{self.name} must be at least {self.min:g}"
        if self.max is not None and value > self.max:
            return f"{self.name} must be at most {self.max:g}"
        return None

    def parse(self, text: str) -> Any:
        """The value a command line's `KEY=VALUE` text stands for; ValueError says why not."""
        raw = text.strip()
        if self.optional and raw.lower() in _NONE:
            return None
        if self.kind is bool:
            if raw.lower() in _TRUE | _FALSE:
                return raw.lower() in _TRUE
            raise ValueError(f"{self.name} must be true or false, not {text!r}")
        if self.kind in (int, float):
            try:
                return self.kind(raw)
            except ValueError:
                expected = "a whole number" if self.kind is int else "a number"
                raise ValueError(f"{self.name} must be {expected}, not {text!r}") from None
        return raw

    def describe(self) -> str:
        """One line of the command line's listing: name, type, allowed values, default, help."""
        kind = self.kind.__name__ + (" or none" if self.optional else "")
        if self.choices is not None:
            allowed = " | ".join(map(str, self.choices))
        elif self.min is not None or self.max is not None:
            allowed = f"{'' if self.min is None else f'{self.min:g}'}..{'' if self.max is None else f'{self.max:g}'}"
        else:
            allowed = kind
        default = "none" if self.default is None else str(self.default).lower() if self.kind is bool else self.default
        return f"{self.name}={default}  [{allowed}]  {self.help}"


@dataclass
class RunArguments:
    """What a run needs beyond its pool and recipe. Defaults are the published ones.

    Declaration order is the launch form's order.
    """

    max_steps: int = argument(60, min=1, max=100_000, label="Steps", on_form=True,
                              help="GRPO steps (optimizer updates)")
    num_train_epochs: float = argument(
        3.0, min=0.01, max=1000.0, label="Epochs (SFT)", on_form=True, kinds=(SFT,),
        help="passes over the SFT dataset; with the batch they set the run's steps (its examples ÷ (per-device "
             "batch × accumulation), rounded up, × epochs)")
    sft_max_length: int = argument(
        4096, min=64, max=131_072, label="Longest example (SFT)", kinds=(SFT,),
        help="tokens of the longest SFT example (prompt and completion); longer ones are left out, not cut: a cut "
             "sketch would teach a sketch without its end")
    num_generations: int = argument(8, min=2, max=64, label="Generations per prompt (G)", on_form=True,
                                    help="completions per prompt: one GRPO group")
    per_device_train_batch_size: int = argument(
        1, min=1, max=512, label="Per-device batch", on_form=True,
        help="completions in one forward and backward pass on each device (1 as published)", kinds=BOTH)
    gradient_accumulation_steps: int = argument(
        8, min=1, max=1024, label="Gradient accumulation", on_form=True,
        help="passes per optimizer step (8 as published); a step trains on per-device batch × accumulation "
             "completions, a whole number of groups of G", kinds=BOTH)
    learning_rate: float = argument(
        5e-5, min=1e-8, max=1.0, on_form=True,
        help="5e-5 as published (a 35B model); the tiny demo model shows its progress in 20 steps at 1e-3", kinds=BOTH)
    warmup_steps: int = argument(5, min=0, on_form=True, help="learning-rate warm-up steps", kinds=BOTH)
    lr_scheduler_type: str = argument("constant_with_warmup", on_form=True, label="LR schedule",
                                      choices=("constant_with_warmup", "constant", "linear", "cosine"),
                                      help="learning-rate schedule after the warm-up", kinds=BOTH)
    scale_rewards: str = argument("none", choices=("none", "group", "batch"), on_form=True,
                                  help="divide advantages by the reward std of the group or batch, or not")
    loss_type: str = argument("dapo", choices=LOSS_TYPES, label="Loss", on_form=True,
                              help="how token losses are summed (TRL's loss_type; dapo, TRL's default, as published)")
    mask_truncated_completions: bool = argument(
        False, label="Mask cut-off replies", on_form=True,
        help="leave replies cut at the completion length out of the loss (TRL's default: off, as published)",
    )
    turns: int = argument(
        1, min=1, max=MAX_TURNS, label="Turns", on_form=True,
        help="sketches per rollout: 1 writes one sketch; 2-3 show the model how its sketch came out (gate "
             "problems with line:col, runtime errors, paint coverage, the judge's verdicts) and ask for a new "
             "complete sketch each time; the feedback's tokens are left out of the loss",
    )
    revision_gain_weight: float = argument(
        0.0, min=0.0, max=1.0, label="Weight on improvement", on_form=True,
        help="a multi-turn rollout's reward is the final painting's reward plus this weight times its gain over "
             "the first turn's (final - first); 0: the final painting's reward alone",
    )
    top_p: float = argument(0.95, min=0.01, max=1.0, on_form=True, help="nucleus sampling", kinds=BOTH)
    top_k: int = argument(20, min=0, on_form=True, help="sample from the k likeliest tokens (0: all)", kinds=BOTH)
    temperature: float = argument(1.0, min=0.01, max=5.0, on_form=True, help="sampling temperature", kinds=BOTH)
    max_completion_length: int = argument(8192, min=16, max=65_536, on_form=True,
                                          help="longest reply in tokens; longer ones are cut (and fail the gate)", kinds=BOTH)
    beta: float = argument(0.0, min=0.0, on_form=True, help="KL penalty against the base model (0: none)")
    lora_r: int = argument(16, min=1, label="LoRA r", on_form=True, help="LoRA rank", kinds=BOTH)
    lora_alpha: int = argument(32, min=1, label="LoRA α", on_form=True, help="LoRA scaling", kinds=BOTH)
    lora_dropout: float = argument(0.0, min=0.0, max=0.9, label="LoRA dropout", on_form=True,
                                   help="dropout on the LoRA layers' input (0 as published)", kinds=BOTH)
    render_size: int = argument(600, choices=RENDER_SIZES, on_form=True,
                                help="pixels of a training render (the sketch always draws on 600 units)", kinds=BOTH)
    checkpoint_every: int = argument(10, min=1, on_form=True, help="steps between checkpoints (Resume starts there)", kinds=BOTH)
    generation: str = argument(
        "auto", choices=GENERATION_BACKENDS, on_form=True,
        help="auto: the fastest measured on the train worker's box for this model (listed below the form); "
             "generate, compiled (a compiled decode step on a GPU), continuous-batching: the trainer's own, the "
             "adapter folded in; vllm-colocate, vllm-server: vLLM (GPU)",
    )
    vllm_server_base_url: str = argument(VLLM_SERVER_URL, label="vLLM server URL", on_form=True,
                                         help="where `trl vllm-serve --port 8002` answers (vllm-server only)")
    vllm_gpu_memory_utilization: float = argument(0.3, min=0.05, max=0.95,
                                                  help="share of GPU memory vLLM takes (vllm-colocate)")
    vllm_enable_sleep_mode: bool = argument(False, help="vLLM frees its memory while the trainer updates (vllm-colocate)")
    vllm_max_model_length: int | None = argument(
        DEFAULT_VLLM_MAX_MODEL_LENGTH, min=64, max=1_048_576,
        help="vLLM's context length (vllm-colocate): the prompt (~2K tokens a turn) plus the completion fit in the "
             "default; none: the model's own, which for a 262K-context model reserves a KV cache no GPU holds",
    )
    vllm_tensor_parallel_size: int = argument(
        1, min=1, max=16, help="GPUs one colocated vLLM engine spans (vllm-colocate; TRL's vllm_tensor_parallel_size): "
                               "2+ for a policy whose weights do not fit one GPU beside the trainer")
    lora_target_experts: bool = argument(
        False, help="LoRA on the routed experts of a MoE model too (PEFT target_parameters; needs lora_dropout 0)", kinds=BOTH)
    bf16: bool | None = argument(None, help="bfloat16 training; none: on a GPU, off on CPU", kinds=BOTH)
    torch_threads: int = argument(1, min=1, max=256,
                                  help="torch threads per process on CPU (contended OpenMP threads collapse throughput)", kinds=BOTH)
    render_deadline_s: float = argument(300.0, min=1.0, help="seconds for a whole group's renders", kinds=BOTH)
    score_deadline_s: float = argument(300.0, min=1.0, help="seconds for a whole group's scoring", kinds=BOTH)
    eval_samples_per_subject: int = argument(2, min=1, max=64, help="held-out replies per subject after training", kinds=BOTH)
    report_to: str = argument(
        "none", choices=("none", "trackio", "wandb", "trackio,wandb"), label="Tracking", on_form=True,
        help="also log metrics and completions to trackio (local files) and/or Weights & Biases", kinds=BOTH)
    num_processes: int = argument(
        1, min=0, max=MAX_PROCESSES,
        help="training processes: 1 trains in the train worker's own process; N > 1 starts N with accelerate "
             "launch (one per GPU), sharing each step's completions; 0: one per visible GPU (1 without a GPU)", kinds=BOTH)
    accelerate_config: str = argument(
        "", help="an accelerate config file on the train worker's machine (e.g. DeepSpeed ZeRO): the run is "
                 "started with accelerate launch --config_file, even with one process", kinds=BOTH)
    hub_model_id: str = argument(
        "", label="Push to the Hub", on_form=True,
        help="a Hub model repo (OWNER/NAME) the trainer pushes its checkpoints and final adapter to, with the train "
             "worker's HF_TOKEN, so they outlive its machine; empty: no push", kinds=BOTH)
    hub_strategy: str = argument(
        "checkpoint", choices=("checkpoint", "every_save", "all_checkpoints", "end"),
        help="what reaches the Hub (TRL's hub_strategy): checkpoint, the latest checkpoint as last-checkpoint/ (a "
             "resume can start from it); every_save, each save; all_checkpoints, each in its own folder; end, the "
             "final adapter only", kinds=BOTH)
    hub_private_repo: bool = argument(True, help="create the Hub repo private", kinds=BOTH)
    environment_url: str = argument(
        "", label="OpenEnv environment URL", on_form=True,
        help="take rewards from a remote OpenEnv environment (another studio's manage.py serve_env, or the published "
             "environment's Space) instead of the studio's own render and score workers; empty: the studio's",
    )
    environment_token_env: str = argument(
        "PAINTAPP_REMOTE_ENV_TOKEN", label="Token variable",
        help="the train worker's environment variable that holds the remote environment's bearer token (the secret "
             "itself is never stored with the run)",
    )

    # The run kind the arguments are for: an SFT run has no groups to fill (not stored: Run.kind is).
    kind: InitVar[str] = GRPO

    def __post_init__(self, kind: str = GRPO) -> None:
        self._kind = kind
        errors = self.problems()
        if errors:
            raise ValueError("; ".join(errors))
        for spec in argument_specs():  # 0 from JSON or a form is the float 0.0 here
            if spec.kind is float and isinstance(getattr(self, spec.name), int):
                setattr(self, spec.name, float(getattr(self, spec.name)))

    def problems(self) -> list[str]:
        """Each argument's own problems, then those of arguments taken together."""
        problems = [p for spec in argument_specs() if (p := spec.problem(getattr(self, spec.name)))]
        return problems or self._combined_problems()

    def _combined_problems(self) -> list[str]:
        problems = []
        if self._kind == SFT:
            if self.num_processes > 1:
                try:
                    batch_layout(self, self.num_processes)
                except ValueError as exc:
                    problems.append(str(exc))
            return problems
        if self.generation_batch_size % self.num_generations:
            problems.append(
                f"per_device_train_batch_size × gradient_accumulation_steps ({self.per_device_train_batch_size} × "
                f"{self.gradient_accumulation_steps} = {self.generation_batch_size}) must be a multiple of "
                f"num_generations ({self.num_generations}): each step trains on whole groups")
        elif self.num_processes > 1:
            try:
                batch_layout(self, self.num_processes)
            except ValueError as exc:
                problems.append(str(exc))
        if self.generation == "vllm-colocate" and self.vllm_max_model_length is not None and (
                self.vllm_max_model_length < self.turns * (2048 + self.max_completion_length)):
            problems.append(
                f"vllm_max_model_length {self.vllm_max_model_length} cannot hold {self.turns} turn(s) of a ~2048-token "
                f"prompt and a {self.max_completion_length}-token completion: raise it or shorten the completion")
        if self.vllm_tensor_parallel_size > 1 and self.generation != "vllm-colocate":
            problems.append("vllm_tensor_parallel_size is for vllm-colocate; a vllm-server sets its own "
                            "(trl vllm-serve --tensor_parallel_size)")
        if self.generation == "vllm-server" and not self.vllm_server_base_url.startswith(("http://", "https://")):
            problems.append("vllm_server_base_url must be an http:// or https:// URL for the vllm-server generation")
        if self.hub_model_id and not re.fullmatch(r"[\w.-]+/[\w.-]+", self.hub_model_id):
            problems.append(f"hub_model_id must be a Hub repo id like OWNER/NAME, not {self.hub_model_id!r}")
        if self.environment_url and not self.environment_url.startswith(("http://", "https://", "ws://", "wss://")):
            problems.append("environment_url must be an http(s):// or ws(s):// URL of an OpenEnv environment")
        if self.environment_url and self.turns > 1:
            problems.append("a remote environment plays its own revision turns (serve_env --revisions): keep turns 1")
        if self.lora_target_experts and self.lora_dropout:  # PEFT refuses it on a parameter
            problems.append("lora_target_experts needs lora_dropout 0: LoRA on the experts' parameters has no dropout")
        return problems

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, *, kind: str = GRPO) -> RunArguments:
        """Unknown keys are ignored: stored runs may carry arguments that have moved
        (length_*_tokens now live in the run's recipe snapshot). Keys that were replaced are
        read into their successors (see `_successor_keys`)."""
        known = {f.name for f in fields(cls)}
        data = {**_successor_keys(data or {}), **(data or {})}
        return cls(**{key: value for key, value in data.items() if key in known}, kind=kind)

    @property
    def generation_batch_size(self) -> int:
        """Completions per optimizer step (TRL generates them at once): the per-device batch
        times the accumulation steps."""
        return self.per_device_train_batch_size * self.gradient_accumulation_steps

    @property
    def prompts_per_step(self) -> int:
        """GRPO groups per optimizer step."""
        return self.generation_batch_size // self.num_generations

    def shared_with(self, config_class: type, *, kind: str = GRPO) -> dict[str, Any]:
        """The arguments of a `kind` run that another dataclass declares under the same names
        (e.g. TRL's GRPOConfig or SFTConfig)."""
        theirs = {f.name for f in fields(config_class)}
        mine = {spec.name for spec in argument_specs() if kind in spec.kinds}
        return {name: value for name, value in self.to_dict().items() if name in theirs and name in mine}

    def steps_for(self, examples: int) -> int:
        """An SFT run's optimizer steps over `examples` examples: whole batches, times the epochs."""
        return max(1, math.ceil(math.ceil(examples / self.generation_batch_size) * self.num_train_epochs))


@dataclass(frozen=True)
class BatchLayout:
    """How one process of a run takes its share of a step (TRL's GRPOConfig fields)."""

    per_device_train_batch_size: int
    gradient_accumulation_steps: int


def batch_layout(args: RunArguments, processes: int) -> BatchLayout:
    """A step is the run's `generation_batch_size` completions (per-device batch × accumulation
    as declared for one device) whatever the number of processes, so a run's curve means the
    same on one GPU or eight: each process takes an equal share, by dividing the accumulation
    when it can (1 × 8 on 2 processes: 1 × 4 each), else the whole share in one batch.
    TRL needs the step in whole groups, which `problems` checks. ValueError when the
    processes do not divide the step."""
    per_device, accumulation = args.per_device_train_batch_size, args.gradient_accumulation_steps
    if accumulation % processes == 0:
        return BatchLayout(per_device, accumulation // processes)
    if args.generation_batch_size % processes == 0:
        return BatchLayout(args.generation_batch_size // processes, 1)
    raise ValueError(f"num_processes {processes} must divide a step's {args.generation_batch_size} completions "
                     "(per_device_train_batch_size × gradient_accumulation_steps)")


def _successor_keys(stored: dict[str, Any]) -> dict[str, Any]:
    """What a run stored before `generation` and the published batch layout replaced its keys:
    `use_vllm` + `vllm_mode` name a generation backend; `prompts_per_step` groups were one
    batch of G × prompts_per_step completions with no accumulation."""
    successors: dict[str, Any] = {}
    if "generation" not in stored and "use_vllm" in stored:
        successors["generation"] = f"vllm-{stored.get('vllm_mode') or 'colocate'}" if stored["use_vllm"] else "generate"
    if "per_device_train_batch_size" not in stored and "prompts_per_step" in stored:
        groups, group = stored["prompts_per_step"], stored.get("num_generations", 8)
        if isinstance(groups, int) and isinstance(group, int):
            successors.update(per_device_train_batch_size=groups * group, gradient_accumulation_steps=1)
    return successors


@functools.cache
def argument_specs() -> tuple[ArgumentSpec, ...]:
    """Every run argument as declared, in declaration order."""
    hints = get_type_hints(RunArguments)
    specs = []
    for f in fields(RunArguments):
        kinds = [k for k in getattr(hints[f.name], "__args__", (hints[f.name],)) if k is not type(None)]
        meta = f.metadata
        if f.default is MISSING or len(kinds) != 1 or "help" not in meta:
            raise TypeError(f"RunArguments.{f.name} must be declared with argument(default, help=...)")
        specs.append(ArgumentSpec(
            name=f.name, kind=kinds[0], optional=type(None) in getattr(hints[f.name], "__args__", ()),
            default=f.default, help=meta["help"], label=meta["label"] or f.name.replace("_", " ").capitalize(),
            min=meta["min"], max=meta["max"], choices=meta["choices"], on_form=meta["on_form"], kinds=meta["kinds"],
        ))
    return tuple(specs)


def argument_spec(name: str) -> ArgumentSpec:
    """The declaration of one run argument; KeyError for a name that is not one."""
    for spec in argument_specs():
        if spec.name == name:
            return spec
    raise KeyError(name)
