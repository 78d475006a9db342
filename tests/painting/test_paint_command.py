"""`manage.py paint gate|render` — verdicts as JSON, exit codes 0 / 2 / 3."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paintenv.adversarial import CASES

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "paintenv" / "corpus" / "good" / "hibiscus.js"
ONE_PER_CONSTRUCT = list({case.construct: case for case in CASES if case.wrapper == "unicode_escape"}.values())


def paint(*args: str, stdin: str | None = None, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ) | (env_extra or {})
    return subprocess.run(
        [sys.executable, "manage.py", "paint", *args],
        cwd=REPO, input=stdin, capture_output=True, text=True, timeout=180, env=env,
    )


def test_gate_prints_a_passing_json_verdict_for_a_good_sketch():
    result = paint("gate", str(GOOD), "--json")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["passed"] is True and verdict["violations"] == []
    assert 0 <= verdict["length_score"] <= 1


def test_gate_reads_a_reply_from_standard_input_and_reports_every_violation():
    reply = "Here you go:\n```js\nfunction setup(){ createCanvas(600,600); rect(1,2,3,4); text('hi',1,1); }\n```"
    result = paint("gate", "-", "--json", stdin=reply)
    verdict = json.loads(result.stdout)
    assert result.returncode == 0
    assert verdict["passed"] is False
    assert {"not_webgl", "bare_primitives", "text_label"} <= set(verdict["violations"])


def test_bad_usage_exits_2():
    assert paint("gate", "/no/such/file.js").returncode == 2
    assert paint("render", str(GOOD), "--size", "5").returncode == 2
    assert paint("bogus").returncode == 2


@pytest.mark.slow
def test_render_writes_the_png_and_prints_the_verdict(tmp_path):
    out = tmp_path / "hibiscus.png"
    result = paint("render", str(GOOD), "--out", str(out), "--size", "256", "--seed", "7", "--json")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    for key in ("passed", "violations", "paint_fraction", "errors", "elapsed_ms", "length_score"):
        assert key in verdict
    assert verdict["passed"] is True and verdict["paint_fraction"] > 0.005
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_missing_browser_is_an_infrastructure_failure_exit_3():
    result = paint("render", str(GOOD), "--json", env_extra={"CHROMIUM_PATH": "/nonexistent/chromium"})
    assert result.returncode == 3, result.stdout + result.stderr
    assert json.loads(result.stdout.splitlines()[0])["error"] == "render_unavailable"


@pytest.mark.slow
def test_render_gives_a_failed_verdict_with_a_code_and_exits_0_for_each_forbidden_construct(tmp_path):
    files = []
    for case in ONE_PER_CONSTRUCT:
        path = tmp_path / f"{case.id}.js"
        path.write_text(case.code)
        files.append(str(path))
    result = paint("render", *files, "--size", "128", "--json", "--timeout", "20")
    assert result.returncode == 0, result.stderr
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [v["source"] for v in verdicts] == files
    for case, verdict in zip(ONE_PER_CONSTRUCT, verdicts):
        assert verdict["passed"] is False, case.id
        assert set(verdict["violations"]) & case.static_codes, (case.id, verdict["violations"])
        assert set(verdict["violations"]) & case.runtime_codes, (case.id, verdict["violations"])


def test_out_needs_a_single_source_to_render():
    assert paint("render", str(GOOD), str(GOOD), "--out", "/tmp/x.png").returncode == 2
