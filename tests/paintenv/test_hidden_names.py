"""The static gate alone refuses every forbidden name behind every hiding (scope decoys in
parameter defaults, destructuring, computed keys built without the name, `with`), and
lets the same hidings around harmless names pass."""
from __future__ import annotations

import pytest

from paintenv.gate import gate_source
from tests.paintenv.adversarial.hidden_names import CONTROLS, HIDDEN_NAMES, HIDINGS, NAMES, HiddenName
from tests.paintenv.adversarial.skeleton import skeleton


def test_the_corpus_crosses_every_name_with_every_hiding():
    assert len(HIDDEN_NAMES) == len(NAMES) * len(HIDINGS) >= 500
    assert {(c.name, c.hiding) for c in HIDDEN_NAMES} == {(n, h.name) for n in NAMES for h in HIDINGS}


@pytest.mark.parametrize("case", HIDDEN_NAMES, ids=[c.id for c in HIDDEN_NAMES])
def test_the_static_gate_refuses_every_hidden_name(case: HiddenName):
    verdict = gate_source(case.code)
    assert not verdict.passed, f"{case.id} passed the gate:\n{case.code}"
    assert set(verdict.codes) & case.codes, (case.id, verdict.codes, sorted(case.codes))
    assert "gate_error" not in verdict.codes and "truncated" not in verdict.codes


@pytest.mark.parametrize(("name", "code"), CONTROLS, ids=[n for n, _ in CONTROLS])
def test_the_same_hidings_around_a_harmless_name_pass(name: str, code: str):
    verdict = gate_source(code)
    assert verdict.passed, (name, [str(v) for v in verdict.violations], code)


def test_every_case_is_the_legitimate_skeleton_plus_its_hiding():
    assert gate_source(skeleton()).passed
    for case in HIDDEN_NAMES:
        assert "function setup() {" in case.code and 'brush.fill("#c0504d", 200);' in case.code, case.id
