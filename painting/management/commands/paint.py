"""`manage.py paint gate|render` — the painting environment from the command line.

    paint gate FILE.js|- [--json] [--strictness allowlist|known]
    paint render FILE.js|- [FILE.js ...] [--out OUT.png] [--size N] [--seed N] [--json] [--timeout S]

Input may be a bare sketch or a model's whole reply (the first ```js block is taken).
`render` takes several files at once (one browser for all; with --json, one object a line).
Exit codes: 0 a verdict was reached (pass or fail), 2 bad usage, 3 infrastructure failure.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from paintenv.paint import Painting, paint_reply
from paintenv.render_result import RenderUnavailable
from paintenv.renderer import Renderer
from painting.judging import reference_library
from painting.pipeline import InProcess, PaintJob, paint_batch
from painting.selectors import default_recipe_name, recipe_get
from painting.services import renderer_config

EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 3
MAX_INPUT_BYTES = 2 * 1024 * 1024


class Command(BaseCommand):
    help = "Gate and render p5.brush sketches in the sandboxed renderer."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        gate = sub.add_parser("gate", help="static gate only (milliseconds)")
        render = sub.add_parser("render", help="static gate, then render in headless Chromium")
        score = sub.add_parser("score", help="judge and quality parts of a painting, and the combined reward")
        score.add_argument("source", help="a PNG painting")
        score.add_argument("--pool", required=True, help="NAME or NAME:VERSION: references come from its train split")
        score.add_argument("--recipe", default=None, help="default: judge-led where configured, else studio-judge-led")
        score.add_argument("--prompt", default="", help="what the painting was asked to be (default: the pool's first subject)")
        score.add_argument("--sketch", default=None, help="the sketch that drew it, for the length part")
        score.add_argument("--seed", type=int, default=0, help="which references are drawn")
        score.add_argument("--json", action="store_true")
        gate.add_argument("source", help="a .js file, a reply text file, or - for standard input")
        render.add_argument("source", nargs="+", help="one or more .js or reply files, or - for standard input")
        for p in (gate, render):
            p.add_argument("--json", action="store_true", help="print one JSON object")
            p.add_argument("--strictness", choices=["allowlist", "known"], default="allowlist")
        render.add_argument("--out", type=Path, help="write the painting as PNG here")
        render.add_argument("--size", type=int, default=None, help="canvas size in pixels (default RENDER_SIZE)")
        render.add_argument("--seed", type=int, default=0)
        render.add_argument("--timeout", type=float, default=None, help="render deadline in seconds")
        render.add_argument(
            "--only-if-gate-passes", action="store_true", help="skip the render when the static gate fails"
        )

    def handle(self, *args, action: str, source: str | list[str], **options):
        if action == "score":
            return self._score(source, **options)
        if action == "gate":
            painting = paint_reply(self._read(source), renderer=None, strictness=options["strictness"])
            self._report(painting, options["json"], rendered=False)
            return
        sources = list(source)
        if options["out"] and len(sources) > 1:
            raise CommandError("--out needs a single source", returncode=EXIT_USAGE)
        texts = [self._read(s) for s in sources]

        size = options["size"] or settings.RENDER_SIZE
        if not 16 <= size <= 2048:
            raise CommandError("--size must be between 16 and 2048", returncode=EXIT_USAGE)
        timeout = {"timeout_s": options["timeout"]} if options["timeout"] else {}
        config = renderer_config(prewarm=False, **timeout)  # few renders: a pre-loaded page would be wasted work
        try:
            with Renderer(config) as renderer:
                for name, text in zip(sources, texts):
                    painting = paint_reply(
                        text,
                        renderer=renderer,
                        seed=options["seed"],
                        size=size,
                        strictness=options["strictness"],
                        render_failed_gate=not options["only_if_gate_passes"],
                    )
                    if options["out"] and painting.png:
                        options["out"].write_bytes(painting.png)
                    if len(sources) > 1 and not options["json"]:
                        self.stdout.write(name)
                    self._report(painting, options["json"], rendered=True, out=options["out"],
                                 source=name if len(sources) > 1 else None)
        except RenderUnavailable as exc:
            if options["json"]:
                self.stdout.write(json.dumps({"error": "render_unavailable", "message": str(exc)}))
            raise CommandError(f"renderer unavailable: {exc}", returncode=EXIT_INFRASTRUCTURE) from exc

    def _score(self, source: str, *, pool, recipe, prompt, sketch, seed, **options) -> None:
        """Score an existing painting through the same pipeline as training, in this process."""
        library = reference_library()  # pools are curation's, handed to this layer at start-up
        try:
            png = Path(source).read_bytes()
            frozen = library.pool(pool)
            chosen = recipe_get(recipe or default_recipe_name())
        except OSError as exc:
            raise CommandError(f"cannot read {source}: {exc.strerror or exc}", returncode=EXIT_USAGE) from exc
        except (LookupError, ValueError) as exc:
            raise CommandError(str(exc), returncode=EXIT_USAGE) from exc
        if png[:8] != b"\x89PNG\r\n\x1a\n":
            raise CommandError(f"{source} is not a PNG", returncode=EXIT_USAGE)
        reply = self._read(sketch) if sketch else None
        refs = library.group_references(frozen.id, count=chosen.references_per_group, key=(seed, 0, 0)) if chosen.w_judge > 0 else []
        subject = prompt or frozen.subject or "a flower"
        job = PaintJob(reply=reply, prompt=subject, seed=seed, reference_ids=tuple(refs), png=png)
        painted = paint_batch([job], recipe=chosen, pool_id=frozen.id, size=settings.RENDER_SIZE,
                              executor=InProcess()).paintings[0]
        # The gate's codes and the painting's own (writing found in it): either makes the reward 0.
        if painted.violations:
            note = ", ".join(painted.violations)
        elif painted.painting is None:
            note = "no sketch given: length part 0"
        else:
            note = "gate passed"
        parts, score = painted.parts, painted.score or {}
        judge_detail = score.get("judge")
        data = {"recipe": chosen.name, "pool": frozen.label, "prompt": subject, "reward": painted.reward,
                "parts": {"reward": painted.reward, **parts}, "judge": judge_detail, "note": note,
                "violations": painted.violations, "references": list(job.reference_ids)}
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        judge_score, quality = parts.get("judge"), parts.get("quality")
        self.stdout.write(f"{chosen.name} on {frozen.label} — {subject}")
        why = "; ".join(parts.get("unavailable") or []) or painted.failure
        self.stdout.write(f"  reward   {'None (' + why + ')' if painted.reward is None else f'{painted.reward:.4f}'}")
        self.stdout.write(f"  gate     {parts.get('gate', 0):.0f}   ({note})")
        self.stdout.write(f"  length   {parts.get('length') or 0:.3f}   × {chosen.w_length}")
        if chosen.w_judge > 0:
            self.stdout.write(f"  judge    {'-' if judge_score is None else f'{judge_score:.3f}'}   × {chosen.w_judge}  ({chosen.judge}, {len(refs)} references, both orders)")
            for ref in (judge_detail or {}).get("references", []):
                orders = ", ".join("-" if o["p_candidate"] is None else f"{o['p_candidate']:.2f}" for o in ref["orders"])
                self.stdout.write(f"    reference #{ref['reference_id']}: {orders}")
        if chosen.w_quality > 0:
            self.stdout.write(f"  quality  {'-' if quality is None else f'{quality:.3f}'}   × {chosen.w_quality}  ({chosen.quality})")

    def _read(self, source: str) -> str:
        try:
            if source == "-":
                data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
            else:
                data = Path(source).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {source}: {exc.strerror or exc}", returncode=EXIT_USAGE) from exc
        if len(data) > MAX_INPUT_BYTES:
            raise CommandError(f"{source} is larger than {MAX_INPUT_BYTES} bytes", returncode=EXIT_USAGE)
        return data.decode("utf-8", errors="replace")

    def _report(self, painting: Painting, as_json: bool, *, rendered: bool, out: Path | None = None,
                source: str | None = None) -> None:
        data = painting.to_dict()
        if source is not None:
            data["source"] = source
        if not rendered:
            data = {k: data[k] for k in ("passed", "violations", "gate", "length_score", "painting_tokens",
                                        "length_from")}
            data["passed"] = painting.gate.passed
        if as_json:
            self.stdout.write(json.dumps(data))
            return
        ok = data["passed"]
        self.stdout.write((self.style.SUCCESS if ok else self.style.ERROR)("PASS" if ok else "FAIL"))
        for v in painting.gate.violations:
            self.stdout.write(f"  {v}")
        if rendered and painting.render is not None:
            r = painting.render
            for code in r.violations:
                self.stdout.write(f"  {code}")
            for e in r.errors:
                where = f"{e.line}:{e.col} " if e.line else ""
                self.stdout.write(f"  {where}error: {e.message}")
            self.stdout.write(
                f"  paint fraction {r.paint_fraction:.3f} · {r.elapsed_ms / 1000:.2f} s · "
                f"{sum(r.brush_calls.values())} brush calls"
            )
            if out and r.png:
                self.stdout.write(f"  wrote {out}")
        elif rendered:
            self.stdout.write("  not rendered (the static gate found nothing renderable)")
        stats = painting.gate.stats
        score = "-" if painting.length_score is None else f"{painting.length_score:.2f}"
        tokens = "?" if painting.painting_tokens is None else painting.painting_tokens
        measured = "that ran" if painting.length_from == "render" else "(static: before a render)"
        self.stdout.write(
            f"  length score {score} · {tokens} tokens of painting code {measured} "
            f"({stats.get('code_chars', 0)} chars with comments and blanks) · "
            f"{stats.get('shapes', 0)} shapes · {stats.get('circles', 0)} circles"
        )
