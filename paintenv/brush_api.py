"""The p5.brush API surface the environment knows about.

Kept apart from the gate and the prompt so both read the same lists, and so a
library upgrade touches one file.
"""

from __future__ import annotations

from paintenv.sketch_api import SKETCH_API

# Every public member of the `brush` global in p5.brush 2.2.2 (npm), read from
# node_modules/p5.brush/src/index.shared.js (the p5 build re-exports exactly these)
# and checked against the `t.<name>=` assignments in dist/p5.brush.js.
# Internal helpers that the minified bundle assigns on other objects (maxX, glMask, ...)
# are not members of `brush` and are deliberately absent.
# 1.x names that no longer exist (bleed, fillAnimatedMode, ...) are absent too: under
# p5.brush 2.x they throw "brush.bleed is not a function".
KNOWN_BRUSH_METHODS: frozenset[str] = frozenset(
    {
        # randomness and configuration
        "wRand", "seed", "noiseSeed", "load", "instance", "scaleBrushes",
        # vector fields
        "field", "noField", "addField", "refreshField", "listFields", "wiggle",
        # exposed classes
        "Position", "Polygon", "Plot",
        # geometry
        "rect", "circle", "arc", "beginShape", "vertex", "endShape",
        "beginStroke", "move", "endStroke", "spline", "polygon", "line", "flowLine",
        # stroke brushes
        "add", "box", "pick", "stroke", "strokeWeight", "set", "noStroke",
        "clip", "noClip",
        # hatching
        "hatch", "hatchStyle", "noHatch", "hatchArray", "mass", "noMass", "massArray",
        # fills
        "fill", "noFill", "fillTexture", "fillBleed", "wash", "noWash",
    }
)

# The only methods the system prompt teaches (the allowlist lives in sketch_api.json,
# which the gate and the render page read too). Apart from fill's hex colour, none of
# them takes a string, which keeps the model away from named brushes and presets.
ALLOWED_BRUSH_METHODS: frozenset[str] = frozenset(SKETCH_API.brush_methods)

# Prompt order, with the argument shapes we teach.
ALLOWED_BRUSH_SIGNATURES: tuple[tuple[str, str], ...] = (
    ("scaleBrushes", "brush.scaleBrushes(3)"),
    ("noStroke", "brush.noStroke()"),
    ("fill", 'brush.fill("#rrggbb", opacity)        // opacity 0-255'),
    ("noFill", "brush.noFill()"),
    ("fillBleed", "brush.fillBleed(amount)             // 0-1, how far the wash spreads"),
    ("fillTexture", "brush.fillTexture(amount, border)   // both 0-1, paper grain and edge darkening"),
    ("beginShape", "brush.beginShape(curvature)         // 0-1, 0 = straight edges, 1 = round"),
    ("vertex", "brush.vertex(x, y)"),
    ("endShape", "brush.endShape(true)                // true closes the shape"),
    ("circle", "brush.circle(x, y, radius, scribble) // scribble 0-1, wobble of the edge"),
)

# Calls that put colour on the canvas and calls that produce geometry. A sketch needs
# one of each kind to be able to paint anything (p5.brush's stroke starts inactive).
# A custom shape counts only when beginShape, vertex and endShape all appear.
COLOUR_SOURCES_ALLOWLIST: frozenset[str] = frozenset({"fill"})
COLOUR_SOURCES_KNOWN: frozenset[str] = frozenset(
    {"fill", "set", "stroke", "pick", "hatch", "wash", "mass"}
)
SHAPE_CALLS_ALLOWLIST: frozenset[str] = frozenset({"circle"})
SHAPE_CALLS_KNOWN: frozenset[str] = frozenset(
    {
        "circle", "rect", "arc", "line", "flowLine", "polygon",
        "spline", "endStroke", "hatchArray", "massArray",
    }
)

CUSTOM_SHAPE_CALLS: frozenset[str] = frozenset({"beginShape", "vertex", "endShape"})

assert ALLOWED_BRUSH_METHODS <= KNOWN_BRUSH_METHODS
assert {name for name, _ in ALLOWED_BRUSH_SIGNATURES} == ALLOWED_BRUSH_METHODS
