"""Does an SFT run on the studio's own sketches help a weak base model before GRPO? (issue #29)

    .venv/bin/python bench/sft_warm_start.py [--data seed-pool|corpus] [--base-epochs 1] [--sft-epochs 3]
        [--sft-lr 3e-3] [--sft-batch 1] [--samples 32] [--seeds 0 1 2] [--grpo-steps 10]
        [--max-completion-length 768] [--render-size 128] [--keep]

In one run, against a database of its own (`paintapp_bench_sft`, Redis databases 11/10, media
under var/bench-sft/) and with a train, a render (2 processes) and a score worker it starts
and stops itself:

1. builds a WEAK base: the tests' painter (demo/tiny_model.PAINTER_TEST_SPEC, the demo model's
   shape) with `--base-epochs` SFT build epochs instead of 3, kept in models/ and reused while
   its spec is the same (1 epoch: ~1.5 min of build, 5 of 32 sketches pass the gate, 0 render);
2. freezes a pool whose references carry real sketch code, by a curator of its own, and an SFT
   dataset of its train split (`sft_dataset_freeze`, love and okay). `--data seed-pool` (the
   default): the 64 hibiscus sketches among the studio's seed pool (`seed_pool`'s
   `seedgen.generate_pool(200, seed=POOL_SEED)`, never the base's warm-start seed), a weak
   style rejected and a good one love or okay in turn, as `--demo-grades` would without the
   renders. `--data corpus`: tests/paintenv/corpus/good, the hibiscus in each hibiscus subject's
   palette with 5 and 6 petals (love) and the iris, poppy and rose (okay): a style the tiny
   model never saw (10.4 nats a token before SFT, 4.9 after a LoRA SFT of 6 epochs at 5e-3, and
   every sketch then fails the gate). PNGs are placeholders: the recipe has no judge, so no one
   looks at them;
3. SFTs the weak base on it (an SFT run on the train worker, LoRA as GRPO's);
4. per model (the weak base; the weak base + the SFT run's adapter): samples `--samples`
   sketches (the four first hibiscus subjects in turn, the same torch seed for both models)
   and judges them through the studio's pipeline (`training.trainer.evaluation.evaluate_replies` on the
   SFT run, nothing stored: its arguments and render seeds): gate pass, render pass and the
   held-out reward (recipe studio-hps-only: gate, length and the features quality scorer; no
   judge, so no reference is drawn and the pool's eval split only keeps its code out of the
   SFT data); then `--grpo-steps` GRPO steps per seed (G = 4, one group a step, the same four
   subjects, lr 1e-3), from a fresh LoRA on the base or continuing the SFT run's (`init_run`),
   and the mean of the steps' mean group reward. The base's GRPO runs queue behind the SFT run
   on the one train worker while this process samples and judges the base.

A None reward (infrastructure failure) is left out of every mean and never counted as 0;
a figure with nothing left is printed "n/a".

Why --max-completion-length 768 and not the tests' 384: the weak base writes the seed
generator's sketches (564 tokens on average, 664 at most); at 384 every one of them is cut and
fails the gate, and the comparison would measure the cut, not the model. Why --sft-lr 3e-3:
the base's own build rate; at 1e-3 the SFT loss hardly moves (0.58 -> 0.51 in 4 epochs).

Progress bars go to stderr (on a terminal), with a line per finished stage; the figures to
stdout. Worker logs: var/bench-sft/logs/. The runs are deleted at the end unless --keep.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_DB = "paintapp_bench_sft"
BROKER_URL, RESULT_URL = "redis://127.0.0.1:6379/11", "redis://127.0.0.1:6379/10"
BENCH_VAR = REPO / "var" / "bench-sft"
os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
os.environ["CELERY_BROKER_URL"] = BROKER_URL
os.environ["CELERY_RESULT_BACKEND"] = RESULT_URL
os.environ["MEDIA_ROOT"] = str(BENCH_VAR / "media")
os.environ["PAINTAPP_VAR_DIR"] = str(BENCH_VAR / "var")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
sys.path.insert(0, str(REPO))

import django  # noqa: E402
import redis  # noqa: E402
from support import ensure_database, stop_workers  # noqa: E402  (bench/ is the script's folder)

ensure_database(BENCH_DB)
django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from demo.tiny_model import HIBISCUS_SUBJECTS, PAINTER_TEST_SPEC, build_tiny_model, read_model_info  # noqa: E402
from paintapp.lib.progress import progress_bar  # noqa: E402
from paintapp.lib.workers import answering_queues  # noqa: E402
from paintenv.prompts import SUBJECTS  # noqa: E402
from training import services  # noqa: E402
from training.models import Run, Step  # noqa: E402
from training.sft_dataset import SftSources  # noqa: E402

CORPUS = REPO / "tests" / "paintenv" / "corpus" / "good"
SUBJECT_TEXTS = [s.text for s in SUBJECTS[:4]]  # hibiscus: what the weak base was built on
# Each hibiscus subject's palette: outer wash, inner wash, throat.
PALETTES = {
    "peach-hibiscus": ("#f4a582", "#ee8a6a", "#b8324a"),
    "scarlet-hibiscus": ("#d7263d", "#b51d2f", "#6b0f1a"),
    "white-hibiscus": ("#f7f3ee", "#ece4dc", "#a4133c"),
    "yellow-hibiscus": ("#f6d55c", "#edc23b", "#c0392b"),
    "pink-hibiscus": ("#f5a3c7", "#ec7fb0", "#9d174d"),
    "coral-hibiscus": ("#f88379", "#f0695f", "#a3333d"),
    "lilac-hibiscus": ("#c8a2c8", "#b48ab4", "#5e3370"),
    "orange-hibiscus": ("#f79d3c", "#ee7f1b", "#9b2915"),
}
NUMBERS = {5: "five", 6: "six"}
OTHERS = {"iris": "a blue iris", "poppy": "an orange-red poppy", "rose": "a red rose"}
WORKERS = {"train": 1, "render": 2, "score": 1}
STARTED = time.monotonic()


def say(text: str) -> None:
    """A stage line on stderr, with the time since the bench started."""
    elapsed = time.monotonic() - STARTED
    print(f"[{int(elapsed // 60):02d}:{int(elapsed % 60):02d}] {text}", file=sys.stderr, flush=True)


# --- workers ------------------------------------------------------------------------------------


def start_workers() -> list[subprocess.Popen]:
    """A Celery worker per queue, on the bench's database and Redis, logging under var/bench-sft/logs."""
    logs = BENCH_VAR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for queue, concurrency in WORKERS.items():
        log = (logs / f"worker-{queue}.log").open("w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "paintapp", "worker", "-Q", queue, "-c", str(concurrency),
             "-n", f"bench-sft-{queue}@%h", "--loglevel=INFO"],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=dict(os.environ),
        ))
        log.close()
    return procs


def wait_for_workers(procs: list[subprocess.Popen], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if set(WORKERS) <= answering_queues():
            return
        if any(proc.poll() is not None for proc in procs):
            raise SystemExit(f"a worker exited at start-up: see {BENCH_VAR / 'logs'}")
        time.sleep(1)
    raise SystemExit(f"workers did not come up within {timeout_s:.0f} s: see {BENCH_VAR / 'logs'}")




# --- data ---------------------------------------------------------------------------------------


def hibiscus_code(slug: str, subject: str, petals: int, radius: int) -> str:
    """The corpus hibiscus in a subject's palette, with `petals` petals of `radius`."""
    outer, inner, throat = PALETTES[slug]
    code = (CORPUS / "hibiscus.js").read_text()
    changes = [
        ("// A peach hibiscus: five", f"// {subject[0].upper()}{subject[1:]}: {NUMBERS[petals]}"),
        ('"#f4a582" : "#ee8a6a"', f'"{outer}" : "{inner}"'),
        ('brush.fill("#b8324a", 190);', f'brush.fill("{throat}", 190);'),
        ("const petals = 5;", f"const petals = {petals};"),
        ("const r = 150 - layer * 30;", f"const r = {radius} - layer * 30;"),
    ]
    for old, new in changes:
        if old not in code:
            raise SystemExit(f"tests/paintenv/corpus/good/hibiscus.js changed: {old!r} is gone")
        code = code.replace(old, new, 1)
    return code


def placeholder_png(code: str, size: int = 32) -> bytes:
    """A small PNG that is this code's own (a reference is stored under its PNG's sha256, so two
    sketches must never share one): the code's sha256 written into the first pixels."""
    import hashlib

    from PIL import Image

    digest = hashlib.sha256(code.encode()).digest()
    image = Image.new("RGB", (size, size), (250, 247, 240))
    for i in range(0, len(digest) - 2, 3):
        image.putpixel((i // 3, 0), tuple(digest[i:i + 3]))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def seed_pool_references() -> list[tuple[str, str, str]]:
    """(code, subject, tier) of the hibiscus sketches among the studio's seed pool (`manage.py seed_pool`:
    `seedgen.generate_pool(200, seed=POOL_SEED)`, never the weak base's warm-start seed), graded as
    `seed_pool --demo-grades` grades them but without renders: a weak style is rejected, a good
    one is love or okay in turn."""
    from paintenv import seedgen

    sketches = [s for s in seedgen.generate_pool(200, seed=seedgen.POOL_SEED, weak_share=0.3)
                if s.subject_slug in HIBISCUS_SUBJECTS]
    graded, good = [], 0
    for sketch in sketches:
        if sketch.style == "good":
            tier, good = ("love" if good % 2 == 0 else "okay"), good + 1
        else:
            tier = "reject"
        graded.append((sketch.code, sketch.subject_text, tier))
    return graded


def corpus_references() -> list[tuple[str, str, str]]:
    """(code, subject, tier) from tests/paintenv/corpus/good: the hibiscus in each hibiscus subject's
    palette with 5 and 6 petals, love; the iris, poppy and rose, okay."""
    graded = [(hibiscus_code(s.slug, s.text, petals, radius), s.text, "love")
              for s in SUBJECTS if s.slug in PALETTES for petals, radius in ((5, 150), (6, 140))]
    return graded + [((CORPUS / f"{name}.js").read_text(), subject, "okay") for name, subject in OTHERS.items()]


DATA = {"seed-pool": seed_pool_references, "corpus": corpus_references}


def bench_pool(data: str):
    """The bench's pool for `data` (made once, by a curator of its own, so each pool freezes only
    its own grades); placeholder PNGs: the recipe has no judge, so no one looks at them."""
    from django.contrib.auth import get_user_model

    from curation.models import Pool
    from curation.services import grade_set, pool_freeze, reference_create

    name = f"bench-sft-{data}"
    curator, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_staff": True})
    pool = Pool.objects.filter(name=name).order_by("-id").first()
    if pool is not None:
        return pool, curator
    for n, (code, subject, tier) in enumerate(DATA[data]()):
        reference, _ = reference_create(png=placeholder_png(code), width=32, height=32, provenance="upload",
                                        subject=subject, source=code, original_name=f"{name}-{n}.png")
        if reference.source != code:
            raise SystemExit(f"reference {reference.id} holds other code than {name}'s sketch {n}")
        grade_set(reference=reference, curator=curator, tier=tier)
    return pool_freeze(name=name, curator=curator, eval_share=0.2, seed=0), curator


# --- the weak base ------------------------------------------------------------------------------


def weak_base(epochs: float) -> tuple[Path, str]:
    """The tests' painter with `epochs` SFT build epochs, built once into models/ for this spec."""
    spec = dataclasses.replace(PAINTER_TEST_SPEC, sft_epochs=epochs)
    path = Path(settings.MODELS_DIR) / f"bench-sft-weak-e{epochs:g}"
    wanted = json.loads(json.dumps(spec.to_dict()))  # as paintapp.json holds it (tuples as lists)
    if (path / "config.json").exists() and read_model_info(path).get("spec") == wanted:
        return path, "reused"
    staging = path.with_name(path.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    started = time.monotonic()
    with progress_bar(f"weak base ({epochs:g} SFT epochs)", "step") as progress:
        def report(stage: str, done: int, total: int, _figures: dict) -> None:
            if stage == "sft":
                progress(done, total)

        build_tiny_model(staging, spec, progress=report)
    shutil.rmtree(path, ignore_errors=True)
    os.replace(staging, path)
    return path, f"built in {time.monotonic() - started:.0f} s"


# --- runs ---------------------------------------------------------------------------------------


def wait_for_runs(runs: list[Run], desc: str, procs: list[subprocess.Popen]) -> None:
    """Poll until every run has ended, a progress bar over their steps; SystemExit when a worker died."""
    total = sum(run.max_steps for run in runs)
    with progress_bar(desc, "step") as progress:
        while True:
            for run in runs:
                run.refresh_from_db()
            progress(sum(min(run.steps_done, run.max_steps) for run in runs), total)
            if not any(run.status in Run.ACTIVE for run in runs):
                return
            if any(proc.poll() is not None for proc in procs):
                raise SystemExit(f"a worker exited while runs were going: see {BENCH_VAR / 'logs'}")
            time.sleep(2)


def grpo_figures(run: Run | None) -> dict:
    """The mean of a GRPO run's step mean rewards (steps whose every reward was None left out)."""
    if run is None:
        return {"mean": None, "steps": 0, "none": 0, "status": "not launched", "gate": None}
    run.refresh_from_db()
    steps = list(Step.objects.filter(run=run).order_by("step"))
    rewards = [s.reward_mean for s in steps if s.reward_mean is not None]
    # ours/gate_pass_rate is the share whose whole verdict passed: the gate and the render.
    gates = [s.metrics["ours/gate_pass_rate"] for s in steps if s.metrics.get("ours/gate_pass_rate") is not None]
    return {
        "mean": statistics.fmean(rewards) if rewards else None,
        "steps": len(rewards),
        "none": int(sum(s.metrics.get("ours/none_count") or 0 for s in steps)),
        "gate": statistics.fmean(gates) if gates else None,
        "status": run.status,
        "error": run.error.strip().splitlines()[-1][:200] if run.error.strip() else "",
    }


def launch_grpo(pool, base: Path, seed: int, args, init_run: Run | None = None) -> Run:
    arguments = {
        "max_steps": args.grpo_steps, "num_generations": 4, "gradient_accumulation_steps": 4,
        "render_size": args.render_size, "max_completion_length": args.max_completion_length,
        "checkpoint_every": args.grpo_steps, "warmup_steps": 1, "learning_rate": 1e-3,
        "eval_samples_per_subject": 1, "render_deadline_s": 120, "score_deadline_s": 120,
    }
    return services.run_launch(pool=pool, recipe_name="studio-hps-only", base_model=str(base), arguments=arguments,
                               subjects=SUBJECT_TEXTS, seed=seed, init_run=init_run,
                               name=f"bench sft_warm_start GRPO {'SFT' if init_run else 'base'} seed {seed}")


# --- sampling and judging -----------------------------------------------------------------------


def evaluate(label: str, base: Path, adapter: Path | None, run: Run, samples: int, seed: int) -> dict:
    """`samples` sketches from base (+ adapter), the subjects in turn, judged through the pipeline."""
    import torch

    from training.trainer.evaluation import evaluate_replies, sample_replies
    from training.trainer.model_loading import load_adapted_model

    model, processing = load_adapted_model(base, adapter)
    per_subject = max(1, samples // len(SUBJECT_TEXTS))
    torch.manual_seed(seed)
    replies: dict[str, list[str]] = {}
    with progress_bar(f"sample {label}", "subject") as progress:
        progress(0, len(SUBJECT_TEXTS))
        for i, subject in enumerate(SUBJECT_TEXTS):
            replies |= sample_replies(model, processing, [subject], n=per_subject, args=run.arguments)
            progress(i + 1, len(SUBJECT_TEXTS))
    del model
    say(f"{label}: {per_subject * len(SUBJECT_TEXTS)} sketches sampled; painting them")
    result = evaluate_replies(run, replies, store=False)
    total = result["samples"]
    return {
        "samples": total,
        "gate": round(result["gate_pass_rate"] * total),
        "render": round(result["render_rate"] * total),
        "reward": result["mean_reward"],
        "none": result["none"],
    }


# --- report -------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def grpo_cell(figures: list[dict], steps: int) -> str:
    parts = []
    for fig in figures:
        cell = fmt(fig["mean"])
        if fig["mean"] is not None and fig["steps"] < steps:
            cell += f" ({fig['steps']}/{steps} steps)"
        parts.append(cell)
    means = [fig["mean"] for fig in figures]
    overall = statistics.fmean(means) if means and all(m is not None for m in means) else None
    return f"{' / '.join(parts)} — mean {fmt(overall)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-epochs", type=float, default=1.0, help="SFT build epochs of the weak base")
    parser.add_argument("--data", choices=sorted(DATA), default="seed-pool",
                        help="the pool's code: the studio's seed pool (default) or the tests' corpus sketches")
    parser.add_argument("--sft-epochs", type=float, default=3.0, help="epochs of the SFT run on the studio data")
    parser.add_argument("--sft-lr", type=float, default=3e-3, help="the SFT run's learning rate")
    parser.add_argument("--sft-batch", type=int, default=1, help="the SFT run's per-device batch")
    parser.add_argument("--samples", type=int, default=32, help="sketches sampled per model (4 subjects in turn)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="GRPO run seeds")
    parser.add_argument("--grpo-steps", type=int, default=10)
    parser.add_argument("--max-completion-length", type=int, default=768)
    parser.add_argument("--render-size", type=int, default=128)
    parser.add_argument("--sample-seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the runs (default: delete them at the end)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)  # as the trainer on CPU: the workers share the two cores
    call_command("migrate", verbosity=0, interactive=False)
    for url in (BROKER_URL, RESULT_URL):  # no task left over from an interrupted bench
        redis.Redis.from_url(url).flushdb()
    runs: list[Run] = []
    procs = start_workers()
    try:
        pool, user = bench_pool(args.data)
        sources = SftSources(pool_id=pool.id, reference_tiers=("love", "okay"))
        dataset = services.sft_dataset_freeze(name=f"bench-sft-{args.data}", sources=sources, created_by=user)
        counts = dataset.counts.get("references", {})
        say(f"pool {pool.label}: {pool.members.count()} references ({pool.members.filter(split='eval').count()} eval); "
            f"dataset {dataset.label}: {len(dataset.examples)} examples (references found {counts.get('found')}, "
            f"kept {counts.get('kept')}, eval excluded {counts.get('eval_excluded')}, refused {counts.get('refused')})")
        base, how = weak_base(args.base_epochs)
        say(f"weak base {base} ({how})")
        wait_for_workers(procs)
        say("workers answer on " + ", ".join(WORKERS))

        sft = services.run_launch(
            pool=pool, recipe_name="studio-hps-only", base_model=str(base), kind="sft", sft_dataset=dataset,
            name="bench sft_warm_start SFT",
            arguments={"per_device_train_batch_size": args.sft_batch, "gradient_accumulation_steps": 1,
                       "num_train_epochs": args.sft_epochs, "learning_rate": args.sft_lr, "warmup_steps": 0,
                       "checkpoint_every": 10_000, "render_size": args.render_size,
                       "max_completion_length": args.max_completion_length, "eval_samples_per_subject": 1,
                       "render_deadline_s": 120, "score_deadline_s": 120},
            subjects=SUBJECT_TEXTS)
        runs.append(sft)
        # The base's GRPO runs queue behind the SFT run on the one train worker; the base is judged meanwhile.
        base_runs = [launch_grpo(pool, base, seed, args) for seed in args.seeds]
        runs += base_runs
        say(f"launched SFT run {sft.id} ({sft.max_steps} steps) and GRPO runs {[r.id for r in base_runs]} (weak base)")
        figures = {"weak base": evaluate("weak base", base, None, sft, args.samples, args.sample_seed)}
        say(f"weak base judged: {figures['weak base']}")

        wait_for_runs([sft], f"SFT run {sft.id}", procs)
        sft_runs: list[Run | None] = [None] * len(args.seeds)
        sft_outcome = f"SFT run {sft.id} {sft.status}: {_losses(sft)}"
        if sft.status == Run.Status.FINISHED:
            say(f"{sft_outcome}; adapter {sft.adapter_dir}")
            sft_runs = [launch_grpo(pool, base, seed, args, init_run=sft) for seed in args.seeds]
            runs += [r for r in sft_runs if r is not None]
            say(f"launched GRPO runs {[r.id for r in sft_runs]} (weak base + SFT adapter)")
            figures["weak base + SFT"] = evaluate("weak base + SFT", base, sft.adapter_dir, sft, args.samples,
                                                  args.sample_seed)
            say(f"weak base + SFT judged: {figures['weak base + SFT']}")
        else:
            sft_outcome += f"; {sft.error.strip()[-500:]}"
            say(sft_outcome)
            figures["weak base + SFT"] = None

        grpo = [r for r in base_runs + sft_runs if r is not None]
        wait_for_runs(grpo, f"{len(grpo)} GRPO runs", procs)
        grpo_by = {"weak base": [grpo_figures(r) for r in base_runs],
                   "weak base + SFT": [grpo_figures(r) for r in sft_runs]}
    finally:
        stop_workers(procs)
        for url in (BROKER_URL, RESULT_URL):
            redis.Redis.from_url(url).flushdb()

    wall = time.monotonic() - STARTED
    print(sft_outcome)
    for name, rows in grpo_by.items():
        for seed, fig in zip(args.seeds, rows):
            extra = f", {fig['error']}" if fig.get("error") else ""
            print(f"GRPO {name}, seed {seed}: {fig['status']}, mean group reward {fmt(fig['mean'])} over "
                  f"{fig['steps']}/{args.grpo_steps} steps, painted (gate and render) {fmt(fig['gate'], 2)}, "
                  f"{fig['none']} None{extra}")
    seeds = ",".join(map(str, args.seeds))
    print()
    print(f"| model | gate pass (of {args.samples}) | render (of {args.samples}) | held-out reward | "
          f"mean group reward over {args.grpo_steps} GRPO steps (seeds {seeds} and mean) |")
    print("|---|---|---|---|---|")
    for name in ("weak base", "weak base + SFT"):
        fig = figures.get(name)
        if fig is None:
            gate = render = reward = "n/a"
        else:
            gate, render = str(fig["gate"]), str(fig["render"])
            reward = fmt(fig["reward"]) + (f" ({fig['none']} None)" if fig["none"] else "")
        print(f"| {name} | {gate} | {render} | {reward} | {grpo_cell(grpo_by[name], args.grpo_steps)} |")
    print()
    print(f"weak base: the tests' painter spec with {args.base_epochs:g} SFT build epochs ({how}); SFT on "
          f"{dataset.label} ({args.data}): {len(dataset.examples)} examples x {args.sft_epochs:g} epochs, batch "
          f"{args.sft_batch} ({sft.max_steps} steps, lr {args.sft_lr:g}, LoRA r {sft.arguments.lora_r}); GRPO: G 4, "
          f"lr 1e-3; studio-hps-only, {args.render_size} px, max_completion_length {args.max_completion_length}; "
          f"wall {wall / 60:.1f} min")
    if not args.keep:
        for run in reversed(runs):  # the continuing GRPO runs before the SFT run they continue
            try:
                services.run_delete(run=run)
            except Exception as exc:  # noqa: BLE001 - a leftover run is no failure of the bench
                say(f"run {run.id} kept: {exc}")
    return 0


def _losses(run: Run) -> str:
    """The SFT run's mean loss over its first and its last epoch's steps."""
    losses = [s.metrics.get("loss") for s in Step.objects.filter(run=run).order_by("step")]
    losses = [loss for loss in losses if loss is not None]
    if not losses:
        return "no loss logged"
    epoch = max(1, round(len(losses) / max(1.0, run.arguments.num_train_epochs)))
    return (f"mean loss {statistics.fmean(losses[:epoch]):.4f} over the first epoch, "
            f"{statistics.fmean(losses[-epoch:]):.4f} over the last ({len(losses)} steps)")


if __name__ == "__main__":
    sys.exit(main())
