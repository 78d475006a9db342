"""Recipes: the presets and saved recipes, `manage.py recipes` with its probe on a real score
worker (whose environment, not the caller's, decides), and names a saved recipe may not take."""
from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from paintenv.reward import PRESETS
from painting import services
from painting.models import RewardRecipe
from painting.selectors import recipe_get, recipe_name_matching, recipe_names
from tests.curation.factories import make_pool
from tests.support.fake_vlm_server import serve

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def vlm_server():
    yield from serve()


def rows(out: str) -> dict[str, str]:
    """The command's table by recipe name (the default marked `NAME *`)."""
    return {line.split()[0]: line for line in out.splitlines()[1:] if line and not line.startswith("*")}


def test_recipes_lists_every_preset_and_saved_recipe_with_its_parts_and_weights(capsys):
    services.recipe_save(name="short", recipe=PRESETS["studio-hps-only"].with_(length_low_tokens=50))
    call_command("recipes", no_probe=True)
    out = capsys.readouterr().out
    table = rows(out)
    assert list(table) == [*PRESETS, "short"]
    assert table["judge-led"].split()[:7] == ["judge-led", "published", "0.05", "0.05", "vlm", "0.6", "hpsv3"]
    assert table["studio-judge-led"].split()[:9] == [
        "studio-judge-led", "*", "studio", "0.05", "0.05", "taste", "0.6", "features", "0.3"]
    assert table["short"].split()[1] == "saved" and table["short"].endswith("not probed")
    assert "* the default recipe here (studio-judge-led)" in out


@pytest.mark.slow
def test_recipes_probes_each_part_on_the_score_worker_with_that_machines_settings(
    capsys, curator, start_worker, worker_env, vlm_server, monkeypatch,
):
    monkeypatch.delenv("PAINTAPP_VLM_BASE_URL", raising=False)  # only the worker knows the endpoint
    make_pool(curator, name="probed")
    worker_env["PAINTAPP_VLM_BASE_URL"] = vlm_server.base_url
    worker = start_worker("score")
    call_command("recipes", pool="probed")
    table = rows(capsys.readouterr().out)
    assert [r.path for r in vlm_server.requests] == ["/v1/models"] * 2  # judge-led and hps-led, from the worker
    assert "NO: quality: PAINTAPP_HPSV3_CHECKPOINT is not set" in table["judge-led"]
    assert "judge:" not in table["judge-led"]  # the worker reached the VLM endpoint
    assert table["studio-judge-led"].endswith(f"yes ({worker.hostname})")
    assert table["studio-hps-only"].endswith(f"yes ({worker.hostname})")


@pytest.mark.slow
def test_without_a_score_worker_the_scored_parts_are_unknown_and_say_why(capsys):
    call_command("recipes")
    table = rows(capsys.readouterr().out)
    why = "no worker answers on the `score` queue — start one with `make worker-score`"
    assert table["studio-hps-only"].endswith(f"?: quality: {why}")
    assert table["judge-led"].endswith(f"?: judge and quality: {why}")


def test_a_saved_recipe_cannot_take_a_presets_name():
    for name in PRESETS:
        with pytest.raises(services.RecipeRefused, match=f"{name} is a preset's name"):
            services.recipe_save(name=name, recipe=PRESETS["studio-judge-led"])
    with pytest.raises(ValidationError, match="preset's name"):
        RewardRecipe(name="studio-hps-led", config=PRESETS["studio-hps-led"].to_dict()).full_clean()
    assert not RewardRecipe.objects.exists()


def test_a_saved_row_under_a_presets_name_never_hides_the_preset():
    RewardRecipe.objects.create(name="studio-judge-led", config=PRESETS["hps-only"].to_dict())  # from before the rename
    assert recipe_names().count("studio-judge-led") == 1
    assert recipe_get("studio-judge-led") == PRESETS["studio-judge-led"]


def test_a_stored_runs_recipe_finds_the_preset_that_judges_the_same_way():
    old_judge_led = {**PRESETS["studio-judge-led"].to_dict(), "name": "judge-led"}  # a run stored before the rename
    assert recipe_name_matching(old_judge_led) == "studio-judge-led"
    assert recipe_name_matching(PRESETS["judge-led"].to_dict()) == "judge-led"
    assert recipe_name_matching({**old_judge_led, "w_judge": 0.5}) is None


def test_the_migration_renames_a_saved_recipe_that_took_a_studio_presets_name():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("painting", "0001_initial")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("painting", "RewardRecipe")
    old.objects.create(name="studio-judge-led", config={**PRESETS["hps-only"].to_dict(), "name": "studio-judge-led"})
    old.objects.create(name="mine", config=PRESETS["hps-only"].to_dict())
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    saved = RewardRecipe.objects.get(name="studio-judge-led-saved")
    assert saved.config["name"] == "studio-judge-led-saved" and saved.config["judge"] == "vlm"
    assert sorted(RewardRecipe.objects.values_list("name", flat=True)) == ["mine", "studio-judge-led-saved"]


def test_recipes_save_stores_a_recipe_from_another_with_the_fields_set_and_replaces_it_when_saved_again(capsys):
    call_command("recipes", save="Quality Only", source="studio-hps-only", set=["w_length=0", "length_low_tokens=80"])
    saved = recipe_get("quality-only")
    assert saved == PRESETS["studio-hps-only"].with_(name="quality-only", w_length=0.0, length_low_tokens=80)
    assert "saved recipe quality-only (from studio-hps-only)" in capsys.readouterr().out
    call_command("recipes", save="quality-only", source="quality-only", set=["w_gate=0.2"])
    assert recipe_get("quality-only").w_gate == 0.2 and recipe_get("quality-only").length_low_tokens == 80
    assert RewardRecipe.objects.filter(name="quality-only").count() == 1


@pytest.mark.parametrize(("arguments", "says"), [
    ({"save": "studio-judge-led"}, "preset's name"),
    ({"save": "mine", "source": "nope"}, "unknown recipe 'nope'"),
    ({"save": "mine", "set": ["colour=red"]}, "use KEY=VALUE with KEY one of"),
    ({"save": "mine", "set": ["w_gate=lots"]}, "w_gate takes a float"),
    ({"save": "mine", "set": ["w_judge=-1"]}, "must not be negative"),
    ({"set": ["w_gate=1"]}, "--from and --set go with --save NAME"),
])
def test_recipes_save_refuses_bad_input_with_exit_code_2_and_saves_nothing(arguments, says):
    with pytest.raises(CommandError, match=says) as refused:
        call_command("recipes", no_probe=True, **arguments)
    assert refused.value.returncode == 2
    assert not RewardRecipe.objects.exists()
