"""The VLM judge against a served model and the HPSv3 scorer: seconds per verdict and per score.

    .venv/bin/python bench/served_judge.py                      # the tests' tiny models, on CPU
    .venv/bin/python bench/served_judge.py --base-url http://127.0.0.1:8001/v1 \\
        --model Qwen/Qwen3-VL-30B-A3B-Instruct                  # a running vLLM / TGI endpoint
    .venv/bin/python bench/served_judge.py --hpsv3-checkpoint HPSv3.safetensors \\
        --hpsv3-base Qwen/Qwen2-VL-7B-Instruct --device cuda     # the published HPSv3 (GPU box)

Without --base-url it builds the tests' tiny models if needed (tests/support/tiny_vlm.py) and
starts `transformers serve` on the tiny judge (start-up timed). It prints the median and
slowest seconds of N judge calls (one order each; both orders make a reference's verdict), how
many resolved, and HPSv3's load time and seconds per 600×600 painting.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paintenv.judges.vlm import VLMConfig, VLMJudge  # noqa: E402
from paintenv.quality.hpsv3 import HPSv3Scorer  # noqa: E402
from tests.support.tiny_vlm import ensure_built, random_painting  # noqa: E402
from tests.support.vlm_server import VLMServer  # noqa: E402

PROMPT = "Paint a peach hibiscus in loose watercolour."


def timed(calls: int, call) -> list[float]:
    seconds = []
    for index in range(calls):
        started = time.perf_counter()
        call(index)
        seconds.append(time.perf_counter() - started)
    return seconds


def report(label: str, seconds: list[float]) -> None:
    print(f"{label}: median {statistics.median(seconds):.3f} s, slowest {max(seconds):.3f} s over {len(seconds)}")


def bench_judge(base_url: str, model: str, calls: int) -> None:
    rng = random.Random(0)
    pairs = [(random_painting(rng, 600), random_painting(rng, 600)) for _ in range(calls)]
    resolved = []
    with VLMJudge(VLMConfig(base_url=base_url, model=model, retries=0)) as judge:
        def call(index: int) -> None:
            p, _reason = judge.compare(*pairs[index], prompt=PROMPT, candidate_first=index % 2 == 0)
            resolved.append(p is not None)

        report(f"judge call ({model})", timed(calls, call))
        print(f"  resolved {sum(resolved)}/{calls}; structured output: {judge.structured_mode}")


def bench_hpsv3(checkpoint: str, base_model: str | None, device: str, calls: int) -> None:
    started = time.perf_counter()
    scorer = HPSv3Scorer(checkpoint=checkpoint, base_model=base_model, device=device)
    print(f"hpsv3 load ({base_model}, {device}): {time.perf_counter() - started:.1f} s")
    rng = random.Random(1)
    paintings = [random_painting(rng, 600) for _ in range(calls)]
    scores = []
    report("hpsv3 score, 600x600", timed(calls, lambda index: scores.append(scorer.score(paintings[index], prompt=PROMPT))))
    print(f"  scores {min(scores):.4f}..{max(scores):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="a running OpenAI-compatible endpoint (default: serve the tiny judge)")
    parser.add_argument("--model", help="the model name on --base-url")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--hpsv3-checkpoint", help="default: the tiny HPSv3 checkpoint")
    parser.add_argument("--hpsv3-base", help="default: the tiny Qwen2-VL base")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.base_url and not args.model:
        parser.error("--base-url needs --model")

    tiny = None
    if not (args.base_url and args.hpsv3_checkpoint):
        started = time.perf_counter()
        tiny = ensure_built()
        print(f"tiny models ready in {time.perf_counter() - started:.1f} s: {tiny}")
    if args.base_url:
        bench_judge(args.base_url, args.model, args.calls)
    else:
        log = Path(tempfile.mkdtemp(prefix="paintapp-served-judge-")) / "serve.log"
        started = time.perf_counter()
        with VLMServer(tiny / "judge", log) as server:
            print(f"transformers serve start-up: {time.perf_counter() - started:.1f} s (log {log})")
            bench_judge(server.base_url, server.model, args.calls)
    if args.hpsv3_checkpoint:  # the base from --hpsv3-base, else PAINTAPP_HPSV3_BASE_MODEL or its default
        bench_hpsv3(args.hpsv3_checkpoint, args.hpsv3_base, args.device, min(args.calls, 10))
    else:
        bench_hpsv3(str(tiny / "HPSv3.safetensors"), str(tiny / "hpsv3-base"), args.device, min(args.calls, 10))


if __name__ == "__main__":
    main()
