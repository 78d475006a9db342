"""The scene of a full seed sketch: what setup() paints after the paper, layer by layer.

One writer for every flower family. The family's arrangement (tables.toml) gives the
compositions, the numbers its layers share, and the layers it paints in order: a pale
ground, lily pads, stems or a branch, leaves, a bud, the blooms. The layer order is also
the order of the random draws, so it is part of the output (see plan.py). The JS of each
layer is a section of js/scene.js.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from paintenv.seedgen import js
from paintenv.seedgen.plan import Plan, decimal, reach, whole
from paintenv.seedgen.tables import ARRANGEMENTS, PALE_SUBJECTS, Arrangement

Placement = tuple[float, float, float, float]


@dataclass
class Scene:
    plan: Plan
    arrangement: Arrangement
    composition: dict[str, Any]
    flip: int  # the composition's coin: -1 mirrors it
    blooms: list[Placement] = field(default_factory=list)  # x, y, scale, turn (or lean); back first
    bud: Placement | None = None  # x, y, angle, scale
    branch: Placement | None = None  # a sprig's branch: x1, y1, x2, y2
    blossoms: int = 0  # along a sprig's branch
    with_stem: bool = False
    with_leaves: bool = False
    lines: list[str] = field(default_factory=list)  # setup()'s, each indented by two spaces
    helpers: set[str] = field(default_factory=set)  # the js/helpers.js functions they call
    extras: list[str] = field(default_factory=list)  # what the description adds: "on a stem"
    suffix: str = ""  # and after those: " on a branch"

    @property
    def describe(self) -> str:
        """The scene's sentence in the header comment."""
        text = self.composition["describe"]
        if self.extras:
            text += ", " + " and ".join(self.extras)
        return text + self.suffix + "."

    def paint(self, section: str, **values: object) -> None:
        self.lines.append(js.fill("scene.js", section, **values))

    def gap(self) -> None:
        self.lines.append("")


def write_scene(rng: random.Random, plan: Plan) -> Scene:
    arrangement = ARRANGEMENTS[plan.family.arrangement]
    scene = Scene(plan=plan, arrangement=arrangement,
                  composition=arrangement.compositions[plan.composition], flip=rng.choice((-1, 1)))
    _place(rng, scene)
    for layer in arrangement.layers:
        _LAYERS[layer](rng, scene)
    return scene


# ---------------------------------------------------------------------------------------
# Placing the composition (tables.toml explains a placement's values)


def _value(rng: random.Random, spec: Any, scene: Scene) -> float:
    if isinstance(spec, (int, float)):
        return spec
    if len(spec) == 2:
        return rng.uniform(*spec)
    base = {"anchor": scene.plan.family.anchor, "up": -math.pi / 2}.get(spec[0], spec[0])
    if len(spec) == 3:
        return base + rng.uniform(spec[1], spec[2])
    way, low, high = spec[1:]
    sign = {"flip": scene.flip, "against-flip": -scene.flip, "minus": -1}.get(way)
    if sign is None:
        if way != "either-way":
            raise ValueError(f"unknown way {way!r} in a placement: {spec}")
        sign = rng.choice((-1, 1))
    return base + sign * rng.uniform(low, high)


def _place(rng: random.Random, scene: Scene) -> None:
    composition = scene.composition

    def placement(specs: list[Any]) -> Placement:
        x, y, a, b = (_value(rng, spec, scene) for spec in specs)
        return x, y, a, b

    scene.blooms = [placement(bloom) for bloom in composition.get("blooms", ())]
    if "bud" in composition:
        scene.bud = placement(composition["bud"])
    if "branch" in composition:
        x1, y1, x2, y2 = placement(composition["branch"])
        scene.blossoms = rng.randint(*composition["blossoms"])
        if scene.flip < 0:  # mirror left and right
            x1, x2 = 600 - x1, 600 - x2
        scene.branch = (x1, y1, x2, y2)


def _branch(scene: Scene) -> Placement:
    if scene.branch is None:
        raise ValueError(f"composition {scene.plan.composition!r} of the {scene.arrangement.name} arrangement "
                         "paints along a branch but places none")
    return scene.branch


# ---------------------------------------------------------------------------------------
# Layers: each paints its part of setup() (or, "decide-", draws whether a part is painted)


def _decide_stem(rng: random.Random, scene: Scene) -> None:
    # no stem under lily pads, nor one for a close-up whose bloom runs off the edges
    scene.with_stem = (not scene.plan.family.pads and scene.plan.composition != "close-up"
                       and rng.random() < 0.55)


def _decide_leaves(rng: random.Random, scene: Scene) -> None:
    scene.with_leaves = (rng.random() < scene.arrangement.leaf_chance
                         or (scene.arrangement.leafy_when_muddy and scene.plan.style == "muddy"))


def _ground(rng: random.Random, scene: Scene) -> None:
    if not scene.plan.ground:
        return
    x, y, s, _turn = scene.blooms[-1]
    # white flowers need a firmer ground to stand out; coloured ones only a whisper
    scene.paint("ground", opacity=120 if scene.plan.subject.slug in PALE_SUBJECTS else 80)
    scene.helpers.add("wash")
    for circle in scene.arrangement.ground:
        cx = x + rng.uniform(*circle["dx"])
        cy = y + rng.uniform(*circle["dy"]) if "dy" in circle else y - circle["rise"] * s
        per_scale, extra = circle["radius"]
        scene.paint("ground-circle", x=whole(cx), y=whole(cy), radius=whole(per_scale * s + extra))
    scene.gap()


def _pads_round_bloom(rng: random.Random, scene: Scene) -> None:
    if not scene.plan.family.pads:  # a water lily always floats on its pads
        return
    scene.helpers.update({"pad", "wash"})
    scene.paint("pads-round-bloom")
    x, y, s, _turn = scene.blooms[-1]
    for i in range(rng.randint(2, 3)):
        px = x + (-1) ** i * scene.flip * rng.uniform(110, 200) * s
        py = y + rng.uniform(30, 110) * s
        scene.paint("pad", shade=i % 2 + 1, x=whole(px), y=whole(py),
                    radius=whole(rng.uniform(75, 115) * s), notch=decimal(rng.uniform(-2.0, -1.1)))
    scene.gap()
    scene.extras.append("on lily pads")


def _stems_off_the_paper(rng: random.Random, scene: Scene) -> None:
    if not (scene.with_stem or scene.bud):
        return
    scene.helpers.update({"band", "wash"})
    scene.paint("stems-off-the-paper")
    if scene.with_stem:
        # a stem starts under the rim: seen through translucent petals it would cross them
        length = reach(scene.plan)
        for x, y, s, _turn in scene.blooms:
            bend = rng.uniform(-40, 40)
            scene.paint("band", x1=whole(x), y1=whole(y + length * s * 0.7), x2=whole(x + rng.uniform(-60, 60)),
                        y2=640, width=whole(12 * s), bend=whole(bend))
        scene.extras.append("on a stem")
    if scene.bud:
        bx, by, _angle, bs = scene.bud
        scene.paint("band", x1=whole(bx), y1=whole(by), x2=whole(bx + scene.flip * rng.uniform(10, 50)),
                    y2=640, width=whole(8 * bs), bend=whole(-scene.flip * rng.uniform(20, 50)))
    scene.gap()


def _stems_or_branch(rng: random.Random, scene: Scene) -> None:
    family = scene.plan.family
    scene.helpers.update({"band", "wash"})
    scene.paint("branch" if family.on_branch else "stems")
    stems = list(scene.blooms)
    if scene.bud:
        bx, by, _angle, bs = scene.bud
        stems.append((bx, by, bs, 0.0))
    for x, y, s, _lean in stems:
        if family.on_branch:  # every flower on one branch running off the far side
            scene.paint("band", x1=whole(x), y1=whole(y + 10 * s), x2=whole(-30 if scene.flip > 0 else 630),
                        y2=whole(y + rng.uniform(120, 220)), width=whole(family.stem_width * s),
                        bend=whole(rng.uniform(-30, 30)))
        else:
            scene.paint("band", x1=whole(x), y1=whole(y + 10 * s), x2=whole(x + rng.uniform(-40, 40)), y2=640,
                        width=whole(family.stem_width * s), bend=whole(rng.uniform(-25, 25)))
    scene.gap()
    if family.on_branch:
        scene.suffix = " on a branch"


def _branch_and_twig(rng: random.Random, scene: Scene) -> None:
    x1, y1, x2, y2 = _branch(scene)
    scene.helpers.update({"band", "wash"})
    scene.paint("branch-and-twig")
    width, bend = rng.uniform(16, 22), rng.uniform(-40, 40)
    for wide in (width, width * 0.55):
        scene.paint("band", x1=whole(x1), y1=whole(y1), x2=whole(x2), y2=whole(y2), width=whole(wide),
                    bend=whole(bend))
    # the twig leaves the branch a little past its middle
    tx = x1 + (x2 - x1) * 0.55
    ty = y1 + (y2 - y1) * 0.55
    scene.paint("band", x1=whole(tx), y1=whole(ty), x2=whole(tx + scene.flip * rng.uniform(60, 110)),
                y2=whole(ty + rng.uniform(-120, -60)), width=whole(rng.uniform(7, 10)),
                bend=whole(rng.uniform(-20, 20)))
    scene.gap()


def _leaves_round_bloom(rng: random.Random, scene: Scene) -> None:
    if not scene.with_leaves or scene.plan.family.pads:
        return
    scene.helpers.update({"leaf", "almond", "wash"})
    x, y, s, _turn = scene.blooms[-1]
    if scene.with_stem:
        scene.paint("leaves-along-the-stem")
        length = reach(scene.plan)
        for i in range(rng.randint(1, 2)):
            side = -1 if i % 2 == 0 else 1
            ly = min(y + length * s * 0.8 + rng.uniform(20, 80), 560)
            angle = (math.pi - 0.5 if side < 0 else 0.5) + rng.uniform(-0.25, 0.25)
            scene.paint("leaf", x=whole(x + side * 4), y=whole(ly), angle=decimal(angle),
                        length=whole(rng.uniform(130, 170) * s), width=whole(rng.uniform(55, 70) * s))
    else:
        # they start under the rim: through translucent petals a leaf from the
        # centre would read as painted on top
        scene.paint("leaves-under-the-petals")
        length = reach(scene.plan) * s
        base = rng.uniform(0.3, 1.2)
        for i in range(rng.randint(2, 3)):
            angle = base + i * rng.uniform(0.9, 1.3)
            scene.paint("leaf", x=whole(x + math.cos(angle) * length * 0.6),
                        y=whole(y + math.sin(angle) * length * 0.6), angle=decimal(angle),
                        length=whole(length * rng.uniform(0.75, 0.95)),
                        width=whole(length * rng.uniform(0.38, 0.48)))
    scene.gap()
    scene.extras.append("with leaves")


def _leaves_from_the_ground(rng: random.Random, scene: Scene) -> None:
    if not scene.with_leaves:
        return
    family = scene.plan.family
    if family.pads:
        scene.helpers.add("pad")
        scene.paint("pads-on-water")
        for i in range(rng.randint(2, 3)):
            px = 300 + (-1) ** i * rng.uniform(60, 190)
            scene.paint("pad", shade=i % 2 + 1, x=whole(px), y=whole(rng.uniform(470, 560)),
                        radius=whole(rng.uniform(110, 160)), notch=decimal(rng.uniform(-2.0, -1.1)))
        scene.extras.append("with lily pads")
    elif family.on_branch:
        scene.helpers.update({"leaf", "almond"})
        scene.paint("leaves-on-the-branch")
        x, y, _s, _lean = scene.blooms[-1]
        for i in range(rng.randint(1, 2)):
            angle = math.pi / 2 + scene.flip * rng.uniform(0.4, 1.0)
            scene.paint("leaf", x=whole(x - scene.flip * (40 + 50 * i)), y=whole(y + 30 + 30 * i),
                        angle=decimal(angle), length=whole(rng.uniform(90, 120)), width=whole(rng.uniform(36, 46)))
        scene.extras.append("with leaves")
    else:
        scene.helpers.update({"leaf", "almond"})
        scene.paint("sword-leaves" if family.sword_leaves else "blade-leaves")
        x = scene.blooms[-1][0]
        for i in range(rng.randint(2, 3)):
            side = -1 if i % 2 == 0 else 1
            angle = -math.pi / 2 + side * rng.uniform(0.15, 0.45)
            scene.paint("leaf", x=whole(x + side * rng.uniform(5, 30)), y=640, angle=decimal(angle),
                        length=whole(rng.uniform(230, 320)),
                        width=whole(rng.uniform(30, 42) if family.sword_leaves else rng.uniform(55, 75)))
        scene.extras.append("with leaves")
    scene.gap()


def _fresh_leaves(rng: random.Random, scene: Scene) -> None:
    if not scene.with_leaves:
        return
    x1, y1, x2, y2 = _branch(scene)
    scene.helpers.update({"leaf", "almond"})
    scene.paint("fresh-leaves")
    for _ in range(2):
        t = rng.uniform(0.3, 0.8)
        scene.paint("leaf", x=whole(x1 + (x2 - x1) * t), y=whole(y1 + (y2 - y1) * t),
                    angle=decimal(rng.uniform(0, 6.28)), length=whole(rng.uniform(60, 80)),
                    width=whole(rng.uniform(24, 30)))
    scene.gap()


def _bud(rng: random.Random, scene: Scene) -> None:
    if not scene.bud:
        return
    scene.helpers.update({"bud", "almond", "wash"})
    bx, by, angle, bs = scene.bud
    scene.paint("bud", x=whole(bx), y=whole(by + scene.arrangement.bud_drop * bs), angle=decimal(angle),
                scale=decimal(bs))
    scene.gap()


def _blooms(rng: random.Random, scene: Scene) -> None:
    scene.paint("several-blooms" if len(scene.blooms) > 1 else "one-bloom", noun=scene.arrangement.noun)
    turn = whole if scene.arrangement.lean_in_pixels else decimal
    for x, y, s, t in scene.blooms:
        scene.paint("bloom", call=scene.plan.family.call, x=whole(x), y=whole(y), scale=decimal(s), turn=turn(t))


def _blossoms_along_the_branch(rng: random.Random, scene: Scene) -> None:
    x1, y1, x2, y2 = _branch(scene)
    smallest, largest = scene.composition["blossom_scale"]
    scene.paint("blossoms-along-the-branch", call=scene.plan.family.call, count=scene.blossoms,
                last=scene.blossoms - 1, x1=whole(x1), y1=whole(y1), x2=whole(x2), y2=whole(y2),
                smallest=decimal(smallest), largest=decimal(largest), buds=rng.randint(3, 5))


_LAYERS: dict[str, Callable[[random.Random, Scene], None]] = {
    "decide-stem": _decide_stem,
    "decide-leaves": _decide_leaves,
    "ground": _ground,
    "pads-round-bloom": _pads_round_bloom,
    "stems-off-the-paper": _stems_off_the_paper,
    "stems-or-branch": _stems_or_branch,
    "branch-and-twig": _branch_and_twig,
    "leaves-round-bloom": _leaves_round_bloom,
    "leaves-from-the-ground": _leaves_from_the_ground,
    "fresh-leaves": _fresh_leaves,
    "bud": _bud,
    "blooms": _blooms,
    "blossoms-along-the-branch": _blossoms_along_the_branch,
}

_unknown = sorted({layer for a in ARRANGEMENTS.values() for layer in a.layers} - set(_LAYERS))
if _unknown:
    raise ValueError(f"tables.toml names layers scene.py does not paint: {_unknown}")
