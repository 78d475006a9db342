"""Length counts painting code: what the rule does to padding and to real sketches, and what
coverage costs per render.

    .venv/bin/python bench/length_coverage.py [--quick] [--part padding|legit|cost]

* padding: the generated padding corpus (tests/paintenv/adversarial/length_padding.py: every
  kind × baseline × size), rendered at 384 px, seed 1: per kind, the length score under the
  old rule (all code's characters / 4) and under painting code (what ran), baseline → padded
  (the worst case), and whether the painting stayed the baseline's, pixel for pixel.
* legit: the good corpus, the legit adversarial set, seed sketches and demo-pool items:
  length score before → after (static rules over all of them, rendered for a sample):
  median and worst change.
* cost: Chromium's CPU seconds per render of bench/sketches/typical.js with the coverage
  markers and without (alternating), and the Python CPU of placing the markers and turning
  what ran into tokens.

Figures only, never asserts. A shared 2-core machine is noisy: compare rows of one run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.render import chromium_cpu_seconds  # noqa: E402
from paintenv import render_worker, seedgen  # noqa: E402
from paintenv.determinism import compare_paintings  # noqa: E402
from paintenv.length import _painting_chars, code_chars, painting_tokens, score_tokens  # noqa: E402
from paintenv.render_config import RendererConfig  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from tests.paintenv.adversarial.legit import LEGIT  # noqa: E402
from tests.paintenv.adversarial.length_padding import BASELINES, corpus  # noqa: E402

SIZE, SEED = 384, 1


def old_score(code: str) -> float:
    return score_tokens(code_chars(code) // 4)


def progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def render_length(r: Renderer, code: str) -> tuple[float | None, bytes | None]:
    """The length score from one render's coverage (the painted-text check is not needed)."""
    render = r.render(code, seed=SEED, size=SIZE)
    if render.executed is None:
        return None, render.png
    return score_tokens(painting_tokens(code, render.executed)), render.png


def padding(r: Renderer, quick: bool) -> None:
    base = {}
    for name, code in BASELINES.items():
        base[name] = render_length(r, code)
        progress(f"baseline {name}: {base[name][0]}")
    rows: dict[str, list] = defaultdict(list)
    cases = corpus(sizes=(24_000,)) if quick else corpus()
    for case in cases:
        score, png = render_length(r, case.code)
        b_score, b_png = base[case.baseline]
        same = compare_paintings(b_png, [], png, []).same
        rows[case.kind].append((old_score(BASELINES[case.baseline]), old_score(case.code), b_score, score, same,
                                case.name))
        progress(f"{case.name}: {b_score} -> {score}")
    print("\nkind               cases  old rule: baseline -> padded (best for padding)   "
          "painting code: baseline -> padded (worst rise)   same painting")
    for kind, found in rows.items():
        old = max(found, key=lambda x: x[1])
        new = max(found, key=lambda x: 9.0 if x[3] is None else x[3] - x[2])
        same = sum(1 for x in found if x[4])
        rise = "None" if new[3] is None else f"{new[3]:.3f} (+{new[3] - new[2]:.3f})"
        print(f"{kind:18s} {len(found):5d}  {old[0]:.3f} -> {old[1]:.3f}  ({old[5]})   "
              f"{new[2]:.3f} -> {rise}  ({new[5]})   {same}/{len(found)}")


def legit(r: Renderer, quick: bool) -> None:
    sketches = [(f"legit/{n}", c) for n, c in LEGIT]
    sketches += [(f"seed/{s}", seedgen.generate(s).code) for s in range(100)]
    sketches += [(f"demo/{i}", sk.code) for i, sk in enumerate(seedgen.generate_pool(200))]
    changes = [(score_tokens(painting_tokens(c)) - old_score(c), n) for n, c in sketches]
    _summary(f"static rules, {len(sketches)} sketches", changes)
    sample = sketches[:: (12 if quick else 4)]
    rendered = []
    for n, c in sample:
        score, _ = render_length(r, c)
        if score is not None:
            rendered.append((score - old_score(c), n))
        progress(f"{n}: {old_score(c):.3f} -> {score}")
    _summary(f"rendered (coverage), {len(rendered)} of {len(sample)} sketches", rendered)


def _summary(label: str, changes: list[tuple[float, str]]) -> None:
    values = sorted(d for d, _ in changes)
    worst = min(changes)
    print(f"{label}: change in length score median {statistics.median(values):+.4f}, "
          f"worst {worst[0]:+.4f} ({worst[1]}), best {max(values):+.4f}, "
          f"share lower by more than 0.05: {sum(1 for v in values if v < -0.05)}/{len(values)}")


def cost(r: Renderer, quick: bool) -> None:
    code = (REPO / "bench" / "sketches" / "typical.js").read_text()
    marked = render_worker.instrument
    cpu: dict[str, list[float]] = {"with markers": [], "without": []}
    for i in range(4 if quick else 16):
        mode = "with markers" if i % 2 else "without"
        if mode == "without":
            render_worker.instrument = lambda code: None  # type: ignore[assignment]
        time.sleep(1.0)  # the pre-warm lands before the count starts
        c0 = chromium_cpu_seconds(r)
        result = r.render(code, seed=i, size=SIZE)
        time.sleep(0.3)
        cpu[mode].append(chromium_cpu_seconds(r) - c0)
        render_worker.instrument = marked
        progress(f"{mode}: {cpu[mode][-1]:.2f} s CPU, timings {result.timings}")
        if mode == "with markers":
            t = time.process_time()
            render_worker.instrument(code)
            _painting_chars.cache_clear()
            painting_tokens(code, result.executed)
            cpu.setdefault("markers and tokens (Python)", []).append(time.process_time() - t)
    for mode, values in cpu.items():
        print(f"{mode:28s} CPU s per render: median {statistics.median(values):.3f} "
              f"(min {min(values):.3f}, max {max(values):.3f}, n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--part", choices=("padding", "legit", "cost"), action="append")
    args = parser.parse_args()
    parts = args.part or ["cost", "padding", "legit"]
    with Renderer(RendererConfig(timeout_s=30)) as r:
        for part in parts:
            print(f"\n== {part}", flush=True)
            {"padding": padding, "legit": legit, "cost": cost}[part](r, args.quick)


if __name__ == "__main__":
    main()
