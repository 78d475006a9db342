"""Tiny-painter benchmark: build time, size, and how often its sampled sketches pass.

    .venv/bin/python bench/tiny_model.py [--model DIR] [--quick] [--samples 32] [--size 256]
                                         [--threads 1] [--out DIR] [--no-render]

Without --model it builds the default spec (or --quick's) into a temporary directory (or
--out) first. Then it samples replies at temperature 1 (top_p 0.95, top_k 20, subjects in
turn) and prints the share that passes the static gate and the share that also renders
non-blank with no runtime violations. Timings on the shared 2-core box are noisy: the CPU
seconds (user + system) say more than the wall clock when other jobs run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="an already built model directory (skips the build)")
    parser.add_argument("--out", type=Path, help="build into this directory instead of a temporary one")
    parser.add_argument("--quick", action="store_true", help="build the small test spec")
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=256, help="render size in pixels")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (subject order and torch)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for build and sampling")
    parser.add_argument("--no-render", action="store_true", help="static gate only")
    parser.add_argument("--json", type=Path, help="also write the figures (and every reply) here")
    args = parser.parse_args()

    import dataclasses

    import datasets
    from transformers.utils import logging as hf_logging

    from demo.pass_rate import sample_pass_rate
    from demo.tiny_model import QUICK_SPEC, TinyModelSpec, build_tiny_model, read_model_info
    from paintenv.render_config import RendererConfig
    from paintenv.renderer import Renderer

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    figures: dict = {}
    scratch = None
    model = args.model
    if model is None:
        spec = dataclasses.replace(QUICK_SPEC if args.quick else TinyModelSpec(), torch_threads=args.threads)
        if args.out:
            model = args.out
        else:
            scratch = tempfile.TemporaryDirectory(prefix="tiny-bench-")
            model = Path(scratch.name) / "tiny-painter"
        print(f"building {'the quick' if args.quick else 'the default'} spec into {model} ...", file=sys.stderr)
        wall, cpu = time.perf_counter(), _cpu_seconds()

        def progress(stage: str, done: int, total: int, info: dict) -> None:
            if stage != "sft" or (done and done % 100 == 0 and not info):
                print(f"  {stage} {done}/{total}  {time.perf_counter() - wall:.0f} s", file=sys.stderr)

        build_tiny_model(model, spec, progress=progress)
        figures["build_wall_s"] = round(time.perf_counter() - wall, 1)
        figures["build_cpu_s"] = round(_cpu_seconds() - cpu, 1)

    info = read_model_info(model)
    build = info.get("build", {})
    sft = build.get("sft", {})
    renderer = None if args.no_render else Renderer(RendererConfig(prewarm=False))
    wall, cpu = time.perf_counter(), _cpu_seconds()
    try:
        result = sample_pass_rate(model, n=args.samples, temperature=args.temperature, renderer=renderer,
                                  size=args.size, seed=args.seed, torch_threads=args.threads)
    finally:
        if renderer is not None:
            renderer.close()
    figures["sample_wall_s"] = round(time.perf_counter() - wall, 1)

    rows = [
        ("model", str(model)),
        ("parameters", f"{build.get('parameters', 0):,}"),
        ("tokens / example", f"prompt {sft.get('prompt_tokens_mean')}, sketch {sft.get('completion_tokens_mean')} "
                             f"(max {sft.get('completion_tokens_max')})"),
        ("SFT", f"{sft.get('examples')} sketches, {sft.get('steps')} steps, loss mean {sft.get('train_loss')} "
                f"final {sft.get('final_loss')}, {sft.get('seconds')} s"),
    ]
    if "build_wall_s" in figures:
        rows.append(("build time", f"{figures['build_wall_s']} s wall, {figures['build_cpu_s']} s CPU"))
    rows += [
        ("gate pass", f"{result['gate_pass']:.0%} of {result['n']} (temperature {args.temperature:g}, "
                      f"seed {args.seed})"),
        ("render pass", "skipped" if result["render_pass"] is None
         else f"{result['render_pass']:.0%} (gate + non-blank, no runtime violation, {args.size} px)"),
        ("ended with eos", f"{result['stopped']:.0%}, mean reply {result['completion_tokens_mean']} tokens"),
        ("violations", ", ".join(f"{k} {v}" for k, v in result["violations"].items()) or "none"),
        ("sampling", f"{result['generation_seconds']} s generate, {result['render_seconds']} s gate + render, "
                     f"{figures['sample_wall_s']} s in all"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "info": info, "result": result}, indent=2))
    if scratch is not None:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
