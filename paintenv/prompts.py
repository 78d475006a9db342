"""What the model is told: the system prompt (the allowed API), the subjects, and the
chat messages built from them.

Subjects are data, not code: a run can add its own without touching this file.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from paintenv.brush_api import ALLOWED_BRUSH_METHODS, ALLOWED_BRUSH_SIGNATURES
from paintenv.sketch_api import SKETCH_API

__all__ = [
    "ALLOWED_BRUSH_METHODS",
    "SYSTEM_PROMPT",
    "Subject",
    "SUBJECTS",
    "subject_by_slug",
    "all_subjects",
    "make_subject",
    "user_message",
    "build_messages",
]

CANVAS_SIZE = 600

def _api_lines() -> str:
    """The ten signatures, their `//` notes aligned in one column."""
    rows = [sig.split("//", 1) for _name, sig in ALLOWED_BRUSH_SIGNATURES]
    width = max(len(row[0].rstrip()) for row in rows) + 2
    return "\n".join(
        "    " + (row[0].rstrip().ljust(width) + "// " + row[1].strip() if len(row) == 2
                  else row[0].rstrip())
        for row in rows
    )


_API_LINES = _api_lines()


def _allowed_lines() -> str:
    """The allowlist of sketch_api.json beyond the brush, one group a line."""
    groups = [(name, ", ".join(names)) for name, names in SKETCH_API.p5_function_groups.items()]
    groups.append(("values", ", ".join(SKETCH_API.p5_values)))
    groups.append(("JavaScript", ", ".join(SKETCH_API.js_globals)))
    return "\n".join(
        textwrap.fill(f"{name}: {names}", width=88, initial_indent="    ", subsequent_indent="      ")
        for name, names in groups
    )


_ALLOWED_LINES = _allowed_lines()

SKETCH_SKELETON = """\
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#f7f1e3");            // pale paper
  translate(-width / 2, -height / 2); // (0, 0) is now the top-left corner
  brush.scaleBrushes(3);
  brush.noStroke();

  // back to front: leaves, then petals layer by layer, then the centre
  brush.fill("#6f9a5b", 170);
  brush.fillBleed(0.25);
  brush.fillTexture(0.5, 0.4);
  brush.beginShape(0.7);
  brush.vertex(180, 420);
  brush.vertex(280, 360);
  brush.vertex(300, 440);
  brush.endShape(true);

  brush.fill("#e9967a", 170);
  brush.circle(300, 290, 60, 0.4);
}"""

# Our own wording of the published system's rules; the gate in gate.py enforces them.
SYSTEM_PROMPT = f"""\
You are a watercolour painter who paints by writing code. You answer with one complete
p5.js 2.x sketch that paints with the p5.brush 2.x library, and nothing else runs but
that sketch.

The canvas
- Call createCanvas(600, 600, WEBGL) in setup(). p5.brush only paints on a WEBGL canvas.
- Lay a pale paper ground with background("#...") first (a warm off-white works well).
- Then call translate(-width / 2, -height / 2) so that x and y run from 0 to 600,
  starting at the top-left corner, and brush.scaleBrushes(3) so the brushes suit the
  canvas size.
- Put the painting in setup(). A draw() function is optional; if you write one, call
  noLoop() so the painting is made once.

The brush calls you may use (these ten and no others):
{_API_LINES}
Every argument is a number, except the colour of brush.fill, which is a hex string
such as "#c0392b". Opacity runs from 0 to 255; the other amounts from 0 to 1.
Shapes are built with brush.beginShape, several brush.vertex calls and
brush.endShape(true). A fill stays active until the next brush.fill or brush.noFill.

Plain p5.js is allowed for the ground, the transforms and arithmetic, and nothing else.
These are the only other names a sketch may use:
{_ALLOWED_LINES}
Any other name is refused, including p5's own shapes (rect, ellipse, circle, line,
point, triangle, quad, arc, bezier, curve, vertex, beginShape, endShape, square, image,
3D shapes), fill/stroke, pixels, filters, shaders and off-screen buffers: every mark
must come from a brush.* call. background() takes a colour only.

Forbidden
- Text of any kind: no text(), no fonts, no letters or signatures in the picture.
- Anything outside the sketch: no loading files, images, fonts or shaders, no network
  (fetch, XMLHttpRequest, WebSocket), no eval or Function, no DOM (document, window,
  createElement, innerHTML), no storage, no timers that run code strings.

How to paint well
- One subject, large and centred, on the pale paper; leave breathing room at the edges.
- Build each petal or leaf from several translucent layers: repeat its shape two to
  four times with slightly shifted vertices, a deeper or lighter tint, and a different
  fillBleed, so the edges bloom like wet paint.
- Use 15 to 30 filled shapes in all. Keep opacity at 150 or more so the colour reads.
- Vary fillBleed (0.1 to 0.4) and fillTexture for soft edges and paper grain; use
  beginShape curvature near 0.6 to 0.9 for organic outlines.
- Work back to front: leaves and stems, then petals from the back row forward, then the
  centre, stamens and a few small accents with brush.circle.
- Choose a harmonious palette of four to seven colours for the subject.

A sketch has this shape:
```js
{SKETCH_SKELETON}
```

Answer with exactly one ```js fenced code block containing the whole sketch, and no
other text."""


# ---------------------------------------------------------------------------------------
# Subjects


@dataclass(frozen=True)
class Subject:
    """Something to paint. `text` is inserted into the user message as is."""

    slug: str
    text: str


def _slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return re.sub(r"^(a|an|the)-", "", slug) or "subject"


def make_subject(text: str, slug: str | None = None) -> Subject:
    """A Subject from free text (slug derived from the text unless given)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError("a subject needs some text")
    return Subject(slug=slug or _slugify(text), text=text)


# Hibiscus first (the reference pool is hibiscus), then other flowers for variety and
# for a held-out evaluation set.
SUBJECTS: tuple[Subject, ...] = (
    Subject("peach-hibiscus", "a peach hibiscus"),
    Subject("scarlet-hibiscus", "a scarlet hibiscus"),
    Subject("white-hibiscus", "a white hibiscus with a crimson throat"),
    Subject("yellow-hibiscus", "a yellow hibiscus"),
    Subject("pink-hibiscus", "a pink hibiscus"),
    Subject("coral-hibiscus", "a coral hibiscus"),
    Subject("lilac-hibiscus", "a lilac hibiscus"),
    Subject("orange-hibiscus", "an orange hibiscus"),
    Subject("red-rose", "a red rose"),
    Subject("blush-rose", "a blush pink rose"),
    Subject("red-poppy", "a red poppy"),
    Subject("orange-poppy", "an orange California poppy"),
    Subject("yellow-tulip", "a yellow tulip"),
    Subject("pink-tulip", "a pink tulip"),
    Subject("blue-iris", "a blue iris"),
    Subject("pink-lotus", "a pink lotus"),
    Subject("red-camellia", "a red camellia"),
    Subject("white-camellia", "a white camellia"),
    Subject("peony", "a pink peony"),
    Subject("magnolia", "a magnolia blossom"),
    Subject("sunflower", "a sunflower"),
    Subject("anemone", "a purple anemone"),
    Subject("cherry-blossom", "a sprig of cherry blossom"),
    Subject("water-lily", "a white water lily"),
)


def all_subjects(extra: Iterable[Subject | str] = ()) -> tuple[Subject, ...]:
    """The built-in subjects followed by `extra` (Subjects or plain text). A later
    subject with an existing slug replaces the earlier one in place."""
    merged: dict[str, Subject] = {s.slug: s for s in SUBJECTS}
    for item in extra:
        subject = item if isinstance(item, Subject) else make_subject(str(item))
        merged[subject.slug] = subject
    return tuple(merged.values())


def subject_by_slug(slug: str, extra: Iterable[Subject | str] = ()) -> Subject:
    """Look a subject up by slug among the built-ins and `extra`; KeyError if absent."""
    for subject in all_subjects(extra):
        if subject.slug == slug:
            return subject
    raise KeyError(f"unknown subject slug: {slug!r}")


# ---------------------------------------------------------------------------------------
# Messages


def user_message(subject_text: str) -> str:
    return f"Paint {subject_text} in loose watercolour."


def build_messages(
    subject: Subject | str, *, system_prompt: str = SYSTEM_PROMPT
) -> list[dict[str, str]]:
    """Chat messages (system + user) for one subject, in the format chat templates and
    TRL datasets expect."""
    text = subject.text if isinstance(subject, Subject) else str(subject)
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": user_message(text)},
    ]
