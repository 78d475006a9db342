"""Live probes of a recipe's parts: can each backend answer right now, and if not, why.

A probe answers for the machine it runs on. The judge and quality parts run on the score
workers (which may be other machines, with their own VLM endpoint, HPSv3 package and GPU),
so the studio asks a score worker to run these (painting.tasks.probe_recipes). What needs
the database — the pool's taste model and grades — comes in as a `TasteStatus`.

- `vlm`: GET {base_url}/models within a short timeout, and the configured model is listed.
- `hpsv3`: torch and transformers, the checkpoint file, the base model (a folder or in the
  Hugging Face cache), then CUDA.
- `taste`: the pool has a taste model, or grades in two tiers to train one on first use.
- `features`: embedded, always.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from paintenv.judges import BACKENDS as JUDGES
from paintenv.judges.vlm import BASE_URL_ENV, VLMConfig
from paintenv.quality import BACKENDS as SCORERS
from paintenv.quality.hpsv3 import BASE_MODEL_ENV, CHECKPOINT_ENV, DEFAULT_BASE_MODEL
from paintenv.reward import DEFAULT_PRESET, DEFAULT_STUDIO_PRESET, PRESETS, Recipe

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class PartProbe:
    """One part of a recipe as a probe found it. `reachable` is None when it cannot be told
    (a part of weight 0 is not probed; the taste judge needs a pool to be probed)."""

    part: str  # gate, length, judge or quality
    backend: str
    weight: float
    reachable: bool | None
    detail: str  # what was found, or why the part cannot answer

    @property
    def blocks_launch(self) -> bool:
        return self.weight > 0 and self.reachable is False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartProbe:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class TasteStatus:
    """What the taste judge needs from a pool: its stored model, or its graded train split."""

    pool: str  # the pool's label
    has_model: bool
    train_tiers: dict[str, int] = field(default_factory=dict)  # train-split references per tier


@dataclass(frozen=True)
class RecipeProbe:
    """A recipe's parts as one probe found them, and where it ran ("" when nowhere)."""

    recipe: Recipe
    parts: list[PartProbe] = field(default_factory=list)
    where: str = ""

    @property
    def blocking(self) -> list[PartProbe]:
        """Weighted parts found unreachable: a launch with this recipe is refused."""
        return [part for part in self.parts if part.blocks_launch]

    @property
    def reachable(self) -> bool | None:
        """True when every weighted part answered, False when one cannot, None when unknown."""
        weighted = [part for part in self.parts if part.weight > 0]
        if any(part.reachable is False for part in weighted):
            return False
        return True if all(part.reachable for part in weighted) else None

    def refusal(self) -> str:
        parts = "; ".join(f"the {p.part} part ({p.backend}, weight {p.weight:g}) cannot answer: {p.detail}"
                          for p in self.blocking)
        return f"recipe {self.recipe.name!r}: {parts} (probed on {self.where or 'no machine'})"


def probe_vlm(environ: Mapping[str, str], *, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """The VLM endpoint answers GET /models within `timeout_s` and lists the configured model."""
    if not environ.get(BASE_URL_ENV):
        return False, f"{BASE_URL_ENV} is not set (the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8001/v1)"
    config = VLMConfig.from_env(environ)
    url = config.base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return False, f"{url} does not answer: {type(exc).__name__}: {str(exc) or 'no detail'}"
    if response.status_code in (401, 403):
        return False, f"{url} refused the key (HTTP {response.status_code}): check PAINTAPP_VLM_API_KEY"
    if response.status_code != 200:
        return False, f"{url} answered HTTP {response.status_code}: {response.text[:200]}"
    try:
        served = [str(entry["id"]) for entry in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        return False, f"{url} did not answer an OpenAI model list: {response.text[:200]}"
    if config.model not in served:
        return False, f"{url} does not serve {config.model} (it serves {', '.join(served) or 'nothing'}; set PAINTAPP_VLM_MODEL)"
    return True, f"{config.model} at {config.base_url}"


def _base_model_missing(base_model: str) -> str:
    """Why HPSv3's base model (a folder, or a Hub name already downloaded) cannot be read here, or ""."""
    if os.path.isdir(base_model):
        return "" if os.path.exists(os.path.join(base_model, "config.json")) else f"{base_model} has no config.json"
    if os.path.isabs(base_model) or base_model.startswith("."):
        return f"the base model folder {base_model} ({BASE_MODEL_ENV}) does not exist"
    from huggingface_hub import try_to_load_from_cache  # lazily: only this probe needs it

    try:
        if isinstance(try_to_load_from_cache(base_model, "config.json"), str):
            return ""
    except ValueError as exc:  # not a Hub name at all (huggingface_hub's validation error)
        return f"the base model {base_model!r} ({BASE_MODEL_ENV}) is neither a folder nor a Hub name: {exc}"
    return f"the base model {base_model} is not in the Hugging Face cache (manage.py fetch_model {base_model}, or set {BASE_MODEL_ENV})"


def probe_hpsv3(environ: Mapping[str, str], *, device: str = "cuda") -> tuple[bool, str]:
    """HPSv3's libraries, its weights, its base model and the device are all here (nothing is loaded)."""
    problems = [f"{name} is not installed" for name in ("torch", "transformers") if importlib.util.find_spec(name) is None]
    checkpoint = environ.get(CHECKPOINT_ENV, "")
    if not checkpoint:
        problems.append(f"{CHECKPOINT_ENV} is not set (the published HPSv3.safetensors)")
    elif not os.path.exists(checkpoint):
        problems.append(f"the checkpoint {checkpoint} ({CHECKPOINT_ENV}) does not exist")
    base_model = environ.get(BASE_MODEL_ENV) or DEFAULT_BASE_MODEL
    if missing := _base_model_missing(base_model):
        problems.append(missing)
    # The device last, and only for an otherwise usable scorer: torch takes seconds to import.
    if not problems and device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            problems.append("no CUDA device is available")
    if problems:
        return False, "; ".join(problems)
    return True, f"{checkpoint} on {base_model}, {device}"


def probe_taste(status: TasteStatus | None) -> tuple[bool | None, str]:
    if status is None:
        return None, "trained per pool on its grades: choose a pool to probe it"
    if status.has_model:
        return True, f"pool {status.pool} has a taste model"
    graded = {tier: n for tier, n in status.train_tiers.items() if n}
    if len(graded) >= 2:
        total = sum(graded.values())
        return True, f"pool {status.pool} has no taste model yet: trained on first use from {total} graded references"
    return False, (f"pool {status.pool} has graded references in {len(graded)} tier(s) of its train split; "
                   "the taste judge needs two tiers to learn a preference")


def _probe_backend(backend: str, table: dict[str, str], *, environ: Mapping[str, str],
                   taste: TasteStatus | None, timeout_s: float) -> tuple[bool | None, str]:
    if backend == "vlm":
        return probe_vlm(environ, timeout_s=timeout_s)
    if backend == "hpsv3":
        return probe_hpsv3(environ)
    if backend == "taste":
        return probe_taste(taste)
    if backend == "features":
        return True, "embedded (CPU)"
    module_name, _, attr = table.get(backend, backend).rpartition(".")
    try:
        getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        return False, f"cannot load {backend}: {exc}"
    return True, f"{backend} loads (a custom backend: not probed further)"


def _in_process_parts(recipe: Recipe) -> list[PartProbe]:
    return [
        PartProbe("gate", "static gate + render", recipe.w_gate, True, "in-process and on the render workers"),
        PartProbe("length", "token estimate", recipe.w_length, True, "in-process"),
    ]


def _scored_parts(recipe: Recipe) -> list[tuple[str, str, float, dict[str, str]]]:
    return [("judge", recipe.judge, recipe.w_judge, JUDGES), ("quality", recipe.quality, recipe.w_quality, SCORERS)]


def probe_recipe(recipe: Recipe, *, environ: Mapping[str, str] | None = None, taste: TasteStatus | None = None,
                 timeout_s: float = PROBE_TIMEOUT_S) -> list[PartProbe]:
    """Every part of `recipe`: gate and length (computed in-process), judge and quality
    (probed here when weighted)."""
    environ = os.environ if environ is None else environ
    probes = _in_process_parts(recipe)
    for part, backend, weight, table in _scored_parts(recipe):
        if weight > 0:
            reachable, detail = _probe_backend(backend, table, environ=environ, taste=taste, timeout_s=timeout_s)
        else:
            reachable, detail = None, "weight 0: not used"
        probes.append(PartProbe(part, backend, weight, reachable, detail))
    return probes


def unprobed_recipe(recipe: Recipe, reason: str) -> list[PartProbe]:
    """The parts of a recipe no probe reached: the scored ones unknown, with `reason`."""
    return _in_process_parts(recipe) + [
        PartProbe(part, backend, weight, None, reason if weight > 0 else "weight 0: not used")
        for part, backend, weight, _table in _scored_parts(recipe)
    ]


def configured(recipe: Recipe, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the settings a recipe's weighted parts need are present (no network: the
    probes say whether they also answer)."""
    environ = os.environ if environ is None else environ
    needs = {"vlm": BASE_URL_ENV, "hpsv3": CHECKPOINT_ENV}
    used = [backend for backend, weight in ((recipe.judge, recipe.w_judge), (recipe.quality, recipe.w_quality)) if weight > 0]
    return all(environ.get(needs[backend]) for backend in used if backend in needs)


def default_recipe_name(environ: Mapping[str, str] | None = None) -> str:
    """The published judge-led where its VLM judge and HPSv3 are configured, else studio-judge-led."""
    return DEFAULT_PRESET if configured(PRESETS[DEFAULT_PRESET], environ) else DEFAULT_STUDIO_PRESET
