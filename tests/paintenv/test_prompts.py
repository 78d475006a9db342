"""The system prompt, the subjects and the chat messages."""

from __future__ import annotations

import re

import pytest

from paintenv import prompts
from paintenv.brush_api import ALLOWED_BRUSH_METHODS, KNOWN_BRUSH_METHODS
from paintenv.extraction import extract_sketch
from paintenv.gate import gate_source
from paintenv.prompts import (
    SUBJECTS,
    SYSTEM_PROMPT,
    Subject,
    all_subjects,
    build_messages,
    make_subject,
    subject_by_slug,
    user_message,
)
from paintenv.sketch_api import SKETCH_API


def test_the_prompt_teaches_each_allowed_brush_method():
    for name in ALLOWED_BRUSH_METHODS:
        assert f"brush.{name}(" in SYSTEM_PROMPT, name


def test_the_prompt_mentions_no_other_brush_method():
    mentioned = set(re.findall(r"brush\.(\w+)", SYSTEM_PROMPT))
    assert mentioned == set(ALLOWED_BRUSH_METHODS)
    assert not (mentioned & (KNOWN_BRUSH_METHODS - ALLOWED_BRUSH_METHODS))


def test_the_prompt_sets_up_the_canvas_and_coordinates():
    for fragment in ("createCanvas(600, 600, WEBGL)", "brush.scaleBrushes(3)",
                     "translate(-width / 2, -height / 2)", "top-left", "background("):
        assert fragment in SYSTEM_PROMPT, fragment


def test_the_prompt_says_only_fill_takes_a_string():
    assert "Every argument is a number, except the colour of brush.fill" in SYSTEM_PROMPT


def test_the_prompt_gives_composition_guidance_and_forbids_text_and_network():
    lowered = SYSTEM_PROMPT.lower()
    for fragment in ("one subject", "15 to 30", "150 or more", "translucent layers",
                     "no text()", "fetch", "document", "```js"):
        assert fragment.lower() in lowered, fragment


def test_the_skeleton_in_the_prompt_passes_the_gate():
    skeleton = extract_sketch(SYSTEM_PROMPT)
    assert skeleton is not None and "function setup()" in skeleton
    verdict = gate_source(skeleton)
    assert verdict.passed, [str(v) for v in verdict.violations]


def test_subjects_start_with_several_hibiscus_colours():
    hibiscus = [s for s in SUBJECTS if "hibiscus" in s.slug]
    assert len(hibiscus) >= 5
    assert SUBJECTS[: len(hibiscus)] == tuple(hibiscus)
    assert SUBJECTS[0].slug == "peach-hibiscus"


def test_subjects_include_other_flowers():
    slugs = " ".join(s.slug for s in SUBJECTS)
    for flower in ("rose", "poppy", "tulip", "iris", "lotus", "camellia"):
        assert flower in slugs


def test_subject_slugs_are_unique_and_url_safe():
    slugs = [s.slug for s in SUBJECTS]
    assert len(slugs) == len(set(slugs))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", s) for s in slugs)


def test_subject_by_slug_finds_a_subject_or_raises_key_error():
    assert subject_by_slug("red-poppy") == Subject("red-poppy", "a red poppy")
    with pytest.raises(KeyError):
        subject_by_slug("no-such-flower")


def test_extra_subjects_extend_the_list_without_changing_it():
    extra = [Subject("blue-hydrangea", "a blue hydrangea"), "a spray of wisteria"]
    merged = all_subjects(extra)
    assert merged[: len(SUBJECTS)] == SUBJECTS
    assert merged[-2].slug == "blue-hydrangea"
    assert merged[-1] == Subject("spray-of-wisteria", "a spray of wisteria")
    assert subject_by_slug("spray-of-wisteria", extra).text == "a spray of wisteria"
    assert len(prompts.SUBJECTS) == len(SUBJECTS)


def test_an_extra_subject_with_an_existing_slug_replaces_it_in_place():
    merged = all_subjects([Subject("peach-hibiscus", "a pale peach hibiscus")])
    assert merged[0].text == "a pale peach hibiscus"
    assert len(merged) == len(SUBJECTS)


def test_make_subject_normalises_whitespace_and_rejects_empty_text():
    assert make_subject("  an   orange\nlily ") == Subject("orange-lily", "an orange lily")
    with pytest.raises(ValueError):
        make_subject("   ")


def test_the_user_message_has_the_published_wording():
    assert user_message("a peach hibiscus") == "Paint a peach hibiscus in loose watercolour."


def test_build_messages_gives_system_then_user():
    messages = build_messages(SUBJECTS[0])
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "Paint a peach hibiscus in loose watercolour."},
    ]
    assert build_messages("a red rose")[1]["content"] == "Paint a red rose in loose watercolour."


def test_allowed_methods_are_reexported_from_prompts():
    assert prompts.ALLOWED_BRUSH_METHODS is ALLOWED_BRUSH_METHODS
    assert len(ALLOWED_BRUSH_METHODS) == 10


def test_the_prompt_lists_every_name_the_allowlist_permits():
    for name in SKETCH_API.allowed_globals - {"brush"}:
        assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", SYSTEM_PROMPT), name
    for name in SKETCH_API.brush_methods:
        assert f"brush.{name}(" in SYSTEM_PROMPT
