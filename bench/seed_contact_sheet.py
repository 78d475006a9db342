"""Render generated seed sketches into one contact-sheet PNG for eyeballing.

    .venv/bin/python bench/seed_contact_sheet.py --count 24 --size 300 --out /tmp/seeds.png
    .venv/bin/python bench/seed_contact_sheet.py --style muddy --count 12
    .venv/bin/python bench/seed_contact_sheet.py --subject peach-hibiscus --count 6 --seed 3

Prints one line per sketch (id, paint fraction, violations, render ms) and a summary of
paint fraction per style. Renders run one after another (1-3 s each on a small CPU box).
"""
from __future__ import annotations

import argparse
import io
import time
from collections import defaultdict

from PIL import Image, ImageDraw  # noqa: E402

from paintenv.render_config import RendererConfig  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from paintenv.seedgen import STYLES, SeedSketch, generate, generate_pool  # noqa: E402

LABEL_H = 30


def pick(args: argparse.Namespace) -> list[SeedSketch]:
    """The sketches to show: a balanced pool, or forced style/subject from consecutive seeds."""
    if args.style is None and args.subject is None:
        return generate_pool(args.count, seed=args.seed, weak_share=args.weak_share)
    return [
        generate(args.seed * 1000 + i, style=args.style, subject_slug=args.subject)
        for i in range(args.count)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--style", choices=STYLES, default=None)
    parser.add_argument("--subject", default=None, help="subject slug, e.g. peach-hibiscus")
    parser.add_argument("--weak-share", type=float, default=0.3)
    parser.add_argument("--size", type=int, default=300, help="render size in pixels")
    parser.add_argument("--cols", type=int, default=6)
    parser.add_argument("--out", default="/tmp/seed_contact_sheet.png")
    args = parser.parse_args(argv)

    sketches = pick(args)
    cols = max(1, min(args.cols, len(sketches)))
    rows = (len(sketches) + cols - 1) // cols
    cell_w, cell_h = args.size, args.size + LABEL_H
    sheet = Image.new("RGB", (cols * cell_w, rows * cell_h), "white")
    draw = ImageDraw.Draw(sheet)
    fractions: dict[str, list[float]] = defaultdict(list)
    problems = 0
    with Renderer(RendererConfig(prewarm=False)) as renderer:
        for i, sk in enumerate(sketches):
            started = time.perf_counter()
            render = renderer.render(sk.code, seed=sk.seed, size=args.size)
            ms = (time.perf_counter() - started) * 1000
            fractions[sk.style].append(render.paint_fraction)
            problems += bool(render.violations)
            print(f"{sk.id:44s} {sk.style:10s} {sk.composition:14s} "
                  f"paint={render.paint_fraction:.4f} {render.violations or ''} {ms:.0f} ms",
                  flush=True)
            x, y = (i % cols) * cell_w, (i // cols) * cell_h
            if render.png:
                with Image.open(io.BytesIO(render.png)) as img:
                    sheet.paste(img.convert("RGB").resize((args.size, args.size)), (x, y))
            draw.text((x + 4, y + args.size + 2), sk.id[:48], fill="black")
            draw.text((x + 4, y + args.size + 15),
                      f"{sk.style} {sk.composition} pf={render.paint_fraction:.3f}", fill="#555555")
    sheet.save(args.out)
    print(f"\nwrote {args.out} ({len(sketches)} sketches, {problems} with violations)")
    for style in STYLES:
        if fractions.get(style):
            values = fractions[style]
            print(f"  {style:10s} n={len(values):3d} paint fraction "
                  f"{min(values):.4f} .. {max(values):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
