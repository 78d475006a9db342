"""`manage.py seed_pool` — render the procedural seed sketches into references.

    seed_pool [--count 200] [--size 600] [--seed 0] [--demo-grades] [--in-process]

Idempotent: a sketch whose normalised render is already a reference is skipped (its
demo grade is still applied). Renders go to the render workers unless --in-process.
"""
from __future__ import annotations

import math

from django.conf import settings
from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from curation import services
from curation.images import normalise_image
from curation.models import Provenance, Reference
from demo.curator import DEMO_CURATOR, demo_tier, ensure_demo_curator
from paintapp.lib.workers import answering_queues, missing_worker_message
from paintenv import seedgen
from paintenv.renderer import Renderer
from painting.pipeline import RENDER_ONLY, InProcess, PaintJob, paint_batch
from painting.services import renderer_config


class Command(BaseCommand):
    help = "Render procedurally generated p5.brush sketches into the reference pool."

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, default=200)
        parser.add_argument("--size", type=int, default=None, help="render size (default RENDER_SIZE)")
        parser.add_argument("--seed", type=int, default=seedgen.POOL_SEED, help="generator seed")
        parser.add_argument("--weak-share", type=float, default=0.3, help="share of deliberately weak sketches")
        parser.add_argument("--demo-grades", action="store_true", help=f"grade them as '{DEMO_CURATOR}' by the documented rule")
        parser.add_argument("--in-process", action="store_true", help="render here instead of on the render workers")
        parser.add_argument("--if-empty", action="store_true", help="do nothing when references already exist")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the render workers")

    def handle(self, *args, count, size, seed, weak_share, demo_grades, in_process, if_empty, timeout, **options):
        if count < 1:
            raise CommandError("--count must be at least 1", returncode=2)
        if if_empty and Reference.objects.exists():
            self.stdout.write("References exist already; nothing to seed.")
            return
        size = size or settings.RENDER_SIZE
        sketches = seedgen.generate_pool(count, seed=seed, weak_share=weak_share)
        curator = ensure_demo_curator() if demo_grades else None
        results, late = self._render(sketches, size, in_process=in_process, timeout=timeout)

        created = skipped = failed = 0
        graded: dict[str, int] = {}
        for sketch, outcome in zip(sketches, results):
            png = outcome.get("png")
            if not png or outcome.get("violations"):
                failed += 1
                self.stderr.write(f"  {sketch.id}: not stored ({', '.join(outcome.get('violations') or ['no image'])})")
                continue
            image = normalise_image(png, name=f"{sketch.id}.png")
            reference, was_created = services.reference_create(
                png=image.png, width=image.width, height=image.height, provenance=Provenance.SEED_GENERATOR,
                source=sketch.code, seed=sketch.seed, subject=sketch.subject_text, original_name=f"{sketch.id}.png",
                metadata={
                    "generator_id": sketch.id, "style": sketch.style, "palette": sketch.palette,
                    "composition": sketch.composition, "paint_fraction": outcome.get("paint_fraction"), "render_size": size,
                },
            )
            created += was_created
            skipped += not was_created
            if curator is not None:
                tier = demo_tier(style=sketch.style, paint_fraction=outcome.get("paint_fraction") or 0.0)
                services.grade_set(reference=reference, curator=curator, tier=tier, source="demo")
                graded[tier] = graded.get(tier, 0) + 1
        self.stdout.write(self.style.SUCCESS(f"Seeded {created} new references ({skipped} already there, {failed} failed)."))
        if graded:
            summary = ", ".join(f"{tier} {n}" for tier, n in sorted(graded.items()))
            self.stdout.write(f"Demo grades by '{DEMO_CURATOR}': {summary}")
        lost = [outcome["failure"] for outcome in results if outcome.get("failure")]
        if lost:
            late_note = f", {late} of them back after the deadline" if late else ""
            raise CommandError(
                f"{len(lost)} renders were lost to infrastructure{late_note} (first: {lost[0]}); run again to seed them",
                returncode=3,
            )

    def _render(self, sketches, size: int, *, in_process: bool, timeout: float) -> tuple[list[dict], int]:
        """Each sketch's render through the painting pipeline (gate, then render), with its
        PNG read back from storage, an infrastructure failure kept as the reason; and how many
        renders came back after the deadline (not used)."""
        jobs = [PaintJob(reply=s.code, prompt=s.subject_text, seed=s.seed) for s in sketches]
        with tqdm(total=len(jobs), desc="rendering" if in_process else "rendering on workers", unit="sketch") as bar:
            def progress(stage: str, done: int, total: int) -> None:
                bar.update(done - bar.n)

            if in_process:
                with Renderer(renderer_config()) as renderer:
                    batch = paint_batch(jobs, recipe=RENDER_ONLY, pool_id=None, size=size,
                                        executor=InProcess(renderer), render_deadline_s=math.inf, progress=progress)
            else:
                self._require_render_worker()
                batch = paint_batch(jobs, recipe=RENDER_ONLY, pool_id=None, size=size,
                                    render_deadline_s=timeout, progress=progress)
        results = []
        for painted in batch.paintings:
            render = dict(painted.render or {})
            render["failure"] = painted.failure
            if painted.failure:
                render["violations"] = [painted.failure]
            elif not painted.passed:
                render["violations"] = painted.violations or ["not rendered"]
            render["png"] = None
            if render.get("png_path") and not render.get("violations"):
                with default_storage.open(render["png_path"], "rb") as fh:
                    render["png"] = fh.read()
            results.append(render)
        return results, batch.late_count

    def _require_render_worker(self) -> None:
        if "render" not in answering_queues(wanted=["render"]):
            raise CommandError(f"{missing_worker_message('render')} (or make demo), or pass --in-process", returncode=3)
