"""Seed pool generator: procedural p5.brush sketches of flowers, good and deliberately weak.

Two uses:
* a seed reference pool before any curator has graded anything (the weak styles give the
  grading something to separate), and
* the SFT warm-start corpus of the tiny model (`sft_pairs`, good sketches only).

Because a language model learns from these, every sketch is written the way a good model
answer would look: one style throughout (palette constants, wash constants, geometry
constants, small helper functions, then setup()), comments that say what is painted,
loops instead of long coordinate lists, and numbers rounded to whole pixels or two
decimals. Only the ten allowed brush calls appear, plus plain p5 setup and arithmetic.

Every choice comes from `random.Random(seed)` and the sketch seeds p5 itself
(`randomSeed`/`noiseSeed`, which p5.brush also follows), so the same arguments give
byte-identical code and the same picture.

Weak styles, each recognisable on sight:
  muddy        brown/grey clashing palette, many overlapping high-opacity layers
  hard_edges   fillBleed 0, fillTexture 0, curvature 0: flat hard polygons
  near_empty   one or two small marks, just above the blank threshold
  overfilled   the whole sheet covered in heavy washes, the subject lost
  scribbly     nothing but round blobs of one size with a high scribble

The package: tables.toml holds the styles, families, bloom geometry, compositions and
palettes (read by tables.py); js/helpers.js and js/blooms.js hold the sketches' helper and bloom
functions (read by js.py); plan.py draws one sketch's choices; this module writes them out.
"""
from __future__ import annotations

import math
import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from paintapp.env.prompts import SYSTEM_PROMPT, Subject, user_message
from paintapp.env.seedgen import js
from paintapp.env.seedgen.plan import Plan, decimal, js_list, make_plan, reach, whole

# The tables read from tables.toml, also under the names this module has always had.
from paintapp.env.seedgen.tables import BRANCHES as BRANCHES
from paintapp.env.seedgen.tables import GREENS as GREENS
from paintapp.env.seedgen.tables import GROUNDS as GROUNDS
from paintapp.env.seedgen.tables import MUDDY_GREENS as MUDDY_GREENS
from paintapp.env.seedgen.tables import MUDDY_PALETTES as MUDDY_PALETTES
from paintapp.env.seedgen.tables import MUDDY_PAPERS as MUDDY_PAPERS
from paintapp.env.seedgen.tables import PALE_SUBJECTS, SEED_SUBJECTS, STYLES, Family
from paintapp.env.seedgen.tables import PALETTES as PALETTES
from paintapp.env.seedgen.tables import PAPERS as PAPERS
from paintapp.env.seedgen.tables import RADIAL_COMPOSITIONS as RADIAL_COMPOSITIONS
from paintapp.env.seedgen.tables import SPRIG_COMPOSITIONS as SPRIG_COMPOSITIONS
from paintapp.env.seedgen.tables import Palette as Palette

__all__ = [  # noqa: RUF022 - in the order it has always had
    "STYLES",
    "WEAK_STYLES",
    "SEED_SUBJECTS",
    "SeedSketch",
    "generate",
    "generate_pool",
    "sft_pairs",
]

WEAK_STYLES: tuple[str, ...] = STYLES[1:]

# When generate() picks the style itself: mostly good, the rest spread over the weak kinds.
_DEFAULT_WEAK_SHARE = 0.3


@dataclass(frozen=True)
class SeedSketch:
    id: str  # stable, e.g. "hibiscus-peach-0042"
    seed: int  # generator seed, also the render seed to use
    subject_slug: str
    subject_text: str
    prompt: str  # the user message
    style: str
    palette: str
    composition: str
    code: str

    @property
    def reply(self) -> str:
        """The assistant reply: the sketch in one js fence (code ends with a newline)."""
        return f"```js\n{self.code}```"

    def messages(self) -> list[dict[str, str]]:
        """System + user + assistant: one SFT example."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.prompt},
            {"role": "assistant", "content": self.reply},
        ]


# ---------------------------------------------------------------------------------------
# Writing the sketch


class _Writer:
    """Collects JS lines; setup() lines are indented by two spaces."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, line: str = "") -> None:
        self.lines.append(line)

    def block(self, text: str) -> None:
        self.lines.extend(text.rstrip("\n").split("\n"))

    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n") + "\n"


def _comment(w: _Writer, text: str, indent: str = "") -> None:
    for line in textwrap.wrap(text, width=88 - len(indent)):
        w.add(f"{indent}// {line}")


def _header(w: _Writer, plan: Plan, fam: Family, scene: str) -> None:
    text = plan.subject.text
    _comment(w, f"{text[0].upper() + text[1:]} in loose watercolour: {fam.blurb}. {scene}")
    w.add("")


def _constants(w: _Writer, plan: Plan, *, geometry: bool = True) -> None:
    w.add(f'const PAPER = "{plan.paper[1]}"; // {plan.paper[0]}')
    w.add("// one wash per petal colour, light to deep")
    w.add(f"const PETALS = {js_list(plan.petals)};")
    w.add(f'const CENTRE = "{plan.palette.centre}";')
    w.add(f'const DOTS = "{plan.palette.dots}";')
    for name, colour, note in plan.extra_colours:
        w.add(f'const {name} = "{colour}"; // {note}')
    w.add(f"const LEAVES = {js_list(list(plan.leaves))}; // deep to light")
    stem = BRANCHES[sorted(BRANCHES)[plan.js_seed % len(BRANCHES)]] if plan.family.on_branch else plan.leaves[0]
    w.add(f'const STEM = "{stem}";')
    if plan.ground:
        w.add(f'const GROUND = "{plan.ground[1]}"; // a {plan.ground[0]} wash behind the flower')
    w.add("")
    w.add("// how the paint behaves")
    w.add(f"const OPACITY = {plan.opacity};")
    w.add(f"const BLEED = {decimal(plan.bleed)}; // how far a wash spreads past its outline")
    w.add(f"const GRAIN = {decimal(plan.grain)}; // paper texture")
    w.add(f"const RIM = {decimal(plan.rim)}; // darker pigment at the edge of a wash")
    w.add(f"const CURVE = {decimal(plan.curve)}; // 0 = straight edges, 1 = round")
    w.add(f"const WOBBLE = {decimal(plan.wobble)}; // scribble of round marks")
    if geometry and plan.geometry:
        w.add("")
        w.add("// the shape of one bloom")
        for name, value, note in plan.geometry:
            w.add(f"const {name} = {value};" + (f" // {note}" if note else ""))
    w.add("")


def _setup_open(w: _Writer, plan: Plan) -> None:
    w.add("function setup() {")
    w.add("  createCanvas(600, 600, WEBGL);")
    w.add("  background(PAPER);")
    w.add("  translate(-width / 2, -height / 2); // (0, 0) is now the top-left corner")
    w.add(f"  randomSeed({plan.js_seed});")
    w.add(f"  noiseSeed({plan.js_seed});")
    w.add("  brush.scaleBrushes(3);")
    w.add("  brush.noStroke();")


@dataclass
class _Scene:
    """Everything setup() paints besides the helpers: in painting order."""

    describe: str
    lines: list[str]
    helpers: set[str]


def _radial_scene(rng: random.Random, plan: Plan, fam: Family) -> _Scene:
    comp = plan.composition
    call = fam.call
    lines: list[str] = []
    helpers: set[str] = set()
    blooms: list[tuple[float, float, float, float]] = []  # x, y, s, turn; back first
    bud: tuple[float, float, float, float] | None = None
    flip = rng.choice((-1, 1))
    if comp == "centred":
        blooms.append((300 + rng.uniform(-12, 12), 290 + rng.uniform(-15, 15), rng.uniform(0.95, 1.05),
                       rng.uniform(0, 6.28)))
    elif comp == "off-centre":
        blooms.append((300 + flip * rng.uniform(55, 85), 285 + rng.choice((-1, 1)) * rng.uniform(30, 55),
                       rng.uniform(0.85, 0.95), rng.uniform(0, 6.28)))
    elif comp == "two-blooms":
        blooms.append((300 - flip * rng.uniform(90, 120), rng.uniform(390, 420), rng.uniform(0.55, 0.62),
                       rng.uniform(0, 6.28)))
        blooms.append((300 + flip * rng.uniform(40, 60), rng.uniform(240, 270), rng.uniform(0.8, 0.88),
                       rng.uniform(0, 6.28)))
    elif comp == "bud-and-bloom":
        blooms.append((300 + flip * rng.uniform(20, 50), rng.uniform(300, 330), rng.uniform(0.85, 0.92),
                       rng.uniform(0, 6.28)))
        bud = (300 - flip * rng.uniform(130, 165), rng.uniform(150, 190), -math.pi / 2 - flip * rng.uniform(0.1, 0.4),
               rng.uniform(0.9, 1.1))
    else:  # close-up: one big bloom running off the edges
        blooms.append((300 + rng.uniform(-50, 50), 300 + rng.uniform(-50, 50), rng.uniform(1.45, 1.7),
                       rng.uniform(0, 6.28)))
    pads = plan.family.name == "water-lily"
    with_stem = not pads and comp != "close-up" and rng.random() < 0.55
    with_leaves = rng.random() < 0.8 or pads
    if plan.style in ("muddy",):
        with_leaves = True

    if plan.ground:
        x, y, s, _t = blooms[-1]
        helpers.add("wash")
        lines += ["  // a pale ground laid wet behind the flower so light petals read against it",
                  f"  wash(GROUND, {_ground_opacity(plan)}, min(BLEED * 1.5, 0.6));",
                  f"  brush.circle({whole(x + rng.uniform(-30, 30))}, {whole(y + rng.uniform(-20, 20))}, "
                  f"{whole(200 * s + 20)}, WOBBLE);",
                  f"  brush.circle({whole(x + rng.uniform(-90, 90))}, {whole(y + rng.uniform(40, 100))}, "
                  f"{whole(130 * s)}, WOBBLE);", ""]

    if pads and with_leaves:
        helpers.update({"pad", "wash"})
        lines.append("  // lily pads floating round the flower")
        x, y, s, _t = blooms[-1]
        for i in range(rng.randint(2, 3)):
            px = x + (-1) ** i * flip * rng.uniform(110, 200) * s
            py = y + rng.uniform(30, 110) * s
            lines.append(f"  wash(LEAVES[{i % 2 + 1}], 170, BLEED);")
            lines.append(f"  pad({whole(px)}, {whole(py)}, {whole(rng.uniform(75, 115) * s)}, "
                         f"{decimal(rng.uniform(-2.0, -1.1))});")
        lines.append("")

    if with_stem or bud:
        helpers.update({"band", "wash"})
        lines.append("  // stems first, reaching down off the paper")
        lines.append("  stemWash(STEM, 190);")
        # a stem starts under the rim: seen through translucent petals it would cross them
        length = reach(plan)
        stem_blooms = list(blooms if with_stem else [])
        for x, y, s, _t in stem_blooms:
            bend = rng.uniform(-40, 40)
            lines.append(f"  band({whole(x)}, {whole(y + length * s * 0.7)}, {whole(x + rng.uniform(-60, 60))}, "
                         f"640, {whole(12 * s)}, {whole(bend)});")
        if bud:
            bx, by, _a, bs = bud
            lines.append(f"  band({whole(bx)}, {whole(by)}, {whole(bx + flip * rng.uniform(10, 50))}, "
                         f"640, {whole(8 * bs)}, {whole(-flip * rng.uniform(20, 50))});")
        lines.append("")

    if with_leaves and not pads:
        helpers.update({"leaf", "almond", "wash"})
        if with_stem:
            lines.append("  // leaves along the stem")
            x, y, s, _t = blooms[-1]
            for i in range(rng.randint(1, 2)):
                side = -1 if i % 2 == 0 else 1
                ly = min(y + length * s * 0.8 + rng.uniform(20, 80), 560)
                angle = (math.pi - 0.5 if side < 0 else 0.5) + rng.uniform(-0.25, 0.25)
                lines.append(f"  leaf({whole(x + side * 4)}, {whole(ly)}, {decimal(angle)}, "
                             f"{whole(rng.uniform(130, 170) * s)}, {whole(rng.uniform(55, 70) * s)});")
        else:
            # they start under the rim: through translucent petals a leaf from the
            # centre would read as painted on top
            lines.append("  // leaves peeking out from under the petals")
            x, y, s, _t = blooms[-1]
            length = reach(plan) * s
            base = rng.uniform(0.3, 1.2)
            for i in range(rng.randint(2, 3)):
                angle = base + i * rng.uniform(0.9, 1.3)
                lines.append(f"  leaf({whole(x + math.cos(angle) * length * 0.6)}, "
                             f"{whole(y + math.sin(angle) * length * 0.6)}, {decimal(angle)}, "
                             f"{whole(length * rng.uniform(0.75, 0.95))}, {whole(length * rng.uniform(0.38, 0.48))});")
        lines.append("")

    if bud:
        helpers.update({"bud", "almond", "wash"})
        bx, by, a, bs = bud
        lines.append("  // a closed bud on its own stem")
        lines.append(f"  bud({whole(bx)}, {whole(by)}, {decimal(a)}, {decimal(bs)});")
        lines.append("")

    lines.append("  // the " + ("blooms, the far one first" if len(blooms) > 1 else "bloom"))
    for x, y, s, t in blooms:
        lines.append(f"  {call}({whole(x)}, {whole(y)}, {decimal(s)}, {decimal(t)});")

    describe = {
        "centred": "One bloom, centred",
        "off-centre": "One bloom, set off-centre",
        "two-blooms": "Two blooms, a small one behind a large one",
        "bud-and-bloom": "An open bloom with a closed bud on its own stem",
        "close-up": "A close-up: one large bloom running off the edges",
    }[comp]
    extras = []
    if with_stem:
        extras.append("on a stem")
    if with_leaves and not pads:
        extras.append("with leaves")
    if pads and with_leaves:
        extras.append("on lily pads")
    if extras:
        describe += ", " + " and ".join(extras)
    return _Scene(describe + ".", lines, helpers)


def _upright_scene(rng: random.Random, plan: Plan, fam: Family) -> _Scene:
    comp = plan.composition
    call = fam.call
    family = plan.family.name
    # y of the bloom's anchor: the base of the cup (tulip, magnolia, lotus) or the heart (iris)
    anchor = {"tulip": 350, "magnolia": 330, "lotus": 380, "iris": 250}[family]
    flowers: list[tuple[float, float, float, float]] = []  # x, y, s, lean; back first
    bud: tuple[float, float, float, float] | None = None
    flip = rng.choice((-1, 1))
    if comp == "centred":
        flowers.append((300 + rng.uniform(-15, 15), anchor + rng.uniform(-10, 20), 1.0, rng.uniform(-18, 18)))
    elif comp == "off-centre":
        flowers.append((300 + flip * rng.uniform(65, 90), anchor + rng.uniform(-10, 30), 0.9,
                        rng.uniform(-20, 20)))
    elif comp == "two-blooms":
        flowers.append((300 + flip * rng.uniform(80, 110), anchor + rng.uniform(60, 90), 0.7,
                        flip * rng.uniform(10, 25)))
        flowers.append((300 - flip * rng.uniform(50, 80), anchor + rng.uniform(-20, 0), 0.85,
                        -flip * rng.uniform(5, 20)))
    elif comp == "bud-and-bloom":
        flowers.append((300 - flip * rng.uniform(30, 60), anchor + rng.uniform(0, 30), 0.92,
                        rng.uniform(-15, 15)))
        bud = (300 + flip * rng.uniform(100, 140), anchor - rng.uniform(20, 70),
               -math.pi / 2 + flip * rng.uniform(0.1, 0.35), rng.uniform(1.0, 1.2))
    else:  # close-up
        flowers.append((300 + rng.uniform(-30, 30), anchor + rng.uniform(90, 130), 1.5, rng.uniform(-20, 20)))
    lines: list[str] = []
    helpers: set[str] = {"band", "wash"}
    if plan.ground:
        x, y, s, _l = flowers[-1]
        lines += ["  // a pale ground laid wet behind the flower so light petals read against it",
                  f"  wash(GROUND, {_ground_opacity(plan)}, min(BLEED * 1.5, 0.6));",
                  f"  brush.circle({whole(x + rng.uniform(-30, 30))}, {whole(y - 90 * s)}, {whole(190 * s)}, WOBBLE);",
                  ""]
    branch = family == "magnolia"
    lines.append("  // " + ("the branch" if branch else "stems") + " first")
    lines.append("  stemWash(STEM, 190);")
    stems = list(flowers) + ([(bud[0], bud[1], bud[3], 0.0)] if bud else [])
    if branch:
        end_x = -30 if flip > 0 else 630
        for x, y, s, _l in stems:
            lines.append(f"  band({whole(x)}, {whole(y + 10 * s)}, {whole(end_x)}, {whole(y + rng.uniform(120, 220))}, "
                         f"{whole(14 * s)}, {whole(rng.uniform(-30, 30))});")
    else:
        for x, y, s, _l in stems:
            lines.append(f"  band({whole(x)}, {whole(y + 10 * s)}, {whole(x + rng.uniform(-40, 40))}, 640, "
                         f"{whole((9 if family == 'iris' else 11) * s)}, {whole(rng.uniform(-25, 25))});")
    lines.append("")
    with_leaves = rng.random() < 0.85 or plan.style == "muddy"
    if with_leaves:
        if family == "lotus":
            helpers.add("pad")
            lines.append("  // lily pads on the water")
            for i in range(rng.randint(2, 3)):
                px = 300 + (-1) ** i * rng.uniform(60, 190)
                lines.append(f"  wash(LEAVES[{i % 2 + 1}], 170, BLEED);")
                lines.append(f"  pad({whole(px)}, {whole(rng.uniform(470, 560))}, {whole(rng.uniform(110, 160))}, "
                             f"{decimal(rng.uniform(-2.0, -1.1))});")
        elif branch:
            helpers.update({"leaf", "almond"})
            lines.append("  // a few young leaves on the branch")
            x, y, s, _l = flowers[-1]
            for i in range(rng.randint(1, 2)):
                angle = (math.pi / 2 + flip * rng.uniform(0.4, 1.0))
                lines.append(f"  leaf({whole(x - flip * (40 + 50 * i))}, {whole(y + 30 + 30 * i)}, "
                             f"{decimal(angle)}, {whole(rng.uniform(90, 120))}, {whole(rng.uniform(36, 46))});")
        else:
            helpers.update({"leaf", "almond"})
            narrow = family == "iris"
            lines.append("  // long " + ("sword" if narrow else "blade") + " leaves from the ground")
            x, _y, s, _l = flowers[-1]
            for i in range(rng.randint(2, 3)):
                side = -1 if i % 2 == 0 else 1
                angle = -math.pi / 2 + side * rng.uniform(0.15, 0.45)
                lines.append(f"  leaf({whole(x + side * rng.uniform(5, 30))}, 640, {decimal(angle)}, "
                             f"{whole(rng.uniform(230, 320))}, {whole(rng.uniform(30, 42) if narrow else rng.uniform(55, 75))});")
        lines.append("")
    if bud:
        helpers.update({"bud", "almond"})
        bx, by, a, bs = bud
        lines.append("  // a closed bud on its own stem")
        lines.append(f"  bud({whole(bx)}, {whole(by + 10 * bs)}, {decimal(a)}, {decimal(bs)});")
        lines.append("")
    lines.append("  // the " + ("flowers, the far one first" if len(flowers) > 1 else "flower"))
    for x, y, s, lean in flowers:
        lines.append(f"  {call}({whole(x)}, {whole(y)}, {decimal(s)}, {whole(lean)});")
    describe = {
        "centred": "One flower, centred",
        "off-centre": "One flower, set off-centre",
        "two-blooms": "Two flowers, a small one behind a large one",
        "bud-and-bloom": "An open flower with a closed bud beside it",
        "close-up": "A close-up: one large flower, its stem running off the bottom",
    }[comp]
    if with_leaves:
        describe += ", with " + ("lily pads" if family == "lotus" else "leaves")
    describe += " on a branch" if branch else ""
    return _Scene(describe + ".", lines, helpers)


def _sprig_scene(rng: random.Random, plan: Plan, fam: Family) -> _Scene:
    comp = plan.composition
    flip = rng.choice((-1, 1))
    if comp == "rising-sprig":
        x1, y1, x2, y2 = -20, rng.uniform(480, 560), rng.uniform(470, 560), rng.uniform(70, 140)
        count, size = rng.randint(6, 8), (1.05, 1.35)
    elif comp == "falling-sprig":
        x1, y1, x2, y2 = -20, rng.uniform(50, 120), rng.uniform(470, 560), rng.uniform(420, 520)
        count, size = rng.randint(6, 8), (1.05, 1.35)
    else:
        x1, y1, x2, y2 = -20, rng.uniform(380, 460), rng.uniform(420, 480), rng.uniform(200, 260)
        count, size = rng.randint(3, 4), (1.6, 2.0)
    if flip < 0:  # mirror left and right
        x1, x2 = 600 - x1, 600 - x2
    lines = [
        "  // the branch in two washes, and a twig off it",
        "  stemWash(STEM, 215);",
    ]
    width, bend = rng.uniform(16, 22), rng.uniform(-40, 40)
    for wide in (width, width * 0.55):
        lines.append(f"  band({whole(x1)}, {whole(y1)}, {whole(x2)}, {whole(y2)}, {whole(wide)}, {whole(bend)});")
    tx = x1 + (x2 - x1) * 0.55
    ty = y1 + (y2 - y1) * 0.55
    lines.append(f"  band({whole(tx)}, {whole(ty)}, {whole(tx + flip * rng.uniform(60, 110))}, "
                 f"{whole(ty + rng.uniform(-120, -60))}, {whole(rng.uniform(7, 10))}, {whole(rng.uniform(-20, 20))});")
    lines.append("")
    helpers = {"band", "wash", "lobe", "ring"}
    if rng.random() < 0.7:
        helpers.update({"leaf", "almond"})
        lines.append("  // a couple of fresh leaves")
        for i in range(2):
            t = rng.uniform(0.3, 0.8)
            lx, ly = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
            lines.append(f"  leaf({whole(lx)}, {whole(ly)}, {decimal(rng.uniform(0, 6.28))}, {whole(rng.uniform(60, 80))}, "
                         f"{whole(rng.uniform(24, 30))});")
        lines.append("")
    lines += [
        "  // blossoms strung along the branch, each a little off it and turned its own way",
        f"  for (let i = 0; i < {count}; i++) {{",
        f"    const t = 0.2 + (0.75 * i) / {count - 1};",
        f"    const x = lerp({whole(x1)}, {whole(x2)}, t) + random(-35, 35);",
        f"    const y = lerp({whole(y1)}, {whole(y2)}, t) + random(-35, 35);",
        f"    blossom(x, y, random({decimal(size[0])}, {decimal(size[1])}), random(TWO_PI));",
        "  }",
        "",
        "  // a few buds still closed",
        "  wash(PETALS[PETALS.length - 1], OPACITY, BLEED * 0.5);",
        f"  for (let i = 0; i < {rng.randint(3, 5)}; i++) {{",
        "    const t = random(0.3, 1);",
        f"    const x = lerp({whole(x1)}, {whole(x2)}, t) + random(-30, 30);",
        f"    const y = lerp({whole(y1)}, {whole(y2)}, t) + random(-30, 30);",
        "    brush.circle(x, y, random(6, 10), WOBBLE);",
        "  }",
    ]
    describe = {
        "rising-sprig": "A sprig rising across the paper, blossoms and buds along it.",
        "falling-sprig": "A sprig falling across the paper, blossoms and buds along it.",
        "close-up": "A close-up of a short branch with a few large blossoms.",
    }[comp]
    return _Scene(describe, lines, helpers)


def _ground_opacity(plan: Plan) -> int:
    # white flowers need a firmer ground to stand out; coloured ones only a whisper
    return 120 if plan.subject.slug in PALE_SUBJECTS else 80


def _scene(rng: random.Random, plan: Plan, fam: Family) -> _Scene:
    if plan.family.arrangement == "radial":
        return _radial_scene(rng, plan, fam)
    if plan.family.arrangement == "upright":
        return _upright_scene(rng, plan, fam)
    return _sprig_scene(rng, plan, fam)


def _write_full(rng: random.Random, plan: Plan, *, overfill: bool = False) -> str:
    """The full template: constants, helpers, the bloom function, setup()."""
    fam = plan.family
    scene = _scene(rng, plan, fam)
    helpers = set(fam.helpers) | scene.helpers | {"wash"}
    if "leaf" in helpers or "bud" in helpers:
        helpers.add("almond")
    if "band" in helpers:
        helpers.add("stemWash")
    w = _Writer()
    _header(w, plan, fam, scene.describe)
    _constants(w, plan)
    if overfill:
        cover = list(plan.petals) + [plan.leaves[0], plan.leaves[1], plan.palette.centre]
        rng.shuffle(cover)
        w.add("// washes for the whole sheet")
        w.add(f"const COVER = {js_list(cover[:5])};")
        w.add("")
    for name in js.sections("helpers.js"):  # in the file's order
        if name in helpers:
            w.block(js.fill("helpers.js", name))
            w.add("")
    w.block(js.fill("blooms.js", fam.js, call=fam.call))
    w.add("")
    _setup_open(w, plan)
    w.add("")
    if overfill:
        band_h = rng.choice((120, 130, 150))
        count = 600 // band_h + 1
        w.block(f"""\
  // wash the whole sheet edge to edge in heavy overlapping bands of colour
  for (let i = 0; i < {count}; i++) {{
    const y = i * {band_h};
    wash(COVER[i % COVER.length], OPACITY, BLEED);
    brush.beginShape(CURVE);
    brush.vertex(-40, y - 60 + random(-20, 20));
    brush.vertex(640, y - 60 + random(-20, 20));
    brush.vertex(640, y + {band_h} + random(-20, 20));
    brush.vertex(-40, y + {band_h} + random(-20, 20));
    brush.endShape(true);
  }}
""")
        w.add("")
    for line in scene.lines:
        w.add(line)
    if overfill:
        w.add("")
        w.block(f"""\
  // and more heavy washes over the top
  for (let i = 0; i < {rng.randint(3, 4)}; i++) {{
    wash(COVER[i % COVER.length], OPACITY, BLEED);
    brush.circle(random(100, 500), random(100, 500), random(150, 220), WOBBLE);
  }}""")
    w.add("}")
    return w.text()


def _distance(a: str, b: str) -> float:
    """Euclidean RGB distance between two hex colours."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return math.dist(ca, cb)


def _write_near_empty(rng: random.Random, plan: Plan) -> str:
    """One or two small marks on an otherwise empty sheet."""
    w = _Writer()
    text = plan.subject.text
    w.add(f"// {text[0].upper() + text[1:]}, just a hint of it: a small bud of colour.")
    w.add("")
    w.add(f'const PAPER = "{plan.paper[1]}"; // {plan.paper[0]}')
    # the colour farthest from the paper, so the one small mark still reads as paint
    candidates = (plan.palette.petals[-1], plan.palette.petals[-2], plan.palette.centre)
    colour = max(candidates, key=lambda c: _distance(c, plan.paper[1]))
    w.add(f'const PETAL = "{colour}";')
    w.add(f'const LEAF = "{plan.leaves[0]}";')
    w.add("")
    x, y = rng.uniform(140, 460), rng.uniform(140, 460)
    r = rng.uniform(36, 46)  # radius 36-46 paints 0.8-1.5 % of a 600 x 600 sheet
    _setup_open(w, plan)
    w.add("")
    w.add("  // one small bud")
    w.add("  brush.fill(PETAL, 200);")
    w.add(f"  brush.fillBleed({decimal(rng.uniform(0.1, 0.25))});")
    w.add(f"  brush.fillTexture({decimal(rng.uniform(0.3, 0.5))}, {decimal(rng.uniform(0.2, 0.4))});")
    w.add(f"  brush.circle({whole(x)}, {whole(y)}, {whole(r)}, {decimal(rng.uniform(0.2, 0.4))});")
    if rng.random() < 0.6:
        a = rng.uniform(0.3, 2.8)
        ln = rng.uniform(35, 55)
        tip = (x + math.cos(a) * (r + ln), y + math.sin(a) * (r + ln))
        side = (-math.sin(a) * 9, math.cos(a) * 9)
        mid = (x + math.cos(a) * (r + ln * 0.5), y + math.sin(a) * (r + ln * 0.5))
        base = (x + math.cos(a) * r, y + math.sin(a) * r)
        w.add("")
        w.add("  // and a single leaf")
        w.add("  brush.fill(LEAF, 190);")
        w.add("  brush.beginShape(0.8);")
        w.add(f"  brush.vertex({whole(base[0])}, {whole(base[1])});")
        w.add(f"  brush.vertex({whole(mid[0] + side[0])}, {whole(mid[1] + side[1])});")
        w.add(f"  brush.vertex({whole(tip[0])}, {whole(tip[1])});")
        w.add(f"  brush.vertex({whole(mid[0] - side[0])}, {whole(mid[1] - side[1])});")
        w.add("  brush.endShape(true);")
    w.add("}")
    return w.text()


def _write_scribbly(rng: random.Random, plan: Plan) -> str:
    """Nothing but round blobs of one size: a ring of them for petals."""
    w = _Writer()
    text = plan.subject.text
    w.add(f"// {text[0].upper() + text[1:]}: a ring of round petals round a round centre.")
    w.add("")
    w.add(f'const PAPER = "{plan.paper[1]}"; // {plan.paper[0]}')
    w.add(f'const PETAL = "{plan.palette.petals[rng.randint(2, 3)]}";')
    w.add(f'const CENTRE = "{plan.palette.centre}";')
    w.add(f'const LEAF = "{plan.leaves[rng.randint(0, 1)]}";')
    cx, cy = 300 + rng.uniform(-40, 40), 280 + rng.uniform(-40, 40)
    w.add(f"const CX = {whole(cx)};")
    w.add(f"const CY = {whole(cy)};")
    count = rng.randint(5, 9)
    blob = rng.uniform(38, 55)
    w.add(f"const PETAL_COUNT = {count};")
    w.add(f"const RING = {whole(blob * rng.uniform(1.5, 1.9))}; // distance of each petal from the centre")
    w.add(f"const BLOB = {whole(blob)}; // every mark has this radius")
    w.add(f"const WOBBLE = {decimal(rng.uniform(0.8, 1.0))};")
    w.add("")
    _setup_open(w, plan)
    w.add("")
    w.add("  // leaves: two blobs below")
    w.add(f"  brush.fill(LEAF, {rng.randint(190, 230)});")
    w.add(f"  brush.fillBleed({decimal(rng.uniform(0.05, 0.15))});")
    w.add("  brush.circle(CX - BLOB * 1.6, CY + RING + BLOB, BLOB, WOBBLE);")
    w.add("  brush.circle(CX + BLOB * 1.6, CY + RING + BLOB, BLOB, WOBBLE);")
    w.add("")
    w.add("  // petals: the same blob again and again round the centre")
    w.add(f"  brush.fill(PETAL, {rng.randint(190, 230)});")
    w.add("  for (let i = 0; i < PETAL_COUNT; i++) {")
    w.add("    const a = (TWO_PI * i) / PETAL_COUNT;")
    w.add("    brush.circle(CX + cos(a) * RING, CY + sin(a) * RING, BLOB, WOBBLE);")
    w.add("  }")
    w.add("")
    w.add("  // the centre")
    w.add(f"  brush.fill(CENTRE, {rng.randint(200, 235)});")
    w.add("  brush.circle(CX, CY, BLOB, WOBBLE);")
    w.add("}")
    return w.text()


_WRITERS: dict[str, Callable[[random.Random, Plan], str]] = {
    "good": _write_full,
    "muddy": _write_full,
    "hard_edges": _write_full,
    "overfilled": lambda rng, plan: _write_full(rng, plan, overfill=True),
    "near_empty": _write_near_empty,
    "scribbly": _write_scribbly,
}


# ---------------------------------------------------------------------------------------
# Public API


def _subject(slug: str) -> Subject:
    for subject in SEED_SUBJECTS:
        if subject.slug == slug:
            return subject
    raise KeyError(f"no seed generator for subject {slug!r}; known: "
                   f"{', '.join(s.slug for s in SEED_SUBJECTS)}")


def generate(seed: int, *, style: str | None = None, subject_slug: str | None = None) -> SeedSketch:
    """One sketch, deterministic for (seed, style, subject_slug)."""
    rng = random.Random(seed)
    # Always draw both, so forcing one does not shift the other's choices.
    drawn_style = "good" if rng.random() >= _DEFAULT_WEAK_SHARE else rng.choice(WEAK_STYLES)
    drawn_subject = rng.choice(SEED_SUBJECTS)
    style = style or drawn_style
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    subject = _subject(subject_slug) if subject_slug else drawn_subject
    plan = make_plan(rng, seed, style, subject)
    code = _WRITERS[style](rng, plan)
    family = plan.family.name
    kind = "" if style == "good" else "-" + style.replace("_", "-")
    composition = {"near_empty": "tiny-mark", "scribbly": "blob-ring"}.get(style, plan.composition)
    if style == "overfilled":
        composition = "edge-to-edge"
    return SeedSketch(
        id=f"{family}-{plan.palette.name}{kind}-{seed:04d}",
        seed=seed,
        subject_slug=subject.slug,
        subject_text=subject.text,
        prompt=user_message(subject.text),
        style=style,
        palette=plan.palette.name,
        composition=composition,
        code=code,
    )


def generate_pool(count: int, *, seed: int = 0, weak_share: float = 0.3) -> list[SeedSketch]:
    """`count` sketches, deterministic for (count, seed, weak_share).

    Subjects go round in a shuffled order, so each appears count/len(subjects) times
    (+-1); round(count * weak_share) of them are weak, spread evenly over the positions
    and dealt out over the weak kinds in turn.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    if not 0.0 <= weak_share <= 1.0:
        raise ValueError("weak_share must be within [0, 1]")
    rng = random.Random(f"seedgen-pool:{seed}")
    subjects = list(SEED_SUBJECTS)
    rng.shuffle(subjects)
    weak_total = round(count * weak_share)
    # Evenly spaced weak positions (Bresenham-style), so any prefix keeps about the share.
    weak_at = {int(i * count / weak_total) for i in range(weak_total)} if weak_total else set()
    kinds = list(WEAK_STYLES)
    rng.shuffle(kinds)
    pool: list[SeedSketch] = []
    weak_seen = 0
    for i in range(count):
        style = "good"
        if i in weak_at:
            style = kinds[weak_seen % len(kinds)]
            weak_seen += 1
        item_seed = seed * 100_000 + i
        pool.append(generate(item_seed, style=style, subject_slug=subjects[i % len(subjects)].slug))
    return pool


def sft_pairs(count: int, *, seed: int = 0) -> list[tuple[list[dict[str, str]], str]]:
    """(prompt messages, assistant reply) pairs from good sketches only."""
    pairs = []
    for sketch in generate_pool(count, seed=seed, weak_share=0.0):
        messages = sketch.messages()
        pairs.append((messages[:2], messages[2]["content"]))
    return pairs
