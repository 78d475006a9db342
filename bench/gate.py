"""Static gate speed: milliseconds per sketch for the seed sketches and a 300-line one.

    .venv/bin/python bench/gate.py
"""
from __future__ import annotations

import statistics
import time

from paintenv.gate import gate_source
from paintenv.seedgen import generate_pool


def timed(code: str, repeat: int = 15) -> float:
    gate_source(code)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        gate_source(code)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    seeds = generate_pool(40, seed=1)
    per_sketch = [timed(s.code, 5) for s in seeds]
    chars = [len(s.code) for s in seeds]
    body = seeds[0].code
    long_code = "\n".join(body.splitlines() * 3)
    print(f"seed sketches (n={len(seeds)}, median {statistics.median(chars):.0f} chars): "
          f"median {statistics.median(per_sketch):.1f} ms, max {max(per_sketch):.1f} ms")
    print(f"{len(long_code.splitlines())}-line sketch: {timed(long_code):.1f} ms")


if __name__ == "__main__":
    main()
