"""The adversarial corpus (tests/paintenv/adversarial/) against both layers.

Every forbidden construct behind every hiding wrapper must be rejected by the static gate
(fast, no browser) and, separately, by the renderer alone (slow: one Chromium, 128 px,
a 5 s budget per sketch). Every legitimate sketch must pass the gate, and a sample of
them must render and pass.
Run: .venv/bin/python -m pytest tests/paintenv/test_adversarial.py -q -p no:django -m "not slow"
     .venv/bin/python -m pytest tests/paintenv/test_adversarial.py -q -p no:django -m slow
"""
from __future__ import annotations

import re
from collections import Counter

import pytest
import tree_sitter_javascript
from tree_sitter import Language, Parser

from paintenv import seedgen
from paintenv.gate import gate_source
from paintenv.render_result import Render
from paintenv.text_check import get_text_check
from tests.paintenv.adversarial import (
    BENCH_DIR,
    CASES,
    CONSTRUCTS,
    GOOD_DIR,
    LEGIT,
    LEGIT_EXCLUDED,
    LEGIT_NAMES,
    LEGIT_SEEDGEN,
    ROOT,
    RUNTIME_CODES,
    STATIC_CODES,
    TRUNCATED,
    WRAPPER_FORMS,
    WRAPPERS,
    Case,
    skeleton,
)
from tests.support.rendering import render_many

CASE_IDS = [c.id for c in CASES]
LEGIT_IDS = [name for name, _ in LEGIT]
MIN_CASES = 150
MIN_PARTNERS = 6  # wrappers per construct, constructs per wrapper
RENDER_SIZE = 128
RENDER_TIMEOUT_S = 5  # hostile cases: each renders in ~1 s; a hang costs 5 s
# Legitimate sketches: the heaviest (bench/heavy.js, cherry sprigs, overfilled daisies)
# take 4-5 s at 128 px on a loaded 2-core machine, so 5 s would make them flaky.
LEGIT_TIMEOUT_S = 30

# p5 event handlers that fire only on user input: never during a render.
NEVER_CALLED_HANDLERS = frozenset({"mousePressed", "windowResized"})
# Rendering every legitimate sketch costs minutes; the tests render the skeleton, the
# bench sketches and every sixth generated one (tests/paintenv/test_renderer.py renders the
# good corpus, test_seedgen.py one sketch per style, bench/integrity.py the demo pool).
def _rendered_here(index: int, name: str) -> bool:
    if name.startswith("good/"):
        return False
    return index % 6 == 0 if name.startswith(("seedgen/", "pool/")) else True


LEGIT_RENDERED = [(name, code) for i, (name, code) in enumerate(LEGIT) if _rendered_here(i, name)]

_JS = Language(tree_sitter_javascript.language())


def _parses(code: str) -> bool:
    return not Parser(_JS).parse(code.encode("utf-8")).root_node.has_error


# --------------------------------------------------------------------------- the corpus


def test_the_corpus_is_large_and_crosses_every_construct_with_every_wrapper():
    assert len(CASES) >= MIN_CASES
    pairs = Counter((c.construct, c.wrapper) for c in CASES)
    for construct in CONSTRUCTS:
        partners = {w for (c, w) in pairs if c == construct}
        assert len(partners) >= MIN_PARTNERS, (construct, sorted(partners))
    for wrapper in WRAPPERS:
        partners = {c for (c, w) in pairs if w == wrapper}
        assert len(partners) >= MIN_PARTNERS, (wrapper, sorted(partners))
    # In fact nothing is skipped: the product is complete.
    assert set(pairs) == {(c, w) for c in CONSTRUCTS for w in WRAPPERS}


def test_every_sub_form_of_every_wrapper_is_exercised():
    used = {(c.wrapper, c.form) for c in CASES}
    for wrapper, forms in WRAPPER_FORMS.items():
        for form in forms:
            assert (wrapper, form) in used, (wrapper, form)


def test_case_ids_are_unique_stable_slugs():
    assert len(set(CASE_IDS)) == len(CASE_IDS)
    for case in CASES:
        assert re.fullmatch(r"[a-z0-9_]+", case.id), case.id
        assert case.id == f"{case.construct}__{case.wrapper}__{case.variant}"


def test_every_case_expects_only_codes_of_the_contract():
    for case in CASES:
        assert case.static_codes and case.static_codes <= STATIC_CODES, case.id
        assert TRUNCATED not in case.static_codes, case.id  # hostile, not broken
        assert case.runtime_codes and case.runtime_codes <= RUNTIME_CODES, case.id


def test_every_case_is_valid_javascript_so_no_rejection_is_for_a_syntax_error():
    broken = [c.id for c in CASES if not _parses(c.code)]
    assert broken == []


def test_every_case_is_the_legitimate_skeleton_plus_a_forbidden_part():
    base = skeleton()
    assert gate_source(base).passed, gate_source(base).codes
    for case in CASES:
        assert case.code != base, case.id
        for line in ("function setup() {", "createCanvas(600, 600, WEBGL);", 'background("#f7f1e3");',
                     "translate(-width / 2, -height / 2);", "brush.scaleBrushes(3);",
                     "brush.noStroke();", 'brush.fill("#e9967a", 170);',
                     "brush.circle(300, 290, 60, 0.4);"):
            assert line in case.code, (case.id, line)


# --------------------------------------------------------------------------- static gate


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_static_gate_rejects_every_hostile_case(case: Case):
    verdict = gate_source(case.code)
    passed = verdict.passed
    assert not passed, f"{case.id} passed the gate (form {case.form})"
    assert set(verdict.codes) & case.static_codes, (
        f"{case.id}: rejected with {verdict.codes}, expected one of {sorted(case.static_codes)}")


@pytest.mark.parametrize(("name", "code"), LEGIT, ids=LEGIT_IDS)
def test_every_legitimate_sketch_passes_the_gate(name: str, code: str):
    verdict = gate_source(code)
    assert verdict.passed, (name, [str(v) for v in verdict.violations])


# --------------------------------------------------------------------------- the legit set


def test_the_legitimate_set_holds_every_good_and_every_painting_bench_sketch():
    for path in GOOD_DIR.glob("*.js"):
        assert f"good/{path.name}" in LEGIT_NAMES
    for path in BENCH_DIR.glob("*.js"):
        rel = str(path.relative_to(ROOT))
        assert rel in LEGIT_NAMES or rel in LEGIT_EXCLUDED, rel
    for rel in LEGIT_EXCLUDED:
        assert (ROOT / rel).exists(), rel  # an exclusion names a real file


def test_the_legitimate_set_covers_every_flower_subject_and_every_style():
    assert len([n for n in LEGIT_NAMES if n.startswith("seedgen/")]) >= 40
    assert {sk.subject_slug for sk in LEGIT_SEEDGEN} == {s.slug for s in seedgen.SEED_SUBJECTS}
    styles = Counter(sk.style for sk in LEGIT_SEEDGEN)
    assert set(styles) == set(seedgen.STYLES)
    assert all(styles[s] >= 2 for s in seedgen.WEAK_STYLES), styles
    seeds = [sk.seed for sk in LEGIT_SEEDGEN if sk.seed <= 4000]
    assert min(seeds) < 100 and max(seeds) > 3800  # spread over the range


# --------------------------------------------------------------------------- renderer


@pytest.fixture(scope="module")
def hostile_renders() -> dict[str, Render]:
    """Every case rendered once (two renderers side by side), the first time a test asks."""
    renders = render_many([c.code for c in CASES], timeout_s=RENDER_TIMEOUT_S, size=RENDER_SIZE)
    return dict(zip(CASE_IDS, renders))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_renderer_alone_rejects_every_hostile_case(hostile_renders, case: Case):
    result = hostile_renders[case.id]  # render() never raises for a sketch
    assert isinstance(result, Render)
    if case.form in NEVER_CALLED_HANDLERS:
        # Dead code at runtime: p5 calls these handlers only on user input, which a render
        # never has (and the page hands p5 nothing but setup and draw). The gate refuses
        # the sketch; here the forbidden part must simply never have run.
        assert result.bare_calls == {}, (case.id, result.bare_calls)
        return
    passed = result.passed
    assert not passed, f"{case.id} passed the renderer (form {case.form}): {result.violations}"
    assert set(result.violations) & case.runtime_codes, (
        f"{case.id}: {result.violations}, expected one of {sorted(case.runtime_codes)}; "
        f"errors {[e.message for e in result.errors][:3]}")


@pytest.fixture(scope="module")
def legit_renders() -> dict[str, Render]:
    renders = render_many([code for _, code in LEGIT_RENDERED], timeout_s=LEGIT_TIMEOUT_S,
                          size=RENDER_SIZE)
    return dict(zip([name for name, _ in LEGIT_RENDERED], renders))


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, _ in LEGIT_RENDERED])
def test_every_legitimate_sketch_renders_and_passes(legit_renders, name: str):
    result = legit_renders[name]
    assert result.passed, (name, result.violations, [e.message for e in result.errors][:3])
    found = get_text_check().find(result.png)  # what the render worker reads next
    assert not found.legible, (name, found.where, found.score)
