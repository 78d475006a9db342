"""A lean GPU image: the train worker imports what a run uses. Without OpenEnv's client (and
fastmcp, mcp, opentelemetry with it), Krippendorff's alpha or scikit-learn, the trainer still
imports, every Celery task module loads, and `migrate` builds a fresh database: OpenEnv is for
a run with an `environment_url`, the agreement statistics for the agreement report. And no
worker or page loads scipy at its start: only the processes that measure a painting do."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ABSENT = ("openenv", "fastmcp", "mcp", "opentelemetry", "krippendorff", "sklearn", "wandb", "trackio")

# Runs in a fresh interpreter: a finder ahead of every other refuses the absent packages, and
# find_spec answers None for them, as in an image without them.
PROGRAM = """
import importlib.abc, importlib.util, sys

ABSENT = set(sys.argv[1].split(","))

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Absent())
find_spec = importlib.util.find_spec  # how transformers and TRL ask whether a package is installed


def installed_spec(name, package=None):
    return None if name.split(".")[0] in ABSENT else find_spec(name, package)


importlib.util.find_spec = installed_spec

import django
django.setup()
from django.core.management import call_command

from paintapp.celery import app
app.loader.import_default_modules()  # every app's tasks, as a worker loads them
import training.trainer.grpo, training.trainer.callbacks, training.trainer.rewarding, training.trainer.turns
import training.trainer.revision_trainer, training.trainer.sft, training.trainer.warm_start, training.trainer.lifecycle
import training.trainer.steps
import training.management.commands.train_process
call_command("migrate", verbosity=0)
call_command("check")
print("loaded:", sorted(name for name in sys.modules if name.split(".")[0] in ABSENT))
"""


def run_without(absent: tuple[str, ...], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'lean.sqlite3'}",
           "DJANGO_SETTINGS_MODULE": "paintapp.settings", "PAINTAPP_VAR_DIR": str(tmp_path / "var")}
    return subprocess.run([sys.executable, "-c", PROGRAM, ",".join(absent)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_trainer_imports_and_migrate_runs_without_openenv_or_the_agreement_statistics(tmp_path):
    result = run_without(ABSENT, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "loaded: []" in result.stdout
    assert (tmp_path / "lean.sqlite3").stat().st_size > 0


@pytest.mark.parametrize("package", ["krippendorff", "openenv"])
def test_the_check_fails_where_a_module_still_imports_one_at_the_top(tmp_path, package):
    """The finder really refuses: a module that imports the package at the top fails to load."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "eager.py").write_text(f"import {package}\n")
    program = PROGRAM.replace("import django\n", f"sys.path.insert(0, {str(probe)!r})\nimport eager\nimport django\n")
    result = subprocess.run([sys.executable, "-c", program, ",".join(ABSENT)], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode != 0 and f"No module named '{package}'" in result.stderr


def test_a_worker_and_the_studios_pages_start_without_scipy():
    """scipy (~0.4 s to import) is for the processes that measure a painting's features: a score
    worker, a step's recording. A Celery worker's start runs Django's checks, which load every
    URLconf, and then every app's tasks; neither may load it for every render worker and page."""
    program = ("import sys, django\ndjango.setup()\nfrom django.urls import get_resolver\nget_resolver().url_patterns\n"
               "from paintapp.celery import app\napp.loader.import_default_modules()\n"
               "print('scipy loaded:', 'scipy' in sys.modules)\n")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "paintapp.settings"}
    result = subprocess.run([sys.executable, "-c", program], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "scipy loaded: False" in result.stdout
