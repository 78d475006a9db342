"""How long does the most-uncertain-first order take? (curation.active, the focus view's
"Ungraded, most uncertain first")

Paints N synthetic 600×600 sheets (translucent washes; a curator "loves" the balanced ones,
finds the sparse ones okay and rejects the rest, with some noise), grades GRADED of them and
times, as the view does it: the image features of every sheet (cold, then read back as kept
in the database by curation.measuring, inside a transaction rolled back at the end, so the
library is left as it was; their image files go to a temporary folder), the judge's fit with its out-of-fold checks, and scoring the
ungraded ones.

    .venv/bin/python bench/active_grading.py [--count 200] [--graded 150]
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time

import django
import numpy as np
from PIL import Image, ImageDraw

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="active-grading-")  # the sheets' files are not kept either
django.setup()

from django.db import transaction  # noqa: E402

from curation.active import entropy_bits, judge_fit, tier_distribution  # noqa: E402
from curation.measuring import reference_features  # noqa: E402
from curation.services import reference_create  # noqa: E402
from paintenv.features import image_features  # noqa: E402


def sheet(rng: np.random.Generator, washes: int) -> bytes:
    image = Image.new("RGB", (600, 600), (250, 247, 240))
    layer = ImageDraw.Draw(image, "RGBA")
    for _ in range(washes):
        x, y = rng.integers(0, 600, 2)
        rx, ry = rng.integers(20, 140, 2)
        colour = tuple(int(c) for c in rng.integers(20, 220, 3)) + (int(rng.integers(40, 140)),)
        layer.ellipse((x - rx, y - ry, x + rx, y + ry), fill=colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--graded", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    washes = rng.integers(1, 30, args.count)
    pngs = [sheet(rng, int(n)) for n in washes]

    started = time.perf_counter()
    features = [image_features(png) for png in pngs]
    cold = time.perf_counter() - started
    with transaction.atomic():  # rolled back: the sheets never stay in the library
        references = [reference_create(png=png, width=600, height=600, provenance="upload")[0] for png in pngs]
        reference_features(references=references)  # measured and kept
        started = time.perf_counter()
        reference_features(references=references)
        kept = time.perf_counter() - started
        transaction.set_rollback(True)
    noisy = washes + rng.normal(0, 3, args.count)
    tiers = ["love" if 8 <= n <= 18 else "okay" if n < 8 else "reject" for n in noisy]
    graded = list(zip(features[:args.graded], tiers[:args.graded], strict=True))
    ungraded = features[args.graded:]

    fits, scores = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        model, by_tier = judge_fit(graded)
        fits.append(time.perf_counter() - started)
        started = time.perf_counter()
        entropy_bits(tier_distribution(np.array([model.utility(f) for f in ungraded]), by_tier))
        scores.append(time.perf_counter() - started)
    counts = {tier: tiers[:args.graded].count(tier) for tier in ("love", "okay", "reject")}
    print(f"{args.count} sheets, {args.graded} graded {counts}, {args.count - args.graded} to order")
    print(f"features, cold: {cold:.2f} s ({1000 * cold / args.count:.1f} ms a sheet); "
          f"read back as kept: {1000 * kept:.0f} ms for all {args.count}")
    print(f"fit (1 + out-of-fold judges): median {statistics.median(fits):.3f} s over {args.repeat}")
    print(f"scoring the ungraded: median {1000 * statistics.median(scores):.1f} ms")


if __name__ == "__main__":
    main()
