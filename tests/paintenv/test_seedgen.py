"""The seed pool generator: every sketch passes the gate, output is deterministic, pools
are balanced, SFT pairs round-trip through the extractor, and (slow) each style renders
the way its name says."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import Counter

import pytest

from paintenv.extraction import extract_sketch
from paintenv.gate import gate_source
from paintenv.prompts import SUBJECTS, SYSTEM_PROMPT, user_message
from paintenv.seedgen import (
    POOL_SEED,
    SEED_SUBJECTS,
    SEEDS_PER_POOL,
    STYLES,
    WARM_START_SEED,
    WEAK_STYLES,
    SeedSketch,
    generate,
    generate_pool,
    sft_pairs,
)

ALLOWED_CALLS = {
    "scaleBrushes", "noStroke", "fill", "noFill", "fillBleed", "fillTexture",
    "beginShape", "vertex", "endShape", "circle",
}


def test_every_sketch_passes_the_gate_for_hundreds_of_seeds_over_all_styles_and_subjects():
    failures = []
    subjects = [s.slug for s in SEED_SUBJECTS]
    checked = 0
    for seed in range(330):
        style = STYLES[seed % len(STYLES)]
        subject = subjects[(seed * 7) % len(subjects)]
        for sk in (generate(seed, style=style, subject_slug=subject), generate(seed + 10_000)):
            verdict = gate_source(sk.code)
            checked += 1
            if not verdict.passed:
                failures.append((sk.id, [str(v) for v in verdict.violations][:3]))
    assert checked >= 600
    assert failures == []


def test_sketches_use_only_the_allowed_brush_calls():
    for seed in range(60):
        sk = generate(seed, style=STYLES[seed % len(STYLES)])
        used = set(re.findall(r"\bbrush\.(\w+)\(", sk.code))
        assert used <= ALLOWED_CALLS, (sk.id, used - ALLOWED_CALLS)
        assert "createCanvas(600, 600, WEBGL)" in sk.code
        assert "translate(-width / 2, -height / 2)" in sk.code
        assert "brush.scaleBrushes(3)" in sk.code


def test_the_same_arguments_give_byte_identical_sketches():
    for seed in (0, 7, 42, 1234):
        for style in (None, *STYLES):
            a = generate(seed, style=style)
            b = generate(seed, style=style)
            assert a == b
    assert generate(3, subject_slug="red-rose") == generate(3, subject_slug="red-rose")
    assert generate_pool(40, seed=5) == generate_pool(40, seed=5)


# sha256 of [id, composition, code] of each sketch, taken from the generator before its
# JS and tables moved out of Python. The demo pool, the corpus expectations and the tests
# depend on these sketches: an edit that changes them must change these on purpose.
_DEMO_POOL_DIGEST = "7d464d21ee3ef44c4c4c8bf59b4ddce869991e0e613d482511de601f5b6721c0"
_GRID_DIGEST = "b5bcc10864d4fa535f19426cf78c60179cac6899aa82171f813d04e0216517cf"


def _digest(sketches: list[SeedSketch]) -> str:
    return hashlib.sha256(json.dumps([[s.id, s.composition, s.code] for s in sketches]).encode()).hexdigest()


def test_the_demo_pool_and_every_style_of_every_subject_are_the_pinned_sketches():
    assert _digest(generate_pool(300, seed=0, weak_share=0.3)) == _DEMO_POOL_DIGEST
    # four seeds reach every composition of every arrangement
    grid = [generate(seed, style=style, subject_slug=subject.slug)
            for subject in SEED_SUBJECTS for style in STYLES for seed in (3, 1234, 77, 501)]
    assert _digest(grid) == _GRID_DIGEST


def test_different_seeds_give_different_sketches():
    codes = {generate(seed, style="good", subject_slug="peach-hibiscus").code for seed in range(30)}
    assert len(codes) == 30


def test_a_sketch_that_uses_p5_randomness_seeds_it():
    for seed in range(40):
        code = generate(seed).code
        if "random(" in code or "noise(" in code:
            assert re.search(r"randomSeed\(\d+\);", code)
            assert re.search(r"noiseSeed\(\d+\);", code)


def test_a_forced_style_or_subject_is_honoured_and_recorded():
    sk = generate(11, style="muddy", subject_slug="blue-iris")
    assert sk.style == "muddy"
    assert sk.subject_slug == "blue-iris"
    assert sk.subject_text == "a blue iris"
    assert sk.prompt == user_message("a blue iris")
    assert sk.seed == 11
    assert sk.id.endswith("-0011") and sk.id.startswith("iris-")
    with pytest.raises(ValueError):
        generate(1, style="lovely")
    with pytest.raises(KeyError):
        generate(1, subject_slug="no-such-flower")


def test_at_least_five_subject_families_including_hibiscus_use_the_prompt_subjects():
    families = {generate(s, subject_slug=subj.slug).id.split("-")[0] for s, subj in
                enumerate(SEED_SUBJECTS)}
    assert "hibiscus" in families
    assert len(families) >= 5
    builtin = {s.slug for s in SUBJECTS}
    assert builtin <= {s.slug for s in SEED_SUBJECTS}  # every prompt subject is covered
    hibiscus_colours = {s.slug for s in SUBJECTS if s.slug.endswith("hibiscus")}
    assert len(hibiscus_colours) >= 4


def test_every_style_occurs_when_the_generator_chooses():
    styles = Counter(generate(seed).style for seed in range(400))
    assert set(styles) == set(STYLES)
    assert 0.55 < styles["good"] / 400 < 0.85


def test_sketches_read_like_a_good_answer_length_and_comments():
    lengths = []
    for seed in range(50):
        sk = generate(seed, style="good")
        lines = sk.code.splitlines()
        lengths.append(len(lines))
        assert sk.code.startswith("// ")
        assert sk.code.endswith("}\n")
        assert "function setup() {" in sk.code
        assert max(len(line) for line in lines) <= 110
        assert sum(line.strip().startswith("//") for line in lines) >= 8
    assert 80 <= min(lengths) and max(lengths) <= 250


def test_weak_styles_are_written_their_own_recognisable_way():
    hard = generate(1, style="hard_edges").code
    assert "const BLEED = 0;" in hard and "const CURVE = 0;" in hard and "const GRAIN = 0;" in hard
    scribbly = generate(2, style="scribbly").code
    assert "beginShape" not in scribbly and "brush.circle" in scribbly
    wobble = float(re.search(r"const WOBBLE = ([\d.]+);", scribbly).group(1))
    assert wobble >= 0.8
    near = generate(3, style="near_empty").code
    assert near.count("brush.circle") + near.count("brush.beginShape") <= 2
    over = generate(4, style="overfilled").code
    assert "const COVER" in over
    muddy = generate(5, style="muddy").code
    petals = re.search(r"const PETALS = \[(.*?)\];", muddy).group(1)
    assert petals.count("#") >= 5
    assert int(re.search(r"const OPACITY = (\d+);", muddy).group(1)) >= 220


def test_a_pool_is_balanced_over_subjects_and_holds_the_weak_share():
    pool = generate_pool(250, seed=2, weak_share=0.3)
    assert len(pool) == 250
    assert len({sk.id for sk in pool}) == 250
    per_subject = Counter(sk.subject_slug for sk in pool)
    assert set(per_subject) == {s.slug for s in SEED_SUBJECTS}
    assert max(per_subject.values()) - min(per_subject.values()) <= 1
    styles = Counter(sk.style for sk in pool)
    assert styles["good"] == 250 - 75
    weak = [styles[s] for s in WEAK_STYLES]
    assert sum(weak) == 75 and max(weak) - min(weak) <= 1
    # the weak ones are spread through the pool, not bunched at one end
    first_half = sum(sk.style != "good" for sk in pool[:125])
    assert 30 <= first_half <= 45


def test_a_pool_with_no_weak_share_is_all_good_and_pools_with_other_seeds_differ():
    assert {sk.style for sk in generate_pool(30, seed=1, weak_share=0.0)} == {"good"}
    assert {sk.style for sk in generate_pool(10, weak_share=1.0)} <= set(WEAK_STYLES)
    assert generate_pool(0) == []
    a = {sk.code for sk in generate_pool(20, seed=1)}
    b = {sk.code for sk in generate_pool(20, seed=2)}
    assert not a & b
    with pytest.raises(ValueError):
        generate_pool(5, weak_share=1.5)


def test_pools_of_different_generator_seeds_never_share_an_item_seed():
    assert POOL_SEED != WARM_START_SEED
    pool_seeds = {sk.seed for sk in generate_pool(50, seed=POOL_SEED)}
    warm_seeds = {sk.seed for sk in generate_pool(50, seed=WARM_START_SEED)}
    assert max(pool_seeds) < SEEDS_PER_POOL <= min(warm_seeds)
    with pytest.raises(ValueError, match="count must be within"):
        generate_pool(SEEDS_PER_POOL + 1)
    assert generate_pool(10) == generate_pool(10, seed=POOL_SEED)  # the reference pool's seed is the default


def test_messages_are_an_sft_example_whose_code_the_extractor_recovers_exactly():
    sk = generate(9, style="good")
    messages = sk.messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert messages[0]["content"] == SYSTEM_PROMPT
    assert messages[1]["content"] == sk.prompt
    assert messages[2]["content"].startswith("```js\n")
    assert extract_sketch(messages[2]["content"]) == sk.code


def test_sft_pairs_come_from_good_sketches_and_round_trip_through_the_extractor():
    pairs = sft_pairs(30, seed=4)
    assert len(pairs) == 30
    good_codes = {sk.code for sk in generate_pool(30, seed=4, weak_share=0.0)}
    for prompt_messages, reply in pairs:
        assert [m["role"] for m in prompt_messages] == ["system", "user"]
        assert prompt_messages[1]["content"].startswith("Paint ")
        code = extract_sketch(reply)
        assert code in good_codes
        assert reply == f"```js\n{code}```"
        assert gate_source(code).passed


def test_a_seed_sketch_is_a_frozen_record():
    sk = generate(1)
    assert isinstance(sk, SeedSketch)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sk.code = "x"  # type: ignore[misc]


@pytest.mark.slow
def test_one_sketch_per_style_renders_without_violations_and_paints_as_its_style_says():
    from paintenv.render_config import RendererConfig
    from paintenv.renderer import Renderer

    # small, quick subjects; one sketch of every style
    picks = {
        "good": generate(12, style="good", subject_slug="peach-hibiscus"),
        "muddy": generate(13, style="muddy", subject_slug="red-poppy"),
        "hard_edges": generate(14, style="hard_edges", subject_slug="pink-tulip"),
        "near_empty": generate(15, style="near_empty", subject_slug="scarlet-hibiscus"),
        "overfilled": generate(16, style="overfilled", subject_slug="coral-hibiscus"),
        "scribbly": generate(17, style="scribbly", subject_slug="anemone"),
    }
    fractions = {}
    with Renderer(RendererConfig(prewarm=False)) as renderer:
        for style, sk in picks.items():
            render = renderer.render(sk.code, seed=sk.seed, size=256)
            assert render.rendered, (style, render.errors)
            assert render.violations == [], (style, render.violations, render.errors)
            assert render.paint_fraction >= 0.005, (style, render.paint_fraction)
            fractions[style] = render.paint_fraction
    assert fractions["near_empty"] < 0.04
    assert fractions["overfilled"] > 0.4
    assert fractions["overfilled"] > 10 * fractions["near_empty"]
    assert fractions["good"] > fractions["near_empty"]
