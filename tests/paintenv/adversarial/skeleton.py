"""The legitimate painting every hostile case is built around (and `skeleton()`, that
painting alone)."""
from __future__ import annotations

_HEAD = [
    "createCanvas(600, 600, WEBGL);",
    'background("#f7f1e3");',
    "translate(-width / 2, -height / 2);",
    "brush.scaleBrushes(3);",
    "brush.noStroke();",
    'brush.fill("#e9967a", 170);',
    "brush.fillBleed(0.25);",
    "brush.circle(300, 290, 60, 0.4);",
    'brush.fill("#c0504d", 200);',
    "brush.circle(250, 330, 110, 0.35);",
]
_TAIL = [
    'brush.fill("#7a2e3b", 200);',
    "brush.circle(350, 300, 70, 0.3);",
]
INDENT = "  "


def indent(lines: list[str], depth: int = 1) -> list[str]:
    pad = INDENT * depth
    return [pad + line if line else line for line in lines]


def assemble(top: list[str], block: list[str], bottom: list[str]) -> str:
    out = ["// A coral bloom on warm paper: three soft washes."]
    if top:
        out += top + [""]
    out.append("function setup() {")
    out += indent(_HEAD + block + _TAIL)
    out.append("}")
    if bottom:
        out += [""] + bottom
    return "\n".join(out) + "\n"


def skeleton() -> str:
    """Every hostile case without its hostile part: must pass both layers."""
    return assemble([], [], [])
