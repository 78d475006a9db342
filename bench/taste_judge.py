"""The taste judge's held-out accuracy and calibration on seed-generator references graded by
two rules: the demo's coverage rule (demo.curator.demo_tier) and a palette-harmony rule that
does not look at coverage (paintenv.seedgen.harmony.harmony_tier), each with the old feature set
(paintenv.features.FEATURE_NAMES) and with the new one (TASTE_FEATURE_NAMES), plus an
ablation of the new feature groups.

    .venv/bin/python bench/taste_judge.py [--count 160] [--size 256] [--seed 0] [--splits 5]

Needs no database: it renders `--count` seed sketches in this process's Chromium (2–5 s each
on a shared 2-core box: 11 minutes for 160 at 256 px, once; the PNGs are kept under --cache
and reused, so later runs take ~40 s; a sketch that fails to render is left out), measures
their image features, and then, for each of `--splits` stratified 80/20 train/eval splits, fits the judge on the train split and calibrates and scores it on the eval
split (a pool's split). Figures are over the pooled eval pairs of all splits, per pair kind,
with 95% Wilson intervals over pairs (pairs share paintings, so the intervals are optimistic).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def render_references(count: int, size: int, seed: int, cache: Path) -> list[dict]:
    """[{"id", "style", "palette", "composition", "paint_fraction", "png": path}] for the seed
    pool of `count`, rendered once into `cache`."""
    from paintenv.render_config import RendererConfig
    from paintenv.renderer import Renderer
    from paintenv.seedgen import generate_pool

    folder = cache / f"seed{seed}-n{count}-{size}px"
    folder.mkdir(parents=True, exist_ok=True)
    index = folder / "index.json"
    if index.exists():
        return json.loads(index.read_text(encoding="utf-8"))
    rows = []
    sketches = generate_pool(count, seed=seed)
    with Renderer(RendererConfig(prewarm=False)) as renderer:
        for sketch in tqdm(sketches, desc="rendering", unit="sketch"):
            render = renderer.render(sketch.code, seed=sketch.seed, size=size)
            if not render.png or render.violations:
                continue
            path = folder / f"{sketch.id}.png"
            path.write_bytes(render.png)
            rows.append({"id": sketch.id, "style": sketch.style, "palette": sketch.palette,
                         "composition": sketch.composition, "paint_fraction": render.paint_fraction,
                         "png": str(path)})
    index.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return rows


KINDS = ("love_vs_okay", "okay_vs_reject", "love_vs_reject", "all")
# The new features in groups, for the ablation (paintenv.features' docstring says what each measures).
GROUPS = {
    "colour harmony": ("hue_harmony",),
    "edge softness": ("soft_edge_share",),
    "translucency": ("translucent_share",),
    "composition": ("thirds_distance", "mass_balance"),
    "negative space": ("open_space",),
}


def grade(rows: list[dict], count: int, seed: int) -> dict[str, list[str]]:
    """Each rule's tier per row: the demo's coverage rule and the palette-harmony rule."""
    from demo.curator import demo_tier
    from paintenv.seedgen import generate_pool
    from paintenv.seedgen.harmony import harmony_tier, sketch_palette

    subject_of = {s.id: s.subject_slug for s in generate_pool(count, seed=seed)}
    return {
        "coverage rule (demo)": [demo_tier(style=r["style"], paint_fraction=r["paint_fraction"]) for r in rows],
        "palette-harmony rule": [harmony_tier(sketch_palette(subject_slug=subject_of[r["id"]], style=r["style"],
                                                             name=r["palette"])) for r in rows],
    }


def splits(tiers: list[str], n: int) -> list[np.ndarray]:
    """`n` boolean eval masks, 20% of each tier, stratified, seeded by the split number."""
    masks = []
    for k in range(n):
        rng = np.random.default_rng(1000 + k)
        mask = np.zeros(len(tiers), dtype=bool)
        for tier in set(tiers):
            idx = np.flatnonzero(np.array(tiers) == tier)
            rng.shuffle(idx)
            mask[idx[: max(1, round(0.2 * len(idx)))]] = True
        masks.append(mask)
    return masks


def pooled(features: list[dict], tiers: list[str], masks: list[np.ndarray], names) -> dict:
    """Every split's eval figures pooled: per kind {"hits", "pairs", "ll_before", "ll_after"}
    and the margins of all eval pairs (for the reliability table)."""
    from paintenv.judges.taste import evaluate_taste_model, fit_taste_model

    out = {kind: {"hits": 0.0, "pairs": 0, "ll_before": 0.0, "ll_after": 0.0} for kind in KINDS}
    reliability: dict[int, list[float]] = {}
    for mask in masks:
        train = [(f, t) for f, t, m in zip(features, tiers, mask) if not m]
        held = [(f, t) for f, t, m in zip(features, tiers, mask) if m]
        model = fit_taste_model(train, held_out=held, feature_names=names, calibration_folds=0)
        report = evaluate_taste_model(model, held)
        for kind in KINDS:
            r = report[kind]
            if r["pairs"]:
                out[kind]["hits"] += r["accuracy"] * r["pairs"]
                out[kind]["pairs"] += r["pairs"]
                out[kind]["ll_before"] += r["log_loss_uncalibrated"] * r["pairs"]
                out[kind]["ll_after"] += r["log_loss"] * r["pairs"]
        for row in report["reliability"]:
            bucket = reliability.setdefault(round(row["low"] * 10), [0, 0.0])
            bucket[0] += row["count"]
            bucket[1] += row["observed"] * row["count"]
    out["reliability"] = reliability
    return out


def _accuracy(figures: dict) -> str:
    from paintenv.judges.taste import SMALL_SAMPLE_PAIRS, wilson_interval

    n = figures["pairs"]
    if not n:
        return "        –        "
    low, high = wilson_interval(figures["hits"], n)
    flag = "*" if n < SMALL_SAMPLE_PAIRS else " "
    return f"{figures['hits'] / n:.3f} [{low:.3f}, {high:.3f}]{flag}"


def report(features, rules, args) -> None:
    from paintenv.features import FEATURE_NAMES, TASTE_FEATURE_NAMES

    sets = {"old (30 features)": FEATURE_NAMES, f"new ({len(TASTE_FEATURE_NAMES)} features)": TASTE_FEATURE_NAMES}
    jobs = [(rule, label) for rule in rules for label in sets]
    jobs += [(rule, f"ablation {kind} {group}") for rule in rules for group in GROUPS for kind in ("+", "-")]
    results = {}
    for rule, label in tqdm(jobs, desc="fitting", unit="setting"):
        tiers = rules[rule]
        if label in sets:
            names = sets[label]
        else:
            kind, group = label.split(" ", 2)[1:]
            extra = GROUPS[group]
            names = FEATURE_NAMES + extra if kind == "+" else tuple(n for n in TASTE_FEATURE_NAMES if n not in extra)
        results[rule, label] = pooled(features, tiers, splits(tiers, args.splits), names)

    for rule, tiers in rules.items():
        counts = {t: tiers.count(t) for t in ("love", "okay", "reject")}
        print(f"\n== {rule}: {', '.join(f'{t} {n}' for t, n in counts.items())}; {args.splits} splits of 80/20; "
              "held-out accuracy [95% Wilson], * = under 30 pairs")
        print(f"  {'feature set':20s} " + " ".join(f"{k:24s}" for k in KINDS) + " log-loss T=1 -> calibrated")
        for label in sets:
            r = results[rule, label]
            ll = r["all"]
            print(f"  {label:20s} " + " ".join(f"{_accuracy(r[k]):24s}" for k in KINDS)
                  + f" {ll['ll_before'] / ll['pairs']:.3f} -> {ll['ll_after'] / ll['pairs']:.3f}"
                  f" ({ll['pairs']} pairs)")
        new = results[rule, list(sets)[1]]["reliability"]
        print("  reliability, new features, calibrated (each pair in both orders): "
              + "  ".join(f"{b / 10:.1f}-{(b + 1) / 10:.1f}: {s / n:.2f} of {n}" for b, (n, s) in sorted(new.items())))
        print("  ablation (all pairs; love>okay):")
        for group in GROUPS:
            plus, minus = results[rule, f"ablation + {group}"], results[rule, f"ablation - {group}"]
            print(f"    old + {group:15s} {_accuracy(plus['all'])} ; {_accuracy(plus['love_vs_okay'])}   "
                  f"new - {group:15s} {_accuracy(minus['all'])} ; {_accuracy(minus['love_vs_okay'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=160)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                        / "paintapp" / "taste_bench")
    parser.add_argument("--render-only", action="store_true")
    args = parser.parse_args(argv)
    rows = render_references(args.count, args.size, args.seed, args.cache)
    print(f"{len(rows)} references rendered at {args.size} px")
    if args.render_only:
        return 0
    from paintenv.features import image_features

    features = [image_features(Path(r["png"]).read_bytes()) for r in tqdm(rows, desc="features", unit="image")]
    rules = grade(rows, args.count, args.seed)
    coverage = np.array([r["paint_fraction"] for r in rows])
    rank = {"love": 2, "okay": 1, "reject": 0}
    for rule, tiers in rules.items():
        r = float(np.corrcoef([rank[t] for t in tiers], coverage)[0, 1])
        print(f"{rule}: Pearson correlation of tier (love 2, okay 1, reject 0) with paint coverage {r:+.3f}")
    report(features, rules, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
