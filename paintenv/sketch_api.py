"""The allowlist of what a sketch may touch, read from sketch_api.json.

One data file, three readers: the system prompt lists it, the static gate refuses any
free name outside it, and the render page shadows every other global with a recording
stub (the runtime guard). Change the file, and all three follow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

API_FILE = Path(__file__).resolve().parent / "sketch_api.json"


@dataclass(frozen=True)
class SketchApi:
    brush_methods: tuple[str, ...]
    p5_function_groups: dict[str, tuple[str, ...]]
    p5_values: tuple[str, ...]
    js_globals: tuple[str, ...]
    primitive_names: frozenset[str]
    text_names: frozenset[str]

    @property
    def p5_functions(self) -> frozenset[str]:
        return frozenset(n for group in self.p5_function_groups.values() for n in group)

    @property
    def allowed_globals(self) -> frozenset[str]:
        """Every free name a sketch may read: `brush`, the p5 functions and values, and
        the listed JavaScript built-ins."""
        return frozenset({"brush", *self.p5_functions, *self.p5_values, *self.js_globals})

    def to_page(self) -> dict[str, Any]:
        """What the render page needs (harness.js): the allowed names by kind."""
        return {
            "brush": list(self.brush_methods),
            "functions": sorted(self.p5_functions),
            "values": list(self.p5_values),
            "globals": list(self.js_globals),
        }


def _load() -> SketchApi:
    raw = json.loads(API_FILE.read_text(encoding="utf-8"))
    return SketchApi(
        brush_methods=tuple(raw["brush_methods"]),
        p5_function_groups={k: tuple(v) for k, v in raw["p5_functions"].items()},
        p5_values=tuple(raw["p5_values"]),
        js_globals=tuple(raw["js_globals"]),
        primitive_names=frozenset(raw["primitive_names"]),
        text_names=frozenset(raw["text_names"]),
    )


SKETCH_API = _load()
