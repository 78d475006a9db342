"""`manage.py build_tiny_model` — build the embedded tiny painter (tokenizer, model, SFT warm
start) and report how often its sampled sketches pass.

    build_tiny_model [--arch qwen3|qwen3_5_moe] [--out DIR] [--sketches N] [--revisions N] [--keeps N] [--epochs E]
                     [--quick] [--samples N] [--render-size PX] [--no-render]

`--arch qwen3` (the default) builds the text model (demo/tiny_model.py), `qwen3_5_moe` a
Qwen3.5-MoE vision-language model with its processor (demo/tiny_vl_model.py). Default
output: settings.MODELS_DIR / "tiny-painter" (the text model) or "tiny-painter-qwen3_5_moe".
`--quick` builds the small spec the tests use (about a minute). `--revisions N` sets the revision
examples of the warm start (a flawed draft, the studio's real feedback on it, the good sketch;
the demo spec has 48): judging their drafts renders some in Chromium (~1-2 min of the build). The report goes to stdout,
the progress bar to stderr.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

ARCHES = ("qwen3", "qwen3_5_moe")


class Command(BaseCommand):
    help = "Build a tiny painter (tokenizer + model + SFT warm start) and measure its pass rate."

    def add_arguments(self, parser):
        parser.add_argument("--arch", choices=ARCHES, default="qwen3",
                            help="qwen3: the text model; qwen3_5_moe: a Qwen3.5-MoE vision-language model")
        parser.add_argument("--out", type=Path, default=None, help="output directory (default MODELS_DIR/tiny-painter)")
        parser.add_argument("--sketches", type=int, default=None, help="SFT sketches from the seed generator")
        parser.add_argument("--revisions", type=int, default=None,
                            help="revision examples (flawed draft + the studio's real feedback -> good sketch); "
                                 "judging them renders some drafts in Chromium")
        parser.add_argument("--keeps", type=int, default=None,
                            help="keep examples (a good draft with its passing feedback -> KEEP); "
                                 "default: the spec's (32 for the demo model)")
        parser.add_argument("--epochs", type=float, default=None, help="SFT epochs")
        parser.add_argument("--quick", action="store_true", help="the small, fast spec the tests use")
        parser.add_argument("--samples", type=int, default=32, help="samples for the pass rate (0 skips it)")
        parser.add_argument("--temperature", type=float, default=1.0)
        parser.add_argument("--render-size", type=int, default=256, help="render size for the pass rate")
        parser.add_argument("--no-render", action="store_true", help="static gate only, no Chromium")

    def handle(self, *args, arch, out, sketches, revisions, keeps, epochs, quick, samples, temperature, render_size, no_render, **options):
        from django.conf import settings

        from demo.tiny_model import QUICK_SPEC, TinyModelSpec, build_tiny_model, read_model_info
        from demo.tiny_vl_model import QUICK_VL_SPEC, TinyVLSpec, build_tiny_vl_model

        _quiet_libraries()
        if arch == "qwen3":
            spec, build, name = dataclasses.replace(QUICK_SPEC) if quick else TinyModelSpec(), build_tiny_model, "tiny-painter"
        else:
            spec, build, name = (dataclasses.replace(QUICK_VL_SPEC) if quick else TinyVLSpec(), build_tiny_vl_model,
                                 f"tiny-painter-{arch}")
        if sketches is not None:
            if sketches < 1:
                raise CommandError("--sketches must be at least 1")
            spec.sft_sketches = sketches
        if revisions is not None:
            if revisions < 0:
                raise CommandError("--revisions must not be negative")
            spec.sft_revisions = revisions
        if keeps is not None:
            if keeps < 0:
                raise CommandError("--keeps must not be negative")
            spec.sft_keeps = keeps
        if epochs is not None:
            if epochs <= 0:
                raise CommandError("--epochs must be positive")
            spec.sft_epochs = epochs
        out = Path(out) if out else Path(settings.MODELS_DIR) / name

        self.stdout.write(f"building the tiny {arch} painter into {out}")
        started = time.perf_counter()
        bar = _Bar(_raw_stream(self.stderr))
        try:
            build(out, spec, progress=bar)
        finally:
            bar.close()
        build_s = time.perf_counter() - started
        info = read_model_info(out)
        self._report_build(info, build_s)
        if samples > 0:
            self._report_samples(out, samples, temperature, render_size, no_render)
        self.stdout.write(f"total time: {time.perf_counter() - started:.0f} s")

    def _report_build(self, info: dict, build_s: float) -> None:
        build, spec = info["build"], info["spec"]
        sft = build["sft"]
        self.stdout.write(
            f"parameters: {build['parameters']:,} ({spec['num_hidden_layers']} layers x {spec['hidden_size']}, "
            f"vocab {build['vocab_size']})"
        )
        if "num_experts" in spec:
            self.stdout.write(
                f"  {spec['num_experts']} routed experts ({spec['num_experts_per_tok']} a token) + a shared one per "
                f"layer; vision tower {build['vision_parameters']:,} parameters; processor: {build['processor']}"
            )
        self.stdout.write(
            f"tokens per example: prompt {sft['prompt_tokens_mean']:.0f}, sketch {sft['completion_tokens_mean']:.0f} "
            f"(max {sft['completion_tokens_max']}); {sft['examples']} sketches, {sft['steps']} SFT steps"
        )
        drafts = spec.get("sft_revisions", 0) + spec.get("sft_keeps", 0)
        if drafts:
            self.stdout.write(
                f"revision examples: {sft.get('revision_examples', 0)} of {drafts} drafts "
                f"({spec.get('sft_revisions', 0)} flawed, {spec.get('sft_keeps', 0)} keeps) showed what their kind says "
                f"and fit (data {build.get('data_seconds', 0):.0f} s)"
            )
        final = f", final {sft['final_loss']:.3f}" if sft.get("final_loss") is not None else ""
        self.stdout.write(f"train loss: mean {sft['train_loss']:.3f}{final}")
        self.stdout.write(f"build time: {build_s:.0f} s (SFT {sft['seconds']:.0f} s)")

    def _report_samples(self, out: Path, n: int, temperature: float, size: int, no_render: bool) -> None:
        from django.conf import settings

        from demo.pass_rate import sample_pass_rate
        from demo.tiny_model import record_evaluation
        from paintenv.render_config import RendererConfig
        from paintenv.render_result import RenderUnavailable
        from paintenv.renderer import Renderer

        renderer = None
        if not no_render:
            renderer = Renderer(RendererConfig(
                chromium_path=settings.CHROMIUM_PATH, timeout_s=float(settings.RENDER_TIMEOUT_S), prewarm=False,
            ))
        try:
            try:
                result = sample_pass_rate(out, n=n, temperature=temperature, renderer=renderer, size=size)
            except RenderUnavailable as exc:  # no Chromium here: the static gate still says something
                self.stderr.write(f"rendering unavailable ({exc}); reporting the static gate only")
                result = sample_pass_rate(out, n=n, temperature=temperature, renderer=None, size=size)
        finally:
            if renderer is not None:
                renderer.close()
        record_evaluation(out, result)
        line = f"sampled pass rate ({n} samples, temperature {temperature:g}): gate {result['gate_pass']:.0%}"
        if result["render_pass"] is not None:
            line += f", gate + render non-blank {result['render_pass']:.0%} at {size} px"
        self.stdout.write(line)
        top = ", ".join(f"{k} {v}" for k, v in list(result["violations"].items())[:5]) or "none"
        self.stdout.write(
            f"  ended with <|im_end|>: {result['stopped']:.0%}; mean reply {result['completion_tokens_mean']:.0f} "
            f"tokens; violations: {top}; sampling {result['generation_seconds']:.0f} s, "
            f"gate/render {result['render_seconds']:.0f} s"
        )


class _Bar:
    """tqdm over the SFT steps; the other stages are one-line notes."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.bar = None

    def __call__(self, stage: str, done: int, total: int, figures: dict) -> None:
        from tqdm import tqdm

        if stage != "sft":
            if self.bar is None:
                self.stream.write(f"{stage}...\n")
            return
        if self.bar is None:
            self.bar = tqdm(total=total, desc="SFT", unit="step", file=self.stream, dynamic_ncols=True)
        self.bar.update(done - self.bar.n)
        if "loss" in figures:
            self.bar.set_postfix(loss=f"{figures['loss']:.3f}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _raw_stream(stream):
    """The file under Django's OutputWrapper(s) (call_command may wrap a wrapper), so
    tqdm's carriage returns are not turned into new lines."""
    from django.core.management.base import OutputWrapper

    while isinstance(stream, OutputWrapper):
        stream = stream._out
    return stream


def _quiet_libraries() -> None:
    """Our bar and report only: no per-log dicts, weight-loading bars or advice warnings."""
    import warnings

    import datasets
    from transformers.utils import logging as hf_logging

    datasets.disable_progress_bars()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", module="trl")
    warnings.filterwarnings("ignore", module="transformers")
