"""manage.py sft_dataset: preview an SFT dataset from the studio's data, each source counted, with
what the eval split kept out (training/sft_dataset.py); --freeze NAME keeps it as the next
version of NAME for SFT runs (train --kind sft --dataset NAME); --save writes it as parquet."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from curation.models import Pool
from curation.selectors import pool_get
from training.services import LaunchError, sft_dataset_freeze
from training.sft_dataset import SOURCES, SftSources, build_dataset


class Command(BaseCommand):
    help = "Preview an SFT dataset: how many examples each source gives, and what the eval split keeps out."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True, help="NAME[:VERSION]: its references, and its eval split kept out")
        parser.add_argument("--tiers", default="love", choices=("love", "love,okay"), help="which references' code")
        parser.add_argument("--runs", default="", help="run ids whose best rollouts enter, e.g. 3,7")
        parser.add_argument("--quantile", type=float, default=0.75, help="a rollout enters at or above this reward quantile")
        parser.add_argument("--imported", default="", help="a rollouts dataset: a save_to_disk folder or parquet file(s)")
        parser.add_argument("--no-references", action="store_true")
        parser.add_argument("--no-revisions", action="store_true")
        parser.add_argument("--no-promoted", action="store_true")
        parser.add_argument("--freeze", default="", metavar="NAME",
                            help="freeze the dataset as the next version of NAME, for train --kind sft --dataset NAME")
        parser.add_argument("--save", default="", help="write the examples as parquet (prompt, completion, subject, source, origin)")

    def handle(self, *args, pool, tiers, runs, quantile, imported, no_references, no_revisions, no_promoted, freeze, save,
               **options):
        try:
            frozen = pool_get(pool)
            run_ids = tuple(int(r) for r in runs.split(",") if r.strip())
            sources = SftSources(pool_id=frozen.id, reference_tiers=tuple(tiers.split(",")), references=not no_references,
                                 revisions=not no_revisions, promoted=not no_promoted, run_ids=run_ids,
                                 reward_quantile=quantile, imported=imported)
            built = build_dataset(sources)
        except (Pool.DoesNotExist, ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(f"{'source':<11} {'found':>6} {'kept':>6} {'duplicate':>10} {'eval split':>11} {'refused':>8}")
        for name in SOURCES:
            c = built.counts[name]
            self.stdout.write(f"{name:<11} {c.found:>6} {c.kept:>6} {c.duplicates:>10} {c.eval_excluded:>11} {c.refused:>8}")
        self.stdout.write(f"{len(built.examples)} examples; the eval split of {frozen.label} kept out {len(built.left_out)}")
        for line in built.left_out:
            self.stdout.write(f"  left out: {line}")
        if freeze:
            try:
                frozen_dataset = sft_dataset_freeze(name=freeze, sources=sources)
            except LaunchError as exc:
                raise CommandError(str(exc), returncode=2) from exc
            self.stdout.write(self.style.SUCCESS(
                f"froze {frozen_dataset.label}: {len(frozen_dataset.examples)} examples (train --kind sft --dataset "
                f"{frozen_dataset.label})"))
        if save:
            from datasets import Dataset

            Dataset.from_list(built.rows()).to_parquet(save)
            self.stdout.write(f"wrote {save}")
