"""The pool page's judge audit: the button queues it for a score worker, the page follows its
progress (htmx polling, or a refreshing page without JavaScript) and shows the report with a
warning when it rests on too few pairs. The task runs in-process here, except in the last
test, where a real score worker takes it from the queue while a browser watches."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import JudgeAudit
from curation.tasks import run_judge_audit
from paintapp.celery import app
from paintenv.judges.taste import SMALL_SAMPLE_PAIRS
from tests.curation.factories import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(curator):
    return make_pool(curator, name="roses", love=4, okay=4, reject=2, tiers=("love", "okay", "reject"), eval_share=0.5)


def audit_url(pool) -> str:
    return reverse("curation:pool-audit", args=[pool.name, pool.version])


def htmx(client, method: str, url: str, data=None) -> str:
    return getattr(client, method)(url, data or {}, headers={"HX-Request": "true"}).content.decode()


def test_the_audit_goes_to_the_score_queue():
    assert app.amqp.router.route({}, "curation.tasks.run_judge_audit")["queue"].name == "score"


def test_asking_for_an_audit_queues_it_and_the_page_follows_it_until_the_report(signed_in, pool):
    fragment = htmx(signed_in, "post", audit_url(pool), {"recipe": "studio-judge-led", "pairs": "6"})
    audit = JudgeAudit.objects.get(pool=pool)
    assert (audit.status, audit.pairs, audit.recipe_name) == ("queued", 6, "studio-judge-led")
    assert fragment.lstrip().startswith('<div id="audit" data-status="queued"') and 'hx-trigger="every 1s"' in fragment
    assert "waiting for a score worker" in fragment and "Audit the judge" not in fragment  # one at a time
    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in page

    htmx(signed_in, "post", audit_url(pool), {"recipe": "studio-judge-led", "pairs": "6"})
    assert JudgeAudit.objects.count() == 1  # asking again while it waits is the same audit

    JudgeAudit.objects.filter(pk=audit.pk).update(status="running", done=2, total=6)
    fragment = htmx(signed_in, "get", audit_url(pool))
    assert '<progress max="6" value="2">' in fragment and "<b>2</b> / 6 pairs · 33%" in fragment

    assert run_judge_audit(audit.id) == {"audit_id": audit.id, "status": "done", "pairs": 6}
    fragment = htmx(signed_in, "get", audit_url(pool))
    assert 'data-status="done"' in fragment and "hx-trigger" not in fragment  # polling stops
    assert "6 judged of 6" in fragment and "too few pairs to trust" in fragment
    assert "Self-agreement</dt><dd>1.000" in fragment  # the taste judge is deterministic


def test_an_audit_that_cannot_run_says_why_on_the_page(signed_in, curator):
    only_love = make_pool(curator, name="loves", love=4, okay=0, reject=0, tiers=("love",), eval_share=0.5)
    htmx(signed_in, "post", audit_url(only_love), {"recipe": "studio-judge-led", "pairs": "5"})
    run_judge_audit(JudgeAudit.objects.get().id)
    fragment = htmx(signed_in, "get", audit_url(only_love))
    assert 'data-status="failed"' in fragment and "no pair of different tiers to audit" in fragment
    assert "Audit the judge" in fragment  # it can be asked for again


@pytest.mark.parametrize(("data", "message"), [
    ({"recipe": "nonsense", "pairs": "5"}, "unknown recipe &#x27;nonsense&#x27;"),
    ({"recipe": "studio-judge-led", "pairs": "0"}, "audit between 1 and 500 pairs"),
    ({"recipe": "studio-judge-led", "pairs": "many"}, "The number of pairs must be a whole number."),
])
def test_a_bad_audit_request_is_refused_with_its_reason(signed_in, pool, data, message):
    response = signed_in.post(audit_url(pool), data, headers={"HX-Request": "true"})
    assert response.status_code == 400 and message in response.content.decode()
    assert not JudgeAudit.objects.exists()


def test_the_taste_judges_accuracy_on_a_handful_of_pairs_is_flagged(signed_in, pool):
    from curation.taste import taste_model_train

    taste = taste_model_train(pool=pool)
    assert 0 < taste.accuracy["all"]["pairs"] < 20
    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    section = page[page.index('id="taste-accuracy"'):page.index("Held-out pairwise accuracy")]
    assert "too few pairs to trust" in section


@pytest.mark.parametrize(("pairs", "flagged"), [(29, True), (30, False)])
def test_the_pool_page_flags_an_accuracy_exactly_where_the_taste_judge_calls_it_a_small_sample(
    signed_in, pool, pairs, flagged
):
    from curation.taste import taste_model_train

    taste = taste_model_train(pool=pool)
    taste.accuracy = {"all": {**taste.accuracy["all"], "pairs": pairs, "small_sample": pairs < SMALL_SAMPLE_PAIRS}}
    taste.save(update_fields=["accuracy"])
    page = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    section = page[page.index('id="taste-accuracy"'):page.index("Held-out pairwise accuracy")]
    assert ("too few pairs to trust" in section) is flagged is taste.accuracy["all"]["small_sample"]


@pytest.mark.django_db(transaction=True)
def test_a_score_worker_runs_the_audit_while_the_page_shows_its_progress(
    signed_in_page, live_server, pool, start_worker, screenshot
):
    start_worker("score")
    page = signed_in_page
    page.goto(f"{live_server.url}{reverse('curation:pool', args=[pool.name, pool.version])}")
    page.fill("#audit-form input[name=pairs]", "8")
    page.click("#audit-form button")
    page.wait_for_selector("#audit[data-status=done]", timeout=60_000)  # no reload: htmx polled
    assert "8 judged of 8" in page.locator("#judge-audit").inner_text()
    assert JudgeAudit.objects.get().status == "done"
    screenshot(page, "pool-page")
