"""`manage.py export_model RUN --merge OUT_DIR` / `--push-to-hub REPO_ID [--private]` — a run's
adapter merged into its base model, saved with its tokenizer and a model card, and/or pushed to
the Hugging Face Hub (see training/export/model.py)."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from huggingface_hub.errors import HfHubHTTPError

from paintapp.lib.storage import human_size
from training.export.model import ModelExportError, adapter_merge, model_push
from training.models import Run

USAGE_ERROR = 2


class Command(BaseCommand):
    help = (
        "Merge a run's LoRA adapter into its base model and save it with the tokenizer and a model card "
        "(--merge OUT_DIR), and/or push that model to a Hugging Face Hub repository (--push-to-hub REPO_ID; "
        "the token comes from HF_TOKEN or `hf auth login`)."
    )

    def add_arguments(self, parser):
        parser.add_argument("run", type=int, metavar="RUN", help="run id")
        parser.add_argument("--merge", metavar="OUT_DIR", help="a new or empty folder for the merged model")
        parser.add_argument("--push-to-hub", metavar="REPO_ID", help="e.g. you/painter-7b; created when missing")
        parser.add_argument("--private", action="store_true", help="create the Hub repository private")

    def handle(self, *args, run: int, merge: str | None, push_to_hub: str | None, private: bool, **options):
        if not merge and not push_to_hub:
            raise CommandError("say what to do: --merge OUT_DIR and/or --push-to-hub REPO_ID", returncode=USAGE_ERROR)
        if private and not push_to_hub:
            raise CommandError("--private only applies with --push-to-hub", returncode=USAGE_ERROR)
        instance = Run.objects.filter(id=run).select_related("pool", "created_by").first()
        if instance is None:
            raise CommandError(f"no run {run}", returncode=USAGE_ERROR)
        say = lambda text: self.stdout.write(f"  {text}")  # noqa: E731
        try:
            merged = None
            if merge:
                merged = adapter_merge(run=instance, out_dir=Path(merge).expanduser(), progress=say, repo_id=push_to_hub)
                self.stdout.write(self.style.SUCCESS(
                    f"Merged run {run} into {merged.out_dir}: {merged.parameters:,} parameters, "
                    f"{human_size(merged.size_bytes)} in {len(merged.files)} files"))
            if push_to_hub:
                pushed = model_push(run=instance, repo_id=push_to_hub, private=private,
                                    merged_dir=merged.out_dir if merged else None, progress=say)
                self.stdout.write(self.style.SUCCESS(
                    f"Pushed run {run} to {pushed.repo_url} ({'private' if pushed.private else 'public'}): "
                    f"{pushed.commit_url}"))
        except ModelExportError as exc:
            raise CommandError(str(exc), returncode=USAGE_ERROR) from exc
        except (HfHubHTTPError, OSError) as exc:
            raise CommandError(f"export failed: {exc}", returncode=1) from exc
