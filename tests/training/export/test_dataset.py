"""Run export: the Hugging Face dataset folder, steps.csv, run.json, the zip and the command."""
from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from statistics import fmean

import pyarrow.parquet as pq
import pytest
from datasets import load_dataset
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import CommandError
from huggingface_hub import DatasetCard

from tests.curation.factories import make_pool
from tests.training.factories import (
    BARE_RECT,
    FIXED_RECT,
    GOOD,
    make_chain_rollout,
    make_chain_run,
    make_revision,
    make_run,
)
from training.export import dataset as export_module
from training.export.columns import CHAIN_COLUMN_NAMES, CHAIN_FEATURES, COLUMN_NAMES, ROLLOUT_FEATURES
from training.export.dataset import (
    ExportRefused,
    export_run,
    export_zip_name,
    write_run_zip,
)
from training.models import Rollout, RolloutTurn
from training.stats import run_thirds, thirds_from_export

pytestmark = pytest.mark.django_db

# Step 1: a failed gate (0.0), an infrastructure failure (None) and two scored rollouts;
# then rewards rise, with fewer rollouts under 0.3.
REWARDS = [
    [0.0, None, 0.25, 0.4],
    [0.2, 0.28, 0.5, 0.45],
    [0.1, 0.35, 0.55, None],
    [0.5, 0.6, 0.62, 0.29],
    [0.7, 0.66, 0.58, 0.64],
    [0.72, 0.8, 0.69, 0.75],
]


@pytest.fixture
def run(curator):
    return make_run(make_pool(curator), steps=len(REWARDS), generations=4, rewards=REWARDS)


def rows_by_slot(folder: Path, tmp_path: Path) -> dict[tuple[int, int], dict]:
    data = load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "hf-cache"))
    return {(row["step"], row["position_in_group"]): row for row in data}


def call(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_writes_a_dataset_folder_that_datasets_loads_with_every_column(run, tmp_path):
    result = export_run(run=run, out_dir=tmp_path / "export")
    assert result.rows == 24 and result.steps == 6 and result.missing_images == 0
    assert result.files == (
        "data/train-00000-of-00001.parquet", "steps.csv", "README.md", "run.json",
    )
    assert sorted(p.relative_to(result.out_dir).as_posix() for p in result.out_dir.rglob("*") if p.is_file()) == sorted(result.files)
    data = load_dataset(
        "parquet", data_files=str(tmp_path / "export" / "data" / "*.parquet"), split="train",
        cache_dir=str(tmp_path / "hf-cache"),
    )
    assert tuple(data.column_names) == COLUMN_NAMES
    assert data.features == ROLLOUT_FEATURES  # the declared features, as `datasets` reads them back
    assert len(data) == 24


def test_it_decodes_paintings_to_pil_images_of_the_rendered_size(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    rows = rows_by_slot(tmp_path / "export", tmp_path)
    painting = rows[(2, 2)]["image"]
    assert painting.size == (48, 48) and painting.format == "PNG"
    assert rows[(1, 0)]["image"] is None  # a failed gate renders nothing


def test_it_keeps_infrastructure_failures_null_and_failed_gates_zero(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    rows = rows_by_slot(tmp_path / "export", tmp_path)
    failed = rows[(1, 1)]
    assert failed["reward"] is None and failed["judge"] is None
    assert failed["failure"].startswith("render: TimeoutError")
    assert failed["unavailable"] == ["render: TimeoutError: no render worker answered"]
    gate = rows[(1, 0)]
    assert gate["reward"] == 0.0 and gate["passed"] is False and gate["violations"] == ["bare_primitives"]
    assert gate["gate"] == 0.0


def test_it_copies_code_statistics_and_parts_into_their_columns(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    row = rows_by_slot(tmp_path / "export", tmp_path)[(5, 1)]
    rollout = Rollout.objects.get(run=run, step=5, position=1)
    assert row["run"] == run.pk and row["run_name"] == run.name and row["group"] == 0
    assert row["reward"] == 0.66 and row["passed"] is True
    assert row["code"] == rollout.code and row["reply"] == rollout.reply and row["prompt"] == rollout.prompt
    assert row["code_chars"] == rollout.stats["code_chars"]
    assert (row["n_shapes"], row["n_vertices"], row["n_circles"], row["n_fill_calls"], row["n_brush_calls"]) == (3, 12, 2, 4, 31)
    assert row["brush_methods_used"] == [
        "beginShape", "circle", "endShape", "fill", "fillBleed", "fillTexture", "noFill", "noStroke", "scaleBrushes", "vertex"]
    assert (row["gate"], row["length"], row["judge"], row["quality"]) == (1.0, 0.2, rollout.parts["judge"], 0.5)
    assert row["paint_fraction"] == 0.2 and row["render_ms"] == 900.0
    assert row["reference_ids"] == rollout.reference_ids and len(row["reference_ids"]) == 4
    assert json.loads(row["judge_detail"]) == rollout.judge_detail
    assert row["rollout_id"] == rollout.pk


def test_it_computes_group_means_over_the_rollouts_that_have_a_value(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    rows = rows_by_slot(tmp_path / "export", tmp_path)
    first = rows[(1, 3)]
    assert first["group_mean_reward"] == pytest.approx(fmean([0.0, 0.25, 0.4]))  # None left out
    judges = [Rollout.objects.get(run=run, step=1, position=p).parts["judge"] for p in (2, 3)]
    assert first["group_mean_judge"] == pytest.approx(fmean(judges))  # failed gate and failure left out
    assert first["group_mean_gate"] == pytest.approx(0.75)  # the infrastructure failure passed the gate
    assert first["group_mean_length"] == pytest.approx(0.2)
    assert all(rows[(1, p)]["group_mean_reward"] == first["group_mean_reward"] for p in range(4))
    assert rows[(3, 0)]["group_mean_reward"] == pytest.approx(fmean([0.1, 0.35, 0.55]))


def test_it_writes_one_steps_csv_row_per_step_with_every_metric_as_a_sorted_column(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    with open(tmp_path / "export" / "steps.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    header = list(table[0])
    assert header[:3] == ["step", "reward_mean", "reward_std"]
    # TRL's own "reward_std" metric would collide with the column of the same name.
    assert header[3:] == sorted(header[3:]) and "metrics/reward_std" in header
    assert {"reward", "loss", "kl", "ours/gate_pass_rate", "ours/low_count"} <= set(header)
    assert [int(row["step"]) for row in table] == [1, 2, 3, 4, 5, 6]
    assert float(table[0]["reward_mean"]) == pytest.approx(fmean([0.0, 0.25, 0.4]))
    assert float(table[3]["ours/low_count"]) == 1.0


def test_it_writes_steps_csv_that_the_card_tells_datasets_to_load(run, tmp_path):
    export_run(run=run, out_dir=tmp_path / "export")
    steps = load_dataset(
        "csv", data_files=str(tmp_path / "export" / "steps.csv"), split="train", cache_dir=str(tmp_path / "hf-cache")
    )
    assert steps["step"] == [1, 2, 3, 4, 5, 6]
    assert steps["ours/gate_pass_rate"][0] == 0.5


def test_it_recomputes_the_same_thirds_from_the_exported_files(run, tmp_path):
    result = export_run(run=run, out_dir=tmp_path / "export")
    from_database = run_thirds(run)
    assert thirds_from_export(tmp_path / "export") == from_database == result.thirds
    # 0.0, 0.25 | 0.2, 0.28 | 0.1 in the first third (steps 1-2); 0.29 in the middle; none last.
    assert (from_database.first_low, from_database.middle_low, from_database.last_low) == (4, 2, 0)
    assert from_database.last_mean > from_database.first_mean and from_database.t_stat > 0


def test_it_counts_low_rollouts_from_the_database_in_two_queries(run, django_assert_num_queries):
    with django_assert_num_queries(2):
        run_thirds(run)


def test_it_describes_the_run_in_run_json_and_the_dataset_card(run, tmp_path):
    result = export_run(run=run, out_dir=tmp_path / "export")
    document = json.loads((tmp_path / "export" / "run.json").read_text())
    assert document["format"] == "paintapp-run" and document["run_id"] == run.pk
    assert document["name"] == run.name and document["pool"]["label"] == run.pool.label
    assert document["base_model"] == run.base_model and document["recipe_name"] == "studio-judge-led"
    assert document["hyperparameters"] == run.hyperparameters and document["seed"] == run.seed
    assert document["status"] == "finished" and document["eval_result"] is None
    assert document["rows"] == 24 and document["files"] == list(result.files)
    assert document["thirds"] == result.thirds.to_dict()
    card = (tmp_path / "export" / "README.md").read_text()
    assert card.startswith("---\n") and "path: data/train-*.parquet" in card
    assert "| mean group reward |" in card and "`group_mean_judge`" in card
    for setting in ("per_device_train_batch_size=1", "gradient_accumulation_steps=4", "loss_type=dapo",
                    "mask_truncated_completions=False", "lora_dropout=0.0", "generation=generate"):
        assert f"`{setting}`" in card, setting  # the training settings, published layout included
    data = DatasetCard.load(tmp_path / "export" / "README.md").data
    assert data.pretty_name == f"{run.name} (run {run.pk}) rollouts" and data.size_categories == ["n<1K"]
    assert data.license == "unknown" and "reinforcement-learning" in data.task_categories
    assert data.configs == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*.parquet"}]}]


def test_a_single_turn_runs_rows_are_turn_1_and_it_writes_no_chain(run, tmp_path):
    result = export_run(run=run, out_dir=tmp_path / "export")
    rows = rows_by_slot(tmp_path / "export", tmp_path)
    assert {row["turn"] for row in rows.values()} == {1}
    assert result.chain_rows == 0 and not (tmp_path / "export" / "chain").exists()
    assert json.loads((tmp_path / "export" / "run.json").read_text())["chain_rows"] == 0
    assert "Chain columns" not in (tmp_path / "export" / "README.md").read_text()


@pytest.fixture
def chain_run(curator):
    """Two 2-turn rollouts (weight 0.5): a gate failure fixed, and a painting revised for worse."""
    run = make_chain_run(make_pool(curator), turns=2, weight=0.5)
    make_chain_rollout(run, [BARE_RECT, FIXED_RECT], [0.0, 0.4], position=0)
    make_chain_rollout(run, [GOOD, FIXED_RECT], [0.6, 0.2], position=1)
    return run


def test_a_multi_turn_run_exports_its_last_turns_as_rollouts_and_every_turn_as_the_chain(chain_run, tmp_path):
    make_chain_rollout(chain_run, [GOOD, GOOD], [0.5, 0.5], position=2, kept=True)  # and a KEEP
    result = export_run(run=chain_run, out_dir=tmp_path / "export")
    folder = tmp_path / "export"
    assert result.rows == 3 and result.chain_rows == 6 and "chain/train-00000-of-00001.parquet" in result.files
    rollouts = load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert [(r["position_in_group"], r["turn"], r["reward"]) for r in rollouts] == [
        (0, 2, pytest.approx(0.6)), (1, 2, pytest.approx(0.0)), (2, 2, pytest.approx(0.5))]  # 0.4 + 0.5 × 0.4; ...
    chain = load_dataset(str(folder), "chain", split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert tuple(chain.column_names) == CHAIN_COLUMN_NAMES and chain.features == CHAIN_FEATURES
    assert [(r["position_in_group"], r["turn"], r["turns"], r["reward"], r["kept"]) for r in chain] == [
        (0, 1, 2, 0.0, False), (0, 2, 2, 0.4, False), (1, 1, 2, 0.6, False), (1, 2, 2, 0.2, False),
        (2, 1, 2, 0.5, False), (2, 2, 2, 0.5, True)]
    assert chain[5]["reply"] == "KEEP" and chain[5]["code"] == chain[4]["code"] == GOOD
    fixed_first, fixed_last = chain[0], chain[1]
    # The refused first sketch: no painting, the gate's codes, the feedback the model was given.
    assert fixed_first["image"] is None and fixed_first["violations"] == ["bare_primitives"]
    assert fixed_first["code"] == BARE_RECT and not fixed_first["passed"]
    stored = RolloutTurn.objects.get(rollout__run=chain_run, rollout__position=0, turn=1)
    assert fixed_first["feedback"] == stored.feedback and "line 5:3" in fixed_first["feedback"]
    assert fixed_last["image"].size == (48, 48) and fixed_last["feedback"] == "" and fixed_last["passed"]
    assert fixed_last["rollout_reward"] == pytest.approx(0.6) and fixed_last["rollout_id"] == rollouts[0]["rollout_id"]
    assert json.loads(fixed_last["judge_detail"])["score"] == fixed_last["judge"]


def test_a_multi_turn_runs_card_declares_the_chain_config_and_documents_its_columns(chain_run, tmp_path):
    export_run(run=chain_run, out_dir=tmp_path / "export")
    assert json.loads((tmp_path / "export" / "run.json").read_text())["chain_rows"] == 4
    card = (tmp_path / "export" / "README.md").read_text()
    data = DatasetCard.load(tmp_path / "export" / "README.md").data
    assert data.configs == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*.parquet"}]},
        {"config_name": "chain", "data_files": [{"split": "train", "path": "chain/train-*.parquet"}]},
    ]
    assert "## Chain columns" in card and "`feedback`: the user message" in card and "`turn`: the turn" in card
    assert 'load_dataset("path/to/this/folder", "chain", split="train")' in card
    assert "revision turns: up to 2 sketches a rollout (4 turns in all), weight on improvement 0.5" in card


def test_it_shards_the_chain_and_keeps_its_turns_in_order(chain_run, tmp_path, monkeypatch):
    monkeypatch.setattr(export_module, "SHARD_ROWS", 3)
    result = export_run(run=chain_run, out_dir=tmp_path / "export")
    assert [name for name in result.files if name.startswith("chain/")] == [
        "chain/train-00000-of-00002.parquet", "chain/train-00001-of-00002.parquet"]
    chain = load_dataset(str(tmp_path / "export"), "chain", split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert [(r["position_in_group"], r["turn"]) for r in chain.select_columns(["position_in_group", "turn"])] == [
        (0, 1), (0, 2), (1, 1), (1, 2)]


def test_it_exports_the_curators_revisions_with_their_paintings_beside_the_rollouts(run, curator, tmp_path):
    rollout = Rollout.objects.get(run=run, step=2, position=2)
    revisions = [make_revision(rollout, curator, reward=0.8), make_revision(rollout, curator, reward=0.3)]
    revisions[1].png = ""
    revisions[1].save(update_fields=["png"])
    result = export_run(run=run, out_dir=tmp_path / "export")
    folder = tmp_path / "export"
    lines = [json.loads(line) for line in (folder / "revisions.jsonl").read_text().splitlines()]
    assert [(r["revision_id"], r["rollout_id"], r["step"], r["position_in_group"]) for r in lines] == [
        (revision.pk, rollout.pk, 2, 2) for revision in revisions]
    first = lines[0]
    assert (first["curator"], first["reward"], first["code"]) == ("ada", 0.8, revisions[0].code)
    assert (first["author"], first["parent_revision_id"], first["reply"]) == ("curator", None, "")
    with default_storage.open(revisions[0].png, "rb") as handle:
        assert (folder / first["image"]).read_bytes() == handle.read()
    assert lines[1]["image"] is None
    document = json.loads((folder / "run.json").read_text())
    assert document["revisions"] == 2 and {"revisions.jsonl", first["image"]} <= set(result.files)
    assert "`revisions.jsonl`: 2 curators' revisions" in (folder / "README.md").read_text()
    assert len(load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "hf-cache"))) == 24


def test_it_shards_rows_and_keeps_their_order(run, tmp_path, monkeypatch):
    monkeypatch.setattr(export_module, "SHARD_ROWS", 10)
    monkeypatch.setattr(export_module, "BATCH_ROWS", 3)
    result = export_run(run=run, out_dir=tmp_path / "export")
    assert [p.name for p in result.shards] == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    data = load_dataset(str(tmp_path / "export"), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert [(r["step"], r["position_in_group"]) for r in data.select_columns(["step", "position_in_group"])] == [
        (s, p) for s in range(1, 7) for p in range(4)
    ]


def test_it_exports_a_run_without_rollouts_as_one_empty_shard(curator, tmp_path):
    empty = make_run(make_pool(curator), steps=1, status="queued")
    empty.rollouts.all().delete()
    empty.steps.all().delete()
    result = export_run(run=empty, out_dir=tmp_path / "export")
    assert result.rows == 0 and len(result.shards) == 1
    assert result.thirds.reason == "no step has a mean reward yet"
    table = pq.read_table(result.shards[0])
    assert table.num_rows == 0 and tuple(table.column_names) == COLUMN_NAMES
    assert json.loads((tmp_path / "export" / "run.json").read_text())["status"] == "queued"


def test_it_leaves_the_image_empty_and_counts_a_painting_missing_from_storage(run, tmp_path):
    lost = Rollout.objects.get(run=run, step=2, position=1)
    default_storage.delete(lost.png)
    result = export_run(run=run, out_dir=tmp_path / "export")
    assert result.missing_images == 1
    assert rows_by_slot(tmp_path / "export", tmp_path)[(2, 1)]["image"] is None


def test_it_replaces_a_previous_export_of_the_same_run_and_keeps_other_files(run, tmp_path, monkeypatch):
    folder = tmp_path / "export"
    monkeypatch.setattr(export_module, "SHARD_ROWS", 10)
    export_run(run=run, out_dir=folder)
    (folder / "notes.txt").write_text("my notes")
    monkeypatch.setattr(export_module, "SHARD_ROWS", 500)
    result = export_run(run=run, out_dir=folder)
    assert sorted(p.name for p in (folder / "data").iterdir()) == ["train-00000-of-00001.parquet"]
    assert (folder / "notes.txt").read_text() == "my notes"
    assert len(load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "hf-cache"))) == result.rows == 24
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export.partial")]


def test_it_refuses_a_folder_holding_someone_elses_files_and_touches_nothing(run, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "holiday.jpg").write_bytes(b"not ours")
    with pytest.raises(ExportRefused, match="not an export of this run"):
        export_run(run=run, out_dir=folder)
    assert [p.name for p in folder.iterdir()] == ["holiday.jpg"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".photos")]  # no staging left behind


def test_it_refuses_a_folder_holding_the_export_of_another_run(run, curator, tmp_path):
    other = make_run(run.pool, steps=3, name="hps-led test run")
    export_run(run=other, out_dir=tmp_path / "export")
    with pytest.raises(ExportRefused, match=f"an export of run {other.pk}"):
        export_run(run=run, out_dir=tmp_path / "export")
    assert json.loads((tmp_path / "export" / "run.json").read_text())["run_id"] == other.pk


def test_it_writes_into_an_existing_empty_folder(run, tmp_path):
    (tmp_path / "export").mkdir()
    assert export_run(run=run, out_dir=tmp_path / "export").rows == 24


def test_it_zips_the_export_under_one_top_folder(run, tmp_path):
    with open(tmp_path / "export.zip", "wb") as out:
        result = write_run_zip(run=run, fileobj=out)
    top = export_zip_name(run).removesuffix(".zip")
    assert top == f"judge-led-test-run-run{run.pk}" and result.rows == 24
    with zipfile.ZipFile(tmp_path / "export.zip") as archive:
        assert sorted(archive.namelist()) == sorted(f"{top}/{name}" for name in (
            "data/train-00000-of-00001.parquet", "steps.csv", "README.md", "run.json"))
        archive.extractall(tmp_path / "unzipped")
    assert thirds_from_export(tmp_path / "unzipped" / top) == run_thirds(run)
    assert not result.out_dir.exists()  # the folder it zipped was temporary


# --- The command ----------------------------------------------------------------------------

def test_the_command_prints_the_rows_shards_size_and_thirds(run, tmp_path):
    out = call("export_run", str(run.pk), str(tmp_path / "export"))
    thirds = run_thirds(run)
    lines = out.splitlines()
    assert lines[0] == f"Exported run {run.pk} ({run.name}) to {tmp_path / 'export'}"
    assert lines[1].startswith("  24 rollouts in 1 shard, 6 steps, ") and lines[1].endswith("KB")
    assert f"{thirds.first_mean:.3f} → {thirds.middle_mean:.3f} → {thirds.last_mean:.3f}" in lines[2]
    assert "(steps 1-2, 3-4, 5-6)" in lines[2]
    assert f"t {thirds.t_stat:.2f}" in lines[3]
    assert lines[4] == "  rollouts under 0.3: 4 → 0 (first → last third)"


def test_the_command_counts_the_turns_of_a_multi_turn_runs_chains(chain_run, tmp_path):
    out = call("export_run", str(chain_run.pk), str(tmp_path / "export"))
    assert out.splitlines()[1].startswith("  2 rollouts in 1 shard, 4 turns of their chains, 0 steps, ")


def test_the_command_says_why_a_short_run_has_no_thirds(curator, tmp_path):
    short = make_run(make_pool(curator), steps=2)
    out = call("export_run", str(short.pk), str(tmp_path / "export"))
    assert "thirds: none (only 2 steps with a mean reward; thirds and a trend need at least 3)" in out


def test_the_command_refuses_an_unknown_run_with_exit_code_2(db, tmp_path):
    with pytest.raises(CommandError, match="no run 999999") as error:
        call("export_run", "999999", str(tmp_path / "export"))
    assert error.value.returncode == 2
    assert not (tmp_path / "export").exists()


def test_the_command_refuses_a_directory_that_is_a_file(run, tmp_path):
    target = tmp_path / "export.txt"
    target.write_text("a file")
    with pytest.raises(CommandError, match="is a file, not a folder") as error:
        call("export_run", str(run.pk), str(target))
    assert error.value.returncode == 2 and target.read_text() == "a file"


def test_the_command_replaces_an_earlier_export_only_with_overwrite(run, tmp_path):
    call("export_run", str(run.pk), str(tmp_path / "export"))
    with pytest.raises(CommandError, match="already holds an export of run .*--overwrite") as error:
        call("export_run", str(run.pk), str(tmp_path / "export"))
    assert error.value.returncode == 2
    assert "Exported run" in call("export_run", str(run.pk), str(tmp_path / "export"), "--overwrite")


def test_the_command_refuses_a_foreign_folder_even_with_overwrite(run, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("\\begin{document}")
    with pytest.raises(CommandError, match="not an export of this run") as error:
        call("export_run", str(run.pk), str(tmp_path / "mine"), "--overwrite")
    assert error.value.returncode == 2 and (tmp_path / "mine" / "thesis.tex").exists()
