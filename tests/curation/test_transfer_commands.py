"""The import_refs and export_pool commands, and the round trip into a fresh database."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError

from curation.models import Grade, Pool, Reference
from curation.services import grade_set, pool_freeze, reference_create
from tests.curation.factories import png_bytes

pytestmark = pytest.mark.django_db

SKETCH = "function setup() {\n  createCanvas(600, 600, WEBGL);\n  brush.circle(300, 300, R, 0.4);\n}\n"


@pytest.fixture
def media_root(settings):
    """tests/conftest.py gives every test its own MEDIA_ROOT (and a fast password hasher)."""
    return settings.MEDIA_ROOT


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def write_files(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def graded_pool(curator, *, name: str = "hibiscus") -> Pool:
    """Twelve references with sources and seeds, graded love/okay (two rejected, two ungraded)."""
    for i in range(16):
        reference, _ = reference_create(
            png=png_bytes(), width=32, height=32, provenance=("seed-generator", "upload", "rollout")[i % 3],
            source=SKETCH.replace("R", str(40 + i)) if i % 4 else "", seed=2026_0000 + i if i % 4 else None,
            subject="a peach hibiscus" if i % 2 else "a rose", original_name=f"hibiscus-{i:02}.png",
        )
        tier = ("love", "okay", "okay", "love", "okay", "okay", "reject")[i % 7] if i < 14 else None
        grade_set(reference=reference, curator=curator, tier=tier)
    return pool_freeze(name=name, curator=curator, tiers=["love", "okay"], eval_share=0.25, seed=11)


# --- import_refs ----------------------------------------------------------------------------

def test_import_refs_lists_each_rejected_file_and_ends_with_the_summary(curator, tmp_path):
    folder = write_files(tmp_path / "batch", {
        "a.png": png_bytes(), "b.png": png_bytes(), "broken.png": "text, not pixels",
        "grades.csv": "file_name,tier\na.png,love\n",
    })
    out, _ = run("import_refs", str(folder), "--curator", "ada", "--subject", "a poppy")
    lines = out.strip().splitlines()
    assert "rejected  broken.png" in lines[0] and "[not_an_image]" in lines[0]
    assert lines[-1] == "2 imported, 0 duplicates, 1 graded, 1 rejected"
    assert set(Reference.objects.values_list("subject", flat=True)) == {"a poppy"}
    assert Grade.objects.get(curator=curator).tier == "love"


def test_import_refs_prints_the_whole_report_as_json(curator, tmp_path):
    folder = write_files(tmp_path / "batch", {"a.png": png_bytes(), "a.js": "function setup() {}\n"})
    out, _ = run("import_refs", str(folder), "--curator", "ada", "--provenance", "seed-generator", "--json")
    report = json.loads(out)
    assert (report["created"], report["rejected"], report["pool"]) == (1, 0, None)
    assert report["rows"][0]["name"] == "a.png" and report["rows"][0]["reference_id"]
    assert Reference.objects.get().provenance == "seed-generator"


def test_import_refs_uses_the_only_staff_user_when_no_curator_is_named(curator, tmp_path):
    folder = write_files(tmp_path / "batch", {"a.png": png_bytes(), "grades.csv": "file_name,tier\na.png,okay\n"})
    run("import_refs", str(folder))
    assert Grade.objects.get().curator == curator


@pytest.mark.parametrize(
    "args, message",
    [
        (["{missing}", "--curator", "ada"], "does not exist"),
        (["{folder}", "--curator", "nobody"], "no user named 'nobody'"),
        (["{folder}"], "several staff users"),
        (["{text_file}", "--curator", "ada"], "not a folder, a .zip or an image"),
    ],
)
def test_import_refs_exits_2_on_bad_usage(curator, django_user_model, tmp_path, args, message):
    django_user_model.objects.create_user(username="grace", password="x", is_staff=True)
    paths = {"missing": tmp_path / "missing", "folder": write_files(tmp_path / "f", {"a.png": png_bytes()}),
             "text_file": write_files(tmp_path, {"notes.txt": "hello"}) / "notes.txt"}
    with pytest.raises(CommandError, match=message) as caught:
        run("import_refs", *(arg.format(**paths) for arg in args))
    assert caught.value.returncode == 2
    assert Reference.objects.count() == 0


def test_import_refs_exits_1_when_the_archive_is_refused_and_says_why(curator, tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(zipfile.ZipInfo("../evil.png"), png_bytes())
    stdout = io.StringIO()
    with pytest.raises(CommandError, match="refused") as caught:
        call_command("import_refs", str(archive), "--curator", "ada", stdout=stdout)
    assert caught.value.returncode == 1
    assert "[unsafe_path]" in stdout.getvalue()


# --- export_pool ----------------------------------------------------------------------------

def test_export_pool_writes_the_imagefolder_layout_and_says_what_it_wrote(curator, tmp_path):
    pool = graded_pool(curator)
    out, _ = run("export_pool", "hibiscus", str(tmp_path / "export"))
    assert f"Exported hibiscus:v1 ({pool.members.count()} members)" in out
    assert str(tmp_path / "export" / "pool.parquet") in out
    assert {p.name for p in (tmp_path / "export").iterdir()} == {"images", "metadata.jsonl", "pool.parquet", "pool.json", "README.md"}
    assert len(list((tmp_path / "export" / "images").iterdir())) == pool.members.count() == 12


def test_export_pool_zip_writes_one_named_archive(curator, tmp_path):
    graded_pool(curator)
    graded_pool(curator)  # v2: the label chooses v1
    out, _ = run("export_pool", "hibiscus:1", str(tmp_path / "downloads"), "--zip")
    archive = tmp_path / "downloads" / "hibiscus-v1.zip"
    assert str(archive) in out
    names = zipfile.ZipFile(archive).namelist()
    assert {"metadata.jsonl", "pool.json", "pool.parquet"} <= set(names)
    assert json.loads(zipfile.ZipFile(archive).read("pool.json"))["version"] == 1
    assert [p.name for p in archive.parent.iterdir()] == ["hibiscus-v1.zip"]  # no partial file left


@pytest.mark.parametrize("label", ["nope", "hibiscus:9", "hibiscus:vx"])
def test_export_pool_exits_2_for_an_unknown_pool(curator, tmp_path, label):
    graded_pool(curator)
    with pytest.raises(CommandError, match="no pool") as caught:
        run("export_pool", label, str(tmp_path / "export"))
    assert caught.value.returncode == 2


def test_export_pool_exits_2_rather_than_mix_into_a_folder_in_use(curator, tmp_path):
    graded_pool(curator)
    write_files(tmp_path / "export", {"mine.txt": "keep"})
    with pytest.raises(CommandError, match="not an empty folder") as caught:
        run("export_pool", "hibiscus", str(tmp_path / "export"))
    assert caught.value.returncode == 2


# --- The round trip into a fresh database (the acceptance test) ----------------------------

@pytest.fixture
def fresh_studio(tmp_path):
    """`manage.py` in a subprocess on a brand-new SQLite database and media folder."""
    home = tmp_path / "fresh"
    home.mkdir()
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="paintapp.settings",
        DATABASE_URL=f"sqlite:///{home}/fresh.sqlite3",
        MEDIA_ROOT=str(home / "media"),
        PAINTAPP_VAR_DIR=str(home),
        CELERY_BROKER_URL=f"sqla+sqlite:///{home}/b.sqlite3",
    )
    env.pop("CELERY_RESULT_BACKEND", None)

    def manage(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=django_settings.BASE_DIR, env=env,
            capture_output=True, text=True, timeout=120,
        )
        if check and result.returncode != 0:
            pytest.fail(f"manage.py {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    manage("migrate", "--verbosity", "0")
    manage("demo_curator", "--username", "grace", "--password", "round-trip-2026")
    manage.home = home
    return manage


def test_a_pool_exported_and_imported_into_a_fresh_database_is_the_same_pool(curator, tmp_path, fresh_studio):
    pool = graded_pool(curator)
    exported = tmp_path / "export"
    run("export_pool", pool.label, str(exported))

    imported = fresh_studio("import_refs", str(exported), "--curator", "grace", "--json")
    report = json.loads(imported.stdout)
    assert (report["created"], report["graded"], report["rejected"], report["pool"]) == (12, 12, 0, "hibiscus:v1")

    fresh_studio("export_pool", "hibiscus", str(tmp_path / "re-export"))
    original_rows = (exported / "metadata.jsonl").read_text().splitlines()
    round_tripped = (tmp_path / "re-export" / "metadata.jsonl").read_text().splitlines()
    assert round_tripped == original_rows  # sha256, tier, split, subject, source, seed, provenance, names
    rows = [json.loads(line) for line in original_rows]
    assert {row["tier"] for row in rows} == {"love", "okay"} and {row["split"] for row in rows} == {"train", "eval"}
    assert sum(1 for row in rows if row["source"] and row["seed"]) == 8

    before, after = (json.loads((d / "pool.json").read_text()) for d in (exported, tmp_path / "re-export"))
    for key in ("name", "tiers", "filters", "eval_share", "split_seed", "member_count", "by_tier", "by_split"):
        assert after[key] == before[key], key
    assert after["curator"] == "grace"
    for row in rows:  # the fresh studio stored the very same bytes
        assert (tmp_path / "re-export" / row["file_name"]).read_bytes() == (exported / row["file_name"]).read_bytes()

    grades = fresh_studio("shell", "-c", (
        "import json; from curation.models import Grade; "
        "print(json.dumps(dict(Grade.objects.filter(curator__username='grace')"
        ".values_list('reference__sha256', 'tier'))))"
    ))
    # The shell may announce its automatic imports first; the JSON is the last line.
    assert json.loads(grades.stdout.strip().splitlines()[-1]) == {row["sha256"]: row["tier"] for row in rows}


def test_the_commands_exit_with_their_codes_in_a_real_process(tmp_path, fresh_studio):
    assert fresh_studio("import_refs", str(tmp_path / "missing"), check=False).returncode == 2
    assert fresh_studio("import_refs", str(tmp_path), "--curator", "nobody", check=False).returncode == 2
    assert fresh_studio("export_pool", "nope", str(tmp_path / "x"), check=False).returncode == 2
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(zipfile.ZipInfo("/etc/evil.png"), png_bytes())
    refused = fresh_studio("import_refs", str(archive), "--curator", "grace", check=False)
    assert refused.returncode == 1 and "unsafe_path" in refused.stdout
    folder = write_files(tmp_path / "batch", {"a.png": png_bytes(), "bad.png": "text"})
    ran = fresh_studio("import_refs", str(folder), "--curator", "grace", check=False)
    assert ran.returncode == 0 and "1 imported" in ran.stdout and "bad.png" in ran.stdout


def test_export_pool_exits_1_and_leaves_nothing_when_a_stored_image_is_missing(curator, tmp_path, media_root):
    pool = graded_pool(curator)
    (Path(media_root) / pool.members.first().reference.image).unlink()
    with pytest.raises(CommandError, match="cannot be read") as caught:
        run("export_pool", "hibiscus", str(tmp_path / "export"))
    assert caught.value.returncode == 1
    assert list(tmp_path.glob("*export*")) == []
