"""Export a run as a Hugging Face dataset folder (or a zip of one).

The folder can be pushed to the Hub as it is:

    data/train-00000-of-0000N.parquet   every rollout, ~500 a shard, with its painting as an
                                        HF Image (PNG bytes) and the columns of the published
                                        rollout datasets
    chain/train-*.parquet               runs with revision turns: every turn of every rollout's
                                        chain, one row a turn, with its painting, code, own
                                        reward and the feedback the model got after it (the
                                        `chain` config); absent for single-turn runs
    steps.csv                           one row per step: reward mean/std and every metric
    run.json                            the run's settings, the export's files and the thirds
    revisions.jsonl, revisions/<id>.png the curators' edited versions of rollouts (and the model's, asked
                                        in the editor), with paintings
    sft_dataset.jsonl                   an SFT run's frozen dataset, as TRL prompt/completion rows
    README.md                           dataset card (YAML configs for `load_dataset`)

The columns are declared once (COLUMNS and CHAIN_COLUMNS, as `datasets` features) and the shards are written
through `datasets`; the card is a huggingface_hub DatasetCard. Rows are streamed from the
database and PNGs read one group at a time, written in row groups of BATCH_ROWS, so memory
stays flat whatever the run's size. The thirds in run.json
and the card are recomputed from the written files themselves (`thirds_from_export`), so
the numbers shipped are the numbers the data gives.

An export of a run that is still training is a snapshot: rollouts stored after it starts
are left out.
"""
from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from datasets import Features
from datasets.arrow_writer import ParquetWriter
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify
from huggingface_hub import DatasetCard

from paintapp.lib.dataset_card import dataset_card
from paintapp.lib.exports import export_build
from training.export.columns import (
    CHAIN_COLUMNS,
    CHAIN_FEATURES,
    COLUMNS,
    ROLLOUT_FEATURES,
    chain_row,
    group_means,
    groups,
    image_of,
    rollout_row,
    stored,
    strings,
)
from training.models import Revision, Rollout, RolloutTurn, Run, RunExport, Step
from training.sft_dataset import jsonl_lines
from training.stats import Thirds, format_number, thirds_from_export

Progress = Callable[[int, int, str], None]  # (rows done, rows in all, what was just written)

EXPORT_FORMAT = "paintapp-run"
EXPORT_FORMAT_VERSION = 3  # 2: the `turn` column and the chain table (revision turns); 3: the chain's `kept`
SHARD_ROWS = 500
BATCH_ROWS = 50  # one parquet row group: at most this many paintings in memory at once
DATA_DIR = "data"
CHAIN_DIR = "chain"
STEPS_FILE = "steps.csv"
RUN_FILE = "run.json"
SFT_DATASET_FILE = "sft_dataset.jsonl"  # an SFT run's frozen examples, as TRL rows
CARD_FILE = "README.md"
REVISIONS_FILE = "revisions.jsonl"
REVISIONS_DIR = "revisions"
CARD_TEMPLATE = Path(__file__).with_name("export_card.md.jinja")
STEP_COLUMNS = ("step", "reward_mean", "reward_std")
# A metric whose key is one of STEP_COLUMNS (TRL logs "reward_std") gets this prefix.
METRIC_PREFIX = "metrics/"
_SHARD_NAME = re.compile(r"^(data|chain)/train-\d{5}-of-\d{5}\.parquet$")
_REVISION_IMAGE = re.compile(r"^revisions/\d+\.png$")
_OWN_FILES = frozenset({STEPS_FILE, RUN_FILE, CARD_FILE, REVISIONS_FILE})


class ExportError(Exception):
    """The export could not be written."""


class ExportRefused(ExportError):
    """The target folder is not ours to write into (or to replace without being asked)."""


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    rows: int  # rollouts written
    shards: tuple[Path, ...]  # the rollouts' (data/)
    chain_rows: int  # turns of multi-turn rollouts written (chain/); 0 for a single-turn run
    steps: int  # rows of steps.csv
    size_bytes: int  # all files written
    missing_images: int  # rollouts and turns whose stored PNG could not be read (image left null)
    thirds: Thirds
    files: tuple[str, ...]  # relative to out_dir


def _write_table(run: Run, folder: Path, directory: str, features: Features, rows: Iterator[dict],
                 total: int) -> list[str]:
    """Write `total` rows as shards of SHARD_ROWS under `directory`; returns the shard paths
    relative to folder. Raises ExportError when the rows are not `total` (the run changed)."""
    shard_count = max(1, math.ceil(total / SHARD_ROWS))
    shard_names = [f"{directory}/train-{i:05d}-of-{shard_count:05d}.parquet" for i in range(shard_count)]
    (folder / directory).mkdir(parents=True, exist_ok=True)

    def shard_writer(shard: int) -> ParquetWriter:
        return ParquetWriter(features=features, path=str(folder / shard_names[shard]), writer_batch_size=BATCH_ROWS)

    writer: ParquetWriter | None = None
    done = 0
    shard = -1
    try:
        for row in rows:
            if done == total:
                # A row committed after the count (below the newest id): the shard names
                # already promise `total` rows.
                raise ExportError(f"run {run.pk} changed during the export; export it again")
            if done // SHARD_ROWS != shard:
                if writer is not None:
                    writer.finalize()
                shard = done // SHARD_ROWS
                writer = shard_writer(shard)
            writer.write(row)
            done += 1
        # No rows: one shard with the schema and no row groups (pyarrow reads it as an
        # empty table; `datasets` refuses any empty split, whatever the file).
        (writer or shard_writer(0)).finalize()
    finally:
        if writer is not None:
            writer.close()
    if done != total:
        # Only a deletion between the count and the read can do this; the shard names would lie.
        raise ExportError(f"run {run.pk} changed during the export ({total} {directory} rows counted, {done} read); "
                          "export it again")
    return shard_names


@dataclass
class _Tally:
    """Progress over both tables, and the paintings that could not be read."""

    progress: Progress | None
    total: int
    done: int = 0
    missing: int = 0

    def image(self, row: Rollout | RolloutTurn) -> dict | None:
        image, was_missing = image_of(row)
        self.missing += was_missing
        return image

    def tick(self, what: str) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total, what)


def _rollout_rows(run: Run, rollouts, tally: _Tally) -> Iterator[dict]:
    for group in groups(rollouts.iterator(chunk_size=SHARD_ROWS)):
        means = group_means(group)
        for rollout in group:
            yield rollout_row(rollout, run, means, tally.image(rollout))
            tally.tick(f"step {rollout.step}")


def _chain_rows(turns, tally: _Tally) -> Iterator[dict]:
    for turn in turns.iterator(chunk_size=BATCH_ROWS):
        yield chain_row(turn, tally.image(turn))
        tally.tick(f"chain of step {turn.rollout.step}")


def _write_rollouts(run: Run, folder: Path, progress: Progress | None) -> tuple[int, list[str], int, list[str], int]:
    """Write the rollouts' shards and, for a run with revision turns, the chain's; returns
    (rollouts, their shard paths relative to folder, chain rows, their shard paths, missing images)."""
    newest = Rollout.objects.filter(run=run).aggregate(newest=Max("id"))["newest"] or 0
    rollouts = Rollout.objects.filter(run=run, id__lte=newest).order_by("step", "group", "position", "id")
    turns = (RolloutTurn.objects.filter(rollout__run=run, rollout_id__lte=newest).select_related("rollout")
             .defer("rollout__reply", "rollout__code", "rollout__judge_detail", "rollout__errors", "rollout__stats")
             .order_by("rollout__step", "rollout__group", "rollout__position", "rollout_id", "turn"))
    total, chain_total = rollouts.count(), turns.count()
    tally = _Tally(progress, total + chain_total)
    shards = _write_table(run, folder, DATA_DIR, ROLLOUT_FEATURES, _rollout_rows(run, rollouts, tally), total)
    chain_shards = []
    if chain_total:
        chain_shards = _write_table(run, folder, CHAIN_DIR, CHAIN_FEATURES, _chain_rows(turns, tally), chain_total)
    return total, shards, chain_total, chain_shards, tally.missing


def _csv_value(value: Any) -> str | float:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value  # floats are written with repr(), so they read back exactly


def _write_steps(run: Run, folder: Path) -> int:
    steps = list(
        Step.objects.filter(run=run).order_by("step").values_list("step", "reward_mean", "reward_std", "metrics")
    )
    seen = {key for *_, metrics in steps if isinstance(metrics, dict) for key in metrics}
    columns = dict(sorted(
        ((key, METRIC_PREFIX + key if key in STEP_COLUMNS else key) for key in seen), key=lambda pair: pair[1]
    ))
    keys = list(columns)
    with open(folder / STEPS_FILE, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*STEP_COLUMNS, *columns.values()])
        for step, mean, std, metrics in steps:
            metrics = metrics if isinstance(metrics, dict) else {}
            values = (_csv_value(metrics.get(key)) for key in keys)
            writer.writerow([step, _csv_value(mean), _csv_value(std), *values])
    return len(steps)


def _write_revisions(run: Run, folder: Path) -> tuple[int, list[str]]:
    """The curators' revisions as JSON lines, each painting beside them as revisions/<id>.png;
    returns (revisions, files written relative to folder). A run without any writes nothing."""
    revisions = (Revision.objects.filter(rollout__run=run).select_related("rollout", "created_by")
                 .order_by("rollout__step", "rollout__group", "rollout__position", "id"))
    if not revisions.exists():
        return 0, []
    files, count = [REVISIONS_FILE], 0
    with open(folder / REVISIONS_FILE, "w", encoding="utf-8") as handle:
        for revision in revisions.iterator(chunk_size=BATCH_ROWS):
            image = None
            data = stored(revision.png) if revision.png else None
            if data is not None:
                image = f"{REVISIONS_DIR}/{revision.pk}.png"
                (folder / REVISIONS_DIR).mkdir(exist_ok=True)
                (folder / image).write_bytes(data)
                files.append(image)
            rollout = revision.rollout
            handle.write(json.dumps({
                "revision_id": revision.pk, "rollout_id": rollout.pk, "step": rollout.step, "group": rollout.group,
                "position_in_group": rollout.position,
                "curator": revision.created_by.get_username() if revision.created_by else None,
                "created_at": revision.created_at.isoformat(), "status": revision.status, "code": revision.code,
                "passed": revision.passed, "violations": strings(revision.violations), "reward": revision.reward,
                "parts": revision.parts, "judge_detail": revision.judge_detail, "error": revision.error,
                "image": image, "author": revision.author, "parent_revision_id": revision.parent_id,
                "feedback": revision.feedback, "reply": revision.reply, "adapter": revision.adapter,
            }, ensure_ascii=False) + "\n")
            count += 1
    return count, files


def _run_document(run: Run, *, rows: int, chain_rows: int, steps: int, revisions: int, missing: int,
                  files: list[str], thirds: Thirds) -> dict:
    pool = run.pool
    return {
        "format": EXPORT_FORMAT, "format_version": EXPORT_FORMAT_VERSION,
        "run_id": run.pk, "name": run.name, "created_at": run.created_at.isoformat(),
        "status": run.status, "error": run.error,
        "pool": {"id": pool.pk, "name": pool.name, "version": pool.version, "label": pool.label},
        "base_model": run.base_model, "recipe_name": run.recipe_name, "recipe": run.recipe,
        "hyperparameters": run.hyperparameters, "seed": run.seed, "subjects": run.subjects,
        "steps_done": run.steps_done, "resumed_from": run.resumed_from,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "eval_result": run.eval_result,
        "kind": run.kind,
        "sft_dataset": {"id": run.sft_dataset_id, "label": run.sft_dataset.label, "examples": len(run.sft_dataset.examples),
                        "counts": run.sft_dataset.counts, "file": SFT_DATASET_FILE} if run.sft_dataset_id else None,
        "init_run": run.init_run_id, "init_check": run.init_check,
        "exported_at": timezone.now().isoformat(),
        "rows": rows, "chain_rows": chain_rows, "steps": steps, "revisions": revisions, "missing_images": missing,
        "thirds": thirds.to_dict(),
        "files": files,
    }


def _thirds_table(thirds: Thirds) -> list[list[str]] | None:
    """The card's table rows (a header first), or None when the run has no thirds yet."""
    if thirds.first_mean is None:
        return None
    spans = (thirds.first_steps, thirds.middle_steps, thirds.last_steps)
    means = (thirds.first_mean, thirds.middle_mean, thirds.last_mean)
    lows = (thirds.first_low, thirds.middle_low, thirds.last_low)
    return [
        ["", "first third", "middle third", "last third"],
        ["steps", *(f"{first}–{last}" for first, last in spans)],
        ["mean group reward", *(format_number(mean) for mean in means)],
        [f"rollouts under {thirds.low_threshold:g}", *(str(low) for low in lows)],
    ]


def _card(run: Run, document: dict, thirds: Thirds) -> DatasetCard:
    recipe = run.recipe if isinstance(run.recipe, dict) else {}
    return dataset_card(
        template=CARD_TEMPLATE, pretty_name=f"{run.name} (run {run.pk}) rollouts", rows=document["rows"],
        data_files=f"{DATA_DIR}/train-*.parquet",
        more_configs={"chain": f"{CHAIN_DIR}/train-*.parquet"} if document["chain_rows"] else {},
        tags=("grpo", "reinforcement-learning", "code-generation", "p5.js", "watercolour"),
        task_categories=("text-generation", "reinforcement-learning"),
        run=run, document=document, recipe=recipe, thirds=thirds, table=_thirds_table(thirds),
        trend={key: format_number(getattr(thirds, key), spec)
               for key, spec in (("slope", ".5f"), ("slope_se", ".5f"), ("t_stat", ".2f"))},
        arguments=run.arguments.to_dict(),  # read as the trainer reads them
        columns=[(name, description) for name, _, description in COLUMNS],
        chain_columns=[(name, description) for name, _, description in CHAIN_COLUMNS], chain_dir=CHAIN_DIR,
        turns=run.arguments.turns,
        data_dir=DATA_DIR, steps_file=STEPS_FILE, run_file=RUN_FILE, metric_prefix=METRIC_PREFIX,
        revisions_file=REVISIONS_FILE, revisions_dir=REVISIONS_DIR,
    )


# --- The target folder --------------------------------------------------------------------

def previous_export(folder: Path) -> dict | None:
    """run.json of an export in `folder`, or None when the folder holds no readable export."""
    try:
        document = json.loads((Path(folder) / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != EXPORT_FORMAT:
        return None
    return document


def _is_export_of(document: dict, run: Run) -> bool:
    # The id alone could belong to another studio's run; id and creation time together cannot.
    return document.get("run_id") == run.pk and document.get("created_at") == run.created_at.isoformat()


def _owned_files(document: dict) -> list[str]:
    """The files a previous export listed, limited to names an export writes (never a user's)."""
    listed = document.get("files") if isinstance(document.get("files"), list) else []
    return [name for name in listed if isinstance(name, str)
            and (name in _OWN_FILES or _SHARD_NAME.match(name) or _REVISION_IMAGE.match(name))]


def check_target(*, run: Run, out_dir: Path, replace_previous: bool = True) -> list[str] | None:
    """None when `out_dir` is new or empty; the previous export's files when it holds an
    export of this run that may be replaced; ExportRefused otherwise."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportRefused(f"{out_dir} is a file, not a folder")
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return None
    document = previous_export(out_dir)
    if document is None or not _is_export_of(document, run):
        what = (f"an export of run {document.get('run_id')} ({document.get('name')!r})" if document
                else "files that are not an export of this run")
        raise ExportRefused(f"{out_dir} holds {what}; export into a new or empty folder")
    if not replace_previous:
        raise ExportRefused(f"{out_dir} already holds an export of run {run.pk}; replace it with --overwrite")
    return _owned_files(document)


def _install(staging: Path, out_dir: Path, files: list[str], previous: list[str] | None) -> None:
    if previous is None:
        if out_dir.exists():
            out_dir.rmdir()  # empty, checked before
        staging.rename(out_dir)
        return
    # Replace file by file (os.replace is atomic for each); run.json, the export's marker,
    # goes last, then the previous export's leftovers (e.g. shards of a longer run) go.
    for name in sorted(files, key=lambda name: name == RUN_FILE):
        (out_dir / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, out_dir / name)
    for name in set(previous) - set(files):
        (out_dir / name).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)


# --- Public entry points ------------------------------------------------------------------

def export_run(*, run: Run, out_dir: Path, progress: Progress | None = None,
               replace_previous: bool = True) -> ExportResult:
    """Write `run` as a Hugging Face dataset folder at `out_dir`.

    `out_dir` must be new, empty, or hold an earlier export of the same run, which is then
    replaced (with `replace_previous=False` that is refused too). Files in it that an export
    does not write are left alone. Nothing appears in `out_dir` until everything is written.
    """
    out_dir = Path(out_dir).expanduser()
    previous = check_target(run=run, out_dir=out_dir, replace_previous=replace_previous)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        rows, shards, chain_rows, chain_shards, missing = _write_rollouts(run, staging, progress)
        steps = _write_steps(run, staging)
        revisions, revision_files = _write_revisions(run, staging)
        if run.sft_dataset_id:  # an SFT run carries the frozen dataset it trained on
            with (staging / SFT_DATASET_FILE).open("w", encoding="utf-8") as out:
                out.writelines(jsonl_lines(run.sft_dataset.examples))
            revision_files.append(SFT_DATASET_FILE)
        thirds = thirds_from_export(staging)
        files = [*shards, *chain_shards, STEPS_FILE, *revision_files, CARD_FILE, RUN_FILE]
        document = _run_document(run, rows=rows, chain_rows=chain_rows, steps=steps, revisions=revisions,
                                 missing=missing, files=files, thirds=thirds)
        run_json = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        (staging / RUN_FILE).write_text(run_json, encoding="utf-8")
        _card(run, document, thirds).save(staging / CARD_FILE)
        size = sum((staging / name).stat().st_size for name in files)
        _install(staging, out_dir, files, previous)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(
        out_dir=out_dir, rows=rows, shards=tuple(out_dir / name for name in shards), chain_rows=chain_rows, steps=steps,
        size_bytes=size, missing_images=missing, thirds=thirds, files=tuple(files),
    )


def export_zip_name(run: Run) -> str:
    """File name for the download: `<run-name>-run<id>.zip`."""
    return f"{slugify(run.name)[:60] or 'run'}-run{run.pk}.zip"


def write_run_zip(*, run: Run, fileobj: BinaryIO, progress: Progress | None = None) -> ExportResult:
    """Write the export as a zip into a writable file object, under one top folder named like
    the zip. Parquet shards are stored as they are (already compressed); text is deflated."""
    top = export_zip_name(run).removesuffix(".zip")
    with tempfile.TemporaryDirectory(prefix="run-export-") as scratch:
        result = export_run(run=run, out_dir=Path(scratch) / top, progress=progress)
        with zipfile.ZipFile(fileobj, "w") as archive:
            for name in result.files:
                method = zipfile.ZIP_STORED if name.endswith(".parquet") else zipfile.ZIP_DEFLATED
                archive.write(result.out_dir / name, f"{top}/{name}", compress_type=method)
    return result


def run_export_build(*, export: RunExport) -> RunExport:
    """Build a requested export's zip (on a score worker) with progress, and store it."""
    run = export.run
    return export_build(
        export, file_name=export_zip_name(run), expected=(ExportError,),
        write=lambda fileobj, progress: write_run_zip(run=run, fileobj=fileobj, progress=progress),
    )
