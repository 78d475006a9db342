"""A multi-turn rollout's chain in a real browser: the gallery's cards and the rollout page,
with paintings the renderer really made from the turns' code."""
from __future__ import annotations

import pytest
from django.urls import reverse

from tests.curation.factories import make_pool
from tests.training.factories import CORPUS, make_chain_rollout, make_chain_run
from training.models import Rollout

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

SIZE = 384
ROSE = (CORPUS / "good" / "rose.js").read_text()
POPPY = (CORPUS / "good" / "poppy.js").read_text()
IRIS = (CORPUS / "good" / "iris.js").read_text()
HIBISCUS = (CORPUS / "good" / "hibiscus.js").read_text()
MINIMAL = (CORPUS / "good" / "minimal.js").read_text()
# First sketches a revision improves on: a pale rose of one petal ring, a poppy without its flower,
# a rose whose bud is a bare p5 ellipse (the gate refuses it: nothing is painted).
PALE_ROSE = ROSE.replace(
    'colours: ["#9e1b32", "#c0303f", "#d94c55"]', 'colours: ["#e9a3ad", "#f1bcc3", "#f6d3d7"]'
).replace(
    '    { count: 5, length: 120, width: 0.55, curl: 0.25, colours: ["#a51d34", "#c8323f", "#e0606a"] },\n', ""
).replace('    { count: 4, length: 72, width: 0.65, curl: 0.3, colours: ["#7d1228", "#b02234", "#cf4150"] },\n', "")
BARE_ROSE = ROSE.replace("  brush.circle(CX, CY, 22, 0.5);\n", "  ellipse(CX, CY, 22, 22);\n")
STEM_POPPY = POPPY.replace("  paintFlower(320, 240);\n", "")
DUSK_IRIS = IRIS.replace("#2f3f8f", "#5b2f8f").replace("#3d52a8", "#6a3da8").replace("#4a62bd", "#7a4abd")
assert PALE_ROSE != ROSE and BARE_ROSE != ROSE and STEM_POPPY != POPPY and DUSK_IRIS != IRIS


@pytest.fixture
def chain_run(curator, renderer):
    paintings = {}

    def painted(code: str) -> bytes:
        if code not in paintings:
            paintings[code] = renderer.render(code, seed=0, size=SIZE).png
        return paintings[code]

    run = make_chain_run(make_pool(curator), turns=2, weight=0.5, name="revising rose")
    chains = [  # (step, subject, codes, rewards): fixed, improved, got worse, a small change
        (1, "a red rose", [BARE_ROSE, ROSE], [0.0, 0.71]), (1, "a red rose", [PALE_ROSE, ROSE], [0.34, 0.69]),
        (1, "a hibiscus", [HIBISCUS, MINIMAL], [0.58, 0.31]), (1, "an iris", [IRIS, DUSK_IRIS], [0.52, 0.55]),
        (2, "a poppy", [STEM_POPPY, POPPY], [0.22, 0.66]), (2, "a hibiscus", [MINIMAL, HIBISCUS], [0.3, 0.61]),
        (2, "an iris", [DUSK_IRIS, IRIS], [0.49, 0.47]), (2, "a red rose", [PALE_ROSE, ROSE], [0.36, 0.72]),
    ]
    for position, (step, subject, codes, rewards) in enumerate(chains):
        pngs = [painted(code) if reward else None for code, reward in zip(codes, rewards, strict=True)]
        make_chain_rollout(run, codes, rewards, step=step, position=position % 4, pngs=pngs, subject=subject)
    return run


def test_the_gallery_and_the_rollout_page_show_a_two_turn_chain(signed_in_page, live_server, chain_run, screenshot):
    page = signed_in_page
    page.goto(live_server.url + reverse("training:gallery", args=[chain_run.id]))
    cards = page.locator(".rolloutcard.is-chain")
    assert cards.count() == 8
    first = page.locator(f".rolloutcard[data-rollout='{Rollout.objects.get(step=1, position=0, run=chain_run).id}']")
    assert first.locator(".cardturn").count() == 2
    assert "bare_primitives" in first.locator(".cardturn[data-turn='1']").inner_text()
    page.wait_for_function("[...document.querySelectorAll('.cardturn img')].every(i => i.complete && i.naturalWidth)")
    assert first.locator(".cardturn[data-turn='2'] img").evaluate("i => i.naturalWidth") == SIZE
    screenshot(page, "gallery-chain")

    # The turns filter, without a reload: only the rollouts that fixed a gate failure.
    page.select_option("select[name=chain]", "fixed")
    page.wait_for_function("document.querySelectorAll('.rolloutcard').length === 1")

    rollout = Rollout.objects.get(run=chain_run, step=1, position=1)  # the pale rose revised
    page.goto(live_server.url + reverse("training:rollout", args=[chain_run.id, rollout.id]))
    chain = page.locator("#chain")
    assert chain.locator(".chainturn").count() == 2
    page.wait_for_function("[...document.querySelectorAll('#chain img')].every(i => i.complete && i.naturalWidth)")
    # Side by side: turn 1, its feedback, turn 2, left to right.
    xs = [page.locator(sel).bounding_box()["x"] for sel in ("#turn-1", "#feedback-1", "#turn-2")]
    assert xs == sorted(xs)
    assert "Paint covers" in page.locator("#feedback-1 pre").inner_text()
    diff = page.locator("#diff-1-2")
    # The pale ring's colours deepened (one line out, one in) and two rings added.
    assert diff.locator(".dl.add").count() == 3 and diff.locator(".dl.del").count() == 1
    assert "#e9a3ad" in diff.locator(".dl.del").inner_text() and "count: 5" in " ".join(diff.locator(".dl.add").all_inner_texts())
    # Added lines are drawn green, removed red: the colours come from the stylesheet.
    assert "rgba(47, 143, 91" in diff.locator(".dl.add").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert "0.865" in page.locator("#chain-formula").inner_text()  # 0.69 + 0.5 × (0.69 − 0.34)
    screenshot(page, "rollout-chain")
