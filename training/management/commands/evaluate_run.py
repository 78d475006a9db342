"""`manage.py evaluate_run RUN` — sample K sketches per subject from the run's adapter and
score them against its pool's eval split (needs render and score workers); an SFT run's base
model too, with the adapter off. The base model loads in its own class with its processor, in
bf16 on a GPU, float32 on CPU."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from training.models import Run
from training.trainer.evaluation import evaluate_trained
from training.trainer.model_loading import load_adapted_model


class Command(BaseCommand):
    help = "Evaluate a run's adapter on its pool's held-out references."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, run, **options):
        import torch

        instance = Run.objects.filter(id=run).select_related("pool").first()
        if instance is None:
            raise CommandError(f"no run {run}", returncode=2)
        adapter = instance.adapter_dir
        if adapter is None or not (adapter / "adapter_config.json").exists():
            raise CommandError(f"run {run} has no saved adapter yet ({adapter})", returncode=2)
        if not torch.cuda.is_available():
            torch.set_num_threads(1)
        model, processing_class = load_adapted_model(instance.base_model, adapter)
        result = evaluate_trained(instance, model, processing_class)
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        mean = result["mean_reward"]
        late = f", {result['late']} of them back too late" if result.get("late") else ""
        left_out = f" ({result['none']} of {result['samples']} left out: infrastructure failed{late})" if result["none"] else ""
        self.stdout.write(self.style.SUCCESS(
            f"Run {run}: held-out mean reward {'-' if mean is None else f'{mean:.3f}'}{left_out}; "
            f"{result['gate_pass_rate']:.0%} pass the gate, {result['render_rate']:.0%} rendered"))
        if base := result.get("base"):
            base_mean = base["mean_reward"]
            self.stdout.write(f"  its base model: {'-' if base_mean is None else f'{base_mean:.3f}'}; "
                              f"{base['gate_pass_rate']:.0%} pass the gate, {base['render_rate']:.0%} rendered")
        if result.get("turn_mean_rewards"):
            by_turn = " -> ".join(f"turn {t} {'-' if m is None else f'{m:.3f}'}"
                                  for t, m in enumerate(result["turn_mean_rewards"], start=1))
            self.stdout.write(f"  the final sketch of {result['turns']} turns; each turn on the same samples: {by_turn}")
        for subject, s in result["per_subject"].items():
            m = s["mean_reward"]
            nones = f", {s['none']} None" if s["none"] else ""
            nones += f" ({s['late']} late)" if s.get("late") else ""
            self.stdout.write(f"  {subject}: {'-' if m is None else f'{m:.3f}'} over {s['samples']} samples, "
                              f"gate pass {s['gate_pass_rate']:.2f}{nones}")
