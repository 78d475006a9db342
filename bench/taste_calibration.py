"""The taste judge's calibration on a frozen pool of the studio's database (after `make demo`,
which builds the `demo` pool and trains its taste judge).

    .venv/bin/python bench/taste_calibration.py [--pool demo] [--run ID ...] [--retrain]

Prints the temperature and the held-out pairs it was fitted on (their log-loss before →
after), the log-loss of train pairs out of fold (which it never saw), the held-out (eval
split) accuracy and log-loss at temperature 1 and calibrated, and
how often P(candidate beats a love reference) lies within [0.02, 0.98] at temperature 1 and
calibrated — for the references that are no train member of the pool (its eval members and
the other seed references, rejects included) and, with --run, for each run's rollouts.
--retrain trains the pool's taste model again first, as a score worker does at freeze time.
--save-features FILE writes every seed reference's image features, demo grade and split in
the pool (what tests/paintenv/data/demo_pool_features.json holds, from the pool `make demo`
renders at 512 px).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")

import django  # noqa: E402

django.setup()

from django.core.files.storage import default_storage  # noqa: E402

from curation.models import Grade, Reference, TasteModel  # noqa: E402
from curation.selectors import pool_get  # noqa: E402
from curation.taste import taste_model_for, taste_model_train  # noqa: E402
from paintenv.features import image_features  # noqa: E402
from paintenv.judges.taste import TasteJudge  # noqa: E402
from paintenv.judges.taste import TasteModel as FittedTasteModel  # noqa: E402
from training.models import Rollout  # noqa: E402

BAND = (0.02, 0.98)


def _read(name: str) -> bytes:
    with default_storage.open(name, "rb") as fh:
        return fh.read()


def _share_in_band(judge: TasteJudge, candidates: list[bytes], references: list[bytes]) -> tuple[float, int]:
    """(share of P(candidate beats reference) within BAND, number of comparisons)."""
    probabilities = [judge.compare(c, r, prompt="") for c in candidates for r in references]
    answered = [p for p in probabilities if p is not None]
    inside = sum(BAND[0] <= p <= BAND[1] for p in answered)
    return (inside / len(answered) if answered else float("nan")), len(answered)


def _print_band(label: str, calibrated: TasteJudge, raw: TasteJudge, candidates: list[bytes], refs: list[bytes]) -> None:
    before, n = _share_in_band(raw, candidates, refs)
    after, _ = _share_in_band(calibrated, candidates, refs)
    print(f"  {label}: {len(candidates)} paintings x {len(refs)} love references = {n} comparisons; "
          f"P within [{BAND[0]}, {BAND[1]}]: {before:.1%} at temperature 1 -> {after:.1%} calibrated")


def _save_features(pool, path: Path) -> None:
    split_of = dict(pool.members.values_list("reference_id", "split"))
    tier_of = dict(Grade.objects.filter(curator=pool.curator).values_list("reference_id", "tier"))
    rows = [
        {"name": r.original_name, "tier": tier_of.get(r.id), "split": split_of.get(r.id),
         # 7 significant digits: the features are float32 sums, so this keeps all they hold
         "features": {k: float(f"{v:.7g}") for k, v in image_features(_read(r.image)).items()}}
        for r in Reference.objects.order_by("id")
    ]
    data = {"pool": pool.label, "curator": pool.curator.get_username(), "made_by": "bench/taste_calibration.py --save-features",
            "paintings": rows}
    lines = ",\n".join(json.dumps(row) for row in rows)  # one painting a line
    head = json.dumps({k: v for k, v in data.items() if k != "paintings"})[:-1]
    path.write_text(f'{head}, "paintings": [\n{lines}\n]}}\n', encoding="utf-8")
    print(f"wrote {len(rows)} references' features to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", default="demo", help="NAME or NAME:VERSION")
    parser.add_argument("--run", type=int, action="append", default=[], help="a run id whose rollouts to judge")
    parser.add_argument("--retrain", action="store_true", help="train the pool's taste model again first")
    parser.add_argument("--save-features", type=Path, help="write the references' features, grades and splits here")
    args = parser.parse_args(argv)

    pool = pool_get(args.pool)
    if args.save_features:
        _save_features(pool, args.save_features)
    record: TasteModel = taste_model_train(pool=pool) if args.retrain else taste_model_for(pool)
    model = FittedTasteModel.from_dict(record.params)
    calibration = model.calibration
    print(f"pool {pool.name}:v{pool.version}: trained on {record.train_pairs} ordered pairs "
          f"({', '.join(f'{k} {v}' for k, v in model.item_counts.items())} paintings)")
    if calibration.get("method"):
        print(f"temperature {model.temperature:.3f}, fitted on {calibration['pairs']} held-out pairs: their "
              f"log-loss {calibration['log_loss_before']:.4f} -> {calibration['log_loss_after']:.4f} (in-sample for T)")
        check = calibration.get("out_of_fold")
        if check:
            print(f"  train pairs out of fold ({check['folds']} folds, {check['pairs']} pairs, never seen by T): "
                  f"log-loss {check['log_loss_before']:.4f} -> {check['log_loss_after']:.4f}")
    else:
        print(f"temperature 1: {calibration.get('skipped', 'a model trained before calibration existed')}")
    print("held-out pairs (eval split): accuracy; log-loss at temperature 1 -> calibrated")
    for kind, figures in record.accuracy.items():
        if kind in ("reliability", "by_curator"):  # not a pair kind (see evaluate_taste_model, curation.taste)
            continue
        if figures.get("pairs") and figures.get("log_loss") is not None:
            print(f"  {kind:15s} {figures['accuracy']:.3f}; {figures['log_loss_uncalibrated']:.4f} -> "
                  f"{figures['log_loss']:.4f} ({figures['pairs']} pairs)")

    members = list(pool.members.select_related("reference"))
    train_ids = {m.reference_id for m in members if m.split == "train"}
    love_refs = [_read(m.reference.image) for m in members if m.split == "train" and m.tier == "love"]
    if not love_refs:
        print("the pool has no love reference in its train split: nothing to compare against")
        return 0
    calibrated = TasteJudge(model=model, params={"cache_size": 4096})
    raw = TasteJudge(model=dataclasses.replace(model, temperature=1.0), params={"cache_size": 4096})
    others = [_read(r.image) for r in Reference.objects.exclude(id__in=train_ids).order_by("id")]
    print("P(candidate beats a love reference of the train split):")
    _print_band("references outside the train split", calibrated, raw, others, love_refs)
    for run_id in args.run:
        pngs = [_read(name) for name in Rollout.objects.filter(run_id=run_id).exclude(png="")
                .order_by("step", "group", "position").values_list("png", flat=True)]
        _print_band(f"run {run_id}'s rollouts", calibrated, raw, pngs, love_refs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
