"""One painting's judge calls (4 references × both orders) against a VLM endpoint that takes
a fixed time per request, at several concurrency bounds (PAINTAPP_JUDGE_CONCURRENCY).

    .venv/bin/python bench/judge_concurrency.py [--latency 0.5] [--bounds 1 2 4 8] [--paintings 3]

The endpoint is tests/support/fake_vlm_server.py (a real local HTTP server) delaying each
answer by --latency seconds, as a busy VLM server would; a real server's latency grows with
the requests it batches, so on a GPU box measure against `make vlm-server` instead
(--base-url). Prints the median wall time per painting for each bound.
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paintenv.judges import judge_against_references  # noqa: E402
from paintenv.judges.vlm import VLMConfig, VLMJudge  # noqa: E402
from tests.support.fake_vlm_server import FakeVLMServer  # noqa: E402


def png(rows: int) -> bytes:
    pixels = np.full((64, 64, 3), 255, dtype=np.uint8)
    pixels[:rows] = (200, 90, 80)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the fake endpoint takes per request")
    parser.add_argument("--bounds", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--paintings", type=int, default=3)
    parser.add_argument("--base-url", default=None, help="a real endpoint instead of the fake one")
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    server = None if args.base_url else FakeVLMServer().start()
    base_url = args.base_url or server.base_url
    references = [(i, png(8 + 12 * i)) for i in range(4)]
    print(f"{'bound':>5}  {'s per painting':>14}  (8 calls, {'fake endpoint, ' + str(args.latency) + ' s each' if server else base_url})")
    try:
        for bound in args.bounds:
            judge = VLMJudge(VLMConfig(base_url=base_url, model=args.model or "bench", timeout_s=60, retries=0)) \
                if server else VLMJudge(VLMConfig.from_env(base_url=base_url, **({"model": args.model} if args.model else {})))
            times = []
            for painting in range(args.paintings):
                if server:
                    server.slow(args.latency, times=8)
                started = time.perf_counter()
                result = judge_against_references(judge, png(30 + painting), references, prompt="a hibiscus",
                                                  concurrency=bound)
                times.append(time.perf_counter() - started)
                if result.dropped:
                    print(f"  {result.dropped} reference(s) dropped: {result.to_dict()}", file=sys.stderr)
            judge.close()
            print(f"{bound:>5}  {statistics.median(times):>14.2f}")
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
