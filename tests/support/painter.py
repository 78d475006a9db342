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
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def models_dir() -> Path:
    """Where the tests' built models are kept between sessions (once per machine)."""
    from django.conf import settings

    return Path(settings.MODELS_DIR)


def painter_path() -> Path:
    return models_dir() / "tiny-painter-tests"


def _log_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.build.log")


def is_built(path: Path, spec: Any = None) -> bool:
    """Built, and from the spec the tests use now (PAINTER_TEST_SPEC unless `spec` is given):
    a model built from an older spec (its paintapp.json says which) is built again."""
    if not (path / "config.json").exists():
        return False
    from demo.tiny_model import PAINTER_TEST_SPEC, read_model_info

    spec = PAINTER_TEST_SPEC if spec is None else spec
    # Through JSON, as paintapp.json holds it (tuples come back as lists).
    return read_model_info(path).get("spec") == json.loads(json.dumps(spec.to_dict()))


def built_once(path: Path, spec: Any, build_model: Callable[[Path, Any], Any]) -> Path:
    """`path`, holding a model built by `build_model(folder, spec)`: built by the first test
    process that asks (the others wait on a file lock) and kept for later sessions, instead
    of once per pytest-xdist process per session (a quick build is ~1 min of a core).
    Built in a staging folder and renamed into place, so a killed build leaves no half model."""
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_name(f"{path.name}.lock"))):
        if not is_built(path, spec):
            staging = path.with_name(f"{path.name}.building-{os.getpid()}")
            shutil.rmtree(staging, ignore_errors=True)
            build_model(staging, spec)
            _replace(staging, path)
    return path


def _replace(staging: Path, path: Path) -> None:
    stale = path.with_name(f"{path.name}.stale-{os.getpid()}")
    if path.exists():  # built from an older spec: set aside, since a rename cannot replace a full folder
        os.replace(path, stale)
    os.replace(staging, path)
    shutil.rmtree(stale, ignore_errors=True)


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

    from demo.tiny_model import PAINTER_TEST_SPEC, build_tiny_model

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
        _replace(staging, path)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
