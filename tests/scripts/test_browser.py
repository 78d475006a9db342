"""scripts/browser.sh: the distribution's Chromium when it is a real one, else Playwright's,
and it says which (a fake `playwright` records what it was asked)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAP_SHIM = """#!/bin/sh
# Ubuntu's chromium-browser: a shim that points at the snap
echo "Command '/usr/bin/chromium-browser' requires the chromium snap to be installed." >&2
echo "Please install it with: snap install chromium" >&2
exit 1
"""


def run_script(tmp_path: Path, chromium: Path) -> tuple[subprocess.CompletedProcess, str]:
    calls = tmp_path / "playwright-calls"
    fake = tmp_path / "playwright"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    fake.chmod(0o755)
    done = subprocess.run(["scripts/browser.sh"], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CHROMIUM_PATH": str(chromium), "PLAYWRIGHT": str(fake)})
    return done, calls.read_text() if calls.exists() else ""


def test_a_real_chromium_is_used_and_named(tmp_path):
    done, calls = run_script(tmp_path, Path("/usr/bin/chromium"))
    assert done.returncode == 0 and "the distribution's Chromium at /usr/bin/chromium" in done.stdout
    assert calls == ""


def test_a_snap_shim_falls_back_to_playwrights_chromium_and_says_so(tmp_path):
    shim = tmp_path / "chromium-browser"
    shim.write_text(SNAP_SHIM)
    shim.chmod(0o755)
    done, calls = run_script(tmp_path, shim)
    assert done.returncode == 0, done.stderr
    assert calls.strip() == "install --with-deps chromium"
    assert "snap shim" in done.stdout and "browser: Playwright's Chromium" in done.stdout


def test_a_missing_chromium_falls_back_too(tmp_path):
    done, calls = run_script(tmp_path, tmp_path / "nowhere" / "chromium")
    assert done.returncode == 0 and calls.strip() == "install --with-deps chromium"
