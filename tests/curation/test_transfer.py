"""Importing folders, zips and uploads; exporting pools; restoring a pool from its export."""
from __future__ import annotations

import hashlib
import io
import json
import stat
import zipfile
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from django.core.files.storage import default_storage
from huggingface_hub import DatasetCard
from PIL import Image

from curation.archive import ImportLimits
from curation.errors import CurationError
from curation.export import export_pool, write_pool_zip
from curation.importing import import_path, import_uploads
from curation.models import Grade, GradeEvent, Pool, Reference
from curation.selectors import pool_balance
from curation.services import grade_set, pool_freeze, pool_restore, reference_create
from tests.curation.factories import png_bytes, zip_of

pytestmark = pytest.mark.django_db

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.circle(300, 300, 80, 0.4);\n}\n"


@pytest.fixture
def media_root(settings):
    """tests/conftest.py gives every test its own MEDIA_ROOT (and a fast password hasher)."""
    return settings.MEDIA_ROOT


def jpeg_bytes(colour=(200, 60, 90), size=48) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(out, format="JPEG", quality=92)
    return out.getvalue()


def write_files(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root



def jsonl(*rows: dict) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def statuses(report) -> dict[str, tuple[str, str]]:
    return {row.name: (row.status, row.code) for row in report.rows}


# --- Folders, zips, uploads -----------------------------------------------------------------

def test_a_folder_with_sketches_metadata_and_grades_becomes_graded_references(curator, tmp_path):
    folder = write_files(tmp_path / "batch", {
        "hibiscus.png": png_bytes(),
        "hibiscus.js": SKETCH,
        "rose.jpg": jpeg_bytes(),
        "sub/iris.png": png_bytes(),
        "metadata.jsonl": jsonl(
            {"file_name": "hibiscus.png", "tier": "love", "seed": 42, "subject": "a peach hibiscus",
             "provenance": "seed-generator", "prompt_id": 7},
            {"file_name": "sub/iris.png", "subject": "an iris"},
        ),
        "grades.csv": "file_name,tier\nrose.jpg,okay\nsub/iris.png,reject\n",
    })
    report = import_path(folder, curator=curator, subject="a flower")

    assert (report.created, report.duplicates, report.graded, report.rejected) == (3, 0, 3, 0)
    hibiscus = Reference.objects.get(original_name="hibiscus.png")
    assert (hibiscus.source, hibiscus.seed, hibiscus.subject, hibiscus.provenance) == (
        SKETCH, 42, "a peach hibiscus", "seed-generator")
    assert hibiscus.metadata["prompt_id"] == 7
    assert Reference.objects.get(original_name="rose.jpg").subject == "a flower"  # the default subject
    assert Reference.objects.get(original_name="rose.jpg").provenance == "import"
    grades = dict(Grade.objects.filter(curator=curator).values_list("reference__original_name", "tier"))
    assert grades == {"hibiscus.png": "love", "rose.jpg": "okay", "iris.png": "reject"}
    assert set(GradeEvent.objects.values_list("source", flat=True)) == {"import"}
    assert all(default_storage.exists(reference.image) for reference in Reference.objects.all())
    assert "3 imported" in report.summary()


def test_a_zip_imports_like_a_folder_even_inside_a_top_level_folder(curator, tmp_path):
    archive = tmp_path / "batch.zip"
    archive.write_bytes(zip_of({
        "batch/a.png": png_bytes(), "batch/a.js": SKETCH, "batch/b.png": png_bytes(),
        "batch/grades.csv": "file_name,tier\na.png,love\nb.png,okay\n",
        "__MACOSX/batch/._a.png": b"resource fork", "batch/.DS_Store": b"finder",
    }))
    report = import_path(archive, curator=curator)
    assert (report.created, report.graded, report.rejected) == (2, 2, 0)
    # System files are listed (once per system folder), never read.
    assert {name: row for name, row in statuses(report).items() if row[0] == "skipped"} == {
        "__MACOSX/": ("skipped", "system_file"), "batch/.DS_Store": ("skipped", "system_file"),
    }
    assert Reference.objects.get(original_name="a.png").source == SKETCH


def test_the_same_image_twice_is_stored_once_and_its_grade_still_applies(curator, tmp_path):
    same = png_bytes()
    first = import_path(write_files(tmp_path / "one", {"a.png": same}), curator=curator)
    # Same pixels as a JPEG-free re-encode, a copy under another name, and a tier for it.
    again = write_files(tmp_path / "two", {
        "copy.png": same, "copy-again.png": same, "new.png": png_bytes(),
        "grades.csv": "file_name,tier\ncopy.png,love\n",
    })
    report = import_path(again, curator=curator)
    assert statuses(report) == {
        "copy-again.png": ("duplicate", "duplicate"), "copy.png": ("duplicate", "duplicate"), "new.png": ("created", ""),
    }
    original_id = first.rows[0].reference_id
    assert {row.reference_id for row in report.rows if row.status == "duplicate"} == {original_id}
    assert Reference.objects.count() == 2
    assert Grade.objects.get(reference_id=original_id, curator=curator).tier == "love"
    assert (report.duplicates, report.graded) == (2, 1)


def test_a_bad_file_among_good_ones_is_reported_and_the_good_ones_are_stored(curator, tmp_path):
    truncated = png_bytes(size=64)
    folder = write_files(tmp_path / "mixed", {
        "good.png": png_bytes(), "also-good.jpg": jpeg_bytes(),
        "notes.png": "not a picture", "cut.png": truncated[: len(truncated) // 2], "tiny.png": png_bytes(size=8),
        "lonely.js": SKETCH, "readme.pdf": b"%PDF-1.4",
        "grades.csv": "file_name,tier\nnotes.png,love\ngood.png,spectacular\nalso-good.jpg,okay\n",
    })
    report = import_path(folder, curator=curator)
    assert statuses(report) == {
        "also-good.jpg": ("created", ""),
        "good.png": ("rejected", "bad_metadata"),
        "notes.png": ("rejected", "not_an_image"),
        "cut.png": ("rejected", "truncated"),
        "tiny.png": ("rejected", "too_small"),
        "lonely.js": ("skipped", "orphan_sketch"),
        "readme.pdf": ("skipped", "unsupported_file"),
    }
    assert list(Reference.objects.values_list("original_name", flat=True)) == ["also-good.jpg"]
    assert Grade.objects.count() == 1
    assert "spectacular" in next(r.message for r in report.rows if r.name == "good.png")


def test_an_image_listed_in_the_metadata_but_missing_is_reported(curator, tmp_path):
    folder = write_files(tmp_path / "f", {"a.png": png_bytes(), "metadata.jsonl": jsonl({"file_name": "gone.png"})})
    report = import_path(folder, curator=curator)
    assert statuses(report)["gone.png"] == ("rejected", "missing_file")
    assert report.created == 1


@pytest.mark.parametrize("counts", [{"graders": 2, "agreed": 3}, {"graders": 0, "agreed": 0},
                                    {"graders": "3", "agreed": 1}, {"graders": True}, {"agreed": -1}])
def test_a_members_impossible_grader_counts_reject_that_image(curator, tmp_path, counts):
    folder = write_files(tmp_path / "f", {"a.png": png_bytes(), "b.png": png_bytes(),
                                          "metadata.jsonl": jsonl({"file_name": "a.png", "tier": "love", **counts})})
    report = import_path(folder, curator=curator)
    assert statuses(report) == {"a.png": ("rejected", "bad_metadata"), "b.png": ("created", "")}
    assert Reference.objects.count() == 1 and Grade.objects.count() == 0


def test_metadata_that_is_not_json_refuses_the_whole_import(curator, tmp_path):
    folder = write_files(tmp_path / "f", {"a.png": png_bytes(), "metadata.jsonl": '{"file_name": "a.png"\n'})
    report = import_path(folder, curator=curator)
    assert report.refused and report.rows[-1].code == "bad_metadata"
    assert "line 1" in report.rows[-1].message
    assert Reference.objects.count() == 0


def test_a_sidecar_that_contradicts_the_metadata_source_rejects_the_image(curator, tmp_path):
    folder = write_files(tmp_path / "f", {
        "a.png": png_bytes(), "a.js": SKETCH, "metadata.jsonl": jsonl({"file_name": "a.png", "source": "other();"}),
    })
    assert statuses(import_path(folder, curator=curator))["a.png"] == ("rejected", "conflicting_metadata")


@pytest.mark.skipif(not hasattr(Path, "symlink_to"), reason="needs symlinks")
def test_a_symlink_inside_a_folder_is_never_followed(curator, tmp_path):
    secret = write_files(tmp_path / "elsewhere", {"secret.png": png_bytes()}) / "secret.png"
    folder = write_files(tmp_path / "f", {"a.png": png_bytes()})
    (folder / "link.png").symlink_to(secret)
    (folder / "linked-dir").symlink_to(secret.parent, target_is_directory=True)
    report = import_path(folder, curator=curator)
    assert statuses(report) == {
        "a.png": ("created", ""), "link.png": ("rejected", "symlink"), "linked-dir": ("rejected", "symlink"),
    }


@pytest.mark.parametrize("evil_name", ["../evil.png", "/etc/evil.png", "images/../../evil.png", "C:/evil.png"])
def test_a_zip_with_a_name_outside_the_archive_is_refused_whole(curator, tmp_path, evil_name):
    archive = tmp_path / "evil.zip"
    archive.write_bytes(zip_of({"good.png": png_bytes(), evil_name: png_bytes()}))
    assert evil_name in zipfile.ZipFile(archive).namelist()  # the hostile name really is in the archive
    report = import_path(archive, curator=curator)
    assert report.refused
    assert statuses(report) == {"evil.zip": ("rejected", "unsafe_path")}
    assert Reference.objects.count() == 0


def test_a_zip_with_a_symbolic_link_is_refused(curator, tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("good.png", png_bytes())
        link = zipfile.ZipInfo("passwd.png")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    report = import_uploads([("links.zip", out.getvalue())], curator=curator)
    assert statuses(report) == {"links.zip": ("rejected", "symlink")}
    assert Reference.objects.count() == 0


def test_a_zip_bomb_is_refused_before_anything_is_extracted(curator, tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        out.writestr("fine.png", png_bytes())
        with out.open("huge.png", "w") as entry:
            for _ in range(48):
                entry.write(b"\0" * 1024 * 1024)
    assert archive.stat().st_size < 1024 * 1024
    report = import_path(archive, curator=curator)
    assert report.refused
    assert statuses(report) == {"bomb.zip": ("rejected", "zip_bomb")}
    assert Reference.objects.count() == 0


def test_a_zip_with_too_many_entries_is_refused(curator, tmp_path):
    archive = tmp_path / "many.zip"
    archive.write_bytes(zip_of({f"{i}.png": png_bytes() for i in range(6)}))
    report = import_path(archive, curator=curator, limits=ImportLimits(max_entries=5))
    assert statuses(report) == {"many.zip": ("rejected", "too_many_entries")}


def test_a_file_that_is_not_a_zip_is_reported(curator, tmp_path):
    fake = tmp_path / "fake.zip"
    fake.write_text("no zip here")
    report = import_path(fake, curator=curator)
    assert statuses(report) == {"fake.zip": ("rejected", "not_a_zip")}


def test_uploads_take_loose_images_with_sidecars_and_zips_together(curator):
    report = import_uploads(
        [("C:\\Users\\ada\\a.png", png_bytes()), ("a.js", SKETCH.encode()), ("broken.png", b"nope"),
         ("more.zip", zip_of({"b.png": png_bytes(), "grades.csv": "file_name,tier\nb.png,love\n"}))],
        curator=curator,
    )
    assert statuses(report) == {
        "more.zip:b.png": ("created", ""), "a.png": ("created", ""), "broken.png": ("rejected", "not_an_image"),
    }
    assert Reference.objects.get(original_name="a.png").source == SKETCH
    assert set(Reference.objects.values_list("provenance", flat=True)) == {"upload"}
    assert report.graded == 1


def test_progress_is_reported_once_per_image(curator, tmp_path):
    folder = write_files(tmp_path / "f", {f"{i}.png": png_bytes() for i in range(3)} | {"x.js": SKETCH})
    calls = []
    import_path(folder, curator=curator, progress=lambda done, total, name: calls.append((done, total, name)))
    assert calls == [(1, 3, "0.png"), (2, 3, "1.png"), (3, 3, "2.png")]


def test_an_unknown_provenance_is_a_usage_error(curator, tmp_path):
    with pytest.raises(CurationError, match="provenance"):
        import_path(tmp_path, curator=curator, provenance="stolen")


def test_nothing_is_half_stored_when_the_storage_fails_mid_import(curator, tmp_path, settings):
    folder = write_files(tmp_path / "f", {
        "0.png": png_bytes(), "1.png": png_bytes(), "2.png": png_bytes(),
        "grades.csv": "file_name,tier\n0.png,love\n1.png,love\n2.png,okay\n",
    })
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("MEDIA_ROOT below this file cannot be created")

    def break_storage_after_the_first(done, total, name):
        if done == 1:
            settings.MEDIA_ROOT = blocker / "media"  # a real OSError on the next write

    report = import_path(folder, curator=curator, progress=break_storage_after_the_first)
    assert statuses(report) == {
        "0.png": ("created", ""), "1.png": ("rejected", "storage_failed"), "2.png": ("rejected", "storage_failed"),
    }
    assert "could not be stored" in report.rows[1].message
    assert Reference.objects.count() == 1 and Grade.objects.count() == 1
    settings.MEDIA_ROOT = tmp_path / "media"
    assert default_storage.exists(Reference.objects.get().image)


# --- Export and restore ---------------------------------------------------------------------

@pytest.fixture
def hibiscus_pool(curator):
    """Twelve graded references with sources and seeds, frozen with a stratified eval split."""
    for i in range(14):
        reference, _ = reference_create(
            png=png_bytes(), width=32, height=32, provenance="seed-generator" if i % 2 else "upload",
            source=SKETCH.replace("80", str(40 + i)) if i % 3 else "", seed=1000 + i if i % 3 else None,
            subject="a peach hibiscus" if i % 2 else "a rose", original_name=f"ref-{i}.png",
        )
        grade_set(reference=reference, curator=curator, tier=("love", "okay", "okay", "reject")[i % 4] if i < 12 else None)
    return pool_freeze(name="hibiscus", curator=curator, tiers=["love", "okay"], eval_share=0.25, seed=3)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def member_rows(pool: Pool) -> set[tuple]:
    return set(pool.members.values_list(
        "reference__sha256", "tier", "split", "reference__source", "reference__seed", "reference__subject",
        "reference__provenance", "reference__original_name",
    ))


def test_an_export_is_an_imagefolder_with_parquet_and_pool_json(hibiscus_pool, tmp_path):
    out = export_pool(hibiscus_pool, tmp_path / "export")
    rows = read_jsonl(out / "metadata.jsonl")
    assert len(rows) == hibiscus_pool.members.count() == 9
    assert list(rows[0]) == ["file_name", "sha256", "tier", "split", "subject", "source", "seed", "provenance",
                             "original_name", "graders", "agreed"]
    assert {(row["graders"], row["agreed"]) for row in rows} == {(1, 1)}  # one curator's pool
    assert [row["sha256"] for row in rows] == sorted(row["sha256"] for row in rows)
    for row in rows:
        image = out / row["file_name"]
        assert row["file_name"] == f"images/{row['sha256']}.png"
        assert hashlib.sha256(image.read_bytes()).hexdigest() == row["sha256"]
    assert {(r["tier"], r["split"]) for r in rows} == {("love", "train"), ("love", "eval"), ("okay", "train"), ("okay", "eval")}

    document = json.loads((out / "pool.json").read_text())
    assert document["format"] == "paintapp-pool" and document["format_version"] == 2
    assert (document["name"], document["version"], document["label"]) == ("hibiscus", 1, "hibiscus:v1")
    assert (document["curator"], document["tiers"], document["eval_share"], document["split_seed"]) == (
        "ada", ["love", "okay"], 0.25, 3)
    assert document["member_count"] == 9 and document["created_at"]

    table = pq.read_table(out / "pool.parquet")
    assert table.column_names == [*rows[0], "image"]
    parquet_rows = table.to_pylist()
    assert [{k: v for k, v in r.items() if k != "image"} for r in parquet_rows] == rows
    assert all(r["image"] == {"bytes": (out / r["file_name"]).read_bytes(), "path": r["file_name"]} for r in parquet_rows)
    assert not list(tmp_path.glob(".export.partial-*"))


def test_the_export_loads_in_hugging_face_datasets_with_decoded_images(hibiscus_pool, tmp_path):
    out = export_pool(hibiscus_pool, tmp_path / "export")
    dataset = datasets.Dataset.from_parquet(str(out / "pool.parquet"), cache_dir=str(tmp_path / "hf-cache"))
    assert len(dataset) == 9
    assert dataset[0]["image"].size == (32, 32)
    folder = datasets.load_dataset("imagefolder", data_dir=str(out), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(folder["sha256"]) == sorted(r["sha256"] for r in read_jsonl(out / "metadata.jsonl"))


def test_the_export_has_a_dataset_card_whose_config_loads_the_parquet(hibiscus_pool, tmp_path, settings):
    settings.DATASET_LICENSE = "cc-by-4.0"
    out = export_pool(hibiscus_pool, tmp_path / "export")
    card = DatasetCard.load(out / "README.md")
    assert (card.data.license, card.data.size_categories, card.data.pretty_name) == (
        "cc-by-4.0", ["n<1K"], "hibiscus:v1 watercolour reference pool")
    assert card.data.configs == [{"config_name": "default", "data_files": [{"split": "train", "path": "pool.parquet"}]}]
    assert "- members: 9 (love 3, okay 6)" in card.text and "- `split`: `train`" in card.text
    dataset = datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(dataset["sha256"]) == sorted(r["sha256"] for r in read_jsonl(out / "metadata.jsonl"))
    assert dataset.features["image"] == datasets.Image() and dataset[0]["image"].size == (32, 32)


def test_export_refuses_a_folder_that_is_not_empty(hibiscus_pool, tmp_path):
    write_files(tmp_path / "busy", {"keep.txt": "mine"})
    with pytest.raises(CurationError, match="not an empty folder"):
        export_pool(hibiscus_pool, tmp_path / "busy")


def test_export_stops_when_a_stored_image_no_longer_matches_its_sha256(hibiscus_pool, tmp_path, media_root):
    victim = hibiscus_pool.members.first().reference
    (Path(media_root) / victim.image).write_bytes(png_bytes())
    with pytest.raises(CurationError, match="does not match"):
        export_pool(hibiscus_pool, tmp_path / "export")
    assert not (tmp_path / "export").exists()


def test_importing_an_export_restores_the_pool_as_the_next_version(hibiscus_pool, tmp_path, django_user_model):
    out = export_pool(hibiscus_pool, tmp_path / "export")
    grace = django_user_model.objects.create_user(username="grace", password="x")
    report = import_path(out, curator=grace, provenance="import")

    assert (report.created, report.duplicates, report.graded, report.rejected) == (0, 9, 9, 0)
    restored = Pool.objects.get(name="hibiscus", version=2)
    assert report.pool == "hibiscus:v2"
    assert (restored.curator, restored.tiers, restored.eval_share, restored.split_seed) == (grace, ["love", "okay"], 0.25, 3)
    assert member_rows(restored) == member_rows(hibiscus_pool)
    assert pool_balance(restored) == pool_balance(hibiscus_pool)
    assert dict(Grade.objects.filter(curator=grace).values_list("reference_id", "tier")) == dict(
        hibiscus_pool.members.values_list("reference_id", "tier"))

    again = import_path(out, curator=grace)
    assert again.pool == "hibiscus:v2"  # the same export twice does not pile up versions
    assert Pool.objects.filter(name="hibiscus").count() == 2


def test_an_export_of_format_1_without_grader_counts_still_restores_its_pool(hibiscus_pool, tmp_path, django_user_model):
    out = export_pool(hibiscus_pool, tmp_path / "export")
    document = json.loads((out / "pool.json").read_text())
    del document["graders"], document["consensus"]
    (out / "pool.json").write_text(json.dumps({**document, "format_version": 1}))
    rows = [{k: v for k, v in row.items() if k not in ("graders", "agreed")} for row in read_jsonl(out / "metadata.jsonl")]
    (out / "metadata.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    grace = django_user_model.objects.create_user(username="grace", password="x")
    report = import_path(out, curator=grace)
    assert report.pool == "hibiscus:v2" and report.rejected == 0
    restored = Pool.objects.get(name="hibiscus", version=2)
    assert restored.consensus == {} and set(restored.members.values_list("graders", "agreed")) == {(1, 1)}
    assert not any("graders" in r.metadata or "agreed" in r.metadata for r in Reference.objects.all())


def test_a_zipped_export_uploaded_from_the_browser_restores_the_pool(hibiscus_pool, django_user_model):
    buffer = io.BytesIO()
    write_pool_zip(hibiscus_pool, buffer)
    data = buffer.getvalue()
    assert zipfile.ZipFile(io.BytesIO(data)).getinfo("images/" + hibiscus_pool.members.first().reference.sha256 + ".png")
    grace = django_user_model.objects.create_user(username="grace", password="x")
    report = import_uploads([("hibiscus-v1.zip", data)], curator=grace)
    assert report.pool == "hibiscus:v2" and report.rejected == 0
    assert member_rows(Pool.objects.get(name="hibiscus", version=2)) == member_rows(hibiscus_pool)


def test_an_export_with_a_damaged_image_imports_the_rest_but_not_the_pool(hibiscus_pool, tmp_path, django_user_model):
    out = export_pool(hibiscus_pool, tmp_path / "export")
    damaged = out / read_jsonl(out / "metadata.jsonl")[0]["file_name"]
    damaged.write_bytes(damaged.read_bytes()[:40])
    grace = django_user_model.objects.create_user(username="grace", password="x")
    report = import_path(out, curator=grace)
    assert report.rejected == 1 and report.duplicates == 8
    assert not report.pool and "1 member(s) did not import" in report.pool_error
    assert Pool.objects.filter(name="hibiscus").count() == 1


def test_pool_restore_refuses_members_that_do_not_fit_the_pool(hibiscus_pool, curator):
    member = hibiscus_pool.members.first()
    with pytest.raises(CurationError, match="do not fit"):
        pool_restore(name="x", curator=curator, members=[(member.reference, "reject", "train")],
                     tiers=["love", "okay"], filters={}, eval_share=0.2, split_seed=0)
