"""The seed generator's tables, read once at import from tables.toml beside this module:
styles and their washes, subjects and flower families, bloom geometry, compositions and
colours. Checked for consistency as they load, so a bad edit fails at import, by name."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paintenv.prompts import SUBJECTS, Subject

TABLES_FILE = Path(__file__).resolve().parent / "tables.toml"
_TABLES: dict[str, Any] = tomllib.loads(TABLES_FILE.read_text(encoding="utf-8"))

WASH_KEYS = ("opacity", "bleed", "grain", "rim", "curve", "wobble")  # in the order they are drawn


@dataclass(frozen=True)
class Palette:
    name: str
    petals: tuple[str, ...]  # light to deep; a sketch uses 1-4 of them as its washes
    centre: str  # throat, disc, beard or heart
    dots: str  # pollen, stamens, seeds


@dataclass(frozen=True)
class Family:
    """A flower family: what one bloom is made of and how its scene is laid out."""

    name: str
    arrangement: str  # a key of ARRANGEMENTS
    call: str  # the JS function that paints one bloom
    js: str  # its section of js/blooms.js
    helpers: frozenset[str]  # the js/helpers.js functions it calls
    blurb: str  # what one bloom is made of, for the header comment
    geometry: tuple[dict[str, Any], ...]  # the bloom's constants, see tables.toml
    colours: tuple[tuple[str, str, str], ...] = ()  # (constant, colour or "centre", note)
    pads: bool = False
    on_branch: bool = False
    sword_leaves: bool = False
    anchor: int = 0  # upright flowers: y of the base of the cup, or of the heart
    stem_width: int = 0  # upright flowers


@dataclass(frozen=True)
class Arrangement:
    """How a scene is laid out: its compositions and the numbers its layers share."""

    name: str
    layers: tuple[str, ...]  # what setup() paints, in order; also the order of the draws
    compositions: dict[str, dict[str, Any]]
    leaf_chance: float
    leafy_when_muddy: bool
    noun: str = ""
    lean_in_pixels: bool = False
    bud_drop: int = 0
    ground: tuple[dict[str, Any], ...] = ()


def _palette(row: list[str]) -> Palette:
    name, petals, centre, dots = row
    return Palette(name, tuple(petals.split()), centre, dots)


def _family(name: str, row: dict[str, Any]) -> Family:
    fields = dict(row)
    return Family(
        name=name,
        helpers=frozenset(fields.pop("helpers")),
        colours=tuple(tuple(colour) for colour in fields.pop("colours", ())),
        geometry=tuple(_TABLES["geometry"].get(name, ())),
        **fields,
    )


STYLES: tuple[str, ...] = tuple(_TABLES["styles"])
WASHES: dict[str, dict[str, Any]] = {style: row["wash"] for style, row in _TABLES["styles"].items()
                                     if "wash" in row}

SEED_SUBJECTS: tuple[Subject, ...] = SUBJECTS + tuple(Subject(**row) for row in _TABLES["subjects"]["extra"])
FAMILY_OF: dict[str, str] = dict(_TABLES["family_of"])
FAMILIES: dict[str, Family] = {name: _family(name, row) for name, row in _TABLES["families"].items()}
ARRANGEMENTS: dict[str, Arrangement] = {
    name: Arrangement(name=name, **{**row, "layers": tuple(row["layers"]), "ground": tuple(row.get("ground", ()))})
    for name, row in _TABLES["arrangements"].items()
}
RADIAL_COMPOSITIONS: tuple[str, ...] = tuple(ARRANGEMENTS["radial"].compositions)
SPRIG_COMPOSITIONS: tuple[str, ...] = tuple(ARRANGEMENTS["sprig"].compositions)

PALETTES: dict[str, tuple[Palette, ...]] = {
    slug: tuple(_palette(row) for row in rows) for slug, rows in _TABLES["palettes"].items()
}
GREENS: dict[str, tuple[str, ...]] = {name: tuple(shades) for name, shades in _TABLES["colours"]["greens"].items()}
BRANCHES: dict[str, str] = dict(_TABLES["colours"]["branches"])
PAPERS: dict[str, str] = dict(_TABLES["colours"]["papers"])
GROUNDS: dict[str, str] = dict(_TABLES["colours"]["grounds"])
PALE_SUBJECTS: frozenset[str] = frozenset(_TABLES["colours"]["pale_subjects"])
MUDDY_PALETTES: tuple[Palette, ...] = tuple(_palette(row) for row in _TABLES["muddy"]["palettes"])
MUDDY_GREENS: tuple[tuple[str, ...], ...] = tuple(tuple(shades) for shades in _TABLES["muddy"]["greens"])
MUDDY_PAPERS: dict[str, str] = dict(_TABLES["muddy"]["papers"])


def _check() -> None:
    """Every subject has a family and palettes; every family an arrangement and geometry."""
    problems = []
    slugs = {subject.slug for subject in SEED_SUBJECTS}
    if slugs != set(FAMILY_OF):
        problems.append(f"family_of must name exactly the subjects; differs on {sorted(slugs ^ set(FAMILY_OF))}")
    if slugs != set(PALETTES):
        problems.append(f"palettes must name exactly the subjects; differs on {sorted(slugs ^ set(PALETTES))}")
    for family in sorted(set(FAMILY_OF.values()) - set(FAMILIES)):
        problems.append(f"family {family!r} is used in family_of but not described in [families]")
    for family in FAMILIES.values():
        if family.arrangement not in ARRANGEMENTS:
            problems.append(f"family {family.name!r}: unknown arrangement {family.arrangement!r}")
        if not family.geometry:
            problems.append(f"family {family.name!r} has no [geometry] entry")
    for style, wash in WASHES.items():
        if tuple(wash) != WASH_KEYS:
            problems.append(f"style {style!r}: wash must set {', '.join(WASH_KEYS)} in that order")
    if "good" not in WASHES:
        problems.append("the good style needs a wash")
    if problems:
        raise ValueError(f"{TABLES_FILE.name}: " + "; ".join(problems))


_check()
