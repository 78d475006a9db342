"""The end-to-end tests' painter model, built in a background process while other tests run.

Building it takes minutes of one CPU core, and the test suite leaves part of the two cores
idle (it mostly waits on Chromium and workers), so the build starts when the session does, at
a lower CPU priority than the tests, and the tests that need it run last. It is built
into a temporary folder and renamed into place, so a killed build never leaves half a model.

    python -m tests.support.painter OUT_DIR     # what the session starts
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def painter_path() -> Path:
    """Where the painter is kept between sessions (once per machine)."""
    from django.conf import settings

    return Path(settings.MODELS_DIR) / "tiny-painter-tests"


def _log_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.build.log")


def is_built(path: Path) -> bool:
    """Built, and from the spec the tests use now: a painter built from an older
    PAINTER_TEST_SPEC (its paintapp.json says which) is built again."""
    if not (path / "config.json").exists():
        return False
    from training.tiny_model import PAINTER_TEST_SPEC, read_model_info

    # Through JSON, as paintapp.json holds it (tuples come back as lists).
    return read_model_info(path).get("spec") == json.loads(json.dumps(PAINTER_TEST_SPEC.to_dict()))


def start_build(path: Path) -> subprocess.Popen | None:
    """Start building the painter into `path` unless it is there; the process, or None."""
    if is_built(path):
        return None
    log_path = _log_path(path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.painter", str(path)],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )


def wait_for_build(process: subprocess.Popen | None, path: Path, timeout_s: float) -> None:
    """Wait for the background build; raise with its log's tail if it failed."""
    if process is not None:
        process.wait(timeout=timeout_s)
    if not is_built(path):
        log_path = _log_path(path)
        tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else "(no log)"
        raise RuntimeError(f"the painter model build failed (exit {getattr(process, 'returncode', None)}):\n{tail}")


def build(path: Path) -> None:
    from filelock import FileLock

    from training.tiny_model import PAINTER_TEST_SPEC, build_tiny_model

    # Below the tests, but not at the bottom: with the test processes busy, a build at nice 19
    # finished long after everything else and the painter's tests waited minutes for it.
    os.nice(10)
    # Each pytest-xdist worker starts a build: the first builds, the others wait for it here.
    with FileLock(str(path.with_name(f"{path.name}.lock"))):
        if is_built(path):
            return
        staging = path.with_name(f"{path.name}.building-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        build_tiny_model(staging, PAINTER_TEST_SPEC)
        stale = path.with_name(f"{path.name}.stale-{os.getpid()}")
        if path.exists():  # built from an older spec: set aside, since a rename cannot replace a full folder
            os.replace(path, stale)
        os.replace(staging, path)
        shutil.rmtree(stale, ignore_errors=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
