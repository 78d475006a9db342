"""The plan of one seed sketch: its colours, paint, composition and bloom geometry, every
choice drawn from the sketch's `random.Random` in a fixed order. That order is part of
the output: drawing one value more, less or earlier (an argument moved within a call
included) changes every sketch after it, so keep it when editing.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from paintenv.prompts import Subject
from paintenv.seedgen.tables import (
    ARRANGEMENTS,
    FAMILIES,
    FAMILY_OF,
    GREENS,
    GROUNDS,
    MUDDY_GREENS,
    MUDDY_PALETTES,
    MUDDY_PAPERS,
    PALE_SUBJECTS,
    PALETTES,
    PAPERS,
    WASH_KEYS,
    WASHES,
    Family,
    Palette,
)

# How many petal washes a sketch glazes with: mostly two or three, sometimes one or four.
_WASH_COUNTS = (1, 2, 2, 3, 3, 3, 4, 4)
_GROUND_CHANCE = 0.25  # of a pale ground behind a coloured flower (pale ones always get one)


# ---------------------------------------------------------------------------------------
# Numbers as the sketch writes them: whole pixels or two decimals, readable and stable


def whole(x: float) -> str:
    return str(round(x))


def decimal(x: float, places: int = 2) -> str:
    text = f"{x:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def js_list(items: tuple[str, ...] | list[str]) -> str:
    """Colours as a JS array literal."""
    return "[" + ", ".join(f'"{c}"' for c in items) + "]"


# ---------------------------------------------------------------------------------------
# The plan


@dataclass
class Plan:
    seed: int
    style: str
    subject: Subject
    family: Family
    palette: Palette
    petals: tuple[str, ...]  # the washes actually used
    leaves: tuple[str, ...]  # deep to light
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
    extra_colours: list[tuple[str, str, str]] = field(default_factory=list)  # name, hex, note


def _draw_wash(rng: random.Random, style: str) -> dict[str, Any]:
    # near_empty and scribbly have no wash of their own: they draw the good one, unused,
    # because their sketches have always been drawn that way
    ranges = WASHES.get(style, WASHES["good"])
    wash: dict[str, Any] = {}
    for key in WASH_KEYS:
        value = ranges[key]
        if isinstance(value, list):
            value = rng.randint(*value) if key == "opacity" else rng.uniform(*value)
        wash[key] = value
    return wash


def _draw_geometry(rng: random.Random, family: Family) -> list[tuple[str, str, str]]:
    """The bloom's constants as (name, value as written, note), per tables.toml [geometry]."""
    constants: list[tuple[str, str, str]] = []
    row: list[int] = []
    for entry in family.geometry:
        if "row_of" in entry:
            row = rng.choice(entry["row_of"])
            continue
        if "value" in entry:
            value = str(entry["value"])
        elif "from_row" in entry:
            value = str(row[entry["from_row"]])
        elif "count" in entry:
            value = str(rng.randint(*entry["count"]))
        elif "pixels" in entry:
            value = whole(rng.uniform(*entry["pixels"]))
        elif "number" in entry:
            value = decimal(rng.uniform(*entry["number"]))
        elif "turn_from_up" in entry:
            value = decimal(rng.choice((-1, 1)) * rng.uniform(*entry["turn_from_up"]) - math.pi / 2)
        else:
            raise ValueError(f"geometry of {family.name!r}: {entry} says neither how to draw nor a value")
        constants.append((entry["name"], value, entry.get("note", "")))
    return constants


def make_plan(rng: random.Random, seed: int, style: str, subject: Subject) -> Plan:
    family = FAMILIES[FAMILY_OF[subject.slug]]
    wash = _draw_wash(rng, style)
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
            n = rng.choice(_WASH_COUNTS)
            # keep the deeper end: a single wash should still carry the colour, and
            # the palest tint of a white flower is nearly the paper itself
            deep_end = n < 3 or subject.slug in PALE_SUBJECTS
            petals = palette.petals[4 - n:] if deep_end else palette.petals[:n]
        leaves = GREENS[rng.choice(sorted(GREENS))]
        paper = rng.choice(sorted(PAPERS.items()))
    composition = rng.choice(tuple(ARRANGEMENTS[family.arrangement].compositions))
    ground = None
    if style == "good" and (subject.slug in PALE_SUBJECTS or rng.random() < _GROUND_CHANCE):
        ground = rng.choice(sorted(GROUNDS.items()))
    plan = Plan(
        seed=seed, style=style, subject=subject, family=family, palette=palette,
        petals=tuple(petals), leaves=leaves, paper=paper, composition=composition,
        js_seed=rng.randint(1, 9999), ground=ground,
        opacity=int(wash["opacity"]), bleed=wash["bleed"], grain=wash["grain"],
        rim=wash["rim"], curve=wash["curve"], wobble=wash["wobble"],
    )
    plan.geometry = _draw_geometry(rng, family)
    # family colours beyond PETALS / CENTRE / DOTS; "centre" is the palette's own
    plan.extra_colours = [(name, palette.centre if colour == "centre" else colour, note)
                          for name, colour, note in family.colours]
    return plan


def reach(plan: Plan) -> float:
    """How far one bloom (at scale 1) reaches below its centre, from its constants."""
    g = {name: float(value) for name, value, _note in plan.geometry}
    if plan.family.name == "rose":
        return g["BLOOM_SIZE"]
    if plan.family.name in ("sunflower", "daisy"):
        return g["DISC"] * 0.75 + g["RAY_LENGTH"]
    if plan.family.name == "water-lily":
        return g["PETAL_LENGTH"] * g["TILT"]
    return g.get("PETAL_LENGTH", 140.0)
