"""`manage.py paint gate|render` — the painting environment from the command line.

    paint gate FILE.js|- [--json] [--strictness allowlist|known]
    paint render FILE.js|- [--out OUT.png] [--size N] [--seed N] [--json] [--timeout S]

Input may be a bare sketch or a model's whole reply (the first ```js block is taken).
Exit codes: 0 a verdict was reached (pass or fail), 2 bad usage, 3 infrastructure failure.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from paintapp.env.painting import Painting, paint_reply
from paintapp.env.renderer import Renderer, RendererConfig, RenderUnavailable
from training.services import renderer_config

EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 3
MAX_INPUT_BYTES = 2 * 1024 * 1024


class Command(BaseCommand):
    help = "Gate and render p5.brush sketches in the sandboxed renderer."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        gate = sub.add_parser("gate", help="static gate only (milliseconds)")
        render = sub.add_parser("render", help="static gate, then render in headless Chromium")
        for p in (gate, render):
            p.add_argument("source", help="a .js file, a reply text file, or - for standard input")
            p.add_argument("--json", action="store_true", help="print one JSON object")
            p.add_argument("--strictness", choices=["allowlist", "known"], default="allowlist")
        render.add_argument("--out", type=Path, help="write the painting as PNG here")
        render.add_argument("--size", type=int, default=None, help="canvas size in pixels (default RENDER_SIZE)")
        render.add_argument("--seed", type=int, default=0)
        render.add_argument("--timeout", type=float, default=None, help="render deadline in seconds")
        render.add_argument(
            "--only-if-gate-passes", action="store_true", help="skip the render when the static gate fails"
        )

    def handle(self, *args, action: str, source: str, **options):
        text = self._read(source)
        if action == "gate":
            painting = paint_reply(text, renderer=None, strictness=options["strictness"])
            self._report(painting, options["json"], rendered=False)
            return

        from django.conf import settings

        size = options["size"] or settings.RENDER_SIZE
        if not 16 <= size <= 2048:
            raise CommandError("--size must be between 16 and 2048", returncode=EXIT_USAGE)
        base = renderer_config()
        config = RendererConfig(
            chromium_path=base.chromium_path,
            timeout_s=options["timeout"] or base.timeout_s,
            prewarm=False,  # one render: a pre-loaded second page would be wasted work
        )
        try:
            with Renderer(config) as renderer:
                painting = paint_reply(
                    text,
                    renderer=renderer,
                    seed=options["seed"],
                    size=size,
                    strictness=options["strictness"],
                    render_failed_gate=not options["only_if_gate_passes"],
                )
        except RenderUnavailable as exc:
            if options["json"]:
                self.stdout.write(json.dumps({"error": "render_unavailable", "message": str(exc)}))
            raise CommandError(f"renderer unavailable: {exc}", returncode=EXIT_INFRASTRUCTURE) from exc
        if options["out"] and painting.png:
            options["out"].write_bytes(painting.png)
        self._report(painting, options["json"], rendered=True, out=options["out"])

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

    def _report(self, painting: Painting, as_json: bool, *, rendered: bool, out: Path | None = None) -> None:
        data = painting.to_dict()
        if not rendered:
            data = {k: data[k] for k in ("passed", "violations", "gate", "length_score")}
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
        self.stdout.write(
            f"  length score {painting.length_score:.2f} · {stats.get('code_chars', 0)} chars · "
            f"{stats.get('shapes', 0)} shapes · {stats.get('circles', 0)} circles"
        )
