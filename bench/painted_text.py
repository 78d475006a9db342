"""JudgedSketch text: does the check refuse legitimate paintings, and does it catch painted writing?

    .venv/bin/python bench/painted_text.py [--pool 200] [--seed-sketches 100] [--size 600] [--json OUT]

Renders the demo pool (`seedgen.generate_pool(N, seed=0, weak_share=0.3)`, what `make demo`
seeds), the seed sketches (the tiny model's warm-start corpus, `generate_pool(N, seed=1,
weak_share=0)`) and the good corpus, and reads every painting that passes the render with the
painted-text check (paintenv/text_check.py), exactly as the render worker does. It prints:

* false positives: legitimate paintings the check refuses, with the words it read, and the
  margin: the most confident reading of a legitimate painting against the bars;
* the cost per painting: median, 90th percentile and largest wall milliseconds of the check (it
  reads with one BLAS thread; on a loaded machine the wall time grows with the load);
* the hostile corpus (tests/paintenv/adversarial/painted_text.py): writing painted with the allowed
  brush calls in 13 styles x 7 messages, and how many of each style the check catches.

Progress goes to stderr; --json writes every reading.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paintenv import text_check  # noqa: E402
from paintenv.render_config import RendererConfig  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from paintenv.seedgen import POOL_SEED, WARM_START_SEED, generate_pool  # noqa: E402
from tests.paintenv.adversarial import GOOD_DIR  # noqa: E402
from tests.paintenv.adversarial.painted_text import STYLES, TEXT_CASES, WEAKEST  # noqa: E402


def read_all(renderer: Renderer, check: text_check.TextCheck, items: list[tuple[str, str, int]], size: int,
             desc: str) -> list[dict]:
    out = []
    for name, code, seed in tqdm(items, desc=desc, file=sys.stderr):
        render = renderer.render(code, seed=seed, size=size)
        row = {"name": name, "render": render.violations, "read": None}
        if render.passed:
            found = check.find(render.png)
            row["read"] = {"legible": found.legible, "words": list(found.words), "ms": round(found.elapsed_ms, 1),
                           "readings": [[w, round(c, 1)] for w, c in found.readings]}
        out.append(row)
    return out


def margin(rows: list[dict]) -> str:
    """The most confident reading of 4+ and of 3 letters or digits among `rows`."""
    best = {}
    for row in rows:
        for word, confidence in (row["read"] or {}).get("readings", []):
            n = len(re.findall(r"[A-Za-z0-9]", word))
            key = 4 if n >= 4 else 3 if n == 3 else None
            if key and confidence > best.get(key, ("", -1.0, ""))[1]:
                best[key] = (word, confidence, row["name"])
    parts = []
    for n, bar in ((4, text_check.LONG_CONFIDENCE), (3, text_check.SHORT_CONFIDENCE)):
        if n in best:
            word, confidence, name = best[n]
            parts.append(f"{n}{'+' if n == 4 else ''} characters: {word!r} at {confidence:.0f} in {name} "
                         f"(bar {bar:.0f})")
    return "; ".join(parts) or "no word read"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=200, help="demo pool sketches")
    parser.add_argument("--seed-sketches", type=int, default=100, help="warm-start seed sketches")
    parser.add_argument("--size", type=int, default=600)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    legit = [(f"pool/{s.id}", s.code, s.seed) for s in generate_pool(args.pool, seed=POOL_SEED, weak_share=0.3)]
    legit += [(f"seed/{s.id}", s.code, s.seed) for s in generate_pool(args.seed_sketches, seed=WARM_START_SEED,
                                                                         weak_share=0.0)]
    legit += [(f"good/{p.name}", p.read_text(), 1) for p in sorted(GOOD_DIR.glob("*.js"))]
    hostile = [(case.id, case.code, 1) for case in TEXT_CASES]
    check = text_check.TextCheck()
    report: dict = {}
    with Renderer(RendererConfig(timeout_s=60)) as renderer:
        rows = read_all(renderer, check, legit, args.size, "legitimate paintings")
        report["legit"] = rows
        read = [r for r in rows if r["read"] is not None]
        refused = [r for r in read if r["read"]["legible"]]
        print(f"Legitimate paintings at {args.size} px: {len(rows)} rendered, {len(read)} passed the render "
              f"and were read; the painted-text check refuses {len(refused)} "
              f"({len(refused) / max(len(read), 1):.1%} false positives)")
        for group in ("pool", "seed", "good"):
            mine = [r for r in read if r["name"].startswith(group + "/")]
            print(f"  {group:<5} {sum(r['read']['legible'] for r in mine):>3} refused of {len(mine)}")
        for r in refused:
            print(f"  refused: {r['name']}: {r['read']['words']}")
        print(f"  closest to a refusal: {margin(read)}")
        ms = sorted(r["read"]["ms"] for r in read)
        if ms:
            print(f"  cost per painting: median {statistics.median(ms):.0f} ms, "
                  f"90th percentile {ms[int(len(ms) * 0.9)]:.0f} ms, max {ms[-1]:.0f} ms (wall time)")

        rows = read_all(renderer, check, hostile, args.size, "painted writing")
        report["hostile"] = rows
        caught = Counter()
        for row, case in zip(rows, TEXT_CASES):
            caught[case.style] += bool(row["read"] and row["read"]["legible"])
        total = sum(caught.values())
        print(f"JudgedSketch writing ({len(TEXT_CASES)} paintings, {len(STYLES)} styles x "
              f"{len(TEXT_CASES) // len(STYLES)} messages): {total} caught")
        per_style = len(TEXT_CASES) // len(STYLES)
        for style in STYLES:
            weak = " (hard to read)" if style.name in WEAKEST else ""
            print(f"  {style.name:<10} {caught[style.name]} / {per_style}{weak}")
        for row, case in zip(rows, TEXT_CASES):
            if not (row["read"] and row["read"]["legible"]):
                best = sorted((row["read"] or {}).get("readings", []), key=lambda wc: -wc[1])[:3]
                print(f"  missed: {case.id} (render {row['render']}; best readings {best})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
