"""`manage.py audit_judge --pool NAME --recipe NAME [--pairs N]` — how far to trust the judge."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from curation.audit import NO_PAIRS, judge_audit_run
from curation.models import Pool
from curation.selectors import pool_get
from painting.judging import judge_for
from painting.selectors import default_recipe_name, recipe_get


class Command(BaseCommand):
    help = "Re-judge held-out pairs twice and in both orders: self-agreement, order bias, accuracy."

    def add_arguments(self, parser):
        parser.add_argument("--pool", required=True)
        parser.add_argument("--recipe", default=None, help="default: judge-led where configured, else studio-judge-led")
        parser.add_argument("--pairs", type=int, default=20)
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, pool, recipe, pairs, seed, **options):
        try:
            frozen = pool_get(pool)
            chosen_recipe = recipe_get(recipe or default_recipe_name())
        except (Pool.DoesNotExist, ValueError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        judge = judge_for(chosen_recipe, frozen.id)
        with tqdm(total=pairs, desc="judging pairs", unit="pair") as bar:
            audit = judge_audit_run(
                pool=frozen, judge=judge, judge_label=chosen_recipe.judge, recipe_name=chosen_recipe.name,
                pairs=pairs, seed=seed, progress=lambda done, total: bar.update(1),
            )
        r = audit.results
        if not r["pairs"]:
            raise CommandError(NO_PAIRS, returncode=2)
        self.stdout.write(self.style.SUCCESS(f"Audit of the {chosen_recipe.judge} judge on {frozen.label}: {r['judged']} of {r['pairs']} pairs judged"))
        for key, label in (("self_agreement", "self-agreement"), ("order_bias", "order bias"), ("accuracy", "accuracy vs held-out grades")):
            value = r[key]
            self.stdout.write(f"  {label:<30} {'-' if value is None else f'{value:.3f}'}")
        for row in r["people"]:  # against each curator who graded the audited references
            text = "-" if row["accuracy"] is None else f"{row['accuracy']:.3f} ({row['low']:.2f}-{row['high']:.2f})"
            few = " few" if row["few"] and row["pairs"] else ""
            self.stdout.write(f"  {'agrees with ' + row['curator']:<30} {text} on {row['pairs']} pairs{few}")
        if r["failed"]:
            self.stdout.write(self.style.WARNING(f"  {r['failed']} pairs failed (judge unavailable)"))
