"""`manage.py freeze_pool NAME` — freeze current grades as the next pool version: one curator's,
the consensus of several (--curators a,b,c --rule majority|unanimous|mean), or one pool per
curator (--per-curator: NAME-<username> each, all or none)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from curation import consensus
from curation.errors import CurationError
from curation.forms import FilterError, ReferenceFilterForm
from curation.selectors import pool_balance
from curation.services import pool_freeze, pool_freeze_consensus, pool_freeze_per_curator


class Command(BaseCommand):
    help = "Freeze current grades into a new version of a named pool (tiers copied, train/eval split)."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--tiers", default="love,okay", help="comma-separated tiers (default love,okay)")
        parser.add_argument("--eval-share", type=float, default=0.2)
        parser.add_argument("--seed", type=int, default=0, help="split seed")
        parser.add_argument("--curator", default=None, help="whose grades (default: the only curator who graded)")
        parser.add_argument("--curators", default="", help="comma-separated: a consensus of these (with --rule) "
                            "or, with --per-curator, one pool each")
        parser.add_argument("--rule", choices=consensus.RULES, default=None, help="consensus rule")
        parser.add_argument("--min-graders", type=int, default=consensus.DEFAULT_MIN_GRADERS,
                            help="a consensus leaves out references fewer curators graded")
        parser.add_argument("--love-at", type=float, default=consensus.DEFAULT_LOVE_AT, help="mean rule: love from this mean")
        parser.add_argument("--okay-at", type=float, default=consensus.DEFAULT_OKAY_AT, help="mean rule: okay from this mean")
        parser.add_argument("--per-curator", action="store_true", help="one pool per curator, NAME-<username>")
        parser.add_argument("--by", default=None, help="who freezes a consensus (default: the first of --curators)")
        parser.add_argument("--subject", default="", help="only references of this subject")
        parser.add_argument("--provenance", default="", help="only references of this provenance")
        parser.add_argument("--description", default="")

    def handle(self, *args, name, subject, provenance, curators, rule, per_curator, **options):
        try:
            flt = ReferenceFilterForm({"subject": subject, "provenance": provenance}).reference_filter()
        except FilterError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        names = [n.strip() for n in curators.split(",") if n.strip()]
        common = {
            "name": name, "tiers": [t.strip() for t in options["tiers"].split(",") if t.strip()], "flt": flt,
            "eval_share": options["eval_share"], "seed": options["seed"], "description": options["description"],
        }
        if (rule or per_curator) and not names:
            raise CommandError("name the curators with --curators a,b,c", returncode=2)
        if rule and per_curator:
            raise CommandError("choose a consensus (--rule) or one pool per curator (--per-curator), not both", returncode=2)
        try:
            if rule:
                settings = consensus.ConsensusSettings(rule=rule, min_graders=options["min_graders"],
                                             love_at=options["love_at"], okay_at=options["okay_at"])
                pools = [pool_freeze_consensus(curators=names, settings=settings,
                                               created_by=self._user(options["by"] or names[0]), **common)]
            elif per_curator:
                pools = pool_freeze_per_curator(curators=names, created_by=None, **common)
            else:
                pools = [pool_freeze(curator=self._single_grader(options["curator"]), **common)]
        except CurationError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        for pool in pools:
            self._report(pool)

    def _user(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no curator named {username!r}", returncode=2)
        return user

    def _single_grader(self, curator: str | None):
        if curator:
            return self._user(curator)
        User = get_user_model()
        graders = list(User.objects.filter(grades__isnull=False).distinct()[:2])
        if len(graders) != 1:
            names = ", ".join(User.objects.filter(grades__isnull=False).distinct().values_list("username", flat=True))
            raise CommandError(f"choose whose grades with --curator (graders: {names or 'none yet'})", returncode=2)
        return graders[0]

    def _report(self, pool) -> None:
        balance = pool_balance(pool)
        tiers_text = ", ".join(f"{t} {n}" for t, n in balance.by_tier.items() if n)
        if pool.is_consensus:
            whose = f"the {pool.consensus['rule']} consensus of {', '.join(pool.consensus['curators'])}"
        else:
            whose = f"{pool.curator.get_username()}'s grades"
        self.stdout.write(self.style.SUCCESS(f"Froze {pool.label}: {balance.total} references ({tiers_text}) from {whose}."))
        if pool.is_consensus:
            left = ", ".join(f"{consensus.LEFT_OUT[reason]} {n}" for reason, n in pool.consensus["left_out"].items())
            self.stdout.write(f"  left out: {left}; graded by none of them {pool.consensus['ungraded']}")
        for split, counts in balance.by_split.items():
            self.stdout.write(f"  {split}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
