"""Run hyper-parameters: the published defaults, validated, stored as JSON on the Run.

Each argument is declared once below, with its bounds, choices and help (TRL's
`field(metadata={"help": ...})` convention). Everything else is derived from that one
declaration: the validation here, the launch form's fields (training/forms.py), `manage.py
train --set` and its help listing, and the arguments GRPOConfig shares (training/trainer.py).
"""
from __future__ import annotations

import functools
import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, get_type_hints

# The canvas sizes a run can render at, largest first (the sketch always sees 600 units).
RENDER_SIZES = (600, 512, 448, 384, 320, 256, 192, 128)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_NONE = {"none", "null"}
MAX_PROCESSES = 8  # one machine's GPUs


def argument(
    default: Any,
    *,
    help: str,  # the metadata key TRL and HfArgumentParser use
    min: float | None = None,
    max: float | None = None,
    choices: tuple | None = None,
    label: str | None = None,
    on_form: bool = False,
) -> Any:
    """A RunArguments field with its bounds (inclusive), choices, help text and form label.

    `on_form` puts it on the launch form; every argument can be set with `train --set`.
    """
    return field(default=default, metadata={
        "help": help, "min": min, "max": max, "choices": choices, "label": label, "on_form": on_form,
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
    num_generations: int = argument(8, min=2, max=64, label="Generations per prompt (G)", on_form=True,
                                    help="completions per prompt: one GRPO group")
    learning_rate: float = argument(
        5e-5, min=1e-8, max=1.0, on_form=True,
        help="5e-5 as published (a 35B model); the tiny demo model shows its progress in 20 steps at 1e-3",
    )
    warmup_steps: int = argument(5, min=0, on_form=True, help="learning-rate warm-up steps")
    lr_scheduler_type: str = argument("constant_with_warmup", on_form=True, label="LR schedule",
                                      choices=("constant_with_warmup", "constant", "linear", "cosine"),
                                      help="learning-rate schedule after the warm-up")
    scale_rewards: str = argument("none", choices=("none", "group", "batch"), on_form=True,
                                  help="divide advantages by the reward std of the group or batch, or not")
    top_p: float = argument(0.95, min=0.01, max=1.0, on_form=True, help="nucleus sampling")
    top_k: int = argument(20, min=0, on_form=True, help="sample from the k likeliest tokens (0: all)")
    temperature: float = argument(1.0, min=0.01, max=5.0, on_form=True, help="sampling temperature")
    max_completion_length: int = argument(8192, min=16, max=65_536, on_form=True,
                                          help="longest reply in tokens; longer ones are cut (and fail the gate)")
    beta: float = argument(0.0, min=0.0, on_form=True, help="KL penalty against the base model (0: none)")
    lora_r: int = argument(16, min=1, label="LoRA r", on_form=True, help="LoRA rank")
    lora_alpha: int = argument(32, min=1, label="LoRA α", on_form=True, help="LoRA scaling")
    render_size: int = argument(600, choices=RENDER_SIZES, on_form=True,
                                help="pixels of a training render (the sketch always draws on 600 units)")
    checkpoint_every: int = argument(10, min=1, on_form=True, help="steps between checkpoints (Resume starts there)")
    use_vllm: bool = argument(False, label="vLLM generation (GPU box)", on_form=True,
                              help="generate with vLLM instead of transformers")
    prompts_per_step: int = argument(1, min=1, help="GRPO groups per step")
    lora_dropout: float = argument(0.05, min=0.0, max=0.9, help="LoRA dropout")
    lora_target_experts: bool = argument(
        False, help="LoRA on the routed experts of a MoE model too (PEFT target_parameters; needs lora_dropout 0)",
    )
    vllm_mode: str = argument("colocate", choices=("colocate", "server"),
                              help="vLLM in the trainer's process or a separate trl vllm-serve")
    bf16: bool | None = argument(None, help="bfloat16 training; none: on a GPU, off on CPU")
    torch_threads: int = argument(1, min=1, max=256,
                                  help="torch threads per process on CPU (contended OpenMP threads collapse throughput)")
    render_deadline_s: float = argument(300.0, min=1.0, help="seconds for a whole group's renders")
    score_deadline_s: float = argument(300.0, min=1.0, help="seconds for a whole group's scoring")
    eval_samples_per_subject: int = argument(2, min=1, max=64, help="held-out replies per subject after training")
    report_to: str = argument(
        "none", choices=("none", "trackio", "wandb", "trackio,wandb"), label="Tracking", on_form=True,
        help="also log metrics and completions to trackio (local files) and/or Weights & Biases",
    )
    num_processes: int = argument(
        1, min=0, max=MAX_PROCESSES,
        help="training processes: 1 trains in the train worker's own process; N > 1 starts N with accelerate "
             "launch (one per GPU), sharing each step's completions; 0: one per visible GPU (1 without a GPU)",
    )
    accelerate_config: str = argument(
        "", help="an accelerate config file on the train worker's machine (e.g. DeepSpeed ZeRO): the run is "
                 "started with accelerate launch --config_file, even with one process",
    )

    def __post_init__(self) -> None:
        errors = self.problems()
        if errors:
            raise ValueError("; ".join(errors))
        for spec in argument_specs():  # 0 from JSON or a form is the float 0.0 here
            if spec.kind is float and isinstance(getattr(self, spec.name), int):
                setattr(self, spec.name, float(getattr(self, spec.name)))

    def problems(self) -> list[str]:
        found = [p for spec in argument_specs() if (p := spec.problem(getattr(self, spec.name)))]
        if not found and self.num_processes > 1:
            try:
                batch_layout(self, self.num_processes)
            except ValueError as exc:
                found.append(str(exc))
        if self.lora_target_experts and self.lora_dropout:  # PEFT refuses it on a parameter
            found.append("lora_target_experts needs lora_dropout 0: LoRA on the experts' parameters has no dropout")
        return found

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunArguments:
        """Unknown keys are ignored: stored runs may carry arguments that have moved
        (length_*_tokens now live in the run's recipe snapshot)."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in (data or {}).items() if key in known})

    @property
    def batch_size(self) -> int:
        return self.num_generations * self.prompts_per_step

    def shared_with(self, config_class: type) -> dict[str, Any]:
        """The arguments another dataclass declares under the same names (e.g. TRL's GRPOConfig)."""
        theirs = {f.name for f in fields(config_class)}
        return {name: value for name, value in self.to_dict().items() if name in theirs}


@dataclass(frozen=True)
class BatchLayout:
    """How the processes of a run share one step's completions (TRL's GRPOConfig fields)."""

    per_device_train_batch_size: int
    gradient_accumulation_steps: int


def batch_layout(args: RunArguments, processes: int) -> BatchLayout:
    """One step is `args.batch_size` completions (prompts_per_step groups of num_generations)
    whatever the number of processes: each process generates an equal share of them, so
    per-device batch × accumulation × processes = the step's completions, which TRL needs to
    be whole groups (a multiple of num_generations). ValueError when they do not divide."""
    if args.batch_size % processes:
        raise ValueError(f"num_processes {processes} must divide a step's {args.batch_size} completions "
                         "(num_generations × prompts_per_step)")
    return BatchLayout(per_device_train_batch_size=args.batch_size // processes, gradient_accumulation_steps=1)


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
            min=meta["min"], max=meta["max"], choices=meta["choices"], on_form=meta["on_form"],
        ))
    return tuple(specs)


def argument_spec(name: str) -> ArgumentSpec:
    """The declaration of one run argument; KeyError for a name that is not one."""
    for spec in argument_specs():
        if spec.name == name:
            return spec
    raise KeyError(name)
