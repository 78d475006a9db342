"""The rollout editor's services and endpoints: lint, revisions rendered and scored by real
workers exactly like the original rollout, timeouts and missing workers, cancel, promote,
refusals, labels, and what the in-browser preview is given."""
from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse
from django.utils import timezone

from curation.models import Provenance, Reference
from paintenv.gate import MAX_SOURCE_CHARS
from paintenv.length import length_score
from paintenv.render_page import load_assets
from paintenv.reward import Recipe
from paintenv.sandbox import compose_module, shadowable, shadows_module
from painting import fanout
from painting.services import renderer_config
from tests.curation.factories import make_pool
from tests.training.factories import GOOD, LOOP_FOREVER, make_run
from training.editor import presenters, preview, selectors, services
from training.models import Revision, Rollout


@pytest.fixture
def run(curator):
    run = make_run(make_pool(curator), steps=2, generations=4, seed=7)
    run.hyperparameters["render_size"] = 128  # the editor renders at the run's size: keep tests fast
    run.save(update_fields=["hyperparameters"])
    return run


@pytest.fixture
def rollout(run) -> Rollout:
    """A rollout that passed, with a painting, references and the judge's verdicts."""
    return run.rollouts.filter(passed=True).order_by("step", "position").last()


@pytest.fixture
def workers(start_worker, worker_env):
    worker_env["RENDER_TIMEOUT_S"] = "5"
    return start_worker("render"), start_worker("score")


def settle(revision: Revision, timeout: float = 90) -> Revision:
    """Poll like the page does (revision_sync never blocks) until the task is collected."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        revision = services.revision_sync(revision=Revision.objects.get(pk=revision.pk))
        if not revision.is_pending:
            return revision
        time.sleep(0.3)
    raise AssertionError(f"revision {revision.pk} still {revision.status} after {timeout:.0f} s")


def url(name: str, rollout: Rollout, *extra) -> str:
    return reverse(f"training:{name}", args=[rollout.run_id, rollout.id, *extra])


# --- with real render and score workers ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_revision_renders_then_scores_against_the_originals_references_with_its_recipe(
    workers, rollout, curator, monkeypatch
):
    sent = []  # the editor sends through the pipeline core, as paint_batch does

    def submit(stage, calls, **options):
        handles = real_submit(stage, calls, **options)
        sent.extend((stage, handle.task_id) for handle in handles)
        return handles

    real_submit = fanout.submit
    monkeypatch.setattr(fanout, "submit", submit)
    revision = services.revision_render(rollout=rollout, code=GOOD, created_by=curator)
    assert revision.status == Revision.Status.RENDERING
    assert sent == [("render", revision.render_task_id)]

    revision = settle(revision)
    assert revision.status == Revision.Status.RENDERED, revision.error
    assert revision.passed and revision.png and revision.violations == []
    run = rollout.run
    index = rollout.group * run.hyperparameters["num_generations"] + rollout.position
    assert revision.render["size"] == 128
    assert revision.render["seed"] == run.seed + rollout.step * 1000 + index  # the trainer's seed
    # an editor render is read for writing and painted twice (the reward stands beside training's)
    assert revision.render["findings"]["text"]["legible"] is False
    assert revision.render["findings"]["determinism"]["same"] is True
    assert revision.reward is None  # not scored yet: no made-up number

    revision = settle(services.revision_score(revision=revision))
    assert revision.status == Revision.Status.DONE, revision.error
    assert sent == [("render", revision.render_task_id), ("score", revision.score_task_id)]
    judged = [v["reference_id"] for v in revision.judge_detail["references"]]
    assert judged == rollout.reference_ids and len(judged) == 4
    assert all(len(v["orders"]) == 2 for v in revision.judge_detail["references"])

    recipe = Recipe.from_dict(run.recipe)
    parts = revision.parts
    # the length of the code that ran in the render (its coverage), not of the text alone
    assert revision.render["length_from"] == "render"
    assert parts["length"] == recipe.length_part(revision.render["painting_tokens"]) == length_score(GOOD)
    expected = (recipe.w_gate + recipe.w_length * parts["length"] + recipe.w_judge * parts["judge"]
                + recipe.w_quality * parts["quality"])
    assert revision.reward == pytest.approx(expected, abs=1e-5)

    rows = {row["name"]: row for row in presenters.parts_table(
        recipe, presenters.side_of_original(rollout, None), presenters.side_of_revision(revision, None))}
    assert rows["reward"]["delta"] == pytest.approx(revision.reward - rollout.reward)
    assert rows["judge"]["a"] == rollout.parts["judge"] and rows["judge"]["b"] == parts["judge"]
    quality_gain = (parts["quality"] - rollout.parts["quality"]) * recipe.w_quality
    assert rows["quality"]["weighted_delta"] == pytest.approx(quality_gain)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_endless_loop_is_a_render_timeout_verdict_worth_0_and_the_worker_goes_on(workers, rollout, curator):
    looped = settle(services.revision_render(rollout=rollout, code=LOOP_FOREVER, created_by=curator))
    assert looped.status == Revision.Status.DONE
    assert looped.timed_out and "render_timeout" in looped.violations
    assert looped.reward == 0.0 and looped.parts["gate"] == 0.0
    assert "longer than 5 s" in looped.render["errors"][0]["message"]

    after = settle(services.revision_render(rollout=rollout, code=GOOD, created_by=curator))
    assert after.status == Revision.Status.RENDERED and after.passed


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_writing_painted_with_brush_marks_is_painted_text_worth_0_and_the_page_says_where_it_is(
        start_worker, rollout, curator, client):
    from tests.paintenv.adversarial.painted_text import Style, text_sketch

    start_worker("render")
    strokes = Style("large strokes", cell=8, mark="stroke", x=10, y=40)  # legible even at the run's 128 px
    written = settle(services.revision_render(rollout=rollout, code=text_sketch("WINNER", strokes),
                                              created_by=curator))
    assert written.status == Revision.Status.DONE and written.violations == ["painted_text"]
    assert written.reward == 0.0 and written.png  # the painting is kept: the curator sees the writing
    where = written.render["findings"]["text"]["where"]
    assert where and "determinism" not in written.render["findings"]  # it failed: no second render
    client.force_login(curator)
    page = client.get(url("rollout", rollout) + f"?revision={written.id}").content.decode()
    assert 'id="painted-text"' in page and "has writing in it" in page and where[0] in page


@pytest.mark.django_db(transaction=True)
def test_without_a_render_worker_the_revision_fails_with_a_clear_error_and_no_reward(worker_env, rollout, curator):
    revision = services.revision_render(rollout=rollout, code=GOOD, created_by=curator, wait_s=1.5)
    assert services.revision_sync(revision=revision).status == Revision.Status.RENDERING  # still waiting
    later = revision.stage_started_at + timedelta(seconds=2)
    revision = services.revision_sync(revision=Revision.objects.get(pk=revision.pk), now=later)
    assert revision.status == Revision.Status.FAILED
    assert revision.reward is None and revision.parts == {}
    assert "No render worker took this render within 2 s" in revision.error
    assert "make worker-render" in revision.error


@pytest.mark.django_db
def test_a_revision_still_rendering_cannot_be_scored(client, curator, rollout):
    revision = Revision.objects.create(rollout=rollout, code=GOOD, status=Revision.Status.RENDERING, created_by=curator)
    client.force_login(curator)
    response = client.post(url("revision-score", rollout, revision.id))
    assert response.status_code == 409
    assert "still rendering" in response.content.decode()


# --- lint ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_lint_endpoint_gives_the_gates_violations_at_their_line_and_column(client, curator):
    client.force_login(curator)
    bad = GOOD.replace("brush.scaleBrushes(3);", "brush.scaleBrushes(3);\n  rect(10, 10, 50, 50);")
    response = client.post(reverse("training:sketch-lint"), json.dumps({"code": bad}), content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["passed"] is False
    assert [(d["code"], d["line"], d["col"]) for d in body["diagnostics"]] == [("bare_primitives", 7, 3)]
    assert "rect" in body["diagnostics"][0]["message"]

    clean = client.post(reverse("training:sketch-lint"), json.dumps({"code": GOOD}), content_type="application/json")
    assert clean.json()["passed"] is True and clean.json()["diagnostics"] == []


# --- the page -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_rollout_page_shows_the_painting_code_reply_parts_and_each_verdict(client, curator, rollout):
    client.force_login(curator)
    response = client.get(url("rollout", rollout))
    assert response.status_code == 200
    html = response.content.decode()
    assert reverse("training:rollout-image", args=[rollout.run_id, rollout.id]) in html
    assert "brush.fill(&quot;#5f8f4e&quot;, 170);" in html  # the code, in the editor's textarea
    assert "Here is my painting." in html  # the full reply
    assert 'data-part="judge"' in html and 'data-part="quality"' in html
    references = Reference.objects.filter(id__in=rollout.reference_ids)
    assert all(reverse("curation:image", args=[r.sha256]) in html for r in references)
    assert html.count("looser, more alive washes") == 4 and html.count("the reference has cleaner edges") == 4
    assert "painting shown first" in html and "reference shown first" in html


@pytest.mark.django_db
def test_the_page_says_when_a_rollout_lost_its_reward_to_infrastructure_or_failed_the_gate(client, curator, run):
    mixed = make_run(run.pool, steps=1, generations=2, rewards=[[None, 0.0]], name="mixed")
    lost, failed = mixed.rollouts.order_by("position")
    client.force_login(curator)
    html = client.get(url("rollout", lost)).content.decode()
    assert "infrastructure failure — left out of the baseline" in html
    assert "no render worker answered" in html  # the reason, with the parts
    html = client.get(url("rollout", failed)).content.decode()
    assert "failed: bare_primitives" in html and "Promote to references" not in html
    compare = client.get(url("rollout-compare", failed), {"a": "original", "b": "original"})
    assert compare.status_code == 200 and 'id="compare-parts"' in compare.content.decode()


@pytest.mark.django_db
def test_a_rollout_is_found_only_under_its_own_run(client, curator, rollout, run):
    other = make_run(run.pool, steps=1, generations=2, name="another run")
    client.force_login(curator)
    assert client.get(reverse("training:rollout", args=[other.id, rollout.id])).status_code == 404
    response = client.post(reverse("training:rollout-render", args=[other.id, rollout.id]), {"code": GOOD})
    assert response.status_code == 404
    assert not Revision.objects.exists()
    foreign = Revision.objects.create(rollout=other.rollouts.first(), code=GOOD, created_by=curator)
    assert client.get(url("revision", rollout, foreign.id), HTTP_HX_REQUEST="true").status_code == 404
    assert client.get(url("rollout-compare", rollout), {"a": "original", "b": foreign.id}).status_code == 404


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_bad_input_gets_a_clear_4xx_and_creates_nothing(client, curator, rollout):
    client.force_login(curator)
    empty = client.post(url("rollout-render", rollout), {"code": "   \n"})
    assert empty.status_code == 400
    assert "The code is empty" in empty.content.decode()

    huge = "// " + "x" * MAX_SOURCE_CHARS
    too_long = client.post(url("rollout-render", rollout), {"code": huge}, HTTP_HX_REQUEST="true")
    assert too_long.status_code == 413
    assert f"the gate analyses at most {MAX_SOURCE_CHARS:,}" in too_long.content.decode()
    assert too_long["HX-Retarget"] == "#editor-message"

    lint = reverse("training:sketch-lint")
    assert client.post(lint, json.dumps({"code": huge}), content_type="application/json").status_code == 413
    not_json = client.post(lint, "code=x", content_type="application/x-www-form-urlencoded")
    assert not_json.status_code == 400 and "JSON" in not_json.json()["error"]
    assert client.post(lint, json.dumps({"code": 3}), content_type="application/json").status_code == 400
    assert not Revision.objects.exists()


@pytest.mark.django_db
def test_actions_refuse_get_requests(client, curator, rollout):
    client.force_login(curator)
    revision = Revision.objects.create(rollout=rollout, code=GOOD, created_by=curator)
    for target in (url("rollout-render", rollout), url("revision-score", rollout, revision.id),
                   url("rollout-promote", rollout), reverse("training:sketch-lint")):
        assert client.get(target).status_code == 405, target
    assert not Reference.objects.filter(provenance=Provenance.ROLLOUT).exists()


# --- promote ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_promote_puts_the_painting_and_its_sketch_in_the_library_once(client, curator, rollout):
    client.force_login(curator)
    first = client.post(url("rollout-promote", rollout), follow=True)
    assert first.status_code == 200
    reference = Reference.objects.get(provenance=Provenance.ROLLOUT)
    assert f"Promoted: the painting is reference #{reference.id}" in first.content.decode()
    assert reference.source == rollout.code
    assert reference.subject == rollout.subject and reference.created_by == curator
    assert reference.original_name == f"run-{rollout.run_id}-step-{rollout.step}-group-0-position-{rollout.position}.png"
    assert reference.metadata["rollout_id"] == rollout.id and reference.metadata["run_id"] == rollout.run_id
    assert reference.seed == selectors.rollout_render_settings(rollout)["seed"]
    assert reference.grades.count() == 0  # for a curator to grade

    again = client.post(url("rollout-promote", rollout), follow=True)
    assert f"Already in the reference library as #{reference.id}" in again.content.decode()
    assert Reference.objects.filter(provenance=Provenance.ROLLOUT).count() == 1
    assert services.rollout_promote(rollout=rollout, created_by=curator) == (reference, False)
    assert reverse("curation:focus", args=[reference.id]) in again.content.decode()


@pytest.mark.django_db
def test_a_rollout_without_a_painting_cannot_be_promoted(client, curator, run):
    gate_failures = make_run(run.pool, steps=1, generations=2, rewards=[[0.5, 0.0]], name="gate failures")
    failed = gate_failures.rollouts.get(position=1)
    client.force_login(curator)
    response = client.post(url("rollout-promote", failed))
    assert response.status_code == 409
    assert "no painting to promote" in response.content.decode()


@pytest.mark.django_db
def test_a_painting_that_failed_the_render_or_is_blank_is_not_promoted_and_the_refusal_says_why(client, curator, rollout):
    client.force_login(curator)
    rollout.passed, rollout.violations, rollout.reward = False, ["render_error"], 0.0
    rollout.save(update_fields=["passed", "violations", "reward"])
    failed = client.post(url("rollout-promote", rollout))
    assert failed.status_code == 409
    assert "This painting failed the render (render_error)" in failed.content.decode()

    rollout.violations = ["blank_canvas"]
    rollout.save(update_fields=["violations"])
    page = client.get(url("rollout", rollout)).content.decode()
    assert 'id="promote-button" disabled' in page and "This painting is blank (blank_canvas)" in page
    blank = client.post(url("rollout-promote", rollout))
    assert blank.status_code == 409 and "This painting is blank (blank_canvas)" in blank.content.decode()
    assert not Reference.objects.filter(provenance=Provenance.ROLLOUT).exists()


# --- cancel ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_cancel_stops_a_pending_revision_with_no_reward_and_refuses_a_finished_one(client, curator, rollout):
    client.force_login(curator)
    pending = Revision.objects.create(
        rollout=rollout, code=GOOD, status=Revision.Status.RENDERING, created_by=curator,
        render_task_id=str(uuid.uuid4()), stage_started_at=timezone.now() - timedelta(seconds=3), wait_s=60,
    )
    response = client.post(url("revision-cancel", rollout, pending.id), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'data-status="cancelled"' in response.content.decode()
    pending.refresh_from_db()
    assert pending.status == Revision.Status.CANCELLED and pending.reward is None and pending.parts == {}
    assert pending.error.startswith("Cancelled by ada after 3 s of rendering; the worker was told to stop it.")
    assert services.revision_sync(revision=pending).status == Revision.Status.CANCELLED  # never collected later

    again = client.post(url("revision-cancel", rollout, pending.id), HTTP_HX_REQUEST="true")
    assert again.status_code == 409 and "nothing to cancel" in again.content.decode()


# --- labels ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_render_failure_is_labelled_as_one_and_the_parts_table_does_not_blame_the_gate(rollout):
    recipe = selectors.rollout_recipe(rollout)
    original = presenters.side_of_original(rollout, None)
    labels = {}
    for violations in (["render_error", "blank_canvas"], ["blank_canvas"], ["render_timeout"], ["bare_primitives"]):
        revision = Revision(rollout=rollout, code=GOOD, status=Revision.Status.DONE, violations=violations,
                            passed=False, reward=0.0, parts={"gate": 0.0, "length": 0.2})
        labels[violations[0]] = presenters.revision_status(revision)["text"]
        gate = presenters.parts_table(recipe, original, presenters.side_of_revision(revision, None))[0]
        assert gate["label"] == "gate + render" and gate["delta"] == -1.0
        assert gate["a_failed"] == "" and gate["b_failed"] == labels[violations[0]]  # beside the B side's 0
    assert labels == {"render_error": "Render failed", "blank_canvas": "Blank painting",
                      "render_timeout": "Timed out", "bare_primitives": "Gate failed"}


# --- the preview ----------------------------------------------------------------------------------


def test_the_preview_loads_the_very_files_of_the_render_workers_page_in_its_order():
    assets = load_assets(renderer_config().asset_dir)
    page_html = assets["/"][0].decode()
    order = [page_html.index(f'src="{path}"') for path in preview.STATIC_FOR_PAGE_PATH]
    assert order == sorted(order)  # STATIC_FOR_PAGE_PATH lists them as index.html loads them
    assert preview.page_scripts() == list(preview.STATIC_FOR_PAGE_PATH.values())
    for page_path, static_path in preview.STATIC_FOR_PAGE_PATH.items():
        assert Path(finders.find(static_path)).read_bytes() == assets[page_path][0], static_path


@pytest.mark.django_db
def test_the_preview_kit_wraps_a_sketch_exactly_as_the_render_worker_does(client, curator):
    client.force_login(curator)
    kit_url = reverse("training:preview-kit")
    names = ["document", "fetch", "rect", "Math", "break", "setup", "brush", "__paintExport"]
    response = client.post(kit_url, json.dumps({"names": names}), content_type="application/json")
    assert response.status_code == 200
    kit = response.json()
    shadowed = shadowable(names)
    assert shadowed == ["document", "fetch", "rect"]  # allowed and unbindable names are left alone
    assert kit["head"] + GOOD + kit["tail"] == compose_module(GOOD, shadowed)
    assert kit["shadows"] == shadows_module(shadowed) and f'"{kit["specifier"]}"' in kit["head"]

    for bad in ({"names": ["document", "x = 1; fetch('/')"]}, {"names": "document"}, ["document"]):
        refused = client.post(kit_url, json.dumps(bad), content_type="application/json")
        assert refused.status_code == 400 and refused.json()["error"]
