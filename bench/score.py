"""Score the seeded demo pool with the embedded scorers: quality AUC, taste accuracy, speed.

    PYTHONPATH=. .venv/bin/python bench/score.py         # 200 sketches at 384 px
    .venv/bin/python bench/score.py --count 60 --size 256
    .venv/bin/python bench/score.py --render-only        # just fill the PNG cache

Renders (or loads from bench/out/seeds/) N seed sketches from `seedgen.generate_pool`,
then prints on stdout:
  * the `features` quality scorer's AUC, good vs weak, overall and per weak style;
  * the `taste` judge's held-out pairwise accuracy (love vs okay, okay vs reject, love vs
    reject) on a stratified 80/20 split of the pool graded by the demo rule
    (demo/curator.py: weak styles reject; good love at 12-40% paint, else okay);
  * scoring throughput per worker process: features quality + taste against 4
    references in both orders, per painting, through judge_against_references with one
    call at a time and with PAINTAPP_JUDGE_CONCURRENCY's default of 8.
Progress goes to stderr. The cache key is a hash of (code, seed, size), so a changed
generator re-renders only what changed.
"""
from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parents[1]

from paintenv.image import paint_fraction  # noqa: E402
from paintenv.seedgen import WEAK_STYLES, SeedSketch, generate_pool  # noqa: E402

CACHE_DIR = ROOT / "bench" / "out" / "seeds"
LOVE_COVERAGE = (0.12, 0.40)  # the demo rule's balanced band (demo/curator.py)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def demo_tier(style: str, fraction: float) -> str:
    """The documented demo grading rule, replicated (paintenv must not import curation)."""
    if style != "good":
        return "reject"
    low, high = LOVE_COVERAGE
    return "love" if low <= fraction <= high else "okay"


def cache_path(sketch: SeedSketch, size: int, cache_dir: Path = CACHE_DIR) -> Path:
    key = hashlib.sha1(f"{sketch.seed}:{size}:{sketch.code}".encode()).hexdigest()[:12]
    return cache_dir / f"s{size}" / f"{sketch.id}-{key}.png"


def render_pool(sketches: list[SeedSketch], size: int, cache_dir: Path = CACHE_DIR) -> list[bytes | None]:
    """PNG per sketch, from the cache or rendered now (None when a render fails)."""
    pngs: list[bytes | None] = [None] * len(sketches)
    todo = []
    for i, sk in enumerate(sketches):
        path = cache_path(sk, size, cache_dir)
        if path.exists():
            pngs[i] = path.read_bytes()
        else:
            todo.append(i)
    if todo:
        from paintenv.render_config import RendererConfig
        from paintenv.renderer import Renderer

        progress(f"rendering {len(todo)} of {len(sketches)} sketches at {size} px "
                 f"({len(sketches) - len(todo)} cached)")
        started = time.perf_counter()
        with Renderer(RendererConfig(prewarm=False)) as renderer:
            for n, i in enumerate(todo, 1):
                sk = sketches[i]
                render = renderer.render(sk.code, seed=sk.seed, size=size)
                if render.png is None:
                    progress(f"  {sk.id}: no image ({render.violations})")
                    continue
                path = cache_path(sk, size, cache_dir)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(render.png)
                pngs[i] = render.png
                if n % 10 == 0 or n == len(todo):
                    rate = n / (time.perf_counter() - started)
                    progress(f"  {n}/{len(todo)} rendered ({rate * 60:.0f}/min)")
    return pngs


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(random positive scores above random negative), ties count half."""
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def stratified_split(tiers: list[str], test_share: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices (train, eval): each tier split test_share to eval, shuffled with `seed`."""
    rng = random.Random(seed)
    by_tier: dict[str, list[int]] = defaultdict(list)
    for i, tier in enumerate(tiers):
        by_tier[tier].append(i)
    train, held = [], []
    for tier in sorted(by_tier):
        idx = by_tier[tier]
        rng.shuffle(idx)
        k = round(len(idx) * test_share)
        held += idx[:k]
        train += idx[k:]
    return sorted(train), sorted(held)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--seed", type=int, default=0, help="generate_pool seed")
    parser.add_argument("--weak-share", type=float, default=0.3)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--splits", type=int, default=10, help="split seeds for the accuracy spread")
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args(argv)

    sketches = generate_pool(args.count, seed=args.seed, weak_share=args.weak_share)
    pngs = render_pool(sketches, args.size)
    if args.render_only:
        return 0

    from paintenv.features import clear_feature_cache, image_features
    from paintenv.judges import judge_against_references
    from paintenv.judges.taste import TasteJudge, evaluate_taste_model, fit_taste_model
    from paintenv.quality.features import FeatureQualityScorer

    items = [(sk, png) for sk, png in zip(sketches, pngs) if png is not None]
    if len(items) < len(sketches):
        print(f"note: {len(sketches) - len(items)} sketches did not render and are left out")
    progress(f"scoring {len(items)} paintings")

    # --- quality: features scorer, good vs weak
    scorer = FeatureQualityScorer()
    scores = {sk.id: scorer.score(png, prompt=sk.prompt) for sk, png in items}
    good = [scores[sk.id] for sk, _ in items if sk.style == "good"]
    print(f"pool: {len(items)} paintings at {args.size} px "
          f"({len(good)} good, {len(items) - len(good)} weak; generate_pool seed={args.seed})")
    print(f"features quality AUC good vs weak: {auc(good, [scores[sk.id] for sk, _ in items if sk.style != 'good']):.3f}")
    for style in WEAK_STYLES:
        weak = [scores[sk.id] for sk, _ in items if sk.style == style]
        if weak:
            print(f"  vs {style:10s} (n={len(weak):3d}): AUC {auc(good, weak):.3f}  "
                  f"mean score {fmean(weak):.3f}")
    print(f"  good mean score {fmean(good):.3f}")

    # --- taste: demo rule grades, stratified 80/20 split
    feats = [image_features(png) for _, png in items]
    tiers = [demo_tier(sk.style, paint_fraction(png)) for sk, png in items]
    train_idx, eval_idx = stratified_split(tiers, 0.2, args.split_seed)
    counts = {t: tiers.count(t) for t in ("love", "okay", "reject")}
    print(f"demo grades: {counts}; split train {len(train_idx)} / eval {len(eval_idx)}")
    model = fit_taste_model([(feats[i], tiers[i]) for i in train_idx], seed=args.split_seed)
    report = evaluate_taste_model(model, [(feats[i], tiers[i]) for i in eval_idx])
    train_report = evaluate_taste_model(model, [(feats[i], tiers[i]) for i in train_idx])
    print("taste judge pairwise accuracy (held-out | train):")
    for key in ("love_vs_okay", "okay_vs_reject", "love_vs_reject"):
        r, t = report[key], train_report[key]
        print(f"  {key:15s} {r['accuracy']:.3f} ({r['pairs']} pairs) | {t['accuracy']:.3f} ({t['pairs']} pairs)")
    top = sorted(zip(model.feature_names, model.weights), key=lambda kv: -abs(kv[1]))[:6]
    print("  largest weights: " + ", ".join(f"{n} {w:+.2f}" for n, w in top))
    # One 40-painting eval split is noisy (a weak style can land 2 or 6 of its 12 there):
    # the spread over several split seeds says how much the figure above can be trusted.
    kinds = ("love_vs_okay", "okay_vs_reject", "love_vs_reject")
    runs = []
    for split_seed in range(args.splits):
        tr, ev = stratified_split(tiers, 0.2, split_seed)
        m = fit_taste_model([(feats[i], tiers[i]) for i in tr], seed=split_seed)
        rep = evaluate_taste_model(m, [(feats[i], tiers[i]) for i in ev])
        runs.append([rep[k]["accuracy"] for k in kinds])
    if runs:
        arr = [[r[j] for r in runs if r[j] is not None] for j in range(len(kinds))]
        print(f"  over {args.splits} split seeds (held-out mean / min / max):")
        for key, values in zip(kinds, arr):
            if values:
                print(f"  {key:15s} {fmean(values):.3f} / {min(values):.3f} / {max(values):.3f}")

    # --- throughput: one worker process, fresh judge/scorer/caches, 4 references both orders,
    # through judge_against_references as a score worker calls it: one call at a time, then 8 threads
    refs = [png for (sk, png), tier in zip(items, tiers) if tier == "love"][:2]
    refs += [png for (sk, png), tier in zip(items, tiers) if tier == "okay"][:2]
    candidates = [png for _, png in items]
    for concurrency in (1, 8):
        clear_feature_cache()
        scorer, judge = FeatureQualityScorer(), TasteJudge(model=model)
        started = time.perf_counter()
        for png in candidates:
            scorer.score(png, prompt="")
            judge_against_references(judge, png, list(enumerate(refs)), prompt="", concurrency=concurrency)
        elapsed = time.perf_counter() - started
        print(f"throughput (1 process, {args.size} px, features quality + taste vs {len(refs)} refs x 2 orders, "
              f"{concurrency} judge call(s) at once): "
              f"{len(candidates) / elapsed:.1f} paintings/s ({elapsed / len(candidates) * 1000:.1f} ms each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
