"""Curation pages over HTTP: grid, focus view, grade endpoint, bulk, builder, pools, images."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import Grade, Pool
from curation.services import grade_set, pool_freeze
from tests.curation.factories import make_reference

pytestmark = pytest.mark.django_db


def test_the_grid_filters_server_side_and_shows_counts_per_tier(signed_in, curator):
    refs = [make_reference(subject="a rose") for _ in range(3)] + [make_reference(subject="a poppy")]
    grade_set(reference=refs[0], curator=curator, tier="love")
    response = signed_in.get(reverse("curation:grid"), {"tier": "ungraded", "subject": "a rose"})
    ids = [r.id for r in response.context["page"].object_list]
    assert ids == [refs[1].id, refs[2].id]
    assert response.context["counts"] == {"love": 1, "okay": 0, "reject": 0, "ungraded": 2, "all": 3}


@pytest.mark.parametrize("view", ["curation:grid", "curation:bulk", "curation:builder"])
def test_a_bad_filter_in_the_address_is_a_clear_400_never_a_500(signed_in, view):
    make_reference()
    response = signed_in.get(reverse(view), {"tier": "lovely", "provenance": "stolen", "bulk_tier": "love"})
    assert response.status_code == 400
    assert "Bad filter" in response.content.decode() and "lovely is not one of the available choices" in response.content.decode()


def test_a_bad_filter_is_refused_before_anything_is_graded(signed_in, curator):
    reference = make_reference()
    focus = signed_in.get(reverse("curation:focus", args=[reference.id]), {"has_source": "maybe"})
    assert focus.status_code == 400 and "has_source" in focus.content.decode()
    bulk = signed_in.post(reverse("curation:bulk"), {"provenance": "stolen", "bulk_tier": "love", "confirm_count": "1"})
    assert bulk.status_code == 400 and not Grade.objects.exists()


def test_the_grid_serves_only_its_results_fragment_to_htmx(signed_in):
    make_reference()
    response = signed_in.get(reverse("curation:grid"), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="results">') and "<html" not in html


def test_the_grid_paginates(signed_in):
    for _ in range(65):
        make_reference()
    first = signed_in.get(reverse("curation:grid"))
    second = signed_in.get(reverse("curation:grid"), {"page": 2})
    assert len(first.context["page"].object_list) == 60
    assert len(second.context["page"].object_list) == 5


def test_grading_by_json_returns_the_confirmed_tier(signed_in, curator):
    reference = make_reference()
    url = reverse("curation:grade", args=[reference.id])
    response = signed_in.post(url, {"tier": "okay", "source": "keyboard"}, headers={"Accept": "application/json"})
    assert response.json() == {"id": reference.id, "tier": "okay", "saved": True}
    assert Grade.objects.get(reference=reference, curator=curator).tier == "okay"
    cleared = signed_in.post(url, {"tier": "none", "source": "undo"}, headers={"Accept": "application/json"})
    assert cleared.json()["tier"] is None


def test_a_bad_tier_is_a_clear_400(signed_in):
    reference = make_reference()
    response = signed_in.post(
        reverse("curation:grade", args=[reference.id]), {"tier": "meh"}, headers={"Accept": "application/json"}
    )
    assert response.status_code == 400
    assert "unknown tier" in response.json()["error"]


def test_grading_without_javascript_redirects_to_the_next_reference(signed_in):
    a, b = make_reference(), make_reference()
    focus_b = reverse("curation:focus", args=[b.id])
    page = signed_in.get(reverse("curation:focus", args=[a.id]))
    assert f'name="next" value="{focus_b}?"' in page.content.decode()
    response = signed_in.post(reverse("curation:grade", args=[a.id]), {"tier": "love", "next": focus_b})
    assert response.status_code == 302 and response["Location"] == focus_b


def test_the_focus_view_shows_the_sketch_source_and_walks_the_filter(signed_in):
    a = make_reference(source="function setup() {}")
    b = make_reference()
    response = signed_in.get(reverse("curation:focus", args=[a.id]))
    assert response.context["next_id"] == b.id and response.context["previous_id"] is None
    assert "function setup() {}" in response.content.decode()
    assert response.context["ids"] == [a.id, b.id]


def test_bulk_grading_asks_for_confirmation_with_the_count_then_applies(signed_in, curator):
    refs = [make_reference(subject="a rose") for _ in range(70)]
    confirm = signed_in.get(reverse("curation:bulk"), {"subject": "a rose", "bulk_tier": "reject"})
    assert confirm.context["count"] == 70
    assert b"Mark 70 references as reject" in confirm.content
    assert not Grade.objects.exists()
    applied = signed_in.post(
        reverse("curation:bulk"), {"subject": "a rose", "bulk_tier": "reject", "confirm_count": "70"}
    )
    assert applied.status_code == 302
    assert Grade.objects.filter(curator=curator, tier="reject").count() == len(refs)


def test_the_grid_offers_to_undo_the_last_bulk_action_until_it_is_undone(signed_in, curator):
    refs = [make_reference(subject="a rose") for _ in range(3)]
    grade_set(reference=refs[0], curator=curator, tier="love")
    signed_in.post(reverse("curation:bulk"), {"subject": "a rose", "bulk_tier": "reject", "confirm_count": "3"})
    grid = signed_in.get(reverse("curation:grid"))
    batch = grid.context["last_bulk"]
    assert "<b>3</b> references marked reject" in grid.content.decode()
    undone = signed_in.post(reverse("curation:bulk-undo", args=[batch.id]), {"next": "/pools/references/?subject=a+rose"}, follow=True)
    assert undone.redirect_chain == [("/pools/references/?subject=a+rose", 302)]
    assert "Undid the bulk action: 3 grades put back as they were." in undone.content.decode()
    assert dict(Grade.objects.values_list("reference_id", "tier")) == {refs[0].id: "love"}
    assert undone.context["last_bulk"] is None
    again = signed_in.post(reverse("curation:bulk-undo", args=[batch.id]), follow=True)
    assert "already undone" in again.content.decode()


def test_a_bulk_confirmation_for_a_changed_selection_is_asked_again(signed_in):
    for _ in range(3):
        make_reference(subject="a rose")
    response = signed_in.post(reverse("curation:bulk"), {"subject": "a rose", "bulk_tier": "love", "confirm_count": "2"})
    assert response.status_code == 200 and response.context["stale"]
    assert not Grade.objects.exists()


def test_the_builder_previews_balance_and_freezes_a_pool(signed_in, curator):
    for tier in ("love", "love", "okay", "reject"):
        grade_set(reference=make_reference(), curator=curator, tier=tier)
    preview = signed_in.get(reverse("curation:builder"), {"tiers": ["love", "okay"], "name": "mine"}, headers={"HX-Request": "true"})
    assert preview.context["balance"].by_tier == {"love": 2, "okay": 1, "reject": 0}
    response = signed_in.post(reverse("curation:builder"), {"name": "mine", "tiers": ["love", "okay"], "eval_share": "0.2", "seed": "1"})
    pool = Pool.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("curation:pool", args=["mine", 1])
    assert pool.members.count() == 3


def test_the_builder_shows_a_clear_error_and_keeps_the_form(signed_in):
    response = signed_in.post(reverse("curation:builder"), {"name": "empty", "tiers": ["love"], "eval_share": "0.2", "seed": "0"})
    assert response.status_code == 400
    assert "no graded reference matches" in response.content.decode()
    assert response.context["form"]["name"] == "empty"


def test_the_builder_can_freeze_another_curators_grades(signed_in, django_user_model):
    other = django_user_model.objects.create_user("demo-curator")
    grade_set(reference=make_reference(), curator=other, tier="love")
    signed_in.post(reverse("curation:builder"), {"name": "demo", "grader": "demo-curator", "tiers": ["love"], "eval_share": "0", "seed": "0"})
    assert Pool.objects.get().curator == other


def test_pool_pages_show_balance_members_and_diffs(signed_in, curator):
    refs = [make_reference() for _ in range(4)]
    for r in refs:
        grade_set(reference=r, curator=curator, tier="love")
    pool_freeze(name="p", curator=curator)
    grade_set(reference=refs[0], curator=curator, tier="okay")
    pool_freeze(name="p", curator=curator)
    detail = signed_in.get(reverse("curation:pool", args=["p", 2]))
    assert detail.status_code == 200 and detail.context["balance"].total == 4
    assert b"Grades by <b>ada</b>" in detail.content
    diff = signed_in.get(reverse("curation:pool-diff", args=["p"]), {"a": 1, "b": 2})
    assert [(o.tier, n.tier) for o, n in diff.context["diff"].tier_changed] == [("love", "okay")]
    listing = signed_in.get(reverse("curation:pools"))
    assert b"v2" in listing.content


def test_the_home_page_says_whose_grades_it_counts_and_switches_to_a_pools_grader(signed_in, curator, django_user_model):
    demo = django_user_model.objects.create_user("demo-curator")
    refs = [make_reference() for _ in range(5)]
    for reference, tier in zip(refs, ["love", "love", "okay", "reject"]):
        grade_set(reference=reference, curator=demo, tier=tier)
    pool_freeze(name="demo", curator=demo, eval_share=0.4)
    mine = signed_in.get(reverse("curation:pools")).content.decode()
    assert "Your grades" in mine and "5 references · 5 still ungraded" in mine
    assert "The pools below also hold grades of" in mine and '<a href="?grader=demo-curator">demo-curator</a>' in mine
    assert "<th>Tiers</th><th>Split (train / eval)</th>" in mine
    assert '<td class="small">2 / 1</td>' in mine  # 3 members: two train, one eval
    theirs = signed_in.get(reverse("curation:pools"), {"grader": "demo-curator"}, headers={"HX-Request": "true"})
    fragment = theirs.content.decode()
    assert fragment.lstrip().startswith('<section class="card gradestrip" id="grades">')
    assert "Grades of demo-curator" in fragment and "5 references · 1 still ungraded by demo-curator" in fragment


def test_subject_bars_are_as_long_as_their_counts_compared_with_the_largest(signed_in, curator):
    for subject, n in (("a rose", 8), ("an iris", 4)):
        for _ in range(n):
            grade_set(reference=make_reference(subject=subject), curator=curator, tier="love")
    pool = pool_freeze(name="p", curator=curator, tiers=["love"])
    html = signed_in.get(reverse("curation:pool", args=[pool.name, pool.version])).content.decode()
    rose, iris = (html[html.index(f'data-subject="{s}"'):][:400] for s in ("a rose", "an iris"))
    assert 'style="width: 100.0%"' in rose and 'style="width: 50.0%"' in iris


def test_images_and_thumbnails_are_served_with_long_caching(signed_in):
    reference = make_reference()
    png = signed_in.get(reverse("curation:image", args=[reference.sha256]))
    assert png["Content-Type"] == "image/png" and "immutable" in png["Cache-Control"]
    thumb = signed_in.get(reverse("curation:image", args=[reference.sha256]), {"thumb": 160})
    assert thumb["Content-Type"] == "image/webp" and thumb.content[:4] == b"RIFF"
    assert signed_in.get(reverse("curation:image", args=[reference.sha256]), {"thumb": 999}).status_code == 404


def test_the_details_endpoint_rejects_garbage_ids(signed_in):
    assert signed_in.get(reverse("curation:details"), {"ids": "1,x"}).status_code == 400


def test_uploading_images_and_a_bad_file_stores_the_good_and_reports_the_bad(signed_in):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.curation.factories import png_bytes

    files = [
        SimpleUploadedFile("a.png", png_bytes(), content_type="image/png"),
        SimpleUploadedFile("notes.png", b"this is not an image", content_type="image/png"),
    ]
    response = signed_in.post(reverse("curation:upload"), {"files": files, "subject": "a rose"})
    report = response.context["report"]
    assert (report.created, report.rejected) == (1, 1)
    html = response.content.decode()
    assert "not_an_image" in html and "1 imported" in html
    from curation.models import Reference

    assert list(Reference.objects.values_list("subject", "provenance")) == [("a rose", "upload")]


def test_uploading_nothing_is_a_clear_error(signed_in):
    response = signed_in.post(reverse("curation:upload"), {})
    assert response.status_code == 400 and "at least one" in response.content.decode()
    fragment = signed_in.post(reverse("curation:upload"), {}, headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section id="report" data-status="error">')  # what the page swaps in


def test_the_upload_report_lists_every_file_of_a_zip_with_its_outcome(signed_in):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.curation.factories import png_bytes, zip_of

    same = png_bytes()
    archive = zip_of({"a.png": same, "b.png": same, "notes.txt": "to do", "bad.png": "no pixels", ".DS_Store": "x"})
    response = signed_in.post(reverse("curation:upload"), {"files": [SimpleUploadedFile("batch.zip", archive)]})
    assert response.status_code == 200
    outcomes = {row.name: (row.outcome, row.code) for row in response.context["report"].rows}
    assert outcomes == {
        "batch.zip:a.png": ("imported", ""), "batch.zip:b.png": ("duplicate", "duplicate"),
        "batch.zip:bad.png": ("rejected", "not_an_image"), "batch.zip:notes.txt": ("ignored", "unsupported_file"),
        "batch.zip:.DS_Store": ("ignored", "system_file"),
    }
    assert "notes.txt is not an image, sketch or metadata file; ignored" in response.content.decode()


def test_an_upload_with_nothing_importable_is_an_error_that_still_lists_each_file(signed_in):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.curation.factories import zip_of

    archive = zip_of({"notes.txt": "to do", "broken.png": "no pixels"})
    response = signed_in.post(reverse("curation:upload"), {"files": [SimpleUploadedFile("batch.zip", archive)]})
    html = response.content.decode()
    assert response.status_code == 422
    assert "Nothing importable: none of the 2 files listed below is an image that could be stored." in html
    assert "batch.zip:notes.txt" in html and "batch.zip:broken.png" in html
