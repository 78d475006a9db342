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
"""
from __future__ import annotations

import math
import random
import textwrap
from dataclasses import dataclass, field
from typing import Callable

from paintapp.env.prompts import SUBJECTS, SYSTEM_PROMPT, Subject, user_message
from paintapp.env.seedgen import js

__all__ = [
    "STYLES",
    "WEAK_STYLES",
    "SEED_SUBJECTS",
    "SeedSketch",
    "generate",
    "generate_pool",
    "sft_pairs",
]

STYLES: tuple[str, ...] = ("good", "muddy", "hard_edges", "near_empty", "overfilled", "scribbly")
WEAK_STYLES: tuple[str, ...] = STYLES[1:]

# When generate() picks the style itself: mostly good, the rest spread over the weak kinds.
_DEFAULT_WEAK_SHARE = 0.3

# ---------------------------------------------------------------------------------------
# Subjects and their flower families

# The built-in subjects all have a family; a daisy is added because its geometry (many
# thin rays round a disc) is a useful contrast to the broad-petalled flowers.
SEED_SUBJECTS: tuple[Subject, ...] = SUBJECTS + (Subject("white-daisy", "a white daisy"),)

_FAMILY_OF: dict[str, str] = {
    "peach-hibiscus": "hibiscus", "scarlet-hibiscus": "hibiscus", "white-hibiscus": "hibiscus",
    "yellow-hibiscus": "hibiscus", "pink-hibiscus": "hibiscus", "coral-hibiscus": "hibiscus",
    "lilac-hibiscus": "hibiscus", "orange-hibiscus": "hibiscus",
    "red-rose": "rose", "blush-rose": "rose",
    "red-camellia": "camellia", "white-camellia": "camellia", "peony": "peony",
    "red-poppy": "poppy", "orange-poppy": "poppy", "anemone": "anemone",
    "yellow-tulip": "tulip", "pink-tulip": "tulip", "magnolia": "magnolia",
    "blue-iris": "iris", "pink-lotus": "lotus", "water-lily": "water-lily",
    "sunflower": "sunflower", "white-daisy": "daisy", "cherry-blossom": "cherry",
}

_RADIAL = {"hibiscus", "rose", "camellia", "peony", "poppy", "anemone", "sunflower", "daisy",
           "water-lily"}
_UPRIGHT = {"tulip", "magnolia", "iris", "lotus"}
_SPRIG = {"cherry"}

RADIAL_COMPOSITIONS = ("centred", "off-centre", "two-blooms", "bud-and-bloom", "close-up")
SPRIG_COMPOSITIONS = ("rising-sprig", "falling-sprig", "close-up")

# ---------------------------------------------------------------------------------------
# Colour


@dataclass(frozen=True)
class Palette:
    name: str
    petals: tuple[str, ...]  # light to deep; a sketch uses 1-4 of them as its washes
    centre: str  # throat, disc, beard or heart
    dots: str  # pollen, stamens, seeds


def _p(name: str, petals: str, centre: str, dots: str) -> Palette:
    return Palette(name, tuple(petals.split()), centre, dots)


PALETTES: dict[str, tuple[Palette, ...]] = {
    "peach-hibiscus": (
        _p("peach", "#fcd5bc #f7b08c #ef8c68 #de6b4e", "#b8324a", "#f2c14e"),
        _p("apricot", "#ffe0c2 #fbbf8a #f39a5c #e07a3c", "#a8283e", "#ffd75e"),
    ),
    "scarlet-hibiscus": (
        _p("scarlet", "#f58b7c #ec4a3a #d02a22 #a3161a", "#5c0a14", "#f4c542"),
        _p("vermilion", "#ff9a78 #f4602e #db4318 #ad2c10", "#4e0d0d", "#ffd54f"),
    ),
    "white-hibiscus": (
        _p("white-crimson", "#f3eef2 #e0d6e2 #cbbfd3 #b3a7c2", "#b5123a", "#f0c03a"),
        _p("snow-crimson", "#eef2f6 #d7e0ea #bccadb #a2b3c9", "#a3123a", "#f2c23e"),
    ),
    "yellow-hibiscus": (
        _p("lemon", "#fff1a8 #ffe066 #f7c948 #e0a526", "#9a2a2a", "#fff3b0"),
        _p("butter", "#fff4c2 #fde68a #f5cf5b #dfae36", "#b5542b", "#fff8d0"),
    ),
    "pink-hibiscus": (
        _p("rose-pink", "#fbd3e0 #f5a3c0 #ec7aa3 #d94f86", "#9b1b4f", "#f7e08a"),
        _p("fuchsia", "#f9c4e1 #f08bc2 #e25aa3 #c13584", "#7a1050", "#ffe38a"),
    ),
    "coral-hibiscus": (
        _p("coral", "#ffd0c2 #ff9f87 #f7795e #e0573f", "#a3213a", "#ffd27a"),
        _p("salmon", "#ffd9cc #fbb09a #f48a72 #dd6a55", "#93203a", "#f7d37a"),
    ),
    "lilac-hibiscus": (
        _p("lilac", "#ece0f6 #d5bdea #b995d8 #9a70c0", "#6a1f5c", "#f3dd8a"),
        _p("lavender", "#e6e3f7 #c9c1ec #a99bdc #8574c4", "#5b2470", "#f5e199"),
    ),
    "orange-hibiscus": (
        _p("tangerine", "#ffd39b #ffad5a #f7882f #e0651b", "#9e1f1f", "#ffe38a"),
        _p("marigold", "#ffe2a0 #ffc04d #f8a01f #dd7f10", "#a4301c", "#fff0b0"),
    ),
    "red-rose": (
        _p("crimson", "#f28b95 #d94c55 #c0303f #9e1b32", "#5e0b1f", "#f2a3a6"),
        _p("garnet", "#e57a86 #c9404f #a82838 #7d1228", "#4a0818", "#e98a95"),
    ),
    "blush-rose": (
        _p("blush", "#fde4e4 #f9c5c8 #f2a1a8 #e27d8a", "#c0526a", "#fff0f0"),
        _p("shell", "#fde8df #f8cdbf #f0aa9a #de8677", "#b55a5a", "#fff2ea"),
    ),
    "red-camellia": (
        _p("camellia-red", "#f49a9a #e45a5a #c8323e #9c1c2c", "#f5cf4f", "#e0a526"),
        _p("cherry-red", "#f6a5a0 #e66a62 #cf4048 #a52634", "#f7d660", "#d99a1e"),
    ),
    "white-camellia": (
        _p("blush-white", "#fbeff0 #f3d9dc #e8bcc4 #d79aa8", "#f2c94c", "#d9a021"),
        _p("pearl", "#f1f4f7 #dde4ec #c5d0dd #aebccd", "#f4cf55", "#dca52a"),
    ),
    "peony": (
        _p("peony", "#fbd6e3 #f5aac6 #ea7fa9 #d85a8e", "#b83b6e", "#f2d36b"),
        _p("coral-peony", "#fde0d6 #f9b8a6 #f08f7c #de6b5e", "#b8454a", "#f5d77a"),
    ),
    "red-poppy": (
        _p("poppy-red", "#ff8a70 #f04a32 #d92b1c #b01d12", "#1f1a24", "#2e2a3a"),
        _p("field-red", "#fb9378 #ea5637 #cf3522 #a3211a", "#261c26", "#3b2f45"),
    ),
    "orange-poppy": (
        _p("california", "#ffd27a #ffb347 #f7931e #e8740c", "#c9590a", "#ffe08a"),
        _p("saffron", "#ffe08c #ffc24d #fba326 #ef8412", "#cc6210", "#fff0a8"),
    ),
    "anemone": (
        _p("anemone", "#d9c6f0 #b48ee0 #8a5cc7 #6a3da8", "#1f1d3a", "#2c2a4a"),
        _p("violet", "#e0cdee #c39be0 #9b69c9 #7442a6", "#1c1a33", "#2b2640"),
    ),
    "yellow-tulip": (
        _p("lemon", "#fff3b0 #ffe066 #f7c948 #e3a21a", "#b5781a", "#fff7cc"),
        _p("saffron", "#ffe9a0 #ffd24d #f6b42a #de8c14", "#a8641a", "#fff2c0"),
    ),
    "pink-tulip": (
        _p("pink", "#fcd6e4 #f7a8c6 #ef7ea8 #dc5488", "#a32d5f", "#ffe1ec"),
        _p("candy", "#ffd9e0 #ffadbf #f7839c #e45c7d", "#a8324e", "#ffe6ec"),
    ),
    "blue-iris": (
        _p("iris-blue", "#c3c9f0 #8a96e0 #5a67c8 #3a45a0", "#f2c230", "#fff3c4"),
        _p("violet-blue", "#cfc3ef #9c88dd #6e56c2 #4b3699", "#f5c93a", "#fff5cc"),
    ),
    "pink-lotus": (
        _p("lotus", "#fde2ea #f7b7cb #ee8fb0 #d96a93", "#e8c43a", "#c9a227"),
        _p("dawn-lotus", "#ffe6e6 #f9c0c4 #f199a4 #dc7284", "#eec94a", "#c99b25"),
    ),
    "magnolia": (
        _p("magnolia", "#fff6f4 #f7d9e3 #e6aac4 #b9608f", "#7a3a63", "#f3e2a0"),
        _p("tulip-tree", "#fdf2f6 #f2cfe0 #d996be #a5508a", "#6e2e5a", "#f5e3a8"),
    ),
    "water-lily": (
        _p("water-lily", "#f2f4f8 #dde3ee #c3cde0 #a8b5cf", "#f5c542", "#e09b1a"),
        _p("moon-lily", "#f6f0f5 #e6d9e5 #d1bfd2 #b9a3bd", "#f3c94e", "#d9921c"),
    ),
    "sunflower": (
        _p("sunflower", "#ffe680 #ffcc33 #f5a623 #d9831a", "#4a2a12", "#2a1608"),
        _p("ochre", "#ffe28a #fbc63b #eea12a #cf7b1c", "#3f2614", "#24140a"),
    ),
    "white-daisy": (
        _p("daisy", "#f1f3f8 #dfe3ee #c8cfe0 #b0b9d0", "#f4c430", "#d98e04"),
        _p("cream-daisy", "#faf5ea #eee3cc #dfcfae #cbb78f", "#f2b81f", "#c97f06"),
    ),
    "cherry-blossom": (
        _p("sakura", "#fff0f3 #ffd3dd #f7aabd #e98aa3", "#c0406a", "#b0305a"),
        _p("plum-blossom", "#ffeef2 #fbc8d6 #f19bb6 #d8719a", "#9c2f5e", "#8e2a52"),
    ),
}

# Greens for leaves and stems, deep to light.
GREENS: dict[str, tuple[str, str, str]] = {
    "sap": ("#4f7f45", "#79a35c", "#a3c27a"),
    "sage": ("#5f7f5a", "#87a57c", "#b0c6a6"),
    "olive": ("#5d6b32", "#8a9648", "#b3bb75"),
    "teal": ("#3d7468", "#5f9a88", "#93c0ad"),
    "spring": ("#4f8f3e", "#80b45e", "#b3d68c"),
    "forest": ("#2f5a3a", "#4f7d4e", "#7ea872"),
}
BRANCHES: dict[str, str] = {"umber": "#5b4437", "bark": "#6b4e3d", "plum-grey": "#5a4a52"}

PAPERS: dict[str, str] = {
    "warm white": "#fbf7ef", "cream": "#f7f1e3", "ivory": "#f8f4e8", "cool white": "#f5f5f1",
    "bone": "#f3eee4", "rice paper": "#f6f2ea", "pearl": "#f2f1ee",
}
# Soft grounds laid behind pale flowers so white petals read as negative space.
GROUNDS: dict[str, str] = {
    "blue-grey": "#b9cbe0", "sage": "#c3d6b8", "lilac-grey": "#cfc6e0", "ochre": "#e6d2a2",
    "celadon": "#b8d8cc",
}
_PALE_SUBJECTS = {"white-hibiscus", "white-camellia", "water-lily", "white-daisy", "magnolia"}

MUDDY_PALETTES: tuple[Palette, ...] = (
    _p("mud", "#8a6a4a #6b4f2a #7a7d3a #6a3f5a #4f5a4a #8a4a3a", "#2f2620", "#6b6b3a"),
    _p("sludge", "#7c6f3a #5f4a3a #6a5a6e #8a5a3a #4a5a3a #7a4a4a", "#2a2420", "#5d5a2e"),
    _p("bruise", "#6a4a5a #7a6a3a #5a4a3a #8a5a4a #4a4a5a #6d6a3a", "#2a2228", "#6a5f2a"),
    _p("ditchwater", "#6a6a3a #7a5038 #5a5a6e #4f5a3a #7a4a5a #6b4d28", "#2a2620", "#5a5630"),
)
MUDDY_GREENS: tuple[tuple[str, str, str], ...] = (
    ("#4a4a3a", "#5e5a45", "#6b6350"), ("#4f4a40", "#5a5a48", "#666052"),
)
MUDDY_PAPERS: dict[str, str] = {"grey board": "#e4e0d8", "dull cream": "#e9e3d6"}

# ---------------------------------------------------------------------------------------
# Flower families: what one bloom is made of. The JS of the helpers and of each family's
# bloom function is in js/helpers.js and js/blooms.js.


@dataclass(frozen=True)
class _Family:
    name: str
    helpers: frozenset[str]
    call: str  # the JS function that paints one bloom
    blurb: str  # what one bloom is made of, for the header comment
    section: str  # its section of js/blooms.js

    @property
    def function(self) -> str:
        return js.fill("blooms.js", self.section, call=self.call)


_FAMILIES: dict[str, _Family] = {}


def _family(name: str, helpers: str, call: str, blurb: str, section: str) -> None:
    _FAMILIES[name] = _Family(name, frozenset(helpers.split()), call, blurb, section)


_family("hibiscus", "wash fan band dots ring", "hibiscus",
        "five broad ruffled petals, a dark throat and a long stamen column tipped with pollen", "hibiscus")
_family("rose", "wash lobe cup", "rose",
        "rounded guard petals round a tightening spiral of cupped petals", "rose")
_family("camellia", "wash lobe dots ring", "camellia",
        "rings of rounded petals opening flat round a tuft of golden stamens", "camellia")
_family("peony", "wash lobe dots ring", "peony",
        "ruffled rings of crinkled petals, denser toward a warm centre", "camellia")
_family("poppy", "wash lobe ring", "poppy",
        "broad crinkled petals round a dark blotch, a ring of stamens and a seed head", "poppy")
_family("anemone", "wash lobe ring", "anemone",
        "rounded petals round an ink-dark centre ringed with stamens", "poppy")
_family("sunflower", "wash almond dots", "sunflower",
        "two rows of pointed golden rays round a large seeded disc", "rays")
_family("daisy", "wash almond dots", "daisy",
        "many thin white rays round a small golden disc", "rays")
_family("water-lily", "wash almond dots", "waterLily",
        "two rings of pointed petals seen at a slant, a golden centre", "water-lily")
_family("tulip", "wash upright", "tulip",
        "a cup of upright petals, the back ones peeping between the front ones", "tulip")
_family("magnolia", "wash upright", "magnolia",
        "long tepals opening like a goblet, flushed purple at the base", "magnolia")
_family("iris", "wash lobe almond", "iris",
        "three standards standing up, three falls drooping down, each fall with a golden beard", "iris")
_family("lotus", "wash almond dots", "lotus",
        "pointed petals rising in two rows from the water, a golden seed head inside", "lotus")
_family("cherry", "wash lobe almond band ring", "blossom",
        "five notched petals round a pink eye, strung along a dark branch", "blossom")

# ---------------------------------------------------------------------------------------
# Sketch record


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
# Number formatting: whole pixels or two decimals, so the code stays readable and stable


def _n(x: float) -> str:
    return str(int(round(x)))


def _f(x: float, places: int = 2) -> str:
    text = f"{x:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _js_list(items: tuple[str, ...] | list[str]) -> str:
    return "[" + ", ".join(f'"{c}"' for c in items) + "]"


# ---------------------------------------------------------------------------------------
# The plan for one sketch


@dataclass
class _Plan:
    seed: int
    style: str
    subject: Subject
    family: str
    palette: Palette
    petals: tuple[str, ...]  # the washes actually used
    leaves: tuple[str, str, str]
    paper: tuple[str, str]  # (name, hex)
    composition: str
    js_seed: int
    opacity: int
    bleed: float
    grain: float
    rim: float
    curve: float
    wobble: float
    ground: tuple[str, str] | None = None  # pale wash behind the subject
    geometry: list[tuple[str, str, str]] = field(default_factory=list)  # name, value, note
    extra_colours: list[tuple[str, str, str]] = field(default_factory=list)


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


def _u(rng: random.Random, lo: float, hi: float) -> float:
    return rng.uniform(lo, hi)


def _geometry(rng: random.Random, family: str, style: str) -> list[tuple[str, str, str]]:
    """Per-family constants: the shape of one bloom."""
    g: list[tuple[str, str, str]] = []
    if family == "hibiscus":
        g += [("PETAL_COUNT", "5", "five broad petals"),
              ("PETAL_LENGTH", _n(_u(rng, 150, 180)), "from the throat to the rim"),
              ("SPREAD", _f(_u(rng, 0.62, 0.78)), "half the angle one petal covers"),
              ("RUFFLE", _f(_u(rng, 0.15, 0.35)), "how wavy the rim is"),
              ("THROAT", _f(_u(rng, 0.28, 0.4)), "share of the petal the throat reaches"),
              ("COLUMN_ANGLE", _f(rng.choice([-1, 1]) * _u(rng, 0.5, 1.2) - math.pi / 2 + 0.0),
               "the stamen column points this way"),
              ("COLUMN_LENGTH", _n(_u(rng, 130, 175)), "")]
    elif family == "rose":
        g += [("GUARDS", str(rng.randint(5, 7)), "outer guard petals"),
              ("BLOOM_SIZE", _n(_u(rng, 120, 150)), "guard petal length"),
              ("SPIRAL", str(rng.randint(9, 14)), "cupped petals in the spiral")]
    elif family in ("camellia", "peony"):
        peony = family == "peony"
        g += [("PETAL_COUNT", str(rng.randint(8, 10) if peony else rng.randint(6, 8)),
               "petals in the outer ring"),
              ("RINGS", str(rng.randint(3, 4) if peony else rng.randint(2, 3)), ""),
              ("PETAL_LENGTH", _n(_u(rng, 125, 150)), ""),
              ("WIDTH", _f(_u(rng, 0.8, 1.0)), "petal width as a share of its length"),
              ("CRINKLE", _f(_u(rng, 0.45, 0.65) if peony else _u(rng, 0.12, 0.3)), "")]
    elif family in ("poppy", "anemone"):
        anemone = family == "anemone"
        g += [("PETAL_COUNT", str(rng.randint(6, 7) if anemone else 4), ""),
              ("PETAL_LENGTH", _n(_u(rng, 125, 150) if anemone else _u(rng, 135, 165)), ""),
              ("WIDTH", _f(_u(rng, 0.85, 1.0) if anemone else _u(rng, 1.3, 1.6)),
               "petal width as a share of its length"),
              ("CRINKLE", _f(_u(rng, 0.12, 0.22) if anemone else _u(rng, 0.35, 0.55)),
               "crumpled-tissue edges"),
              ("HEART", _n(_u(rng, 24, 32)), "radius of the dark centre")]
    elif family in ("sunflower", "daisy"):
        daisy = family == "daisy"
        g += [("RAYS", str(rng.randint(20, 28) if daisy else rng.randint(15, 20)), "per row"),
              ("RAY_LENGTH", _n(_u(rng, 115, 140) if daisy else _u(rng, 115, 140)), ""),
              ("RAY_WIDTH", _n(_u(rng, 15, 20) if daisy else _u(rng, 32, 40)), ""),
              ("DISC", _n(_u(rng, 26, 34) if daisy else _u(rng, 60, 72)), "radius of the disc"),
              ("SEEDS", str(rng.randint(16, 24) if daisy else rng.randint(34, 50)), "")]
    elif family == "water-lily":
        g += [("PETAL_COUNT", str(rng.randint(9, 12)), "petals per ring"),
              ("PETAL_LENGTH", _n(_u(rng, 150, 185)), ""),
              ("PETAL_WIDTH", _n(_u(rng, 50, 64)), ""),
              ("TILT", _f(_u(rng, 0.5, 0.65)), "how flat the flower looks from the side")]
    elif family == "tulip":
        back, front = rng.choice([(1, 2), (2, 2), (2, 3), (3, 3)])
        g += [("CUP_HEIGHT", _n(_u(rng, 165, 195)), ""),
              ("CUP_WIDTH", _n(_u(rng, 125, 150)), ""),
              ("BACK", str(back), "petals behind"), ("FRONT", str(front), "petals in front")]
    elif family == "magnolia":
        g += [("TEPALS", str(rng.randint(5, 7)), ""),
              ("TEPAL_HEIGHT", _n(_u(rng, 175, 210)), ""),
              ("TEPAL_WIDTH", _n(_u(rng, 70, 86)), ""),
              ("OPEN", _n(_u(rng, 90, 150)), "how far the tepal tips splay apart")]
    elif family == "iris":
        g += [("STANDARD", _n(_u(rng, 125, 150)), "length of the upright standards"),
              ("FALL", _n(_u(rng, 140, 165)), "length of the drooping falls")]
    elif family == "lotus":
        g += [("BACK", str(rng.randint(5, 7)), "petals in the back row"),
              ("FRONT", str(rng.randint(3, 4)), "petals in the front row"),
              ("PETAL_LENGTH", _n(_u(rng, 145, 175)), ""),
              ("PETAL_WIDTH", _n(_u(rng, 56, 70)), "")]
    elif family == "cherry":
        g += [("BLOSSOM", _n(_u(rng, 36, 46)), "petal length of one blossom")]
    return g


def _wash_settings(rng: random.Random, style: str) -> dict[str, float]:
    if style == "hard_edges":
        return dict(opacity=rng.randint(225, 255), bleed=0.0, grain=0.0, rim=0.0, curve=0.0,
                    wobble=0.0)
    if style == "muddy":
        return dict(opacity=rng.randint(225, 250), bleed=_u(rng, 0.04, 0.1),
                    grain=_u(rng, 0.75, 0.9), rim=_u(rng, 0.7, 0.9), curve=_u(rng, 0.4, 0.6),
                    wobble=_u(rng, 0.2, 0.4))
    if style == "overfilled":
        return dict(opacity=rng.randint(215, 245), bleed=_u(rng, 0.2, 0.35),
                    grain=_u(rng, 0.4, 0.6), rim=_u(rng, 0.3, 0.5), curve=_u(rng, 0.6, 0.8),
                    wobble=_u(rng, 0.3, 0.5))
    # good: a spread of quality, from flat-ish to richly glazed
    return dict(opacity=rng.randint(145, 195), bleed=_u(rng, 0.14, 0.4),
                grain=_u(rng, 0.25, 0.7), rim=_u(rng, 0.2, 0.6), curve=_u(rng, 0.6, 0.95),
                wobble=_u(rng, 0.15, 0.45))


def _make_plan(rng: random.Random, seed: int, style: str, subject: Subject) -> _Plan:
    family = _FAMILY_OF[subject.slug]
    settings = _wash_settings(rng, style)
    if style == "muddy":
        palette = rng.choice(MUDDY_PALETTES)
        petals = palette.petals[: rng.randint(5, 6)]
        leaves = rng.choice(MUDDY_GREENS)
        paper = rng.choice(sorted(MUDDY_PAPERS.items()))
    else:
        palette = rng.choice(PALETTES[subject.slug])
        if style == "hard_edges":
            n = rng.randint(1, 2)
            petals = palette.petals[1: 1 + n]
        else:
            n = rng.choice((1, 2, 2, 3, 3, 3, 4, 4))
            # keep the deeper end: a single wash should still carry the colour, and
            # the palest tint of a white flower is nearly the paper itself
            deep_end = n < 3 or subject.slug in _PALE_SUBJECTS
            petals = palette.petals[4 - n:] if deep_end else palette.petals[:n]
        leaves = GREENS[rng.choice(sorted(GREENS))]
        paper = rng.choice(sorted(PAPERS.items()))
    comps = SPRIG_COMPOSITIONS if family in _SPRIG else RADIAL_COMPOSITIONS
    composition = rng.choice(comps)
    ground = None
    if style == "good" and (subject.slug in _PALE_SUBJECTS or rng.random() < 0.25):
        ground = rng.choice(sorted(GROUNDS.items()))
    plan = _Plan(
        seed=seed, style=style, subject=subject, family=family, palette=palette,
        petals=tuple(petals), leaves=leaves, paper=paper, composition=composition,
        js_seed=rng.randint(1, 9999), ground=ground,
        opacity=int(settings["opacity"]), bleed=settings["bleed"], grain=settings["grain"],
        rim=settings["rim"], curve=settings["curve"], wobble=settings["wobble"],
    )
    plan.geometry = _geometry(rng, family, style)
    # family colours beyond PETALS / CENTRE / DOTS
    if family == "hibiscus":
        # the throat colour reads on every petal colour, pale or deep
        column = palette.centre
        plan.extra_colours.append(("COLUMN", column, "the stamen column"))
    if family in ("poppy", "anemone"):
        pod = "#8fae6a" if family == "poppy" else "#3a3658"
        plan.extra_colours.append(("POD", pod, "the seed head"))
    return plan


# ---------------------------------------------------------------------------------------
# Writing the sketch


def _comment(w: _Writer, text: str, indent: str = "") -> None:
    for line in textwrap.wrap(text, width=88 - len(indent)):
        w.add(f"{indent}// {line}")


def _header(w: _Writer, plan: _Plan, fam: _Family, scene: str) -> None:
    text = plan.subject.text
    _comment(w, f"{text[0].upper() + text[1:]} in loose watercolour: {fam.blurb}. {scene}")
    w.add("")


def _constants(w: _Writer, plan: _Plan, *, geometry: bool = True) -> None:
    w.add(f'const PAPER = "{plan.paper[1]}"; // {plan.paper[0]}')
    w.add("// one wash per petal colour, light to deep")
    w.add(f"const PETALS = {_js_list(plan.petals)};")
    w.add(f'const CENTRE = "{plan.palette.centre}";')
    w.add(f'const DOTS = "{plan.palette.dots}";')
    for name, colour, note in plan.extra_colours:
        w.add(f'const {name} = "{colour}"; // {note}')
    w.add(f"const LEAVES = {_js_list(list(plan.leaves))}; // deep to light")
    stem = BRANCHES[sorted(BRANCHES)[plan.js_seed % len(BRANCHES)]] if plan.family in (
        "cherry", "magnolia") else plan.leaves[0]
    w.add(f'const STEM = "{stem}";')
    if plan.ground:
        w.add(f'const GROUND = "{plan.ground[1]}"; // a {plan.ground[0]} wash behind the flower')
    w.add("")
    w.add("// how the paint behaves")
    w.add(f"const OPACITY = {plan.opacity};")
    w.add(f"const BLEED = {_f(plan.bleed)}; // how far a wash spreads past its outline")
    w.add(f"const GRAIN = {_f(plan.grain)}; // paper texture")
    w.add(f"const RIM = {_f(plan.rim)}; // darker pigment at the edge of a wash")
    w.add(f"const CURVE = {_f(plan.curve)}; // 0 = straight edges, 1 = round")
    w.add(f"const WOBBLE = {_f(plan.wobble)}; // scribble of round marks")
    if geometry and plan.geometry:
        w.add("")
        w.add("// the shape of one bloom")
        for name, value, note in plan.geometry:
            w.add(f"const {name} = {value};" + (f" // {note}" if note else ""))
    w.add("")


def _setup_open(w: _Writer, plan: _Plan) -> None:
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


def _radial_scene(rng: random.Random, plan: _Plan, fam: _Family) -> _Scene:
    comp = plan.composition
    call = fam.call
    lines: list[str] = []
    helpers: set[str] = set()
    blooms: list[tuple[float, float, float, float]] = []  # x, y, s, turn; back first
    bud: tuple[float, float, float, float] | None = None
    flip = rng.choice((-1, 1))
    if comp == "centred":
        blooms.append((300 + _u(rng, -12, 12), 290 + _u(rng, -15, 15), _u(rng, 0.95, 1.05),
                       _u(rng, 0, 6.28)))
    elif comp == "off-centre":
        blooms.append((300 + flip * _u(rng, 55, 85), 285 + rng.choice((-1, 1)) * _u(rng, 30, 55),
                       _u(rng, 0.85, 0.95), _u(rng, 0, 6.28)))
    elif comp == "two-blooms":
        blooms.append((300 - flip * _u(rng, 90, 120), _u(rng, 390, 420), _u(rng, 0.55, 0.62),
                       _u(rng, 0, 6.28)))
        blooms.append((300 + flip * _u(rng, 40, 60), _u(rng, 240, 270), _u(rng, 0.8, 0.88),
                       _u(rng, 0, 6.28)))
    elif comp == "bud-and-bloom":
        blooms.append((300 + flip * _u(rng, 20, 50), _u(rng, 300, 330), _u(rng, 0.85, 0.92),
                       _u(rng, 0, 6.28)))
        bud = (300 - flip * _u(rng, 130, 165), _u(rng, 150, 190), -math.pi / 2 - flip * _u(rng, 0.1, 0.4),
               _u(rng, 0.9, 1.1))
    else:  # close-up: one big bloom running off the edges
        blooms.append((300 + _u(rng, -50, 50), 300 + _u(rng, -50, 50), _u(rng, 1.45, 1.7),
                       _u(rng, 0, 6.28)))
    pads = plan.family == "water-lily"
    with_stem = not pads and comp != "close-up" and rng.random() < 0.55
    with_leaves = rng.random() < 0.8 or pads
    if plan.style in ("muddy",):
        with_leaves = True

    if plan.ground:
        x, y, s, _t = blooms[-1]
        helpers.add("wash")
        lines += ["  // a pale ground laid wet behind the flower so light petals read against it",
                  f"  wash(GROUND, {_ground_opacity(plan)}, min(BLEED * 1.5, 0.6));",
                  f"  brush.circle({_n(x + _u(rng, -30, 30))}, {_n(y + _u(rng, -20, 20))}, "
                  f"{_n(200 * s + 20)}, WOBBLE);",
                  f"  brush.circle({_n(x + _u(rng, -90, 90))}, {_n(y + _u(rng, 40, 100))}, "
                  f"{_n(130 * s)}, WOBBLE);", ""]

    if pads and with_leaves:
        helpers.update({"pad", "wash"})
        lines.append("  // lily pads floating round the flower")
        x, y, s, _t = blooms[-1]
        for i in range(rng.randint(2, 3)):
            px = x + (-1) ** i * flip * _u(rng, 110, 200) * s
            py = y + _u(rng, 30, 110) * s
            lines.append(f"  wash(LEAVES[{i % 2 + 1}], 170, BLEED);")
            lines.append(f"  pad({_n(px)}, {_n(py)}, {_n(_u(rng, 75, 115) * s)}, "
                         f"{_f(_u(rng, -2.0, -1.1))});")
        lines.append("")

    if with_stem or bud:
        helpers.update({"band", "wash"})
        lines.append("  // stems first, reaching down off the paper")
        lines.append("  stemWash(STEM, 190);")
        # a stem starts under the rim: seen through translucent petals it would cross them
        reach = _reach(plan)
        stem_blooms = list(blooms if with_stem else [])
        for x, y, s, _t in stem_blooms:
            bend = _u(rng, -40, 40)
            lines.append(f"  band({_n(x)}, {_n(y + reach * s * 0.7)}, {_n(x + _u(rng, -60, 60))}, "
                         f"640, {_n(12 * s)}, {_n(bend)});")
        if bud:
            bx, by, _a, bs = bud
            lines.append(f"  band({_n(bx)}, {_n(by)}, {_n(bx + flip * _u(rng, 10, 50))}, "
                         f"640, {_n(8 * bs)}, {_n(-flip * _u(rng, 20, 50))});")
        lines.append("")

    if with_leaves and not pads:
        helpers.update({"leaf", "almond", "wash"})
        if with_stem:
            lines.append("  // leaves along the stem")
            x, y, s, _t = blooms[-1]
            for i in range(rng.randint(1, 2)):
                side = -1 if i % 2 == 0 else 1
                ly = min(y + reach * s * 0.8 + _u(rng, 20, 80), 560)
                angle = (math.pi - 0.5 if side < 0 else 0.5) + _u(rng, -0.25, 0.25)
                lines.append(f"  leaf({_n(x + side * 4)}, {_n(ly)}, {_f(angle)}, "
                             f"{_n(_u(rng, 130, 170) * s)}, {_n(_u(rng, 55, 70) * s)});")
        else:
            # they start under the rim: through translucent petals a leaf from the
            # centre would read as painted on top
            lines.append("  // leaves peeking out from under the petals")
            x, y, s, _t = blooms[-1]
            reach = _reach(plan) * s
            base = _u(rng, 0.3, 1.2)
            for i in range(rng.randint(2, 3)):
                angle = base + i * _u(rng, 0.9, 1.3)
                lines.append(f"  leaf({_n(x + math.cos(angle) * reach * 0.6)}, "
                             f"{_n(y + math.sin(angle) * reach * 0.6)}, {_f(angle)}, "
                             f"{_n(reach * _u(rng, 0.75, 0.95))}, {_n(reach * _u(rng, 0.38, 0.48))});")
        lines.append("")

    if bud:
        helpers.update({"bud", "almond", "wash"})
        bx, by, a, bs = bud
        lines.append("  // a closed bud on its own stem")
        lines.append(f"  bud({_n(bx)}, {_n(by)}, {_f(a)}, {_f(bs)});")
        lines.append("")

    lines.append("  // the " + ("blooms, the far one first" if len(blooms) > 1 else "bloom"))
    for x, y, s, t in blooms:
        lines.append(f"  {call}({_n(x)}, {_n(y)}, {_f(s)}, {_f(t)});")

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


def _upright_scene(rng: random.Random, plan: _Plan, fam: _Family) -> _Scene:
    comp = plan.composition
    call = fam.call
    family = plan.family
    # y of the bloom's anchor: the base of the cup (tulip, magnolia, lotus) or the heart (iris)
    anchor = {"tulip": 350, "magnolia": 330, "lotus": 380, "iris": 250}[family]
    flowers: list[tuple[float, float, float, float]] = []  # x, y, s, lean; back first
    bud: tuple[float, float, float, float] | None = None
    flip = rng.choice((-1, 1))
    if comp == "centred":
        flowers.append((300 + _u(rng, -15, 15), anchor + _u(rng, -10, 20), 1.0, _u(rng, -18, 18)))
    elif comp == "off-centre":
        flowers.append((300 + flip * _u(rng, 65, 90), anchor + _u(rng, -10, 30), 0.9,
                        _u(rng, -20, 20)))
    elif comp == "two-blooms":
        flowers.append((300 + flip * _u(rng, 80, 110), anchor + _u(rng, 60, 90), 0.7,
                        flip * _u(rng, 10, 25)))
        flowers.append((300 - flip * _u(rng, 50, 80), anchor + _u(rng, -20, 0), 0.85,
                        -flip * _u(rng, 5, 20)))
    elif comp == "bud-and-bloom":
        flowers.append((300 - flip * _u(rng, 30, 60), anchor + _u(rng, 0, 30), 0.92,
                        _u(rng, -15, 15)))
        bud = (300 + flip * _u(rng, 100, 140), anchor - _u(rng, 20, 70),
               -math.pi / 2 + flip * _u(rng, 0.1, 0.35), _u(rng, 1.0, 1.2))
    else:  # close-up
        flowers.append((300 + _u(rng, -30, 30), anchor + _u(rng, 90, 130), 1.5, _u(rng, -20, 20)))
    lines: list[str] = []
    helpers: set[str] = {"band", "wash"}
    if plan.ground:
        x, y, s, _l = flowers[-1]
        lines += ["  // a pale ground laid wet behind the flower so light petals read against it",
                  f"  wash(GROUND, {_ground_opacity(plan)}, min(BLEED * 1.5, 0.6));",
                  f"  brush.circle({_n(x + _u(rng, -30, 30))}, {_n(y - 90 * s)}, {_n(190 * s)}, WOBBLE);",
                  ""]
    branch = family == "magnolia"
    lines.append("  // " + ("the branch" if branch else "stems") + " first")
    lines.append("  stemWash(STEM, 190);")
    stems = list(flowers) + ([(bud[0], bud[1], bud[3], 0.0)] if bud else [])
    if branch:
        end_x = -30 if flip > 0 else 630
        for x, y, s, _l in stems:
            lines.append(f"  band({_n(x)}, {_n(y + 10 * s)}, {_n(end_x)}, {_n(y + _u(rng, 120, 220))}, "
                         f"{_n(14 * s)}, {_n(_u(rng, -30, 30))});")
    else:
        for x, y, s, _l in stems:
            lines.append(f"  band({_n(x)}, {_n(y + 10 * s)}, {_n(x + _u(rng, -40, 40))}, 640, "
                         f"{_n((9 if family == 'iris' else 11) * s)}, {_n(_u(rng, -25, 25))});")
    lines.append("")
    with_leaves = rng.random() < 0.85 or plan.style == "muddy"
    if with_leaves:
        if family == "lotus":
            helpers.add("pad")
            lines.append("  // lily pads on the water")
            for i in range(rng.randint(2, 3)):
                px = 300 + (-1) ** i * _u(rng, 60, 190)
                lines.append(f"  wash(LEAVES[{i % 2 + 1}], 170, BLEED);")
                lines.append(f"  pad({_n(px)}, {_n(_u(rng, 470, 560))}, {_n(_u(rng, 110, 160))}, "
                             f"{_f(_u(rng, -2.0, -1.1))});")
        elif branch:
            helpers.update({"leaf", "almond"})
            lines.append("  // a few young leaves on the branch")
            x, y, s, _l = flowers[-1]
            for i in range(rng.randint(1, 2)):
                angle = (math.pi / 2 + flip * _u(rng, 0.4, 1.0))
                lines.append(f"  leaf({_n(x - flip * (40 + 50 * i))}, {_n(y + 30 + 30 * i)}, "
                             f"{_f(angle)}, {_n(_u(rng, 90, 120))}, {_n(_u(rng, 36, 46))});")
        else:
            helpers.update({"leaf", "almond"})
            narrow = family == "iris"
            lines.append("  // long " + ("sword" if narrow else "blade") + " leaves from the ground")
            x, _y, s, _l = flowers[-1]
            for i in range(rng.randint(2, 3)):
                side = -1 if i % 2 == 0 else 1
                angle = -math.pi / 2 + side * _u(rng, 0.15, 0.45)
                lines.append(f"  leaf({_n(x + side * _u(rng, 5, 30))}, 640, {_f(angle)}, "
                             f"{_n(_u(rng, 230, 320))}, {_n(_u(rng, 30, 42) if narrow else _u(rng, 55, 75))});")
        lines.append("")
    if bud:
        helpers.update({"bud", "almond"})
        bx, by, a, bs = bud
        lines.append("  // a closed bud on its own stem")
        lines.append(f"  bud({_n(bx)}, {_n(by + 10 * bs)}, {_f(a)}, {_f(bs)});")
        lines.append("")
    lines.append("  // the " + ("flowers, the far one first" if len(flowers) > 1 else "flower"))
    for x, y, s, lean in flowers:
        lines.append(f"  {call}({_n(x)}, {_n(y)}, {_f(s)}, {_n(lean)});")
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


def _sprig_scene(rng: random.Random, plan: _Plan, fam: _Family) -> _Scene:
    comp = plan.composition
    flip = rng.choice((-1, 1))
    if comp == "rising-sprig":
        x1, y1, x2, y2 = -20, _u(rng, 480, 560), _u(rng, 470, 560), _u(rng, 70, 140)
        count, size = rng.randint(6, 8), (1.05, 1.35)
    elif comp == "falling-sprig":
        x1, y1, x2, y2 = -20, _u(rng, 50, 120), _u(rng, 470, 560), _u(rng, 420, 520)
        count, size = rng.randint(6, 8), (1.05, 1.35)
    else:
        x1, y1, x2, y2 = -20, _u(rng, 380, 460), _u(rng, 420, 480), _u(rng, 200, 260)
        count, size = rng.randint(3, 4), (1.6, 2.0)
    if flip < 0:  # mirror left and right
        x1, x2 = 600 - x1, 600 - x2
    lines = [
        "  // the branch in two washes, and a twig off it",
        "  stemWash(STEM, 215);",
    ]
    width, bend = _u(rng, 16, 22), _u(rng, -40, 40)
    for wide in (width, width * 0.55):
        lines.append(f"  band({_n(x1)}, {_n(y1)}, {_n(x2)}, {_n(y2)}, {_n(wide)}, {_n(bend)});")
    tx = x1 + (x2 - x1) * 0.55
    ty = y1 + (y2 - y1) * 0.55
    lines.append(f"  band({_n(tx)}, {_n(ty)}, {_n(tx + flip * _u(rng, 60, 110))}, "
                 f"{_n(ty + _u(rng, -120, -60))}, {_n(_u(rng, 7, 10))}, {_n(_u(rng, -20, 20))});")
    lines.append("")
    helpers = {"band", "wash", "lobe", "ring"}
    if rng.random() < 0.7:
        helpers.update({"leaf", "almond"})
        lines.append("  // a couple of fresh leaves")
        for i in range(2):
            t = _u(rng, 0.3, 0.8)
            lx, ly = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
            lines.append(f"  leaf({_n(lx)}, {_n(ly)}, {_f(_u(rng, 0, 6.28))}, {_n(_u(rng, 60, 80))}, "
                         f"{_n(_u(rng, 24, 30))});")
        lines.append("")
    lines += [
        "  // blossoms strung along the branch, each a little off it and turned its own way",
        f"  for (let i = 0; i < {count}; i++) {{",
        f"    const t = 0.2 + (0.75 * i) / {count - 1};",
        f"    const x = lerp({_n(x1)}, {_n(x2)}, t) + random(-35, 35);",
        f"    const y = lerp({_n(y1)}, {_n(y2)}, t) + random(-35, 35);",
        f"    blossom(x, y, random({_f(size[0])}, {_f(size[1])}), random(TWO_PI));",
        "  }",
        "",
        "  // a few buds still closed",
        "  wash(PETALS[PETALS.length - 1], OPACITY, BLEED * 0.5);",
        f"  for (let i = 0; i < {rng.randint(3, 5)}; i++) {{",
        "    const t = random(0.3, 1);",
        f"    const x = lerp({_n(x1)}, {_n(x2)}, t) + random(-30, 30);",
        f"    const y = lerp({_n(y1)}, {_n(y2)}, t) + random(-30, 30);",
        "    brush.circle(x, y, random(6, 10), WOBBLE);",
        "  }",
    ]
    describe = {
        "rising-sprig": "A sprig rising across the paper, blossoms and buds along it.",
        "falling-sprig": "A sprig falling across the paper, blossoms and buds along it.",
        "close-up": "A close-up of a short branch with a few large blossoms.",
    }[comp]
    return _Scene(describe, lines, helpers)


def _ground_opacity(plan: _Plan) -> int:
    # white flowers need a firmer ground to stand out; coloured ones only a whisper
    return 120 if plan.subject.slug in _PALE_SUBJECTS else 80


def _reach(plan: _Plan) -> float:
    """How far one bloom (at scale 1) reaches below its centre, from its constants."""
    g = {name: float(value) for name, value, _note in plan.geometry}
    if plan.family == "rose":
        return g["BLOOM_SIZE"]
    if plan.family in ("sunflower", "daisy"):
        return g["DISC"] * 0.75 + g["RAY_LENGTH"]
    if plan.family == "water-lily":
        return g["PETAL_LENGTH"] * g["TILT"]
    return g.get("PETAL_LENGTH", 140.0)


def _scene(rng: random.Random, plan: _Plan, fam: _Family) -> _Scene:
    if plan.family in _RADIAL:
        return _radial_scene(rng, plan, fam)
    if plan.family in _UPRIGHT:
        return _upright_scene(rng, plan, fam)
    return _sprig_scene(rng, plan, fam)


def _write_full(rng: random.Random, plan: _Plan, *, overfill: bool = False) -> str:
    """The full template: constants, helpers, the bloom function, setup()."""
    fam = _FAMILIES[plan.family]
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
        w.add(f"const COVER = {_js_list(cover[:5])};")
        w.add("")
    for name in js.sections("helpers.js"):  # in the file's order
        if name in helpers:
            w.block(js.fill("helpers.js", name))
            w.add("")
    w.block(fam.function)
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


def _write_near_empty(rng: random.Random, plan: _Plan) -> str:
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
    x, y = _u(rng, 140, 460), _u(rng, 140, 460)
    r = _u(rng, 36, 46)  # radius 36-46 paints 0.8-1.5 % of a 600 x 600 sheet
    _setup_open(w, plan)
    w.add("")
    w.add("  // one small bud")
    w.add("  brush.fill(PETAL, 200);")
    w.add(f"  brush.fillBleed({_f(_u(rng, 0.1, 0.25))});")
    w.add(f"  brush.fillTexture({_f(_u(rng, 0.3, 0.5))}, {_f(_u(rng, 0.2, 0.4))});")
    w.add(f"  brush.circle({_n(x)}, {_n(y)}, {_n(r)}, {_f(_u(rng, 0.2, 0.4))});")
    if rng.random() < 0.6:
        a = _u(rng, 0.3, 2.8)
        ln = _u(rng, 35, 55)
        tip = (x + math.cos(a) * (r + ln), y + math.sin(a) * (r + ln))
        side = (-math.sin(a) * 9, math.cos(a) * 9)
        mid = (x + math.cos(a) * (r + ln * 0.5), y + math.sin(a) * (r + ln * 0.5))
        base = (x + math.cos(a) * r, y + math.sin(a) * r)
        w.add("")
        w.add("  // and a single leaf")
        w.add("  brush.fill(LEAF, 190);")
        w.add("  brush.beginShape(0.8);")
        w.add(f"  brush.vertex({_n(base[0])}, {_n(base[1])});")
        w.add(f"  brush.vertex({_n(mid[0] + side[0])}, {_n(mid[1] + side[1])});")
        w.add(f"  brush.vertex({_n(tip[0])}, {_n(tip[1])});")
        w.add(f"  brush.vertex({_n(mid[0] - side[0])}, {_n(mid[1] - side[1])});")
        w.add("  brush.endShape(true);")
    w.add("}")
    return w.text()


def _write_scribbly(rng: random.Random, plan: _Plan) -> str:
    """Nothing but round blobs of one size: a ring of them for petals."""
    w = _Writer()
    text = plan.subject.text
    w.add(f"// {text[0].upper() + text[1:]}: a ring of round petals round a round centre.")
    w.add("")
    w.add(f'const PAPER = "{plan.paper[1]}"; // {plan.paper[0]}')
    w.add(f'const PETAL = "{plan.palette.petals[rng.randint(2, 3)]}";')
    w.add(f'const CENTRE = "{plan.palette.centre}";')
    w.add(f'const LEAF = "{plan.leaves[rng.randint(0, 1)]}";')
    cx, cy = 300 + _u(rng, -40, 40), 280 + _u(rng, -40, 40)
    w.add(f"const CX = {_n(cx)};")
    w.add(f"const CY = {_n(cy)};")
    count = rng.randint(5, 9)
    blob = _u(rng, 38, 55)
    w.add(f"const PETAL_COUNT = {count};")
    w.add(f"const RING = {_n(blob * _u(rng, 1.5, 1.9))}; // distance of each petal from the centre")
    w.add(f"const BLOB = {_n(blob)}; // every mark has this radius")
    w.add(f"const WOBBLE = {_f(_u(rng, 0.8, 1.0))};")
    w.add("")
    _setup_open(w, plan)
    w.add("")
    w.add("  // leaves: two blobs below")
    w.add(f"  brush.fill(LEAF, {rng.randint(190, 230)});")
    w.add(f"  brush.fillBleed({_f(_u(rng, 0.05, 0.15))});")
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


_WRITERS: dict[str, Callable[[random.Random, _Plan], str]] = {
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
    plan = _make_plan(rng, seed, style, subject)
    code = _WRITERS[style](rng, plan)
    family = _FAMILIES[plan.family].name
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
