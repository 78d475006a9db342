"""The seed sketches' JavaScript sections: every section the generator names exists, and
filling one takes exactly the values it marks."""
from __future__ import annotations

import re

import pytest

from paintenv.seedgen import js
from paintenv.seedgen.tables import FAMILIES


def test_every_family_names_a_bloom_section_that_defines_its_function_and_helpers_that_exist():
    helpers = js.sections("helpers.js")
    for family in FAMILIES.values():
        code = js.fill("blooms.js", family.js, call=family.call)
        assert re.search(rf"^function {family.call}\(", code, re.MULTILINE), family.name
        assert family.helpers <= set(helpers), (family.name, family.helpers - set(helpers))


def test_every_helper_section_defines_the_function_it_is_named_after():
    for name in js.sections("helpers.js"):
        assert re.search(rf"^function {name}\(", js.fill("helpers.js", name), re.MULTILINE), name


def test_a_section_is_read_without_the_blank_lines_round_it():
    setup = js.fill("sketch.js", "setup", js_seed=42)
    assert setup.startswith("function setup() {\n")
    assert setup.endswith("  brush.noStroke();")
    assert "randomSeed(42);" in setup and "noiseSeed(42);" in setup


def test_filling_a_section_without_one_of_its_values_or_with_a_stray_one_is_refused():
    with pytest.raises(ValueError, match="takes"):
        js.fill("sketch.js", "setup")
    with pytest.raises(ValueError, match="takes"):
        js.fill("sketch.js", "setup", js_seed=1, colour="#fff")


def test_an_unknown_section_is_refused_by_name():
    with pytest.raises(KeyError, match="no section 'nope'"):
        js.fill("scene.js", "nope")
