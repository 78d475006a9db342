"""The seed generator's tables: they cover every subject, and the old names still import."""
from __future__ import annotations

from paintenv import seedgen
from paintenv.prompts import SUBJECTS
from paintenv.seedgen import tables


def test_every_seed_subject_has_a_family_an_arrangement_geometry_and_palettes():
    for subject in tables.SEED_SUBJECTS:
        family = tables.FAMILIES[tables.FAMILY_OF[subject.slug]]
        assert family.arrangement in tables.ARRANGEMENTS
        assert family.geometry
        assert tables.PALETTES[subject.slug]
    assert tables.SEED_SUBJECTS[: len(SUBJECTS)] == SUBJECTS


def test_every_palette_has_four_petal_washes_light_to_deep_and_hex_colours():
    def lightness(colour: str) -> int:
        return sum(int(colour[i:i + 2], 16) for i in (1, 3, 5))

    for slug, palettes in tables.PALETTES.items():
        for palette in palettes:
            assert len(palette.petals) == 4, (slug, palette.name)
            colours = [*palette.petals, palette.centre, palette.dots]
            assert all(len(c) == 7 and c.startswith("#") for c in colours), (slug, palette.name)
            lights = [lightness(c) for c in palette.petals]
            assert lights == sorted(lights, reverse=True), (slug, palette.name)


def test_styles_are_the_good_one_then_the_weak_ones_and_each_full_style_sets_every_wash():
    assert tables.STYLES[0] == "good"
    assert seedgen.WEAK_STYLES == tables.STYLES[1:]
    for style, wash in tables.WASHES.items():
        assert tuple(wash) == tables.WASH_KEYS, style


def test_the_tables_keep_their_old_names_on_the_seedgen_module():
    assert seedgen.PALETTES is tables.PALETTES
    assert seedgen.GREENS is tables.GREENS
    assert seedgen.RADIAL_COMPOSITIONS == ("centred", "off-centre", "two-blooms", "bud-and-bloom", "close-up")
    assert seedgen.SPRIG_COMPOSITIONS == ("rising-sprig", "falling-sprig", "close-up")
