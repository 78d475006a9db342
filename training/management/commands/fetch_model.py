"""`manage.py fetch_model NAME [--revision R]` — download a model into the shared Hugging Face
cache (HF_HOME) before a run, so the train and score workers load it from disk.
`manage.py fetch_model --list` — the model presets (training/presets.py) with the memory one
GPU needs to LoRA-train each, and where that figure comes from.

NAME is a Hub name (Qwen/Qwen3-4B) or a preset's key (qwen3-4b). Downloads only what the cache
lacks (an interrupted download resumes); a model already there is reported as such after one
question to the Hub. Offline (HF_HUB_OFFLINE=1, or the Hub cannot be reached) it says whether
the cache holds the complete model. A tiny preset is built here (`manage.py build_tiny_model`),
never fetched: it says whether it is built. Exit status: 0 cached (or built), 2 no such
repository or revision (or gated), 1 not cached and cannot be downloaded (or not built).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from paintapp.lib.progress import progress_bar
from paintapp.lib.storage import human_size
from training.model_cache import CachedModel, ModelNotFound, ModelUnavailable, fetch_model, hub_cache_dir
from training.presets import ModelPreset, preset_for, preset_named, presets

USAGE_ERROR = 2


class Command(BaseCommand):
    help = (
        "Download a model (all files of a Hub model repository) into the Hugging Face cache under "
        "HF_HOME, the cache the train and score workers load models from. Only missing files are "
        "downloaded; a model already cached is reported as such."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", metavar="NAME", nargs="?",
                            help="the model's Hub name, e.g. Qwen/Qwen3-4B, or a preset's key, e.g. qwen3-4b (--list)")
        parser.add_argument("--revision", default=None, help="a branch, tag or commit (default: main)")
        parser.add_argument("--list", action="store_true", dest="list_presets",
                            help="list the model presets with the memory one GPU needs to train each")

    def handle(self, *args, name: str | None, revision: str | None, list_presets: bool, **options):
        if list_presets:
            self._list()
            return
        if not name:
            raise CommandError("give a model's Hub name or a preset's key (fetch_model --list shows the presets)",
                               returncode=USAGE_ERROR)
        preset = preset_named(name)
        if preset is not None and preset.local:
            self._built_here(preset)
            return
        if preset is not None:
            self.stdout.write(f"{preset.key}: {preset.model}")
            name = preset.model
        logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per HTTP request otherwise
        started = time.monotonic()
        with progress_bar(f"fetching {name}", "B", unit_scale=True) as progress:
            try:
                model = fetch_model(repo_id=name, revision=revision, progress=progress)
            except ModelNotFound as exc:
                raise CommandError(str(exc), returncode=USAGE_ERROR) from exc
            except ModelUnavailable as exc:
                raise CommandError(str(exc), returncode=1) from exc
        self._summary(model, time.monotonic() - started)
        if preset := preset_for(name):
            self.stdout.write(f"  to train: {preset.memory}: {preset.memory_note}")

    def _list(self) -> None:
        for preset in presets():
            self.stdout.write(self.style.SUCCESS(f"{preset.key}") + f"  {preset.label}")
            where = f"built here by {preset.build_command}" if preset.local else "on the Hub"
            count = (f"{preset.parameters / 1e9:.3g}B" if preset.parameters >= 10**9 else
                     f"{preset.parameters / 1e6:.2f}M")
            self.stdout.write(f"  {preset.model} ({where}), {count} parameters")
            self.stdout.write(f"  {preset.memory}: {preset.memory_note}")

    def _built_here(self, preset: ModelPreset) -> None:
        """A tiny preset: the studio builds it, the Hub has no copy. Is it built?"""
        folder = Path(preset.model)
        files = [path for path in folder.rglob("*") if path.is_file()] if folder.is_dir() else []
        if not (folder / "config.json").is_file():
            raise CommandError(
                f"{preset.key} is built here, not fetched from the Hub, and is not built: run "
                f"`{preset.build_command}` (it builds into {folder})", returncode=1)
        size = human_size(sum(path.stat().st_size for path in files))
        self.stdout.write(self.style.SUCCESS(
            f"{preset.key} is built here, not fetched from the Hub: present at {folder} ({len(files)} files, {size})"))
        self.stdout.write(f"  to train: {preset.memory}: {preset.memory_note}")

    def _summary(self, model: CachedModel, seconds: float) -> None:
        what = f"{model.repo_id} ({model.revision} = {model.commit[:12]}): {model.files} files, {human_size(model.size_bytes)}"
        if model.downloaded_bytes == 0:
            self.stdout.write(self.style.SUCCESS(f"Already in the cache: {what}"))
            if model.unchecked_reason:
                self.stdout.write(self.style.WARNING(f"  not compared with the Hub: {model.unchecked_reason}"))
        else:
            fetched = human_size(model.downloaded_bytes)
            if model.downloaded_bytes < model.size_bytes:
                fetched += " (the rest was already cached)"
            self.stdout.write(self.style.SUCCESS(f"Fetched {what}"))
            self.stdout.write(f"  downloaded {fetched} in {seconds:.0f} s")
        self.stdout.write(f"  {model.path}")
        self.stdout.write(f"  the workers load it by name from {hub_cache_dir()} (HF_HOME)")
