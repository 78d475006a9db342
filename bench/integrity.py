"""Reward integrity: does the allowlist cost any real painting, and does any hostile
sketch get through?

    .venv/bin/python bench/integrity.py [--pool 200] [--seed-sketches 100] [--size 384]
                                        [--no-hostile] [--no-checks] [--json OUT]

Renders the demo pool's sketches (`seedgen.generate_pool(N, seed=0, weak_share=0.3)`,
exactly what `make demo` seeds) and the seed sketches (the tiny model's warm-start corpus,
`generate_pool(N, seed=1, weak_share=0)`) through the static gate and the renderer, then
the checks on the finished painting: the painted-text check, and a second render with the
same seed compared within the same-seed tolerance (the determinism check). It prints how
many pass each layer, by style, with the codes of those that fail, and the largest
difference a same-seed pair showed. Then, unless --no-hostile, every
case of the adversarial corpus (tests/paintenv/adversarial/) through each layer alone,
printing how many each layer let through (it should be none; cases whose forbidden part
sits in a p5 input handler never run, so only the gate can see them).

--json writes every verdict, so a run on an older commit can be compared sketch by sketch
(the README's figures come from that comparison). Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]

from paintenv.determinism import compare_paintings  # noqa: E402
from paintenv.gate import gate_source  # noqa: E402
from paintenv.render_config import RendererConfig  # noqa: E402
from paintenv.renderer import Renderer  # noqa: E402
from paintenv.seedgen import POOL_SEED, WARM_START_SEED, generate_pool  # noqa: E402
from paintenv.text_check import get_text_check  # noqa: E402

DEAD_HANDLERS = {"mousePressed", "windowResized"}


def pool_verdicts(renderer: Renderer, sketches: list, size: int, *, checks: bool, desc: str) -> list[dict]:
    out = []
    for sketch in tqdm(sketches, desc=desc, file=sys.stderr):
        gate = gate_source(sketch.code)
        t = time.perf_counter()
        render = renderer.render(sketch.code, seed=sketch.seed, size=size)
        row = {
            "id": sketch.id, "style": sketch.style, "gate": gate.codes, "render": render.violations,
            "seconds": round(time.perf_counter() - t, 3), "paint_fraction": render.paint_fraction,
            "text": None, "determinism": None,
        }
        if checks and render.passed:
            found = get_text_check().find(render.png)
            row["text"] = found.to_dict()
            again = renderer.render(sketch.code, seed=sketch.seed, size=size)
            row["determinism"] = compare_paintings(render.png, render.violations, again.png,
                                                   again.violations).to_dict()
        out.append(row)
    return out


def verdict(row: dict) -> list[str]:
    """Every code a row failed on, the checks on the painting included."""
    codes = row["gate"] + row["render"]
    if row["text"] and row["text"]["legible"]:
        codes.append("painted_text")
    if row["determinism"] and not row["determinism"]["same"]:
        codes.append("nondeterministic")
    return codes


def print_pool(name: str, pool: list[dict], size: int) -> None:
    passed = [p for p in pool if not verdict(p)]
    by_style = Counter(p["style"] for p in pool)
    ok_style = Counter(p["style"] for p in passed)
    gate_ok = sum(1 for p in pool if not p["gate"])
    render_ok = sum(1 for p in pool if not p["gate"] and not p["render"])
    text_ok = sum(1 for p in pool if not p["gate"] and not p["render"] and not (p["text"] or {}).get("legible"))
    print(f"{name} ({len(pool)} sketches at {size} px): {len(passed)} pass every layer "
          f"(gate {gate_ok}, render {render_ok}, painted text {text_ok}, determinism {len(passed)})")
    for style in sorted(by_style):
        print(f"  {style:<12} {ok_style[style]:>4} / {by_style[style]}")
    for p in pool:
        if verdict(p):
            print(f"  fails: {p['id']}: {verdict(p)}")
    seconds = sorted(p["seconds"] for p in pool)
    print(f"  render time median {seconds[len(seconds) // 2]:.2f} s, max {seconds[-1]:.2f} s")
    compared = [p["determinism"] for p in pool if p["determinism"]]
    if compared:
        worst = max(d["differing_share"] for d in compared)
        exact = sum(1 for d in compared if d["differing_share"] == 0)
        print(f"  determinism: {len(compared)} same-seed pairs, {exact} without a pixel beyond 32 levels, "
              f"largest difference {worst:.4%} of the pixels (tolerance 0.05%)")
        ms = sorted(p["text"]["elapsed_ms"] for p in pool if p["text"])
        print(f"  painted-text check: median {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms a painting")


def memory_mb(renderer: Renderer) -> float:
    """Resident memory of this process and the renderer's whole Chromium tree."""
    total = psutil.Process().memory_info().rss
    pid = renderer._worker.browser_pid if renderer._worker else None
    if pid and psutil.pid_exists(pid):
        browser = psutil.Process(pid)
        for proc in [browser, *browser.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
    return total / 2**20


def hostile_verdicts(renderer: Renderer, size: int) -> list[dict]:
    from tests.paintenv.adversarial import CASES  # the corpus lives with the tests

    out = []
    for case in tqdm(CASES, desc="hostile corpus", file=sys.stderr):
        gate = gate_source(case.code)
        render = renderer.render(case.code, seed=0, size=size)
        out.append({"id": case.id, "form": case.form, "gate": gate.codes, "gate_passed": gate.passed,
                    "render": render.violations, "render_passed": render.passed,
                    "forbidden_ran": bool(render.bare_calls), "memory_mb": round(memory_mb(renderer), 1)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=200, help="demo pool sketches to render")
    parser.add_argument("--seed-sketches", type=int, default=100, help="warm-start seed sketches to render")
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--no-hostile", action="store_true")
    parser.add_argument("--no-checks", action="store_true", help="skip the painted-text and determinism checks")
    parser.add_argument("--json", type=Path, help="write every verdict here")
    args = parser.parse_args()

    report: dict = {}
    with Renderer(RendererConfig(timeout_s=60)) as renderer:
        checks = not args.no_checks
        pool = pool_verdicts(renderer, generate_pool(args.pool, seed=POOL_SEED, weak_share=0.3), args.size,
                             checks=checks, desc="demo pool")
        report["pool"] = pool
        print_pool("Demo pool", pool, args.size)
        if args.seed_sketches:
            seeds = pool_verdicts(renderer, generate_pool(args.seed_sketches, seed=WARM_START_SEED, weak_share=0.0),
                                  args.size, checks=checks, desc="seed sketches")
            report["seed_sketches"] = seeds
            print_pool("Seed sketches", seeds, args.size)

        if not args.no_hostile:
            hostile = hostile_verdicts(renderer, 128)
            report["hostile"] = hostile
            live = [h for h in hostile if h["form"] not in DEAD_HANDLERS]
            dead = [h for h in hostile if h["form"] in DEAD_HANDLERS]
            print(f"Adversarial corpus ({len(hostile)} cases): "
                  f"{sum(h['gate_passed'] for h in hostile)} pass the gate, "
                  f"{sum(h['render_passed'] for h in live)} of {len(live)} pass the renderer alone; "
                  f"in {len(dead)} the forbidden part sits in an input handler and ran "
                  f"{sum(h['forbidden_ran'] for h in dead)} times")
            memory = [h["memory_mb"] for h in hostile]
            print(f"  memory (this process + Chromium): {memory[0]:.0f} MB after the first case, "
                  f"{max(memory):.0f} MB at most, {memory[-1]:.0f} MB after the last")
            codes = Counter(code for h in hostile for code in h["render"])
            print("  runtime codes: " + ", ".join(f"{c} {n}" for c, n in codes.most_common()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
