"""Server time of the dashboard pages with a long run in PostgreSQL.

Seeds (once) a separate database, `paintapp_bench`, with one run of 500 steps and 10,000
rollouts (20 per step, real-sized replies and code, metrics like the trainer writes), then
times the run page, the gallery and the metrics endpoint in-process with Django's test
client (server time: URL routing, middleware, queries, templates; no network, no browser).

    .venv/bin/python bench/web.py [--steps 500] [--rollouts 10000] [--repeat 30] [--reseed]

Goals (issue 7): run page and gallery <= 200 ms, metrics endpoint <= 50 ms server time.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path

from support import ensure_database  # bench/ is the script's folder

REPO = Path(__file__).resolve().parent.parent
BENCH_DB = "paintapp_bench"




def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
    os.environ.setdefault("MEDIA_ROOT", str(REPO / "var" / "bench-media"))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


SKETCH_LINE = 'brush.set("2B", "#{c:06x}", 1); brush.fill("#{d:06x}", 70); brush.circle({x}, {y}, {r});\n'


def seed(steps: int, rollouts: int) -> int:
    from django.contrib.auth import get_user_model
    from tqdm import tqdm

    from curation.services import grade_set, pool_freeze, reference_create
    from paintapp.lib.storage import store_content_addressed
    from paintenv.reward import PRESETS
    from tests.curation.factories import png_bytes
    from training.arguments import RunArguments
    from training.models import Rollout, Run, Step

    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    for i, tier in enumerate(["love"] * 6 + ["okay"] * 6):
        reference, _ = reference_create(png=png_bytes(size=64), width=64, height=64, provenance="upload",
                                        subject="a peach hibiscus", source=f"bench {i}")
        grade_set(reference=reference, curator=user, tier=tier)
    pool = pool_freeze(name="bench", curator=user)
    per_step = rollouts // steps
    args = RunArguments.from_dict({"num_generations": per_step, "gradient_accumulation_steps": per_step,
                                   "max_steps": steps})
    run = Run.objects.create(
        name="bench: 500-step judge-led", pool=pool, base_model="models/tiny-painter", recipe_name="studio-judge-led",
        recipe=PRESETS["studio-judge-led"].to_dict(), subjects=["a peach hibiscus"], hyperparameters=args.to_dict(),
        status="finished", steps_done=steps, created_by=user,
    )
    rng = random.Random(0)
    pngs = [store_content_addressed(png_bytes(size=96), folder="renders") for _ in range(64)]
    refs = list(pool.members.values_list("reference_id", flat=True)[:4])
    for s in tqdm(range(1, steps + 1), desc="seeding steps", unit="step"):
        rows, values = [], []
        for i in range(per_step):
            code = "".join(SKETCH_LINE.format(c=rng.randrange(1 << 24), d=rng.randrange(1 << 24), x=rng.randrange(600),
                                              y=rng.randrange(600), r=rng.randrange(10, 90)) for _ in range(rng.randrange(20, 80)))
            failed = rng.random() < 0.15
            none = not failed and rng.random() < 0.02
            reward = None if none else 0.0 if failed else round(min(1, max(0, 0.35 + s / steps * 0.3 + rng.gauss(0, 0.15))), 4)
            values.append(reward)
            rows.append(Rollout(
                run=run, step=s, group=0, position=i, subject="a peach hibiscus",
                prompt="Paint a peach hibiscus in loose watercolour.", reply=f"Here it is.\n```js\n{code}```", code=code,
                png="" if failed else rng.choice(pngs), passed=not failed and not none, reward=reward,
                violations=["unknown_call"] if failed else [],
                parts={"gate": 0.0 if failed else 1.0, "length": 0.3, "judge": None if failed or none else reward,
                       "quality": None if failed or none else 0.5, "unavailable": ["score: timeout"] if none else []},
                judge_detail={} if failed or none else {"score": reward, "dropped": 0, "references": [
                    {"reference_id": r, "score": 0.5, "orders": [{"candidate_first": True, "p_candidate": 1.0, "reason": "looser"},
                                                                 {"candidate_first": False, "p_candidate": 0.0, "reason": "tidier"}]}
                    for r in refs]},
                reference_ids=refs, paint_fraction=None if failed else rng.uniform(0.1, 0.4),
                stats={"code_chars": len(code), "shapes": 0, "vertices": 0, "circles": code.count("circle"), "fills": code.count("fill"),
                       "brush_methods_used": ["circle", "fill", "set"]},
                timings={"render_ms": rng.randrange(800, 3000)}, failure="score: timeout" if none else "",
            ))
        Rollout.objects.bulk_create(rows)
        valid = [v for v in values if v is not None]
        mean = statistics.fmean(valid)
        metrics = {"reward": mean, "reward_std": statistics.pstdev(valid), "loss": rng.uniform(-0.01, 0.01),
                   "kl": rng.uniform(0, 0.01), "grad_norm": rng.uniform(0.1, 2), "learning_rate": 5e-5,
                   "completions/mean_length": rng.uniform(400, 900), "ours/gate_pass_rate": 1 - values.count(0.0) / per_step,
                   "ours/none_count": float(values.count(None)), "ours/low_count": float(sum(v < 0.3 for v in valid)),
                   "ours/paint_fraction": 0.25, "ours/diversity": rng.uniform(0.2, 0.5), "ours/judge": mean,
                   "ours/quality": 0.5, "ours/length": 0.3, "ours/step_s": 25.0, "ours/generation_s": 6.0,
                   "ours/render_s": 14.0, "ours/score_s": 2.0, "ours/update_s": 3.0, "violations/unknown_call": float(values.count(0.0))}
        Step.objects.create(run=run, step=s, reward_mean=mean, reward_std=metrics["reward_std"], metrics=metrics)
    return run.id


def timed(client, url: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--reseed", action="store_true", help="drop the bench run and seed it again")
    args = parser.parse_args()

    ensure_database(BENCH_DB)
    setup_django()
    from django.conf import settings
    from django.test import Client
    from django.urls import reverse

    from training.models import Run

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    run = Run.objects.filter(name="bench: 500-step judge-led", steps_done=args.steps).first()
    if run and args.reseed:
        run.delete()
        run = None
    run_id = run.id if run else seed(args.steps, args.rollouts)
    run = Run.objects.get(id=run_id)
    print(f"run {run.id}: {run.steps.count()} steps, {run.rollouts.count()} rollouts in PostgreSQL ({BENCH_DB})")

    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    some_rollout = run.rollouts.filter(passed=True).order_by("-step").first()
    pages = [
        ("run page", reverse("training:run", args=[run.id]), 200),
        ("gallery (newest steps)", reverse("training:gallery", args=[run.id]), 200),
        ("gallery (best first)", reverse("training:gallery", args=[run.id]) + "?sort=reward-desc", 200),
        ("gallery (failed, from step 250)", reverse("training:gallery", args=[run.id]) + "?state=failed&step=250", 200),
        ("gallery (violation, reward range)", reverse("training:gallery", args=[run.id]) + "?violation=unknown_call&sort=reward-asc", 200),
        ("rollout page", reverse("training:rollout", args=[run.id, some_rollout.id]), 200),
        ("metrics (all 500 steps)", reverse("training:metrics", args=[run.id]), 50),
        ("metrics (new steps only)", reverse("training:metrics", args=[run.id]) + f"?after={args.steps - 1}", 50),
    ]
    print(f"{'page':38s} {'median ms':>10s} {'p95 ms':>8s} {'goal ms':>8s}")
    for label, url, goal in pages:
        timed(client, url, 3)  # warm: templates compiled, connections open
        times = sorted(timed(client, url, args.repeat))
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        verdict = "ok" if p95 <= goal else "OVER"
        print(f"{label:38s} {statistics.median(times):10.1f} {p95:8.1f} {goal:8d}  {verdict}")


if __name__ == "__main__":
    main()
