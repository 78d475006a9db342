"""The static gate and the brush API: unknown and disallowed brush methods under each
strictness, brush reached by computed keys or aliases, and the allowlist against the installed
p5.brush."""
from __future__ import annotations

from pathlib import Path

import pytest

from paintenv.brush_api import ALLOWED_BRUSH_METHODS, KNOWN_BRUSH_METHODS
from paintenv.gate import gate_source
from tests.paintenv.sketches import codes, sketch

REPO = Path(__file__).resolve().parents[2]
HIBISCUS = (Path(__file__).parent / "corpus" / "good" / "hibiscus.js").read_text()



def test_it_flags_unknown_brush_methods_in_both_modes():
    code = sketch("  brush.bleed(0.2);")
    assert codes(code) == ["unknown_brush_method"]
    assert codes(code, strictness="known") == ["unknown_brush_method"]


def test_known_but_disallowed_methods_fail_only_under_the_allowlist():
    code = sketch('  brush.set("HB", "#000", 1);\n  brush.line(0, 0, 9, 9);')
    assert codes(code) == ["disallowed_brush_method"]
    assert codes(code, strictness="known") == []


def test_known_mode_counts_other_real_brushes_as_painting():
    code = (
        "function setup() {\n  createCanvas(600, 600, WEBGL);\n"
        '  brush.set("HB", "#222", 1);\n  brush.line(0, 0, 600, 600);\n}\n'
    )
    assert codes(code, strictness="known") == []
    assert codes(code) == ["disallowed_brush_method", "no_painting_calls"]


def test_computed_brush_access_is_an_unknown_brush_method():
    assert codes(sketch('  brush["fi" + "ll"]("#fff", 200);')) == ["unknown_brush_method"]
    assert codes(sketch('  const m = "fill"; brush[m]("#fff", 200);')) == ["unknown_brush_method"]


def test_a_plain_string_index_on_brush_reads_as_the_method():
    assert codes(sketch('  brush["fill"]("#ffffff", 200);')) == []
    assert codes(sketch('  brush["line"](0, 0, 1, 1);')) == ["disallowed_brush_method"]


def test_aliasing_or_overwriting_brush_is_an_unknown_brush_method():
    assert "unknown_brush_method" in codes(sketch("  const b = brush;"))
    assert "unknown_brush_method" in codes(sketch("  paint(brush);"))
    assert codes(sketch("  brush.fill = () => 0;")) == ["unknown_brush_method"]


def test_the_known_list_matches_the_installed_p5_brush_exports():
    src = REPO / "node_modules" / "p5.brush" / "src" / "index.shared.js"
    if not src.exists():
        pytest.skip("node_modules not installed")
    import tree_sitter_javascript
    from tree_sitter import Language, Parser

    tree = Parser(Language(tree_sitter_javascript.language())).parse(src.read_bytes())
    exported: set[str] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "export_specifier":
            target = node.child_by_field_name("alias") or node.child_by_field_name("name")
            exported.add(target.text.decode())
        stack.extend(node.named_children)
    assert exported == set(KNOWN_BRUSH_METHODS)


def test_the_allowlist_is_exactly_the_ten_taught_methods():
    assert ALLOWED_BRUSH_METHODS == {
        "scaleBrushes", "noStroke", "fill", "noFill", "fillBleed", "fillTexture",
        "beginShape", "vertex", "endShape", "circle",
    }


def test_an_unknown_strictness_is_a_programming_error():
    with pytest.raises(ValueError):
        gate_source(HIBISCUS, strictness="lenient")
