"""The pool page's taste-judge section (templates/curation/_taste_calibration.html) in a
browser, on a demo-like pool: soft translucent washes loved, sparse ones okay, the weak
styles rejected, and a second curator who graded the eval references too."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.services import grade_set, pool_freeze, reference_create
from curation.taste import taste_model_train
from tests.paintenv.test_features import hard_painting, muddy_painting, near_empty_painting, soft_painting

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _reference(png: bytes, subject: str):
    reference, _ = reference_create(png=png, width=256, height=256, provenance="upload", subject=subject)
    return reference


def test_the_pool_page_shows_accuracy_per_curator_with_intervals_and_a_reliability_diagram(
    signed_in_page, live_server, curator, django_user_model, screenshot
):
    # Soft washes of a spread from tight to loose: love the tight ones, okay the loose, with
    # a person's inconsistency near the line (every fifth one the other way), so the judge
    # is unsure of some pairs and the diagram has more than its two ends.
    spreads = [0.1 + 0.2 * i / 27 for i in range(28)]
    painted = [(soft_painting(s, spread=spread, blobs=3 + s % 5),
                ("love" if spread < 0.2 else "okay") if s % 5 else ("okay" if spread < 0.2 else "love"))
               for s, spread in enumerate(spreads)]
    painted += [(paint(200 + s), "reject") for s in range(4) for paint in (hard_painting, muddy_painting,
                                                                            near_empty_painting)]
    references = []
    for i, (png, tier) in enumerate(painted):
        reference = _reference(png, f"a flower {i}")
        grade_set(reference=reference, curator=curator, tier=tier)
        references.append((reference, tier))
    pool = pool_freeze(name="demo-like", curator=curator, tiers=("love", "okay", "reject"), eval_share=0.3, seed=0)
    grace = django_user_model.objects.create_user(username="grace", password="x")
    swap = {"love": "okay", "okay": "love", "reject": "reject"}
    for n, member in enumerate(pool.members.filter(split="eval").select_related("reference").order_by("id")):
        grade_set(reference=member.reference, curator=grace, tier=swap[member.tier] if n % 3 == 0 else member.tier)
    taste_model_train(pool=pool)

    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:pool', args=[pool.name, pool.version])}")
    section = page.locator("#taste-calibration-report")
    assert section.is_visible()
    rows = page.locator("#taste-accuracy-by-curator tbody tr")
    assert rows.count() == 2 and "grace" in rows.nth(1).inner_text()
    assert page.locator("#taste-reliability svg circle").count() >= 2
    assert page.locator("#taste-reliability-bins tbody tr").count() == page.locator("#taste-reliability svg circle").count()
    section.scroll_into_view_if_needed()
    screenshot(page, "pool-taste-calibration")
