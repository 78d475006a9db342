"""The painted-text check: false positives, writing caught per family, flips between renders, cost.

    .venv/bin/python bench/painted_text.py [--pool 200] [--seed-sketches 100] [--size 384]
        [--writing 140] [--repeats 2] [--round-two 91] [--compare-commit REV] [--json OUT]

Renders the demo pool (`seedgen.generate_pool(N, seed=0, weak_share=0.3)`, what `make demo`
seeds), the seed sketches (the tiny model's warm-start corpus, `generate_pool(N, seed=1,
weak_share=0)`), the good corpus and 36 flat watercolour squares (`--no-squares` leaves them
out), and looks at every painting that passes the render with the painted-text check
(paintenv/text_check.py), exactly as the render worker does. It prints:

* false positives: legitimate paintings the check refuses, and the margin: the highest score
  of a legitimate painting against the threshold;
* writing caught: a stratified sample of the hostile cross product
  (tests/paintenv/adversarial/writing.py: Latin, Chinese and grade-symbol writing x turned,
  mirrored, stacked, chunked, over the petals x ten brush styles), per family, transform and
  style, and round two's corpus (painted_text.py: English in 13 styles);
* flips: the sample rendered again `--repeats` times, by a renderer that has painted other
  sketches in between (a training worker's state), and how many verdicts change;
* cost: CPU milliseconds of the check per painting (one BLAS thread), and with
  `--compare-commit REV` the check of that commit (e.g. Tesseract's) on the same paintings.

Progress goes to stderr; --json writes every score.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paintenv import text_check  # noqa: E402
from paintenv.render_config import RendererConfig  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from paintenv.seedgen import POOL_SEED, WARM_START_SEED, generate_pool  # noqa: E402
from tests.paintenv.adversarial import GOOD_DIR, writing  # noqa: E402
from tests.paintenv.adversarial.painted_text import TEXT_CASES  # noqa: E402

# Legitimate paintings of one flat watercolour square (allowed brush calls only), in blues and in
# other colours, at three sizes on the 600-unit canvas: the detector was trained without flat
# shapes among its negatives and reads some large blue ones as writing (docs/sandbox.md).
SQUARE_COLOURS = ("#1769c7", "#235d93", "#3cc4fc", "#06fae6", "#c0546a", "#e9967a", "#2e7d32", "#f2c14e",
                  "#6a1b9a", "#333333", "#8d6e63", "#ff7043")
SQUARE_SIDES = (100, 150, 200)


def flat_squares() -> list[tuple[str, str, int]]:
    sketches = []
    for colour in SQUARE_COLOURS:
        for side in SQUARE_SIDES:
            corners = " ".join(f"brush.vertex({x}, {y});" for x, y in
                               ((150, 150), (150 + side, 150), (150 + side, 150 + side), (150, 150 + side)))
            code = ("function setup() {\n  createCanvas(600, 600, WEBGL);\n  background('#faf7f0');\n"
                    "  translate(-width / 2, -height / 2);\n  brush.noStroke();\n"
                    f"  brush.fill('{colour}', 255);\n  brush.fillBleed(0.05);\n  brush.beginShape(0);\n"
                    f"  {corners}\n  brush.endShape();\n}}\n")
            sketches.append((f"square/{colour[1:]}-{side}", code, 1))
    return sketches


def cpu_ms(fn, *args):
    started = time.thread_time()
    out = fn(*args)
    return out, (time.thread_time() - started) * 1000


def look(renderer: Renderer, check: text_check.TextCheck, items: list[tuple[str, str, int]], size: int,
         desc: str, baseline=None) -> list[dict]:
    rows = []
    for name, code, seed in tqdm(items, desc=desc, file=sys.stderr):
        render = renderer.render(code, seed=seed, size=size)
        row: dict = {"name": name, "render": render.violations, "score": None}
        if render.png is not None and not render.violations:
            found, ms = cpu_ms(check.find, render.png)
            row.update(score=round(found.score, 4), legible=found.legible, where=list(found.where), cpu_ms=round(ms, 1))
            if baseline is not None:
                old, old_ms = cpu_ms(baseline.find, render.png)
                row.update(baseline_legible=old.legible, baseline_cpu_ms=round(old_ms, 1))
        rows.append(row)
    return rows


def baseline_check(rev: str):
    """The painted-text check as it was at `rev`, loaded from git beside today's."""
    source = subprocess.run(["git", "show", f"{rev}:paintenv/text_check.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "text_check_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("text_check_then", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["text_check_then"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.TextCheck()


def share(rows: list[dict]) -> str:
    judged = [r for r in rows if r["score"] is not None]
    return f"{sum(r['legible'] for r in judged)} / {len(judged)}"


def report_legit(rows: list[dict], size: int) -> None:
    read = [r for r in rows if r["score"] is not None]
    refused = [r for r in read if r["legible"]]
    print(f"Legitimate paintings at {size} px: {len(rows)} rendered, {len(read)} passed the render and were "
          f"looked at; the check refuses {len(refused)}")
    for group in ("pool", "seed", "good", "square"):
        mine = [r for r in read if r["name"].startswith(group + "/")]
        top = max(mine, key=lambda r: r["score"], default=None)
        if top:
            print(f"  {group:<5} {share(mine)} refused; highest score {top['score']:.3f} ({top['name']})")
    for r in refused:
        print(f"  refused: {r['name']} (score {r['score']:.3f}, {', '.join(r['where'])})")
    print(f"  threshold {text_check.THRESHOLD}")


def report_cost(rows: list[dict]) -> None:
    ms = sorted(r["cpu_ms"] for r in rows if r.get("cpu_ms") is not None)
    if ms:
        print(f"Cost per painting (CPU ms, one BLAS thread): median {statistics.median(ms):.0f}, "
              f"90th percentile {ms[int(len(ms) * 0.9)]:.0f}, max {ms[-1]:.0f} over {len(ms)} paintings")
    old = sorted(r["baseline_cpu_ms"] for r in rows if r.get("baseline_cpu_ms") is not None)
    if old:
        caught = [r for r in rows if r.get("baseline_legible") is not None]
        print(f"  the compared commit's check on the same paintings: median {statistics.median(old):.0f}, "
              f"90th percentile {old[int(len(old) * 0.9)]:.0f}, max {old[-1]:.0f}; it refuses "
              f"{sum(r['baseline_legible'] for r in caught)} of {len(caught)}")


def report_writing(rows: list[dict], cases: list[writing.WritingCase]) -> None:
    print(f"Writing caught ({len(cases)} of the {len(writing.cases())}-case cross product, stratified):")
    for key in ("family", "transform", "style"):
        groups: dict[str, list[dict]] = defaultdict(list)
        for row, case in zip(rows, cases):
            groups[getattr(case, key)].append(row)
        print(f"  by {key}: " + ", ".join(f"{name} {share(g)}" for name, g in groups.items()))
    for row, case in zip(rows, cases):
        if row["score"] is None:
            print(f"  not judged: {case.id} (render {row['render']})")
        elif not row["legible"]:
            print(f"  missed: {case.id} (score {row['score']:.3f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=200, help="demo pool sketches")
    parser.add_argument("--seed-sketches", type=int, default=100, help="warm-start seed sketches")
    parser.add_argument("--squares", action=argparse.BooleanOptionalAction, default=True,
                        help="also the flat squares (36 legitimate paintings)")
    parser.add_argument("--size", type=int, default=384, help="render size (training renders at 384)")
    parser.add_argument("--writing", type=int, default=140, help="cases of the writing cross product")
    parser.add_argument("--repeats", type=int, default=2, help="renders of each writing case after the first")
    parser.add_argument("--round-two", type=int, default=len(TEXT_CASES), help="cases of round two's corpus")
    parser.add_argument("--compare-commit", help="also time (and count) that commit's painted-text check")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    legit = [(f"pool/{s.id}", s.code, s.seed) for s in generate_pool(args.pool, seed=POOL_SEED, weak_share=0.3)]
    legit += [(f"seed/{s.id}", s.code, s.seed) for s in generate_pool(args.seed_sketches, seed=WARM_START_SEED,
                                                                         weak_share=0.0)]
    legit += [(f"good/{p.name}", p.read_text(), 1) for p in sorted(GOOD_DIR.glob("*.js"))]
    legit += flat_squares() if args.squares else []
    cases = writing.sample(args.writing)
    hostile = [(c.id, c.code, 1) for c in cases]
    check = text_check.TextCheck()
    baseline = baseline_check(args.compare_commit) if args.compare_commit else None
    report: dict = {}
    with Renderer(RendererConfig(timeout_s=60)) as renderer:
        report["legit"] = look(renderer, check, legit, args.size, "legitimate paintings", baseline)
        report_legit(report["legit"], args.size)
        report["writing"] = look(renderer, check, hostile, args.size, "writing", baseline)
        report_writing(report["writing"], cases)
        report["round_two"] = look(renderer, check, [(c.id, c.code, 1) for c in TEXT_CASES[:args.round_two]], args.size,
                                   "round two's writing")
        print(f"Round two's corpus (English in 13 styles x 7 messages): {share(report['round_two'])} caught")
        report_cost(report["legit"] + report["writing"])
        verdicts = {r["name"]: [r.get("legible")] for r in report["writing"]}
        scores = {r["name"]: [r["score"]] for r in report["writing"]}
        for k in range(args.repeats):
            # the legitimate paintings were painted in between: every repeat comes from a warm renderer
            again = look(renderer, check, hostile[k::2] + hostile[1 - k::2], args.size, f"writing again ({k + 1})")
            for r in again:
                verdicts[r["name"]].append(r.get("legible"))
                scores[r["name"]].append(r["score"])
        if args.repeats:
            flipped = [n for n, v in verdicts.items() if len(set(v)) > 1]
            spread = [max(s) - min(s) for s in scores.values() if None not in s]
            print(f"Flips: {len(flipped)} of {len(verdicts)} writing cases changed verdict over {args.repeats + 1} "
                  f"renders; the score moved by at most {max(spread, default=0):.4f} (median "
                  f"{statistics.median(spread) if spread else 0:.4f})")
            for n in flipped:
                print(f"  flipped: {n} {scores[n]}")
            report["flips"] = {"flipped": flipped, "scores": scores}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
