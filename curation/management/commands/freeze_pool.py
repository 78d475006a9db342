"""`manage.py freeze_pool NAME` — freeze a curator's current grades as the next pool version."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from curation.forms import FilterError, ReferenceFilterForm
from curation.selectors import pool_balance
from curation.services import CurationError, pool_freeze


class Command(BaseCommand):
    help = "Freeze current grades into a new version of a named pool (tiers copied, train/eval split)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--tiers", default="love,okay", help="comma-separated tiers (default love,okay)")
        parser.add_argument("--eval-share", type=float, default=0.2)
        parser.add_argument("--seed", type=int, default=0, help="split seed")
        parser.add_argument("--curator", default=None, help="whose grades (default: the only curator who graded)")
        parser.add_argument("--subject", default="", help="only references of this subject")
        parser.add_argument("--provenance", default="", help="only references of this provenance")
        parser.add_argument("--description", default="")

    def handle(self, *args, name, tiers, eval_share, seed, curator, subject, provenance, description, **options):
        User = get_user_model()
        if curator:
            grader = User.objects.filter(username=curator).first()
            if grader is None:
                raise CommandError(f"no curator named {curator!r}", returncode=2)
        else:
            graders = list(User.objects.filter(grades__isnull=False).distinct()[:2])
            if len(graders) != 1:
                names = ", ".join(User.objects.filter(grades__isnull=False).distinct().values_list("username", flat=True))
                raise CommandError(f"choose whose grades with --curator (graders: {names or 'none yet'})", returncode=2)
            grader = graders[0]
        try:
            flt = ReferenceFilterForm({"subject": subject, "provenance": provenance}).reference_filter()
        except FilterError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        try:
            pool = pool_freeze(
                name=name, curator=grader, tiers=[t.strip() for t in tiers.split(",") if t.strip()],
                flt=flt, eval_share=eval_share, seed=seed, description=description,
            )
        except CurationError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        balance = pool_balance(pool)
        tiers_text = ", ".join(f"{t} {n}" for t, n in balance.by_tier.items() if n)
        self.stdout.write(self.style.SUCCESS(f"Froze {pool.label}: {balance.total} references ({tiers_text}) from {grader.get_username()}'s grades."))
        for split, counts in balance.by_split.items():
            self.stdout.write(f"  {split}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
