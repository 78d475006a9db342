"""`manage.py train` — launch exactly what the Launch button launches (or, with --like RUN, a copy
of a run as it was launched): a GRPO run, an SFT run (--kind sft --dataset NAME[:VERSION]), or a
GRPO run from an SFT run's adapter (--from-run RUN); --follow prints each step."""
from __future__ import annotations

import argparse

from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter

from curation.models import Pool
from curation.selectors import pool_get
from paintenv.reward import LENGTH_THRESHOLDS
from painting.selectors import default_recipe_name
from training import services
from training.arguments import RunArguments, argument_spec, argument_specs
from training.management.follow import ending, follow_run
from training.models import Run, SftDataset
from training.sft_selectors import sft_dataset_get


class _HelpFormatter(DjangoHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Django's option order, with the epilog's listing of hyper-parameters kept line by line."""


def _settings_listing() -> str:
    lines = ["hyper-parameters for --set KEY=VALUE (default, allowed values, meaning):"]
    lines += [f"  {spec.describe()}" for spec in argument_specs()]
    lines.append(f"recipe settings for --recipe-set KEY=VALUE: {', '.join(LENGTH_THRESHOLDS)} "
                 "(the length score's token thresholds; default: the recipe's)")
    return "\n".join(lines)


def _pairs(items: list[str], option: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, equals, raw = item.partition("=")
        if not equals or not key.strip():
            raise CommandError(f"{option} takes KEY=VALUE, not {item!r}", returncode=2)
        pairs.append((key.strip(), raw))
    return pairs


class Command(BaseCommand):
    help = "Launch a GRPO or SFT run on the train workers (and optionally follow it step by step)."

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(prog_name, subcommand, formatter_class=_HelpFormatter,
                                     epilog=_settings_listing(), **kwargs)

    def add_arguments(self, parser):
        defaults = RunArguments()
        parser.add_argument("--kind", default="grpo", choices=("grpo", "sft"),
                            help="grpo (default), or sft: supervised fine-tuning on a frozen SFT dataset (--dataset)")
        parser.add_argument("--dataset", default=None, metavar="NAME[:VERSION]",
                            help="sft: the frozen SFT dataset (manage.py sft_dataset --freeze); its pool evaluates the run")
        parser.add_argument("--from-run", type=int, default=None, metavar="RUN",
                            help="grpo: continue the LoRA of SFT run RUN (its base model, rank and α)")
        parser.add_argument("--pool", default=None,
                            help="NAME or NAME:VERSION of a frozen pool (required unless --like; sft: the dataset's)")
        parser.add_argument("--like", type=int, default=None, metavar="RUN",
                            help="launch a copy of run RUN: its pool, its recipe as the run stored it, base model, "
                                 "hyper-parameters, subjects and seed (with no other launch option)")
        parser.add_argument("--recipe", default=None, help="a preset (manage.py recipes lists them) or a saved recipe; "
                            "default: judge-led where its VLM judge and HPSv3 are configured, else studio-judge-led")
        parser.add_argument("--base-model", default=None, help="local path or Hugging Face id (default: the tiny model)")
        parser.add_argument("--steps", type=int, default=None, help=f"GRPO steps (default {defaults.max_steps})")
        parser.add_argument("--subject", action="append", default=[], help="subject text; repeat for several")
        parser.add_argument("--seed", type=int, default=None, help="the run's seed (default 0)")
        parser.add_argument("--name", default="")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="any hyper-parameter listed below, e.g. --set num_generations=4 --set render_size=384")
        parser.add_argument("--recipe-set", action="append", default=[], metavar="KEY=VALUE",
                            help="this run's length thresholds on top of the recipe, e.g. --recipe-set length_full_tokens=2500")
        parser.add_argument("--follow", action="store_true", help="print one line per step until the run ends")
        parser.add_argument("--poll", type=float, default=1.0)

    def handle(self, *args, kind, dataset, from_run, pool, like, recipe, base_model, steps, subject, seed, name, set,
               recipe_set, follow, poll, **options):
        if like is not None:
            if pool or recipe or base_model or steps is not None or subject or seed is not None or name or set \
                    or recipe_set or dataset or from_run is not None or kind != "grpo":
                raise CommandError("--like RUN copies all of that run: give it no other launch option", returncode=2)
            source = Run.objects.filter(id=like).select_related("pool").first()
            if source is None:
                raise CommandError(f"no run {like}", returncode=2)
            return self._launched(lambda: services.run_duplicate(run=source), follow, poll)
        sft_dataset, init_run = self._sources(kind, dataset, from_run, steps)
        if pool is None and sft_dataset is None:
            raise CommandError("give --pool NAME[:VERSION] (or --like RUN to copy a run)", returncode=2)
        try:
            frozen = pool_get(pool) if pool else sft_dataset.pool
        except (Pool.DoesNotExist, ValueError) as exc:
            raise CommandError(f"no pool {pool!r}: {exc}", returncode=2) from exc
        arguments = RunArguments().to_dict()
        for key, raw in _pairs(set, "--set"):
            try:
                arguments[key] = argument_spec(key).parse(raw)
            except KeyError:
                hint = " (a recipe setting: use --recipe-set)" if key in LENGTH_THRESHOLDS else ""
                raise CommandError(f"unknown hyper-parameter {key!r}{hint}; see train --help", returncode=2) from None
            except ValueError as exc:
                raise CommandError(str(exc), returncode=2) from exc
        recipe_overrides = {}
        for key, raw in _pairs(recipe_set, "--recipe-set"):
            try:
                recipe_overrides[key] = int(raw)
            except ValueError:
                raise CommandError(f"{key} must be a whole number of tokens, not {raw!r}", returncode=2) from None
        if steps is not None:
            arguments["max_steps"] = steps
        self._launched(lambda: services.run_launch(
            pool=frozen, recipe_name=recipe or default_recipe_name(), base_model=base_model, arguments=arguments,
            recipe_overrides=recipe_overrides, subjects=subject, seed=seed or 0, name=name,
            kind=kind, sft_dataset=sft_dataset, init_run=init_run,
        ), follow, poll)

    def _sources(self, kind: str, dataset: str | None, from_run: int | None,
                 steps: int | None) -> tuple[SftDataset | None, Run | None]:
        """The SFT dataset of an SFT run, the SFT run a GRPO run continues."""
        if kind == "sft":
            if not dataset:
                raise CommandError("an SFT run needs --dataset NAME[:VERSION]", returncode=2)
            if from_run is not None or steps is not None:
                raise CommandError("an SFT run's steps come from its dataset and --set num_train_epochs=N; "
                                   "--from-run is for GRPO", returncode=2)
            try:
                return sft_dataset_get(dataset), None
            except (SftDataset.DoesNotExist, ValueError) as exc:
                raise CommandError(str(exc), returncode=2) from exc
        if dataset:
            raise CommandError("--dataset is for --kind sft", returncode=2)
        if from_run is None:
            return None, None
        source = Run.objects.filter(id=from_run).first()
        if source is None:
            raise CommandError(f"no run {from_run}", returncode=2)
        return None, source

    def _launched(self, launch, follow: bool, poll: float) -> None:
        try:
            run = launch()
        except (services.NoWorkers, services.UnreachableParts) as exc:  # infrastructure, as seed_pool's exit 3
            raise CommandError(str(exc), returncode=3) from exc
        except services.LaunchError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(self.style.SUCCESS(f"Launched run {run.id}: {run.name}"))
        if follow:
            self._follow(run, poll)

    def _follow(self, run: Run, poll: float) -> None:
        run = follow_run(run, poll=poll)
        self.stdout.write(ending(run))
        if run.status == Run.Status.FAILED:
            raise CommandError("the run failed", returncode=1)
