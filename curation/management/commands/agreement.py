"""`manage.py agreement` — agreement between curators, as the Agreement page shows it."""
from __future__ import annotations

import functools
import json
import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from curation.agreement import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MIN_SHARED,
    AgreementError,
    AgreementReport,
    Estimate,
    PairAgreement,
    agreement,
)
from curation.models import Pool
from curation.selectors import UnknownCurator, agreement_input, pool_get


class Command(BaseCommand):
    help = (
        "Agreement between curators: per pair percent agreement, Cohen's kappa and the confusion table; "
        "Krippendorff's alpha (ordinal) over all; per subject; 95% bootstrap intervals."
    )

    def add_arguments(self, parser):
        parser.add_argument("--subject", default="", help="only references of this subject")
        parser.add_argument("--pool", default="", help="only the members of this pool (NAME or NAME:vN)")
        parser.add_argument("--curator", action="append", default=[], dest="curators",
                            help="a curator to compare (repeat; default: everyone who graded)")
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (0: none)")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
        parser.add_argument("--min-shared", type=int, default=MIN_SHARED,
                            help="fewest shared references a figure is given for")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the report as JSON")

    def handle(self, *args, subject, pool, curators, resamples, seed, min_shared, as_json, **options):
        try:
            chosen_pool = pool_get(pool) if pool else None
        except (Pool.DoesNotExist, ValueError) as exc:
            raise CommandError(f"no pool {pool!r} (use NAME or NAME:vN)", returncode=2) from exc
        try:
            scope = agreement_input(subject=subject, pool=chosen_pool, curators=list(dict.fromkeys(curators)) or None)
            # tqdm draws only on a terminal (disable=None), on stderr, so --json stays clean
            progress = functools.partial(tqdm, disable=None, leave=False, file=sys.stderr)
            report = agreement(scope.grades, scope.subjects, resamples=resamples, seed=seed,
                               min_shared=min_shared, progress=progress)
        except (UnknownCurator, AgreementError) as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if as_json:
            self.stdout.write(_json_text(report))
            return
        scope_text = f"members of {chosen_pool.label}" if chosen_pool else "all references"
        if subject:
            scope_text += f", subject {subject!r}"
        self.stdout.write(_report_text(report, scope_text, scope.references))


def _json_text(report: AgreementReport) -> str:
    return json.dumps(report.to_dict(), indent=2)


def _figure(estimate: Estimate, *, percent: bool = False) -> str:
    if estimate.value is None:
        return f"— ({estimate.reason})"

    def fmt(x: float) -> str:
        # + 0.0 turns a rounded −0.0 into 0.0, so a kappa of −0.001 reads 0.00, not -0.00
        return f"{round(100 * x) + 0.0:.0f}%" if percent else f"{round(x, 2) + 0.0:.2f}"

    if not estimate.has_interval:
        return fmt(estimate.value)
    return f"{fmt(estimate.value)} [{fmt(estimate.low)}, {fmt(estimate.high)}]"


def _pair_lines(pair: PairAgreement, indent: str) -> list[str]:
    head = f"{indent}{pair.a} · {pair.b}: n={pair.n}"
    if pair.percent.value is None:
        return [f"{head}  — {pair.percent.reason}"]
    return [
        f"{head}{'  (few)' if pair.few else ''}",
        f"{indent}  agree {_figure(pair.percent, percent=True)}  kappa {_figure(pair.kappa)}"
        f"  weighted kappa (linear) {_figure(pair.weighted_kappa)}",
    ]


def _confusion_lines(pair: PairAgreement, tiers: tuple[str, ...], indent: str) -> list[str]:
    width = max(len(t) for t in tiers) + 2
    lines = [f"{indent}rows {pair.a}, columns {pair.b}:", indent + " " * width + "".join(t.rjust(width) for t in tiers)]
    for tier, row in zip(tiers, pair.confusion, strict=True):
        lines.append(indent + tier.ljust(width) + "".join(str(count).rjust(width) for count in row))
    return lines


def _report_text(report: AgreementReport, scope_text: str, in_scope: int) -> str:
    curators = ", ".join(f"{c.name} {c.graded}" for c in report.curators) or "none"
    lines = [
        f"Agreement on {scope_text} ({in_scope} references). Curators (graded): {curators}.",
    ]
    if not report.comparable:
        lines.append(f"No figures: {report.reason}.")
        return "\n".join(lines)
    overall = report.overall
    interval = (f"{round(100 * report.confidence)}% bootstrap intervals, {report.resamples} resamples of the "
                f"references, seed {report.seed}" if report.resamples else "no bootstrap intervals")
    lines += [
        f"{overall.shared} references graded by two or more curators ({interval}).",
        "",
        "Overall",
        f"  Krippendorff's alpha (ordinal)  {_figure(overall.alpha)}",
        f"  percent agreement               {_figure(overall.percent, percent=True)}",
        "",
        "Pairs (kappa: Cohen's, unweighted; weighted: linear weights)",
    ]
    for pair in overall.pairs:
        lines += _pair_lines(pair, "  ")
        if pair.n:
            lines += _confusion_lines(pair, report.tiers, "    ")
    lines += ["", "Per subject"]
    for group in report.subjects:
        if group.alpha.value is None and group.percent.value is None:
            lines.append(f"  {group.subject}: {group.shared} shared — {group.percent.reason}")
            continue
        lines.append(
            f"  {group.subject}: {group.shared} shared{' (few)' if group.few else ''}  "
            f"alpha {_figure(group.alpha)}  agree {_figure(group.percent, percent=True)}"
        )
        for pair in group.pairs:
            if pair.kappa.value is not None:
                lines.append(f"    {pair.a} · {pair.b}: n={pair.n} kappa {_figure(pair.kappa)}")
    return "\n".join(lines)
