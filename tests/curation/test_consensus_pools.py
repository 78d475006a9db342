"""Consensus and comparison pools: three curators grade through the views by hand, then
pools are frozen from their consensus (majority with ties, unanimous, mean with thresholds)
or one per curator, through the builder, the services and `manage.py freeze_pool`."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from curation.consensus import ConsensusSettings
from curation.errors import CurationError
from curation.export import export_pool
from curation.importing import import_path
from curation.models import Pool
from curation.selectors import pool_get
from curation.services import pool_freeze_consensus, pool_freeze_per_curator
from curation.taste import taste_model_train
from tests.curation.factories import make_reference
from tests.curation.test_agreement_page import grade_as

pytestmark = pytest.mark.django_db

# Hand-made grades: reference key -> (mara, jonas, ines); "" = not graded by that curator.
GRADES = {
    "r1": ("love", "love", "love"),    # all agree
    "r2": ("love", "okay", ""),        # 1 love / 1 okay: a majority tie; mean 1.5 -> love
    "r3": ("love", "okay", "okay"),    # majority okay 2/3; mean 1.33 -> okay
    "r4": ("okay", "", ""),            # one grader: too few under min 2
    "r5": ("reject", "reject", "okay"),  # majority reject: not a tier the pool takes
    "r6": ("love", "okay", "reject"),  # 1/1/1: a tie; mean 1 -> okay
    "r7": ("", "", ""),                # nobody graded it
    "r8": ("okay", "okay", ""),        # okay 2/2, unanimous too
    "r9": ("love", "reject", ""),      # a tie; mean 1 -> okay
}
CURATORS = ("mara", "jonas", "ines")


@pytest.fixture
def refs():
    return {key: make_reference(subject="a rose" if key in ("r1", "r2", "r3") else "a tulip") for key in GRADES}


@pytest.fixture
def clients(django_user_model, refs):
    """Each curator signs in with their own account and grades through the grade endpoint."""
    return {
        name: grade_as(django_user_model, name, {
            refs[key]: tiers[i] for key, tiers in GRADES.items() if tiers[i]
        })
        for i, name in enumerate(CURATORS)
    }


def ids(refs, *keys) -> set[int]:
    return {refs[key].id for key in keys}


def members(pool: Pool) -> dict[int, tuple[str, int, int]]:
    return {ref: (tier, graders, agreed) for ref, tier, graders, agreed in
            pool.members.values_list("reference_id", "tier", "graders", "agreed")}


def builder(client, **data):
    base = {"name": "roses", "eval_share": "0.34", "seed": "3", "tiers": ["love", "okay"], "curators": list(CURATORS)}
    return client.post(reverse("curation:builder"), base | data)


def test_a_majority_consensus_with_ties_keeps_exactly_the_references_more_than_half_agree_on(clients, refs):
    preview = clients["jonas"].get(reverse("curation:builder"), {
        "name": "roses", "mode": "consensus", "rule": "majority", "curators": list(CURATORS),
        "tiers": ["love", "okay"]}).content.decode()
    for outcome, n in (("in", 3), ("tie", 3), ("no_majority", 0), ("too_few", 1), ("outside_tiers", 1), ("ungraded", 1)):
        assert f'<tr data-outcome="{outcome}">' in preview
        row = preview[preview.index(f'<tr data-outcome="{outcome}">'):]
        assert row[:row.index("</tr>")].endswith(f"<td>{'<b>' if outcome == 'in' else ''}{n}{'</b>' if outcome == 'in' else ''}</td>")
    assert not Pool.objects.exists()  # a preview freezes nothing

    response = builder(clients["jonas"], mode="consensus", rule="majority")
    pool = pool_get("roses")
    assert response.status_code == 302 and response["Location"] == reverse("curation:pool", args=["roses", 1])
    assert members(pool) == {
        refs["r1"].id: ("love", 3, 3), refs["r3"].id: ("okay", 3, 2), refs["r8"].id: ("okay", 2, 2),
    }
    assert pool.consensus == {
        "rule": "majority", "min_graders": 2, "curators": list(CURATORS), "in": 3,
        "left_out": {"tie": 3, "no_majority": 0, "disagree": 0, "too_few": 1, "outside_tiers": 1},
        "ungraded": 1, "graded_by": {"mara": 8, "jonas": 7, "ines": 4},
        "members_graded": {"mara": 3, "jonas": 3, "ines": 2},
    }
    assert pool.curator.username == "jonas" and pool.created_by.username == "jonas"
    assert sorted(pool.graders.values_list("username", flat=True)) == sorted(CURATORS)


def test_a_unanimous_consensus_keeps_only_references_every_grader_agreed_on(clients, refs):
    builder(clients["mara"], mode="consensus", rule="unanimous")
    pool = pool_get("roses")
    assert members(pool) == {refs["r1"].id: ("love", 3, 3), refs["r8"].id: ("okay", 2, 2)}
    assert pool.consensus["left_out"] == {"tie": 0, "no_majority": 0, "disagree": 5, "too_few": 1, "outside_tiers": 0}


@pytest.mark.parametrize(("love_at", "expected"), [
    # default thresholds: a mean of exactly 1.5 (r2) takes the higher tier
    (1.5, {"r1": "love", "r2": "love", "r3": "okay", "r6": "okay", "r8": "okay", "r9": "okay"}),
    # love from 1.25: r3's mean of 1.33 becomes love
    (1.25, {"r1": "love", "r2": "love", "r3": "love", "r6": "okay", "r8": "okay", "r9": "okay"}),
])
def test_a_mean_consensus_maps_the_mean_grade_to_a_tier_by_its_thresholds(clients, refs, love_at, expected):
    builder(clients["ines"], mode="consensus", rule="mean", love_at=str(love_at), okay_at="0.5")
    pool = pool_get("roses")
    assert {ref: tier for ref, (tier, _, _) in members(pool).items()} == {refs[k].id: t for k, t in expected.items()}
    assert pool.consensus["love_at"] == love_at and pool.consensus["okay_at"] == 0.5
    assert pool.consensus["left_out"]["outside_tiers"] == 1  # r5's mean 0.33 is reject
    assert pool.consensus["left_out"]["tie"] == 0


def user(name: str):
    return Pool._meta.get_field("curator").related_model.objects.get(username=name)


def test_the_minimum_of_graders_decides_which_partly_graded_references_count(clients, refs):
    pool = pool_freeze_consensus(name="roses", curators=list(CURATORS), created_by=user("mara"),
                                 settings=ConsensusSettings(rule="majority", min_graders=1))
    assert members(pool)[refs["r4"].id] == ("okay", 1, 1)  # one curator graded it: enough now
    assert pool.consensus["left_out"]["too_few"] == 0
    strict = pool_freeze_consensus(name="roses", curators=list(CURATORS), created_by=user("mara"),
                                   settings=ConsensusSettings(rule="majority", min_graders=3))
    assert set(members(strict)) == ids(refs, "r1", "r3")
    assert strict.version == 2
    assert strict.consensus["left_out"] == {  # r2, r4, r8, r9 had fewer than three graders
        "tie": 1, "no_majority": 0, "disagree": 0, "too_few": 4, "outside_tiers": 1,
    }


def test_a_consensus_of_one_curator_or_of_nobody_in_common_is_refused_and_nothing_is_made(clients, refs):
    with pytest.raises(CurationError, match="at least two curators"):
        pool_freeze_consensus(name="roses", curators=["mara"], created_by=user("mara"))
    with pytest.raises(CurationError, match="no curator named 'zed'"):
        pool_freeze_consensus(name="roses", curators=["mara", "zed"], created_by=user("mara"))
    with pytest.raises(CurationError, match=r"no reference has a consensus .*\(3 disagree, 4 too few, 1 outside tiers\)"):
        pool_freeze_consensus(name="roses", curators=list(CURATORS), created_by=user("mara"), tiers=["okay"],
                              settings=ConsensusSettings(rule="unanimous", min_graders=3))
    response = builder(clients["mara"], mode="consensus", rule="mean", love_at="0.2", okay_at="0.9")
    assert response.status_code == 400 and "0 ≤ okay-at ≤ love-at ≤ 2" in response.content.decode()
    assert not Pool.objects.exists()


def test_a_consensus_pool_is_split_by_tier_and_trains_its_taste_judge(clients, refs):
    pool = pool_freeze_consensus(name="roses", curators=list(CURATORS), created_by=user("mara"),
                                 settings=ConsensusSettings(rule="mean"), eval_share=0.34, seed=3)
    splits = dict(pool.members.values_list("reference_id", "split"))
    tiers = dict(pool.members.values_list("reference_id", "tier"))
    for tier in ("love", "okay"):  # 2 love -> 1 eval; 4 okay -> round(1.36) = 1 eval
        assert [splits[r] for r in tiers if tiers[r] == tier].count("eval") == 1
    taste = taste_model_train(pool=pool)
    assert taste.pool_id == pool.id and taste.train_pairs > 0


def test_one_pool_per_curator_is_made_in_one_action_named_after_each(clients, refs):
    response = builder(clients["mara"], mode="per-curator", name="taste")
    assert response.status_code == 302
    made = {p.name: p for p in Pool.objects.all()}
    assert sorted(made) == ["taste-ines", "taste-jonas", "taste-mara"]
    assert {name: pool.curator.username for name, pool in made.items()} == {
        "taste-ines": "ines", "taste-jonas": "jonas", "taste-mara": "mara"}
    assert set(members(made["taste-mara"])) == ids(refs, "r1", "r2", "r3", "r4", "r6", "r8", "r9")
    assert set(members(made["taste-ines"])) == ids(refs, "r1", "r3", "r5")  # r6 she rejected
    assert all(pool.created_by.username == "mara" and not pool.is_consensus for pool in made.values())
    assert list(made["taste-ines"].graders.values_list("username", flat=True)) == ["ines"]
    page = clients["mara"].get(reverse("curation:pools")).content.decode()
    assert "Froze taste-mara:v1 (7), taste-jonas:v1 (" in page


def test_one_pool_per_curator_fails_whole_when_any_cannot_be_made(clients, refs, django_user_model):
    grade_as(django_user_model, "otto", {refs["r5"]: "reject"})  # nothing otto graded is love or okay
    response = builder(clients["mara"], mode="per-curator", name="taste", curators=[*CURATORS, "otto"])
    assert response.status_code == 400
    assert "otto&#x27;s pool: no graded reference matches" in response.content.decode()
    assert "no pool was made" in response.content.decode()
    with pytest.raises(CurationError, match="needs a name"):
        pool_freeze_per_curator(name="!!!", curators=list(CURATORS))
    assert not Pool.objects.exists()


def test_the_preview_of_per_curator_pools_names_each_and_warns_of_one_that_would_fail(clients, refs, django_user_model):
    grade_as(django_user_model, "otto", {refs["r5"]: "reject"})
    page = clients["mara"].get(reverse("curation:builder"), {
        "name": "taste", "mode": "per-curator", "curators": ["mara", "otto"]}).content.decode()
    assert '<h3 class="small" data-pool="taste-mara"><code>taste-mara</code> · 7 references</h3>' in page
    assert '<h3 class="small" data-pool="taste-otto"><code>taste-otto</code> · 0 references</h3>' in page
    assert "No graded reference of this curator matches: freezing would fail." in page


def test_the_freeze_pool_command_makes_consensus_and_per_curator_pools(clients, refs):
    from io import StringIO

    out = StringIO()
    call_command("freeze_pool", "roses", curators="mara,jonas,ines", rule="majority", stdout=out)
    text = out.getvalue()
    assert "Froze roses:v1: 3 references (love 1, okay 2) from the majority consensus of mara, jonas, ines." in text
    assert "left out: a tie between tiers 3, no tier from more than half 0, graders disagree 0, too few grades 1, " \
           "consensus tier not taken 1; graded by none of them 1" in text
    assert pool_get("roses").curator.username == "mara"  # --by defaults to the first curator
    call_command("freeze_pool", "roses", curators="mara,jonas", rule="mean", love_at=1.0, by="ines", stdout=out)
    assert pool_get("roses").consensus["love_at"] == 1.0 and pool_get("roses").curator.username == "ines"
    call_command("freeze_pool", "cmp", curators="mara,jonas", per_curator=True, stdout=out)
    assert {p.name for p in Pool.objects.filter(name__startswith="cmp-")} == {"cmp-mara", "cmp-jonas"}
    with pytest.raises(CommandError, match="name the curators"):
        call_command("freeze_pool", "roses", rule="unanimous")
    with pytest.raises(CommandError, match="not both"):
        call_command("freeze_pool", "roses", curators="mara,jonas", rule="unanimous", per_curator=True)
    with pytest.raises(CommandError, match="no curator named 'zed'"):
        call_command("freeze_pool", "roses", curators="mara,zed", rule="unanimous")
    assert pool_get("roses").version == 2


def test_the_pool_page_shows_who_graded_it_the_rule_and_their_agreement(clients, refs):
    builder(clients["mara"], mode="consensus", rule="majority")
    page = clients["jonas"].get(reverse("curation:pool", args=["roses", 1])).content.decode()
    assert "Consensus (majority) of <b>mara, jonas, ines</b>" in page
    section = page[page.index('id="pool-graders"'):]
    assert '<tr data-grader="ines"><th scope="row"><a href="/pools/references/?grader=ines">ines</a></th><td>2 of 3</td></tr>' in section
    assert "Consensus by <b>majority</b>, at least 2 graders per reference: <b>3</b> in." in section
    assert "a tie between tiers <b>3</b>" in section and "too few grades <b>1</b>" in section
    assert "/pools/agreement/?pool=roses%3Av1&amp;curator=mara&amp;curator=jonas&amp;curator=ines" in section
    # three members: too few shared for a figure, and the page says so rather than showing one
    assert "<dt>Krippendorff's alpha</dt><dd><span class=\"muted small\">Only 3 references graded by two or more " \
           "curators; needs at least 5</span></dd>" in section
    assert '<span class="small muted" title="graders who gave this tier, of those who graded it">2/3</span>' in page


def test_a_consensus_pool_exported_and_imported_keeps_how_it_was_made_and_each_members_agreement(
    clients, refs, django_user_model, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    builder(clients["mara"], mode="consensus", rule="majority")
    made = pool_get("roses:v1")
    folder = export_pool(made, tmp_path / "export")
    document = json.loads((folder / "pool.json").read_text())
    assert document["format_version"] == 2
    assert document["graders"] == ["ines", "jonas", "mara"] and document["consensus"] == made.consensus
    rows = {json.loads(line)["sha256"]: json.loads(line) for line in (folder / "metadata.jsonl").read_text().splitlines()}
    assert {(row["tier"], row["graders"], row["agreed"]) for row in rows.values()} == {
        (tier, graders, agreed) for tier, graders, agreed in members(made).values()}

    grace = django_user_model.objects.create_user(username="grace", password="pw-2026-grace")
    report = import_path(folder, curator=grace)
    assert report.pool == "roses:v2" and not report.pool_error
    restored = pool_get("roses:v2")
    assert restored.curator == grace and restored.consensus == made.consensus
    assert members(restored) == members(made)  # each member's tier, graders and agreed, by reference

    client = Client()
    client.force_login(grace)
    page = client.get(reverse("curation:pool", args=["roses", 2])).content.decode()
    section = page[page.index('id="pool-graders"'):]
    assert "Consensus (majority) of <b>mara, jonas, ines</b>" in page
    assert 'id="consensus-imported"' in section and "their own grades did not" in section
    assert '<tr data-grader="ines"><th scope="row">ines</th>' in section  # no link to a user of this studio
    assert "Krippendorff" not in section  # namesakes here are other people: no agreement of theirs
    assert import_path(folder, curator=grace).pool == "roses:v2"  # the same export again: no new version


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_each_existing_pools_curator_its_only_grader(curator):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("curation", "0005_judge_audit_progress")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    reference = old.get_model("curation", "Reference").objects.create(
        sha256="a" * 64, image="x.png", width=1, height=1, file_size=1, provenance="upload")
    pool = old.get_model("curation", "Pool").objects.create(name="old", version=1, curator_id=curator.pk, tiers=["love"])
    old.get_model("curation", "PoolMember").objects.create(pool=pool, reference=reference, tier="love", split="train")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    migrated = Pool.objects.get(pk=pool.pk)
    assert list(migrated.graders.all()) == [curator] and migrated.consensus == {} and not migrated.is_consensus
    assert list(migrated.members.values_list("tier", "graders", "agreed")) == [("love", 1, 1)]
