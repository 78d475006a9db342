"""Image measurement speed: milliseconds to measure the paint fraction of one painting.

    .venv/bin/python bench/image.py

Every render measures its painting once, so this cost is part of each render's time.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from paintenv.image import paint_fraction


def main() -> None:
    rng = np.random.default_rng(1)
    for size in (256, 600, 1200):
        img = np.full((size, size, 3), 250, dtype=np.uint8)
        quarter = size // 2
        img[size // 6:size // 6 + quarter, size // 6:size // 6 + quarter] = rng.integers(
            0, 255, (quarter, quarter, 3), dtype=np.uint8)
        paint_fraction(img)
        times = []
        for _ in range(15):
            t = time.perf_counter()
            paint_fraction(img)
            times.append(time.perf_counter() - t)
        print(f"paint_fraction {size}x{size}: median {statistics.median(times) * 1000:.1f} ms, "
              f"max {max(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
