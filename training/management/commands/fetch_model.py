"""`manage.py fetch_model NAME [--revision R]` — download a model into the shared Hugging Face
cache (HF_HOME) before a run, so the train and score workers load it from disk.

Downloads only what the cache lacks (an interrupted download resumes); a model already there is
reported as such after one question to the Hub. Offline (HF_HUB_OFFLINE=1, or the Hub cannot be
reached) it says whether the cache holds the complete model. Exit status: 0 cached, 2 no such
repository or revision (or gated), 1 not cached and cannot be downloaded.
"""
from __future__ import annotations

import logging
import time

from django.core.management.base import BaseCommand, CommandError

from paintapp.lib.progress import progress_bar
from paintapp.lib.storage import human_size
from training.model_cache import CachedModel, ModelNotFound, ModelUnavailable, fetch_model, hub_cache_dir

USAGE_ERROR = 2


class Command(BaseCommand):
    help = (
        "Download a model (all files of a Hub model repository) into the Hugging Face cache under "
        "HF_HOME, the cache the train and score workers load models from. Only missing files are "
        "downloaded; a model already cached is reported as such."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", metavar="NAME", help="the model's Hub name, e.g. Qwen/Qwen3-4B")
        parser.add_argument("--revision", default=None, help="a branch, tag or commit (default: main)")

    def handle(self, *args, name: str, revision: str | None, **options):
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
