"""`paintenv` is usable by a plain script (a TRL user's, a bench): importing every one of its
modules loads no Django, Celery or kombu module and nothing of the studio's apps."""
from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import paintenv

REPO = Path(__file__).resolve().parents[2]
STUDIO = ("django", "celery", "kombu", "paintapp", "painting", "curation", "training", "system")


def modules_loaded_by_importing(module_names: list[str]) -> list[str]:
    script = (
        "import importlib, json, sys\n"
        f"for name in {module_names!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    return json.loads(out.stdout.splitlines()[-1])


def test_importing_every_paintenv_module_loads_no_django_celery_or_studio_module():
    names = sorted(m.name for m in pkgutil.walk_packages(paintenv.__path__, "paintenv."))
    assert "paintenv.length" in names and "paintenv.gate" in names and "paintenv.renderer" in names
    loaded = modules_loaded_by_importing(names)
    assert set(names) <= set(loaded)
    studio = [m for m in loaded if m.split(".")[0] in STUDIO]
    assert studio == []


def test_the_check_sees_a_studio_module_when_one_is_loaded():
    loaded = modules_loaded_by_importing(["paintenv.length", "paintapp.lib.progress"])
    assert "paintapp.celery" in loaded and "celery" in loaded
