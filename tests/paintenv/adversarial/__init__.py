"""A systematic adversarial corpus: every forbidden construct behind every hiding wrapper.

A hostile case is a complete sketch that looks like a legitimate painting (WEBGL canvas,
a paper background, a few brush washes, so it is neither blank nor broken and would pass
if the forbidden part were ignored) plus ONE forbidden construct, reached through ONE
hiding wrapper. The corpus is the cross product

    CONSTRUCTS (what puts pixels on the canvas without the brush, or tampers with the
                verdict)  x  WRAPPERS (how a policy would hide the forbidden name)

with one or two variants of the construct per pair (rotated, so every variant and every
sub-form of a wrapper appears somewhere). Nothing is skipped: through the "hider" below
every construct is written in terms of `h.call(name, args)` / `h.ref(name)`, and every
wrapper knows how to reach any global name (or any `brush.<method>`), so every pair is a
meaningful sketch.

Each `Case` carries the codes that count as a correct rejection:
  * static_codes: the static gate (`gate_source`) must report at least one of them;
  * runtime_codes: the renderer, run on the sketch WITHOUT the gate, must report at
    least one of them (and must never pass the sketch).

`LEGIT` is the other side: sketches that must pass both layers (the good corpus, the
bench sketches that paint, ~40 seed-generator sketches over every family and style, a
few pool items, and the hostile cases' own skeleton without the hostile part).

The package follows those seams: `codes` (the code names and `Case`), `skeleton` (the
legitimate painting around every case), `wrappers` (the hiding), `constructs` (the
forbidden parts), `legit` (the legitimate side); this module crosses constructs with
wrappers into CASES.

No pytest here: `python -m tests.paintenv.adversarial` prints the matrix, and
`python -m tests.paintenv.adversarial ID` prints one case's sketch.
"""
from __future__ import annotations

from collections import Counter

from tests.paintenv.adversarial.codes import RENDER_ERROR, RUNTIME_CODES, STATIC_CODES, TRUNCATED, Case
from tests.paintenv.adversarial.constructs import CONSTRUCT_LIST, CONSTRUCTS
from tests.paintenv.adversarial.legit import (
    BENCH_DIR,
    GOOD_DIR,
    LEGIT,
    LEGIT_EXCLUDED,
    LEGIT_NAMES,
    LEGIT_SEEDGEN,
    ROOT,
)
from tests.paintenv.adversarial.skeleton import assemble, skeleton
from tests.paintenv.adversarial.wrappers import (
    WRAPPER_FORMS,
    WRAPPER_STATIC_EXTRA,
    WRAPPERS,
    Hider,
    uses_this,
)

__all__ = [
    "CASES",
    "CONSTRUCTS",
    "WRAPPERS",
    "LEGIT",
    "LEGIT_EXCLUDED",
    "LEGIT_SEEDGEN",
    "Case",
    "by_id",
    "matrix",
    "skeleton",
    # also read by the tests
    "BENCH_DIR",
    "GOOD_DIR",
    "LEGIT_NAMES",
    "ROOT",
    "RUNTIME_CODES",
    "STATIC_CODES",
    "TRUNCATED",
    "WRAPPER_FORMS",
]


def _build() -> list[Case]:
    cases: list[Case] = []
    for ci, construct in enumerate(CONSTRUCT_LIST):
        k = construct.per_wrapper
        for wi, wrapper in enumerate(WRAPPERS):
            forms = WRAPPER_FORMS[wrapper]
            for j in range(k):
                variant = construct.variants[(wi * k + j) % len(construct.variants)]
                form = forms[(ci * k + j) % len(forms)]
                h = Hider(wrapper, form)
                payload = variant.body(h)
                top, block, bottom = h.place(payload, variant.decoy_names)
                code = assemble(list(construct.top) + top, block, bottom)
                static = construct.static_codes | variant.static_extra
                if construct.name == "disallowed_brush":
                    static |= WRAPPER_STATIC_EXTRA.get(wrapper, frozenset())
                runtime = construct.runtime_codes | variant.runtime_extra
                if uses_this(wrapper, form):
                    # `this` is the window only in a sloppy classic script; where the
                    # sketch runs as a module (strict, `this` undefined) the hiding
                    # itself throws, which is a rejection too.
                    runtime |= {RENDER_ERROR}
                cases.append(Case(
                    id=f"{construct.name}__{wrapper}__{variant.name}",
                    construct=construct.name,
                    wrapper=wrapper,
                    code=code,
                    static_codes=static,
                    runtime_codes=runtime,
                    variant=variant.name,
                    form=form,
                ))
    ids = [c.id for c in cases]
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    if dupes:
        raise AssertionError(f"duplicate case ids: {dupes}")
    for c in cases:
        assert c.static_codes <= STATIC_CODES, c.id
        assert c.runtime_codes <= RUNTIME_CODES, c.id
    return cases


CASES: list[Case] = _build()
_BY_ID = {c.id: c for c in CASES}


def by_id(case_id: str) -> Case:
    return _BY_ID[case_id]


def matrix() -> dict[str, dict[str, int]]:
    """construct -> wrapper -> number of cases."""
    out: dict[str, dict[str, int]] = {c: {w: 0 for w in WRAPPERS} for c in CONSTRUCTS}
    for case in CASES:
        out[case.construct][case.wrapper] += 1
    return out
