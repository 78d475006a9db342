"""The SFT dataset builder: the studio's best code as chat examples, each source counted.

Sources (`SftSources`):
- the code of a pool's references (love only, or love and okay; train split);
- curators' revisions in the editor that passed;
- promoted rollouts (references whose provenance is a rollout);
- the rollouts of chosen runs at or above a reward quantile of their run, passed and not blank;
- an imported rollouts dataset (`datasets`): the studio's own export (`code`, `subject`,
  `reward`, `passed`), or the published rollout dataset's `prompt`, `completion`, `reward`.

Rules:
- Every example's code passes the gate (an imported one may not: it is counted as refused).
- Examples are de-duplicated on the code's normal form (paintenv/normal_form.py), the first
  source in the order above keeping it.
- The eval split of the dataset's pool never enters: an example whose code is the code of one
  of its eval references (up to comments and blanks), or that is one of them (a promoted
  rollout graded into the eval split), is left out and said so.
- Prompts are `build_messages(subject)`: GRPO's system prompt and user message, and the
  completion is one ```js fenced block, as the system prompt asks and GRPO samples.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from curation.models import Pool, PoolMember, Provenance, Reference, Tier
from paintenv.extraction import extract_sketch
from paintenv.gate import gate_source
from paintenv.image import BLANK_THRESHOLD
from paintenv.normal_form import code_key
from training.models import Revision, Rollout
from training.sft_examples import Example

SOURCES = ("references", "revisions", "promoted", "rollouts", "imported")
PROMPT_PREFIX, PROMPT_SUFFIX = "Paint ", " in loose watercolour."


@dataclass(frozen=True)
class SftSources:
    pool_id: int  # whose references may be used, and whose eval split never enters
    reference_tiers: tuple[str, ...] = (Tier.LOVE,)
    references: bool = True
    revisions: bool = True
    promoted: bool = True
    run_ids: tuple[int, ...] = ()
    reward_quantile: float = 0.75  # a rollout enters at or above this quantile of its run's rewards
    imported: str = ""  # a dataset folder (datasets.save_to_disk) or parquet file(s)

    def __post_init__(self) -> None:
        if not 0.0 <= self.reward_quantile <= 1.0:
            raise ValueError("reward_quantile runs from 0 to 1")
        if not set(self.reference_tiers) <= {Tier.LOVE, Tier.OKAY}:
            raise ValueError("reference_tiers are love, or love and okay")

    def to_dict(self) -> dict:
        return {**asdict(self), "reference_tiers": list(self.reference_tiers), "run_ids": list(self.run_ids)}

    @classmethod
    def from_dict(cls, data: dict) -> SftSources:
        return cls(**{**data, "reference_tiers": tuple(data.get("reference_tiers", (Tier.LOVE,))),
                      "run_ids": tuple(data.get("run_ids", ()))})


@dataclass
class SourceCount:
    found: int = 0
    kept: int = 0
    duplicates: int = 0
    eval_excluded: int = 0
    refused: int = 0  # the gate refuses the code

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SftDataset:
    examples: list[Example]
    counts: dict[str, SourceCount]
    left_out: list[str] = field(default_factory=list)  # what the eval split kept out, by origin

    def rows(self) -> list[dict]:
        return [example.row() for example in self.examples]


def build_dataset(sources: SftSources) -> SftDataset:
    """Every enabled source's examples, checked, de-duplicated and kept clear of the eval split."""
    pool = Pool.objects.get(id=sources.pool_id)
    eval_members = PoolMember.objects.filter(pool=pool, split="eval").select_related("reference")
    eval_ids = {m.reference_id for m in eval_members}
    eval_keys = {code_key(m.reference.source): m.reference_id for m in eval_members if m.reference.source}
    counts = {name: SourceCount() for name in SOURCES}
    seen: set[str] = set()
    examples: list[Example] = []
    left_out: list[str] = []
    for example, reference_id in _candidates(sources, pool):
        count = counts[example.source]
        count.found += 1
        key = code_key(example.code)
        if reference_id in eval_ids or key in eval_keys:
            count.eval_excluded += 1
            which = reference_id if reference_id in eval_ids else eval_keys[key]
            left_out.append(f"{example.origin}: the code of eval reference {which}")
        elif not gate_source(example.code).passed:
            count.refused += 1
        elif key in seen:
            count.duplicates += 1
        else:
            seen.add(key)
            count.kept += 1
            examples.append(example)
    return SftDataset(examples=examples, counts=counts, left_out=left_out)


def _candidates(sources: SftSources, pool: Pool) -> Iterator[tuple[Example, int | None]]:
    """(example, the reference it is, if one) of each enabled source, in SOURCES order."""
    if sources.references:
        members = (PoolMember.objects.filter(pool=pool, split="train", tier__in=sources.reference_tiers)
                   .exclude(reference__source="").select_related("reference").order_by("reference_id"))
        for m in members:
            yield Example(m.reference.subject, m.reference.source, "references", f"reference {m.reference_id}"), m.reference_id
    if sources.revisions:
        revisions = (Revision.objects.filter(author=Revision.Author.CURATOR, status=Revision.Status.DONE, passed=True)
                     .exclude(code="").select_related("rollout").order_by("id"))
        for r in revisions:
            yield Example(r.rollout.subject, r.code, "revisions", f"revision {r.id} of rollout {r.rollout_id}"), None
    if sources.promoted:
        for ref in Reference.objects.filter(provenance=Provenance.ROLLOUT).exclude(source="").order_by("id"):
            yield Example(ref.subject, ref.source, "promoted", f"promoted reference {ref.id}"), ref.id
    for run_id in sources.run_ids:
        yield from ((example, None) for example in _best_rollouts(run_id, sources.reward_quantile))
    if sources.imported:
        yield from ((example, None) for example in imported_examples(sources.imported))


def _best_rollouts(run_id: int, quantile: float) -> Iterator[Example]:
    rewards = sorted(Rollout.objects.filter(run_id=run_id, reward__isnull=False).values_list("reward", flat=True))
    if not rewards:
        return
    threshold = rewards[min(len(rewards) - 1, math.floor(quantile * (len(rewards) - 1)))]
    best = (Rollout.objects.filter(run_id=run_id, passed=True, reward__gte=threshold,
                                   paint_fraction__gte=BLANK_THRESHOLD).exclude(code="")
            .order_by("-reward", "step", "group", "position"))
    for r in best:
        yield Example(r.subject, r.code, "rollouts", f"run {run_id} step {r.step} rollout {r.group}.{r.position}")


def imported_examples(location: str) -> Iterator[Example]:
    """Rows of an imported dataset: the studio's export (`code`, `subject`) or the published
    rollouts' columns (`prompt`, `completion`, `reward`); rows with a reward of 0 or none, or
    marked not passed, are skipped."""
    for i, row in enumerate(_rows(location)):
        if row.get("passed") is False or (row.get("reward") is not None and row["reward"] <= 0):
            continue
        code = row.get("code") or extract_sketch(_text(row.get("completion"))) or ""
        if code:
            yield Example(row.get("subject") or _subject(row.get("prompt")), code, "imported", f"imported row {i}")


def _rows(location: str) -> Iterable[dict]:
    from datasets import load_dataset, load_from_disk

    path = Path(location)
    if path.is_dir() and (path / "dataset_info.json").exists():
        return load_from_disk(str(path))
    if path.is_dir() and (path / "dataset_dict.json").exists():
        return load_from_disk(str(path))["train"]
    files = [str(p) for p in sorted(path.rglob("*.parquet"))] if path.is_dir() else [str(path)]
    if not files:
        raise ValueError(f"no dataset at {location}: a save_to_disk folder or parquet files")
    return load_dataset("parquet", data_files=files, split="train")


def _text(value) -> str:
    if isinstance(value, list):  # chat messages
        return "".join(m.get("content", "") for m in value if isinstance(m, dict) and m.get("role") == "assistant")
    return value if isinstance(value, str) else ""


def _subject(prompt) -> str:
    text = prompt if isinstance(prompt, str) else next(
        (m.get("content", "") for m in reversed(prompt or []) if isinstance(m, dict) and m.get("role") == "user"), "")
    if text.startswith(PROMPT_PREFIX) and text.endswith(PROMPT_SUFFIX):
        return text[len(PROMPT_PREFIX):-len(PROMPT_SUFFIX)]
    return text.strip()[:120]


def jsonl_lines(stored: list[dict]) -> Iterator[str]:
    """A frozen dataset's examples (SftDataset.examples) as JSON lines, one TRL conversational
    prompt/completion row each with its subject, source and origin:
    `datasets.load_dataset("json", data_files=...)` reads them."""
    for example in stored:
        yield json.dumps(Example(**example).row(), ensure_ascii=False) + "\n"
