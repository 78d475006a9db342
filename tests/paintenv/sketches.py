"""Small sketches for the gate's tests: a valid painting with a line added, and its codes."""
from __future__ import annotations

from paintenv.gate import gate_source


def sketch(body: str, *, canvas: str = "createCanvas(600, 600, WEBGL);") -> str:
    """A valid painting with `body` added at the end of setup()."""
    return (
        "function setup() {\n"
        f"  {canvas}\n"
        '  background("#fbf7ef");\n'
        "  translate(-width / 2, -height / 2);\n"
        '  brush.fill("#e0857a", 180);\n'
        "  brush.circle(300, 300, 40, 0.3);\n"
        f"{body}\n"
        "}\n"
    )


def codes(code: str, **kwargs) -> list[str]:
    return gate_source(code, **kwargs).codes
