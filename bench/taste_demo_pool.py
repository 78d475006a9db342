"""The taste judge on a frozen pool of the studio (default: `demo`, after `make demo`): held-out
accuracy per pair kind with 95% Wilson intervals, and the log-loss of the eval split's pairs at
temperature 1 and calibrated, with the old feature set (FEATURE_NAMES) and the new one
(TASTE_FEATURE_NAMES), fitted on the pool's train split as its freeze does.

    .venv/bin/python bench/taste_demo_pool.py [--pool demo:v1]

Features come from the database's kept measurements (curation.measuring), measured and kept
first where missing (~0.1–0.2 s a reference). The calibrated log-loss is in-sample for the one
temperature it sets (fitted on these same eval pairs): the out-of-fold line is the check it
never saw (see paintenv.judges.taste).
"""
from __future__ import annotations

import argparse
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
django.setup()

from curation.measuring import reference_features  # noqa: E402
from curation.selectors import pool_get  # noqa: E402
from paintenv.features import FEATURE_NAMES, TASTE_FEATURE_NAMES  # noqa: E402
from paintenv.judges.taste import PAIR_KINDS, evaluate_taste_model, fit_taste_model  # noqa: E402


def items(pool, split: str) -> list[tuple[dict, str]]:
    members = list(pool.members.filter(split=split).select_related("reference").order_by("id"))
    features = reference_features(references=[m.reference for m in members])
    return [(f, m.tier) for f, m in zip(features, members, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", default="demo")
    args = parser.parse_args()
    pool = pool_get(args.pool)
    train, held_out = items(pool, "train"), items(pool, "eval")
    print(f"pool {pool.label}: {len(train)} train, {len(held_out)} eval references")
    kinds = ["_vs_".join(kind) for kind in PAIR_KINDS] + ["all"]
    for label, names in (("old features (30)", FEATURE_NAMES), (f"new features ({len(TASTE_FEATURE_NAMES)})",
                                                                 TASTE_FEATURE_NAMES)):
        model = fit_taste_model(train, held_out=held_out, feature_names=names)
        figures = evaluate_taste_model(model, held_out)
        cal = model.calibration
        print(f"\n{label}: temperature {model.temperature:.2f}; eval-pair log-loss {cal.get('log_loss_before')} "
              f"-> {cal.get('log_loss_after')} (in-sample for T)", end="")
        oof = cal.get("out_of_fold")
        print(f"; train pairs out of fold {oof['log_loss_before']} -> {oof['log_loss_after']}" if oof else "")
        for kind in kinds:
            row = figures.get(kind) or {}
            if row.get("accuracy") is None:
                print(f"  {kind:>15}: no pairs")
                continue
            low, high = row["interval"]
            print(f"  {kind:>15}: {row['accuracy']:.3f} [{low:.3f}, {high:.3f}] over {row['pairs']} pairs"
                  f"{' (small sample)' if row.get('small_sample') else ''}; log-loss "
                  f"{row['log_loss_uncalibrated']:.3f} -> {row['log_loss']:.3f}")


if __name__ == "__main__":
    main()
