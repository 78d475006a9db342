"""The pool page of a consensus pool of three curators, in a browser: who graded it, how the
consensus left references out, their agreement and the judge audit against each of them."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.audit import judge_audit_run
from curation.consensus import ConsensusSettings
from curation.services import grade_set, pool_freeze_consensus
from curation.taste import taste_model_train
from painting.judging import judge_for
from painting.selectors import recipe_get
from tests.curation.factories import make_reference

TIERS = ("reject", "okay", "love")
SUBJECTS = ("a rose", "a tulip", "a peach hibiscus")


@pytest.mark.django_db(transaction=True)
def test_the_consensus_pools_page_shows_its_curators_their_agreement_and_the_audit_per_curator(
    signed_in_page, live_server, curator, django_user_model, screenshot
):
    jonas = django_user_model.objects.create_user(username="jonas", password="x")
    ines = django_user_model.objects.create_user(username="ines", password="x")
    for i in range(36):  # made-up grades: jonas mostly agrees with ada, ines grades most and differs more
        reference = make_reference(subject=SUBJECTS[i % 3])
        base = (i * 7) % 3
        grade_set(reference=reference, curator=curator, tier=TIERS[base])
        grade_set(reference=reference, curator=jonas, tier=TIERS[(base + (i % 5 == 0)) % 3])
        if i % 4:
            grade_set(reference=reference, curator=ines, tier=TIERS[(base + (i % 3 == 1)) % 3])
    pool = pool_freeze_consensus(
        name="roses-consensus", curators=["ada", "jonas", "ines"], created_by=curator,
        settings=ConsensusSettings(rule="majority"), tiers=TIERS, eval_share=0.3, seed=1,
        description="What ada, jonas and ines agree on.",
    )
    taste_model_train(pool=pool)
    judge = judge_for(recipe_get("studio-judge-led"), pool.id)
    judge_audit_run(pool=pool, judge=judge, judge_label="taste", recipe_name="studio-judge-led", pairs=40)

    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:pool', args=[pool.name, pool.version])}")
    graders = page.locator("#pool-graders").inner_text()
    assert "ada" in graders and "jonas" in graders and "ines" in graders
    assert "Consensus by majority" in graders and "a tie between tiers" in graders
    people = page.locator("#audit-people").inner_text()
    assert "the consensus (pool tiers)" in people and "jonas" in people
    page.evaluate("document.querySelectorAll('img[loading=lazy]').forEach(img => img.loading = 'eager')")
    page.wait_for_function("[...document.images].every(img => img.complete)")
    screenshot(page, "pool-consensus")

    page.goto(f"{live_server.url}{reverse('curation:builder')}?name=roses-consensus&mode=consensus&rule=majority"
              "&curators=ada&curators=jonas&curators=ines&tiers=love&tiers=okay")
    counts = page.locator("#consensus-counts").inner_text()
    assert "In the pool\t23" in counts and "Left out: a tie between tiers\t2" in counts
    assert "Left out: consensus tier not taken\t11" in counts
    screenshot(page, "pool-builder-consensus")
