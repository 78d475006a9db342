"""Writing a planned seed sketch out as JavaScript, one writer per kind of sheet.

The full sketch (good, muddy, hard_edges and, with heavy washes over it, overfilled) is
constants, helpers, the bloom function and setup() painting the scene. near_empty and
scribbly are sheets of their own: a few constants and a few marks. The JS comes from the
sections of js/*.js; this module chooses and fills them, drawing in the order the plan
module describes.
"""
from __future__ import annotations

import math
import random
import textwrap
from collections.abc import Callable

from paintenv.seedgen import js
from paintenv.seedgen.plan import Plan, decimal, js_list, whole
from paintenv.seedgen.scene import write_scene
from paintenv.seedgen.tables import BRANCHES

_COMMENT_WIDTH = 88


class _Writer:
    """Collects the sketch's lines (a filled section may hold several)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n") + "\n"


def _capitalised(text: str) -> str:
    return text[0].upper() + text[1:]


def _header(w: _Writer, text: str) -> None:
    """The sketch's opening comment, wrapped."""
    for line in textwrap.wrap(text, width=_COMMENT_WIDTH):
        w.add(f"// {line}")
    w.add("")


def _setup(w: _Writer, plan: Plan) -> None:
    w.add(js.fill("sketch.js", "setup", js_seed=plan.js_seed), "")


def _constants(w: _Writer, plan: Plan) -> None:
    w.add(js.fill("sketch.js", "colours", paper=plan.paper[1], paper_name=plan.paper[0],
                  petals=js_list(plan.petals), centre=plan.palette.centre, dots=plan.palette.dots))
    for name, colour, note in plan.extra_colours:
        w.add(js.fill("sketch.js", "family-colour", name=name, colour=colour, note=note))
    # a branch gets one of the bark colours, picked by the sketch's own seed
    stem = BRANCHES[sorted(BRANCHES)[plan.js_seed % len(BRANCHES)]] if plan.family.on_branch else plan.leaves[0]
    w.add(js.fill("sketch.js", "leaves", leaves=js_list(list(plan.leaves)), stem=stem))
    if plan.ground:
        w.add(js.fill("sketch.js", "ground", ground=plan.ground[1], ground_name=plan.ground[0]))
    w.add("", js.fill("sketch.js", "paint", opacity=plan.opacity, bleed=decimal(plan.bleed),
                      grain=decimal(plan.grain), rim=decimal(plan.rim), curve=decimal(plan.curve),
                      wobble=decimal(plan.wobble)))
    if plan.geometry:
        w.add("", js.fill("sketch.js", "geometry"))
        for name, value, note in plan.geometry:
            if note:
                w.add(js.fill("sketch.js", "noted-constant", name=name, value=value, note=note))
            else:
                w.add(js.fill("sketch.js", "constant", name=name, value=value))
    w.add("")


def write_full(rng: random.Random, plan: Plan, *, overfill: bool = False) -> str:
    """Constants, helpers, the bloom function, setup(); `overfill` washes the sheet over."""
    family = plan.family
    scene = write_scene(rng, plan)
    helpers = set(family.helpers) | scene.helpers | {"wash"}
    if "leaf" in helpers or "bud" in helpers:
        helpers.add("almond")
    if "band" in helpers:
        helpers.add("stemWash")
    w = _Writer()
    _header(w, f"{_capitalised(plan.subject.text)} in loose watercolour: {family.blurb}. {scene.describe}")
    _constants(w, plan)
    if overfill:
        cover = [*plan.petals, plan.leaves[0], plan.leaves[1], plan.palette.centre]
        rng.shuffle(cover)
        w.add(js.fill("sketch.js", "cover", cover=js_list(cover[:5])), "")
    for name in js.sections("helpers.js"):  # in the file's order
        if name in helpers:
            w.add(js.fill("helpers.js", name), "")
    w.add(js.fill("blooms.js", family.js, call=family.call), "")
    _setup(w, plan)
    if overfill:
        band = rng.choice((120, 130, 150))
        w.add(js.fill("sketch.js", "cover-under", count=600 // band + 1, band=band), "")
    w.add(*scene.lines)
    if overfill:
        w.add("", js.fill("sketch.js", "cover-over", count=rng.randint(3, 4)))
    w.add("}")
    return w.text()


def _distance(a: str, b: str) -> float:
    """Euclidean RGB distance between two hex colours."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return math.dist(ca, cb)


def write_near_empty(rng: random.Random, plan: Plan) -> str:
    """One small mark on an otherwise empty sheet, sometimes with a leaf."""
    # the colour farthest from the paper, so the one small mark still reads as paint
    candidates = (plan.palette.petals[-1], plan.palette.petals[-2], plan.palette.centre)
    colour = max(candidates, key=lambda c: _distance(c, plan.paper[1]))
    w = _Writer()
    w.add(js.fill("weak.js", "near-empty-constants", subject=_capitalised(plan.subject.text),
                  paper=plan.paper[1], paper_name=plan.paper[0], petal=colour, leaf=plan.leaves[0]), "")
    x, y = rng.uniform(140, 460), rng.uniform(140, 460)
    r = rng.uniform(36, 46)  # radius 36-46 paints 0.8-1.5 % of a 600 x 600 sheet
    _setup(w, plan)
    bleed = rng.uniform(0.1, 0.25)
    grain, rim = rng.uniform(0.3, 0.5), rng.uniform(0.2, 0.4)
    wobble = rng.uniform(0.2, 0.4)
    w.add(js.fill("weak.js", "near-empty-bud", bleed=decimal(bleed), grain=decimal(grain), rim=decimal(rim),
                  x=whole(x), y=whole(y), radius=whole(r), wobble=decimal(wobble)))
    if rng.random() < 0.6:
        a = rng.uniform(0.3, 2.8)
        length = rng.uniform(35, 55)
        tip = (x + math.cos(a) * (r + length), y + math.sin(a) * (r + length))
        side = (-math.sin(a) * 9, math.cos(a) * 9)
        mid = (x + math.cos(a) * (r + length * 0.5), y + math.sin(a) * (r + length * 0.5))
        base = (x + math.cos(a) * r, y + math.sin(a) * r)
        w.add("", js.fill("weak.js", "near-empty-leaf", base_x=whole(base[0]), base_y=whole(base[1]),
                          left_x=whole(mid[0] + side[0]), left_y=whole(mid[1] + side[1]),
                          tip_x=whole(tip[0]), tip_y=whole(tip[1]),
                          right_x=whole(mid[0] - side[0]), right_y=whole(mid[1] - side[1])))
    w.add("}")
    return w.text()


def write_scribbly(rng: random.Random, plan: Plan) -> str:
    """Nothing but round blobs of one size: a ring of them for petals."""
    petal = plan.palette.petals[rng.randint(2, 3)]
    leaf = plan.leaves[rng.randint(0, 1)]
    cx, cy = 300 + rng.uniform(-40, 40), 280 + rng.uniform(-40, 40)
    count = rng.randint(5, 9)
    blob = rng.uniform(38, 55)
    ring = blob * rng.uniform(1.5, 1.9)
    wobble = rng.uniform(0.8, 1.0)
    w = _Writer()
    w.add(js.fill("weak.js", "scribbly-constants", subject=_capitalised(plan.subject.text),
                  paper=plan.paper[1], paper_name=plan.paper[0], petal=petal, centre=plan.palette.centre,
                  leaf=leaf, cx=whole(cx), cy=whole(cy), count=count, ring=whole(ring), blob=whole(blob),
                  wobble=decimal(wobble)), "")
    _setup(w, plan)
    leaf_opacity = rng.randint(190, 230)
    leaf_bleed = rng.uniform(0.05, 0.15)
    petal_opacity = rng.randint(190, 230)
    centre_opacity = rng.randint(200, 235)
    w.add(js.fill("weak.js", "scribbly-blobs", leaf_opacity=leaf_opacity, leaf_bleed=decimal(leaf_bleed),
                  petal_opacity=petal_opacity, centre_opacity=centre_opacity), "}")
    return w.text()


WRITERS: dict[str, Callable[[random.Random, Plan], str]] = {
    "good": write_full,
    "muddy": write_full,
    "hard_edges": write_full,
    "overfilled": lambda rng, plan: write_full(rng, plan, overfill=True),
    "near_empty": write_near_empty,
    "scribbly": write_scribbly,
}
