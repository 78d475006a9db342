"""The private TRL and transformers methods the trainer calls, with the versions they were
written against: a trainer whose libraries moved refuses to start with the reason, rather than
failing at its first revision turn or pause, hours in.

- `GRPOTrainer._tokenize_prompts(prompts)` and `GRPOTrainer._generate_single_turn(prompt_ids,
  images, multimodal_fields, num_generations, ...)`: the revision turns' rollout function
  (training/trainer/turns.py) generates each turn with TRL's own generation path.
- `Trainer._save_checkpoint(model, trial)`: a pausing run saves a checkpoint between steps
  (training/trainer/pausing.py).
"""
from __future__ import annotations

import inspect
from importlib.metadata import version

from packaging.specifiers import SpecifierSet

TESTED_TRL = SpecifierSet(">=1.16,<1.17")
# (method, the parameters it must take first, in order, after self)
PRIVATE_CALLS = (
    ("_tokenize_prompts", ("prompts",)),
    ("_generate_single_turn", ("prompt_ids", "images", "multimodal_fields", "num_generations")),
    ("_save_checkpoint", ("model", "trial")),
)


class PrivateApiMoved(RuntimeError):
    pass


def problems(trainer_class: type, trl_version: str) -> list[str]:
    """What no longer matches: a version outside the tested range, a method gone or changed."""
    found = []
    for name, expected in PRIVATE_CALLS:
        method = getattr(trainer_class, name, None)
        if method is None:
            found.append(f"{trainer_class.__name__}.{name} is gone")
            continue
        parameters = [p for p in inspect.signature(method).parameters if p != "self"]
        if tuple(parameters[:len(expected)]) != expected:
            found.append(f"{trainer_class.__name__}.{name}({', '.join(parameters)}) no longer takes "
                         f"({', '.join(expected)})")
    if found and trl_version not in TESTED_TRL:
        found.append(f"trl {trl_version} is outside the tested {TESTED_TRL}")
    return found


def check(trainer_class: type) -> None:
    """Raise PrivateApiMoved naming what moved; a newer TRL whose methods still match passes."""
    found = problems(trainer_class, version("trl"))
    if found:
        raise PrivateApiMoved("the trainer calls private TRL / transformers methods that changed: " + "; ".join(found)
                              + f". Install the tested trl ({TESTED_TRL}, requirements.txt) or update "
                              "training/trainer/turns.py and training/trainer/pausing.py")
