"""Episodes per minute through the studio's OpenEnv server, and a GRPO group of 8 through it
against the trainer's own fan-out, measured in one run.

Starts its own render and score workers and `manage.py serve_env` against a database of its
own (`paintapp_bench_env`, seeded once with a 12-reference pool), then:

1. plays episodes (reset + step of a good corpus sketch) with 1, 4 and 8 sessions at once, each
   session playing `--episodes` episodes back to back, and prints episodes per minute;
2. sends one group of 8 through the server (8 sessions, one seed) and the same 8 sketches
   through `painting.pipeline.paint_batch` from this process (what the trainer does), and
   prints both walls beside one episode's.

    .venv/bin/python bench/env_server.py [--render-processes 2] [--size 384] [--episodes 3]
        [--recipe studio-judge-led]

The determinism twin is off (PAINTAPP_DETERMINISM_EVERY=0) so both paths render each sketch
once; the text check runs as always.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_DB = "paintapp_bench_env"
os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "paintapp.settings")
os.environ.setdefault("MEDIA_ROOT", str(REPO / "var" / "bench-media"))
os.environ["PAINTAPP_DETERMINISM_EVERY"] = "0"
sys.path.insert(0, str(REPO))

import django  # noqa: E402
import requests  # noqa: E402
from support import ensure_database, stop_workers  # noqa: E402  (bench/ is the script's folder)

SKETCHES = [(REPO / "tests" / "paintenv" / "corpus" / "good" / f"{name}.js").read_text()
            for name in ("hibiscus", "iris", "poppy", "rose")]

ensure_database(BENCH_DB)
django.setup()

from django.core.management import call_command  # noqa: E402
from openenv import GenericEnvClient  # noqa: E402
from train_step import start_workers  # noqa: E402

from curation.models import Pool  # noqa: E402
from curation.selectors import group_references  # noqa: E402
from painting.pipeline import PaintJob, paint_batch  # noqa: E402
from painting.selectors import recipe_get  # noqa: E402
from serving import services  # noqa: E402
from tests.support.processes import free_port  # noqa: E402


def bench_pool() -> Pool:
    from django.contrib.auth import get_user_model

    from curation.services import grade_set, pool_freeze, reference_create
    from tests.curation.factories import png_bytes

    pool = Pool.objects.filter(name="bench-env").first()
    if pool is not None:
        return pool
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    for i, tier in enumerate(["love"] * 6 + ["okay"] * 6):
        reference, _ = reference_create(png=png_bytes(size=64), width=64, height=64, provenance="upload",
                                        subject="a peach hibiscus", source=f"bench-env {i}")
        grade_set(reference=reference, curator=user, tier=tier)
    return pool_freeze(name="bench-env", curator=user)


def fenced(i: int) -> str:
    return f"```js\n{SKETCHES[i % len(SKETCHES)]}```"


async def episode(url: str, headers: dict, seed: int, i: int) -> tuple[float, float | None]:
    t0 = time.monotonic()
    async with GenericEnvClient(base_url=url, headers=headers, message_timeout_s=600) as env:
        await env.reset(seed=seed)
        result = await env.step({"response": fenced(i)})
    return time.monotonic() - t0, result.reward


async def sessions(url: str, headers: dict, count: int, episodes: int) -> tuple[float, list[float | None]]:
    async def one_session(s: int) -> list[float | None]:
        rewards = []
        for e in range(episodes):
            rewards.append((await episode(url, headers, 1000 * count + 10 * s + e, s + e))[1])
        return rewards

    t0 = time.monotonic()
    played = await asyncio.gather(*(one_session(s) for s in range(count)))
    return time.monotonic() - t0, [r for rewards in played for r in rewards]


async def group(url: str, headers: dict, seed: int) -> tuple[float, list[float | None]]:
    t0 = time.monotonic()
    played = await asyncio.gather(*(episode(url, headers, seed, i) for i in range(8)))
    return time.monotonic() - t0, [reward for _, reward in played]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render-processes", type=int, default=2)
    parser.add_argument("--size", type=int, default=384)
    parser.add_argument("--episodes", type=int, default=3, help="episodes each session plays back to back")
    parser.add_argument("--recipe", default="studio-judge-led")
    args = parser.parse_args()

    call_command("migrate", verbosity=0, interactive=False)
    pool = bench_pool()
    recipe = recipe_get(args.recipe)
    _, secret = services.token_create(name=f"bench {time.time():.0f}")
    headers = {"Authorization": f"Bearer {secret}"}
    workers = start_workers({"render": args.render_processes, "score": 1})
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve_env", "--pool", pool.label, "--recipe", recipe.name,
         "--render-size", str(args.size), "--port", str(port)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/health", timeout=1).ok:
                    break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    raise SystemExit("serve_env did not come up") from None
                time.sleep(0.3)
        one_wall, _ = asyncio.run(episode(url, headers, 1, 0))  # warms the workers (and trains the taste judge)
        walls = [asyncio.run(episode(url, headers, 2 + i, i))[0] for i in range(3)]
        one = statistics.median(walls)
        print(f"pool {pool.label}, recipe {recipe.name}, {args.size} px, {args.render_processes} render processes, "
              f"1 score process; one episode (reset + step): median {one:.2f} s of {walls}")
        print(f"{'sessions':>9} {'episodes':>9} {'wall s':>8} {'episodes/min':>13} {'None':>5}")
        for count in (1, 4, 8):
            wall, rewards = asyncio.run(sessions(url, headers, count, args.episodes))
            none = sum(r is None for r in rewards)
            print(f"{count:>9} {len(rewards):>9} {wall:>8.1f} {60 * len(rewards) / wall:>13.1f} {none:>5}")

        env_wall, env_rewards = asyncio.run(group(url, headers, 77))
        references = tuple(m.reference_id for m in group_references(pool, count=recipe.references_per_group, key=(77,)))
        jobs = [PaintJob(reply=fenced(i), prompt="a peach hibiscus", seed=i, reference_ids=references) for i in range(8)]
        t0 = time.monotonic()
        batch = paint_batch(jobs, recipe=recipe, pool_id=pool.id, size=args.size)
        fan_wall = time.monotonic() - t0
        print(f"a group of 8: env server {env_wall:.2f} s ({sum(r is None for r in env_rewards)} None), "
              f"the trainer's fan-out (paint_batch) {fan_wall:.2f} s ({batch.none_count} None); "
              f"one episode {one:.2f} s; 8 / {args.render_processes} render processes x one = "
              f"{8 / args.render_processes * one:.2f} s")
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=20)
        stop_workers(workers)


if __name__ == "__main__":
    main()
