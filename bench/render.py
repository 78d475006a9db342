"""Renderer benchmark: seconds per render for the ways we could run Chromium.

    .venv/bin/python bench/render.py [--quick]

Renders bench/sketches/{trivial,typical,heavy}.js and prints, per scenario, the median,
min and max seconds per render and the renders per minute that implies:
  * launch per render (cold), a warm browser, a warm browser with a pre-warmed page;
  * one vs two render processes (throughput, both cores busy);
  * the cost curve over canvas sizes 384 / 512 / 600;
  * Chromium flag variants, including the published `--use-gl=angle --use-angle=swiftshader`
    (no --disable-gpu), which is slow: it runs once, on the typical sketch.
Progress goes to stderr, the table to stdout. Timings on a shared 2-core machine are
noisy: compare rows of one run, not runs of different days.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from paintenv import render_worker  # noqa: E402
from paintenv.render_config import (  # noqa: E402
    RendererConfig,
    chromium_args,
    playwright_disabled_features,
)
from paintenv.renderer import Renderer  # noqa: E402

SKETCHES = {
    name: (REPO / "bench" / "sketches" / f"{name}.js").read_text() for name in ("trivial", "typical", "heavy")
}


@dataclass
class Row:
    scenario: str
    sketch: str
    size: int
    times: list[float]
    per_minute: float | None = None  # set when throughput is not 60 / median
    note: str = ""
    cpu: list[float] | None = None  # Chromium CPU seconds per render (all its processes)

    def cells(self) -> list[str]:
        med = statistics.median(self.times)
        rpm = self.per_minute if self.per_minute is not None else 60.0 / med
        cpu = f"{statistics.median(self.cpu):.2f}" if self.cpu else ""
        lo, hi = min(self.times), max(self.times)
        return [self.scenario, self.sketch, str(self.size), str(len(self.times)),
                f"{med:.2f}", f"{lo:.2f}", f"{hi:.2f}", cpu, f"{rpm:.1f}", self.note]


def chromium_cpu_seconds(r: Renderer) -> float:
    """CPU time used so far by this renderer's Chromium: every live process of its tree,
    plus the children they reaped (renderer processes of closed contexts). Unlike wall
    time it barely moves when other work shares the machine."""
    worker = r._worker
    root = worker.browser_pid if worker else None
    if not root:
        return 0.0
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        f = stats.get(pid)
        if f:
            total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def timed_renders(
    r: Renderer, sketch: str, size: int, n: int, *, idle_s: float = 0.0, cpu: list[float] | None = None
) -> list[float]:
    """Wall seconds of each render() call; idle_s between calls lets a pre-warm finish.

    With `cpu`, Chromium's CPU seconds per render (pre-warm included) are appended to it.
    """
    times = []
    for i in range(n):
        c0 = chromium_cpu_seconds(r)
        if idle_s:
            time.sleep(idle_s)
        t = time.perf_counter()
        result = r.render(SKETCHES[sketch], seed=i, size=size)
        times.append(time.perf_counter() - t)
        if cpu is not None:
            time.sleep(0.3)  # let the post-render close + pre-warm land in this render's bill
            cpu.append(chromium_cpu_seconds(r) - c0)
        if result.violations and result.violations != ["blank_canvas"]:
            raise SystemExit(f"{sketch} failed to render: {result.violations} {result.errors}")
        progress(f"  {sketch}@{size}: {times[-1]:.2f} s  {result.timings}")
    return times


def bench_modes(rows: list[Row], n: int) -> None:
    progress("cold: launch Chromium for every render")
    cold = []
    for i in range(max(2, n - 2)):
        t = time.perf_counter()
        with Renderer(RendererConfig(prewarm=False)) as r:
            r.render(SKETCHES["trivial"], seed=i)
        cold.append(time.perf_counter() - t)
        progress(f"  cold trivial: {cold[-1]:.2f} s")
    rows.append(Row("launch per render (cold)", "trivial", 600, cold))

    progress("warm browser, page opened per render")
    with Renderer(RendererConfig(prewarm=False)) as r:
        r.start()
        timed_renders(r, "trivial", 600, 1)
        cpu: list[float] = []
        times = timed_renders(r, "trivial", 600, n, cpu=cpu)
        rows.append(Row("warm browser", "trivial", 600, times, cpu=cpu))

    progress("warm browser + pre-warmed page (1 s idle between renders, as between tasks)")
    with Renderer(RendererConfig(prewarm=True)) as r:
        r.start()
        cpu = []
        times = timed_renders(r, "trivial", 600, n, idle_s=1.0, cpu=cpu)
        rows.append(Row("warm + pre-warmed page", "trivial", 600, times, cpu=cpu))
        progress("same, back to back (no idle: the pre-warm is on the critical path)")
        rows.append(Row("warm + pre-warm, back to back", "trivial", 600, timed_renders(r, "trivial", 600, n)))
        for sketch, count in (("typical", max(2, n - 2)), ("heavy", 1 if n < 5 else 2)):
            times = timed_renders(r, sketch, 600, count, idle_s=1.0)
            rows.append(Row("warm + pre-warmed page", sketch, 600, times))


def _worker(sketch: str, size: int, n: int, start: multiprocessing.Event, out: multiprocessing.Queue) -> None:
    with Renderer() as r:
        r.start()
        r.render(SKETCHES["trivial"])  # warm-up, not timed
        start.wait()
        t0 = time.perf_counter()
        times = []
        for i in range(n):
            t = time.perf_counter()
            r.render(SKETCHES[sketch], seed=i, size=size)
            times.append(time.perf_counter() - t)
        out.put((times, time.perf_counter() - t0))


def bench_processes(rows: list[Row], n: int, sketch: str = "typical", size: int = 600) -> None:
    ctx = multiprocessing.get_context("spawn")
    for procs in (1, 2):
        progress(f"{procs} render process(es), {n} x {sketch}@{size} each")
        start, out = ctx.Event(), ctx.Queue()
        workers = [ctx.Process(target=_worker, args=(sketch, size, n, start, out)) for _ in range(procs)]
        for w in workers:
            w.start()
        time.sleep(8)  # let every browser launch and warm up before the clock starts
        start.set()
        results = [out.get(timeout=600) for _ in workers]
        for w in workers:
            w.join(60)
        times = [t for ts, _ in results for t in ts]
        wall = max(total for _, total in results)
        rpm = len(times) / wall * 60
        progress(f"  {procs} proc: {len(times)} renders in {wall:.1f} s -> {rpm:.1f}/min")
        label = f"{procs} render process{'es' if procs > 1 else ''} (throughput)"
        rows.append(Row(label, sketch, size, times, per_minute=rpm))


def bench_sizes(rows: list[Row], n: int) -> None:
    with Renderer() as r:
        r.start()
        for size in (384, 512, 600):
            progress(f"size {size}")
            cpu: list[float] = []
            times = timed_renders(r, "typical", size, n, idle_s=1.0, cpu=cpu)
            rows.append(Row("size curve (pre-warmed)", "typical", size, times, cpu=cpu))


def flag_variants() -> dict[str, Callable[[RendererConfig, str], list[str]]]:
    ours = chromium_args
    playwright_only = ",".join(playwright_disabled_features())

    def without_omnibox(config: RendererConfig, marker: str = "") -> list[str]:
        return [f"--disable-features={playwright_only}" if a.startswith("--disable-features=") else a
                for a in ours(config, marker)]

    def gpu_process(config: RendererConfig, marker: str = "") -> list[str]:
        return [a for a in ours(config, marker) if a != "--in-process-gpu"]

    def no_disable_gpu(config: RendererConfig, marker: str = "") -> list[str]:
        return [a for a in gpu_process(config, marker) if a != "--disable-gpu"]

    def published(config: RendererConfig, marker: str = "") -> list[str]:
        return no_disable_gpu(config, marker) + ["--use-gl=angle", "--use-angle=swiftshader"]

    return {
        "ours: --disable-gpu --in-process-gpu, omnibox off": ours,
        "--disable-gpu, separate GPU process": gpu_process,
        "--disable-gpu --in-process-gpu, omnibox WebUI on": without_omnibox,
        "no --disable-gpu (Playwright's defaults)": no_disable_gpu,
        "published: angle/swiftshader, no --disable-gpu": published,
    }


def bench_flags(rows: list[Row], n: int, quick: bool) -> None:
    # The worker looks the switches up when it launches Chromium.
    original = render_worker.chromium_args
    try:
        for name, fn in flag_variants().items():
            slow = name.startswith("published")
            if slow and quick:
                progress(f"flags: {name}: skipped with --quick (~40 s+ per render)")
                continue
            render_worker.chromium_args = fn
            progress(f"flags: {name}")
            with Renderer(RendererConfig(timeout_s=240 if slow else 60)) as r:
                r.start()
                timed_renders(r, "trivial", 600, 1)
                cpu: list[float] = []
                trivial = timed_renders(r, "trivial", 600, n, idle_s=1.0, cpu=cpu)
                rows.append(Row(f"flags: {name}", "trivial", 600, trivial, cpu=cpu))
                cpu = []
                typical = timed_renders(r, "typical", 600, 1 if slow else n, idle_s=1.0, cpu=cpu)
                note = "ran once" if slow else ""
                rows.append(Row(f"flags: {name}", "typical", 600, typical, cpu=cpu, note=note))
    finally:
        render_worker.chromium_args = original


def print_table(rows: list[Row]) -> None:
    head = ["scenario", "sketch", "size", "n", "median s", "min s", "max s", "cpu s", "renders/min", "note"]
    table = [head] + [row.cells() for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for i, r in enumerate(table):
        cells = (c.ljust(w) if j in (0, 1, 9) else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths)))
        print("  ".join(cells).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, skip the slow published flags")
    parser.add_argument("--gpu-mode", choices=["swiftshader", "hardware"], default=None,
                        help="hardware: WebGL on a real GPU through ANGLE/EGL (a GPU box); default RENDER_GPU_MODE or swiftshader")
    parser.add_argument("--only", choices=["modes", "processes", "sizes", "flags"], action="append")
    args = parser.parse_args()
    if args.gpu_mode:
        os.environ["RENDER_GPU_MODE"] = args.gpu_mode  # every RendererConfig below picks it up
        print(f"gpu mode: {args.gpu_mode}", file=sys.stderr)
    n = 3 if args.quick else 5
    sections = args.only or ["modes", "processes", "sizes", "flags"]
    rows: list[Row] = []
    t0 = time.perf_counter()
    if "modes" in sections:
        bench_modes(rows, n)
    if "processes" in sections:
        bench_processes(rows, 2 if args.quick else 4)
    if "sizes" in sections:
        bench_sizes(rows, 2 if args.quick else 3)
    if "flags" in sections:
        bench_flags(rows, 2 if args.quick else 3, args.quick)
    progress(f"done in {time.perf_counter() - t0:.0f} s")
    print(f"Chromium renderer benchmark ({'quick' if args.quick else 'full'}); seconds per render() call")
    print_table(rows)


if __name__ == "__main__":
    main()
