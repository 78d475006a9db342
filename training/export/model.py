"""A run's adapter as a model of its own: merged into its base model and saved with the
tokenizer (or processor) and a model card, loadable back by path; or that folder pushed to a
Hugging Face Hub repository.

The base model is loaded the way GRPOTrainer loads it (TRL's `create_model_from_path`, which
picks the architecture from its config), the adapter with PEFT, and PEFT's `merge_and_unload`
folds the LoRA weights into the base ones.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from celery.utils import uuid
from django.utils import timezone
from huggingface_hub import HfApi

from paintapp.celery import app as celery_app
from training.export.model_card import model_card
from training.models import Run
from training.trainer.model_loading import load_processing_class


class ModelExportError(ValueError):
    """A run that cannot be merged or pushed, with the reason for people."""


@dataclass(frozen=True)
class MergedModel:
    out_dir: Path
    parameters: int
    size_bytes: int
    files: tuple[str, ...]


@dataclass(frozen=True)
class PushedModel:
    repo_id: str
    repo_url: str
    commit_url: str
    private: bool


def adapter_dir(run: Run) -> Path:
    """The run's saved adapter; ModelExportError when the run has none yet."""
    path = run.adapter_dir
    if path is None or not (path / "adapter_config.json").exists():
        raise ModelExportError(f"run {run.id} has no saved adapter yet ({path}): it is saved when the run ends")
    return path


def adapter_merge(*, run: Run, out_dir: Path, progress: Callable[[str], None] | None = None,
                  repo_id: str | None = None) -> MergedModel:
    """Merge the run's adapter into its base model and save both with the tokenizer (or
    processor) and the model card in `out_dir`, which must be new or empty."""
    say = progress or (lambda _text: None)
    adapter = adapter_dir(run)
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ModelExportError(f"{out_dir} is not empty: merge into a new or empty folder")
    from peft import PeftModel
    from trl.trainer.utils import create_model_from_path

    say(f"loading {run.base_model}")
    base = create_model_from_path(run.base_model, dtype="auto", device_map=None)
    say(f"loading the adapter {adapter}")
    merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    say(f"saving the merged model to {out_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out_dir)
    # The processor of a VL base (its tokenizer where torchvision is missing), a text base's tokenizer.
    load_processing_class(run.base_model).save_pretrained(out_dir)
    model_card(run, repo_id=repo_id).save(out_dir / "README.md")
    files = tuple(sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file()))
    return MergedModel(out_dir=out_dir, parameters=merged.num_parameters(), files=files,
                       size_bytes=sum((out_dir / name).stat().st_size for name in files))


def model_push(*, run: Run, repo_id: str, private: bool = False, merged_dir: Path | None = None,
               api: HfApi | None = None, progress: Callable[[str], None] | None = None) -> PushedModel:
    """Create (or reuse) the Hub repository `repo_id` and upload the run's merged model with its
    card: `merged_dir` when it was merged already, else a temporary merge."""
    say = progress or (lambda _text: None)
    api = api or HfApi()
    temporary = None
    if merged_dir is None:
        temporary = Path(tempfile.mkdtemp(prefix=f"run-{run.id}-merged-"))
        merged_dir = adapter_merge(run=run, out_dir=temporary, progress=progress, repo_id=repo_id).out_dir
    else:
        model_card(run, repo_id=repo_id).save(Path(merged_dir) / "README.md")  # names the repo it is pushed to
    try:
        say(f"creating {repo_id} ({'private' if private else 'public'})")
        repo_url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        say(f"uploading {merged_dir}")
        commit = api.upload_folder(repo_id=repo_id, folder_path=str(merged_dir), repo_type="model",
                                   commit_message=f"Paint with Code Studio run #{run.id}: {run.name}")
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    return PushedModel(repo_id=repo_id, repo_url=str(repo_url), commit_url=commit.commit_url, private=private)


# -- the run page's "Merge and save": a task on the train worker, its progress in the run's folder --

MERGED_DIR = "merged"
MERGE_STATE_FILE = "merge.json"
MERGE_PENDING = ("queued", "running")
# Sent by name: training/tasks.py imports this module, so importing it back would make a circle.
MERGE_RUN_ADAPTER = "training.tasks.merge_run_adapter"


def merge_state(run: Run) -> dict | None:
    """The last merge asked from the run page: status (queued, running, done, failed), the
    step it is at, and what it saved; None when none was asked."""
    try:
        return json.loads((Path(run.output_dir) / MERGE_STATE_FILE).read_text()) if run.output_dir else None
    except (OSError, ValueError):
        return None


def _write_merge_state(run: Run, **state) -> None:
    path = Path(run.output_dir) / MERGE_STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps({**state, "at": timezone.now().isoformat()}))
    partial.replace(path)  # a page reading it never sees half a file


def merge_request(*, run: Run) -> dict:
    """Queue the merge of the run's adapter into `<run folder>/merged/` on the train worker."""
    if run.is_active:
        raise ModelExportError("the run is still training: merge its adapter once it has ended")
    adapter_dir(run)
    state = merge_state(run)
    if state and state["status"] in MERGE_PENDING:
        raise ModelExportError(f"a merge of this run is already {state['status']}")
    task_id = uuid()
    _write_merge_state(run, status="queued", task_id=task_id, message="waiting for the train worker")
    celery_app.send_task(MERGE_RUN_ADAPTER, (run.id,), task_id=task_id)
    return merge_state(run)


def merge_run(*, run: Run, task_id: str) -> dict:
    """The train worker's side of merge_request: merge into the run's `merged/` folder (a
    previous merge there is replaced), recording each step and the outcome."""
    state = merge_state(run) or {}
    if state.get("task_id") != task_id:  # a newer request replaced this one
        return state
    out_dir = Path(run.output_dir) / MERGED_DIR
    say = lambda text: _write_merge_state(run, status="running", task_id=task_id, message=text)  # noqa: E731
    say("starting")
    shutil.rmtree(out_dir, ignore_errors=True)
    try:
        merged = adapter_merge(run=run, out_dir=out_dir, progress=say)
    except Exception as exc:  # noqa: BLE001 - the page shows why
        shutil.rmtree(out_dir, ignore_errors=True)
        _write_merge_state(run, status="failed", task_id=task_id, message=f"{type(exc).__name__}: {exc}")
    else:
        _write_merge_state(run, status="done", task_id=task_id, message="saved", path=str(merged.out_dir),
                           parameters=merged.parameters, size_bytes=merged.size_bytes, files=len(merged.files))
    return merge_state(run)
