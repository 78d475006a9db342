"""Active grading: "grade next" orders a curator's ungraded references by the taste judge's
uncertainty (curation.active), fitted on their current grades; too few grades fall back to
the usual order with the reason shown."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from django.urls import reverse
from PIL import Image

from curation.active import entropy_bits, tier_distribution
from curation.services import reference_create
from tests.curation.factories import grade_as

pytestmark = pytest.mark.django_db


def test_the_tier_distribution_is_sure_at_a_tier_and_split_midway_between_two():
    graded = {"love": np.array([1.9, 2.0, 2.1]), "okay": np.array([-0.1, 0.0, 0.1]), "reject": np.array([-8.1, -8.0, -7.9])}
    p = tier_distribution(np.array([2.0, 1.0, -8.0]), graded)
    assert p[0, 0] > 0.999 and p[2, 2] > 0.999  # at a tier's centre: that tier
    assert p[1] == pytest.approx([0.5, 0.5, 0.0], abs=1e-9)  # midway between love and okay, reject far off
    assert entropy_bits(p) == pytest.approx([0.0, 1.0, 0.0], abs=1e-3)


def test_a_tier_used_more_often_weighs_more_and_three_overlapping_tiers_give_log2_3_bits():
    same = np.array([0.0, 1.0])
    even = tier_distribution(np.array([0.5]), {"love": same, "okay": same, "reject": same})
    assert entropy_bits(even)[0] == pytest.approx(math.log2(3))
    skewed = tier_distribution(np.array([0.5]), {"love": np.array([0.0, 1.0, 0.0, 1.0]), "okay": same})
    assert skewed[0] == pytest.approx([2 / 3, 1 / 3])


def painted(coverage: float, size: int = 64) -> bytes:
    """A sheet with one centred square of paint covering `coverage` of it."""
    image = Image.new("RGB", (size, size), (250, 247, 240))
    side = max(1, round(size * math.sqrt(coverage)))
    start = (size - side) // 2
    image.paste((40, 70, 160), (start, start, start + side, start + side))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def reference_painted(coverage: float, subject: str):
    reference, created = reference_create(png=painted(coverage), width=64, height=64, provenance="upload", subject=subject)
    assert created
    return reference


COVERAGES = {"love": (0.42, 0.46, 0.5, 0.54, 0.58, 0.62), "okay": (0.2, 0.22, 0.25, 0.28, 0.3),
             "reject": (0.02, 0.03, 0.05, 0.07, 0.09)}


@pytest.fixture
def graded_by_coverage(django_user_model):
    """mara loves a half-covered sheet, finds a quarter okay and rejects a few dabs."""
    grades = {}
    for tier, coverages in COVERAGES.items():
        for coverage in coverages:
            grades[reference_painted(coverage, f"{tier} {coverage}")] = tier
    return grade_as(django_user_model, "mara", grades)


def test_the_most_uncertain_ungraded_reference_comes_first_in_the_grid_and_the_focus_walk(graded_by_coverage):
    sure_love = reference_painted(0.52, "clearly love")
    between = reference_painted(0.37, "between love and okay")
    sure_reject = reference_painted(0.04, "clearly reject")
    mara = graded_by_coverage
    grid = mara.get(reverse("curation:grid"), {"tier": "ungraded", "order": "uncertain"})
    assert [r.id for r in grid.context["page"].object_list][0] == between.id
    assert grid.context["active"].ids[0] == between.id
    assert set(grid.context["active"].ids) == {sure_love.id, between.id, sure_reject.id}
    assert "least sure of first" in grid.content.decode()
    focus = mara.get(reverse("curation:focus", args=[between.id]), {"tier": "ungraded", "order": "uncertain"})
    assert focus.context["ids"][0] == between.id
    assert "?tier=ungraded&amp;order=uncertain" in focus.content.decode()

    # Once graded, it leads its walk (so Next goes on to the most uncertain one left).
    mara.post(reverse("curation:grade", args=[between.id]), {"tier": "love"})
    after = mara.get(reverse("curation:focus", args=[between.id]), {"tier": "ungraded", "order": "uncertain"})
    assert after.context["ids"][0] == between.id and set(after.context["ids"][1:]) == {sure_love.id, sure_reject.id}
    assert after.context["next_id"] in {sure_love.id, sure_reject.id}


def test_the_order_follows_the_curators_current_grades_not_a_frozen_set(django_user_model):
    sheets = {c: reference_painted(c, f"sheet {c}") for c in (*sum(COVERAGES.values(), ()), 0.37)}
    mara = grade_as(django_user_model, "mara", {sheets[c]: tier for tier, cs in COVERAGES.items() for c in cs[1:]})
    ask = {"order": "uncertain"}
    assert mara.get(reverse("curation:grid"), ask).context["active"].ids is None  # four a tier: too few
    for tier, coverages in COVERAGES.items():
        mara.post(reverse("curation:grade", args=[sheets[coverages[0]].id]), {"tier": tier})
    first = mara.get(reverse("curation:grid"), ask).context["active"]
    assert first.ids == [sheets[0.37].id]
    mara.post(reverse("curation:grade", args=[sheets[0.42].id]), {"tier": "okay"})  # she changes her mind
    then = mara.get(reverse("curation:grid"), ask).context["active"]
    assert then.uncertainty[sheets[0.37].id] != pytest.approx(first.uncertainty[sheets[0.37].id], abs=1e-3)


def test_too_few_grades_fall_back_to_the_usual_order_and_say_why(django_user_model):
    refs = [reference_painted(c, f"sheet {c}") for c in (0.1, 0.2, 0.3, 0.4)]
    mara = grade_as(django_user_model, "mara", {refs[0]: "love", refs[1]: "reject"})
    grid = mara.get(reverse("curation:grid"), {"order": "uncertain"})
    assert grid.context["active"].ids is None
    assert [r.id for r in grid.context["page"].object_list] == [r.id for r in refs]
    html = grid.content.decode()
    assert "needs at least 5 grades in two tiers" in html and "you have love 1, okay 0, reject 1" in html
    focus = mara.get(reverse("curation:focus", args=[refs[2].id]), {"order": "uncertain"})
    assert focus.context["ids"] == [r.id for r in refs] and "needs at least 5 grades" in focus.content.decode()


def test_the_judges_guess_is_never_sent_before_the_curator_grades(graded_by_coverage):
    between = reference_painted(0.37, "between love and okay")
    mara = graded_by_coverage
    focus = mara.get(reverse("curation:focus", args=[between.id]), {"tier": "ungraded", "order": "uncertain"})
    assert focus.context["reference"].tier is None
    html = focus.content.decode()
    assert "guess" not in html.lower().replace("its guesses stay hidden", "")
    details = mara.get(reverse("curation:details"), {"ids": str(between.id)}).json()["items"][0]
    assert details["tier"] is None and details["curators"] == []
