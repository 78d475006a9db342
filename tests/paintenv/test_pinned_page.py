"""The published canvas and a pinned page: a sketch paints on one 600 x 600 WEBGL canvas, and
nothing it can read changes with the renderer's history.

The probe corpus (tests/paintenv/adversarial/probes.py) crosses what a sketch may read about
the renderer (the heap's size, a console or clock of the page's own, GC, microtasks, stack
traces, the stack's depth after churn, Math.random) with the ways to reach it past the gate
and what it decides in the painting. Each case is refused (gate and render page alike) or
pinned: then it paints the same in a fresh renderer, a warm one and the determinism twin.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from paintenv.determinism import compare_paintings
from paintenv.gate import gate_source
from paintenv.render_config import RendererConfig
from paintenv.renderer import Renderer
from tests.paintenv.adversarial.page_surface import CHURN_SKETCHES, SKETCH_ROOTS, history_dependent, readings
from tests.paintenv.adversarial.probes import HIDINGS, PROBES, USES, cases, one_per_pair, walk
from tests.paintenv.adversarial.skeleton import assemble, skeleton
from tests.support.rendering import render_many

SIZE = 128
TIMEOUT_S = 30
SKELETON = skeleton()
# painted: every probe, hiding and use once (the gate reads the whole cross product)
REFUSED = walk(pinned=False)
PINNED = walk(pinned=True)


def with_canvas(call: str, prelude: str = "") -> str:
    return prelude + SKELETON.replace("createCanvas(600, 600, WEBGL);", call, 1)


# Another canvas size, however it is written, or a canvas changed after it was made.
OTHER_CANVASES = {
    "thumbnail": with_canvas("createCanvas(38, 38, WEBGL);"),
    "poster": with_canvas("createCanvas(1800, 1800, WEBGL);"),
    "one_unit_off": with_canvas("createCanvas(600, 601, WEBGL);"),
    "wide": with_canvas("createCanvas(1200, 600, WEBGL);"),
    "negative": with_canvas("createCanvas(-600, -600, WEBGL);"),
    "as_strings": with_canvas('createCanvas("600", "600", WEBGL);'),
    "const": with_canvas("createCanvas(SIDE, SIDE, WEBGL);", "const SIDE = 1800;\n"),
    "computed": with_canvas("createCanvas(300 * 6, 300 * 6, WEBGL);"),
    "second_canvas": assemble([], ["createCanvas(600, 600, WEBGL);"], []),
    "second_canvas_larger": assemble([], ["createCanvas(1800, 1800, WEBGL);"], []),
    "resize": assemble([], ["resizeCanvas(1800, 1800);"], []),
    "density": assemble([], ["pixelDensity(3);"], []),
}
# What the gate can see: the size is a literal, or the canvas is changed by name.
LITERAL_CANVASES = ("thumbnail", "poster", "one_unit_off", "wide", "negative", "as_strings",
                    "second_canvas_larger", "resize", "density")
# The published canvas, however its size is spelled.
PUBLISHED_CANVASES = {
    "literal": SKELETON,
    "float": with_canvas("createCanvas(600.0, 600.0, WEBGL);"),
    "exponent": with_canvas("createCanvas(6e2, 6e2, WEBGL);"),
    "const": with_canvas("createCanvas(SIDE, SIDE, WEBGL);", "const SIDE = 600;\n"),
    "computed": with_canvas("createCanvas(300 * 2, 300 * 2, WEBGL);"),
}


# --------------------------------------------------------------------------- the corpus
def test_the_probe_corpus_is_the_whole_cross_product():
    assert len(cases()) == len(PROBES) * len(HIDINGS) * len(USES)
    assert {(c.probe.name, c.hiding) for c in one_per_pair()} == {(p.name, h) for p in PROBES for h in HIDINGS}
    assert {c.use for c in one_per_pair()} == set(USES)


@pytest.mark.parametrize("probe", [p for p in PROBES if not p.pinned], ids=lambda p: p.name)
def test_it_refuses_every_history_probe_in_the_gate_however_it_is_hidden_and_used(probe):
    passed = [c.id for c in cases() if c.probe == probe and gate_source(c.code).passed]
    assert passed == []


# --------------------------------------------------------------------------- the canvas
@pytest.mark.parametrize("name", LITERAL_CANVASES)
def test_it_refuses_a_canvas_of_another_size_in_the_gate_where_the_size_is_written(name):
    assert "canvas_size" in gate_source(OTHER_CANVASES[name]).codes


@pytest.mark.parametrize("name", sorted(PUBLISHED_CANVASES))
def test_the_gate_lets_the_published_canvas_through_however_its_size_is_spelled(name):
    verdict = gate_source(PUBLISHED_CANVASES[name])
    assert verdict.passed, verdict.codes


@pytest.mark.slow
def test_it_refuses_a_canvas_of_another_size_or_a_resized_one_at_render_time():
    names = sorted(OTHER_CANVASES)
    renders = render_many([OTHER_CANVASES[n] for n in names], timeout_s=TIMEOUT_S, size=SIZE)
    found = {n: r.violations for n, r in zip(names, renders)}
    assert {n: "runtime_canvas_size" in v for n, v in found.items()} == dict.fromkeys(names, True), found


@pytest.mark.slow
def test_the_published_canvas_renders_at_the_render_size_however_its_size_is_spelled():
    names = sorted(PUBLISHED_CANVASES)
    renders = render_many([PUBLISHED_CANVASES[n] for n in names], timeout_s=TIMEOUT_S, size=SIZE)
    assert {n: r.violations for n, r in zip(names, renders)} == {n: [] for n in names}


# --------------------------------------------------------------------------- the page
@pytest.mark.slow
def test_it_refuses_every_history_probe_at_render_time_without_the_gate():
    renders = render_many([c.code for c in REFUSED], timeout_s=TIMEOUT_S, size=SIZE)
    missed = {c.id: (r.violations, r.bare_calls) for c, r in zip(REFUSED, renders)
              if "runtime_forbidden_api" not in r.violations}
    assert missed == {}


@pytest.mark.slow
def test_a_pinned_probe_paints_the_same_in_a_fresh_renderer_a_warm_one_and_the_twin():
    # Renderer k paints case k first (a fresh renderer), then case k-1 (one that has painted)
    # and its determinism twin: every case is painted in all three states.
    lock = threading.Lock()
    results: dict[str, dict] = {c.id: {} for c in PINNED}

    def run(k: int) -> None:
        with Renderer(RendererConfig(timeout_s=TIMEOUT_S)) as renderer:
            fresh = renderer.render(PINNED[k].code, seed=3, size=SIZE)
            previous = PINNED[k - 1]
            warm = renderer.render(previous.code, seed=3, size=SIZE)
            twin = renderer.render(previous.code, seed=3, size=SIZE, twin=True)
        with lock:
            results[PINNED[k].id]["fresh"] = fresh
            results[previous.id]["warm"] = warm
            results[previous.id]["twin"] = twin

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(run, range(len(PINNED))))
    differing = {}
    for case_id, found in results.items():
        fresh = found["fresh"]
        for state in ("warm", "twin"):
            other = found[state]
            if not compare_paintings(fresh.png, fresh.violations, other.png, other.violations).same:
                differing[f"{case_id} ({state})"] = (fresh.violations, other.violations)
    assert differing == {}
    # The pinned probes that the allowlist lets through do paint.
    assert any(found["fresh"].passed for found in results.values())


@pytest.mark.slow
def test_nothing_a_sketch_can_reach_differs_between_a_fresh_a_warm_and_a_churned_page():
    found = readings(SKETCH_ROOTS)
    assert len(found["fresh"]) > 300  # the walk reached the built-ins and the console
    assert "console.memory" in found["fresh"]
    assert history_dependent(found) == {}


@pytest.mark.slow
def test_the_determinism_twin_paints_on_a_page_of_its_own_and_agrees_on_a_legitimate_painting():
    with Renderer(RendererConfig(timeout_s=TIMEOUT_S)) as renderer:
        for code in CHURN_SKETCHES:
            renderer.render(code, size=SIZE)
        first = renderer.render(SKELETON, seed=5, size=SIZE)
        twin = renderer.render(SKELETON, seed=5, size=SIZE, twin=True)
    assert twin.timings["prewarmed"] == 0.0
    assert first.passed and twin.passed
    assert compare_paintings(first.png, first.violations, twin.png, twin.violations).same
