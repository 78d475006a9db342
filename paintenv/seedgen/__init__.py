"""Seed pool generator: procedural p5.brush sketches of flowers, good and deliberately weak.

Two uses:
* a seed reference pool before any curator has graded anything (the weak styles give the
  grading something to separate), and
* the SFT warm-start corpus of the tiny model (`sft_pairs`, good sketches only).

Because a language model learns from these, every sketch is written the way a good model
answer would look: one style throughout (palette constants, wash constants, geometry
constants, small helper functions, then setup()), comments that say what is painted,
loops instead of long coordinate lists, and numbers rounded to whole pixels or two
decimals. Only the ten allowed brush calls appear, plus plain p5 setup and arithmetic.

Every choice comes from `random.Random(seed)` and the sketch seeds p5 itself
(`randomSeed`/`noiseSeed`, which p5.brush also follows), so the same arguments give
byte-identical code and the same picture.

Weak styles, each recognisable on sight:
  muddy        brown/grey clashing palette, many overlapping high-opacity layers
  hard_edges   fillBleed 0, fillTexture 0, curvature 0: flat hard polygons
  near_empty   one or two small marks, just above the blank threshold
  overfilled   the whole sheet covered in heavy washes, the subject lost
  scribbly     nothing but round blobs of one size with a high scribble

The package: tables.toml holds the styles, families, bloom geometry, compositions and
palettes (read by tables.py); js/*.js hold every piece of the sketches' JavaScript (read
by js.py); plan.py draws one sketch's choices, scene.py writes what setup() paints and
sheets.py writes the whole sketch.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from paintenv.prompts import SYSTEM_PROMPT, Subject, user_message
from paintenv.seedgen.plan import make_plan
from paintenv.seedgen.sheets import WRITERS

# The tables read from tables.toml, also under the names this module has always had.
from paintenv.seedgen.tables import BRANCHES as BRANCHES
from paintenv.seedgen.tables import GREENS as GREENS
from paintenv.seedgen.tables import GROUNDS as GROUNDS
from paintenv.seedgen.tables import MUDDY_GREENS as MUDDY_GREENS
from paintenv.seedgen.tables import MUDDY_PALETTES as MUDDY_PALETTES
from paintenv.seedgen.tables import MUDDY_PAPERS as MUDDY_PAPERS
from paintenv.seedgen.tables import PALETTES as PALETTES
from paintenv.seedgen.tables import PAPERS as PAPERS
from paintenv.seedgen.tables import RADIAL_COMPOSITIONS as RADIAL_COMPOSITIONS
from paintenv.seedgen.tables import SEED_SUBJECTS, STYLES
from paintenv.seedgen.tables import SPRIG_COMPOSITIONS as SPRIG_COMPOSITIONS
from paintenv.seedgen.tables import Palette as Palette

__all__ = [  # noqa: RUF022 - in the order it has always had
    "STYLES",
    "WEAK_STYLES",
    "SEED_SUBJECTS",
    "SeedSketch",
    "generate",
    "generate_pool",
    "sft_pairs",
    "POOL_SEED",
    "WARM_START_SEED",
    "SEEDS_PER_POOL",
]

WEAK_STYLES: tuple[str, ...] = STYLES[1:]

# A pool's item seeds are seed * SEEDS_PER_POOL + i, so pools made with different generator
# seeds never share a sketch. The reference pool `seed_pool` renders by default (the demo
# pool) takes POOL_SEED and the tiny model's warm start WARM_START_SEED: a model trained on
# the references it is judged against would make the demo's held-out evaluation a recall test.
SEEDS_PER_POOL = 100_000
POOL_SEED = 0
WARM_START_SEED = 1

# When generate() picks the style itself: mostly good, the rest spread over the weak kinds.
_DEFAULT_WEAK_SHARE = 0.3


@dataclass(frozen=True)
class SeedSketch:
    id: str  # stable, e.g. "hibiscus-peach-0042"
    seed: int  # generator seed, also the render seed to use
    subject_slug: str
    subject_text: str
    prompt: str  # the user message
    style: str
    palette: str
    composition: str
    code: str

    @property
    def reply(self) -> str:
        """The assistant reply: the sketch in one js fence (code ends with a newline)."""
        return f"```js\n{self.code}```"

    def messages(self) -> list[dict[str, str]]:
        """System + user + assistant: one SFT example."""
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": self.prompt},
            {"role": "assistant", "content": self.reply},
        ]


def _subject(slug: str) -> Subject:
    for subject in SEED_SUBJECTS:
        if subject.slug == slug:
            return subject
    raise KeyError(f"no seed generator for subject {slug!r}; known: "
                   f"{', '.join(s.slug for s in SEED_SUBJECTS)}")


def generate(seed: int, *, style: str | None = None, subject_slug: str | None = None) -> SeedSketch:
    """One sketch, deterministic for (seed, style, subject_slug)."""
    rng = random.Random(seed)
    # Always draw both, so forcing one does not shift the other's choices.
    drawn_style = "good" if rng.random() >= _DEFAULT_WEAK_SHARE else rng.choice(WEAK_STYLES)
    drawn_subject = rng.choice(SEED_SUBJECTS)
    style = style or drawn_style
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    subject = _subject(subject_slug) if subject_slug else drawn_subject
    plan = make_plan(rng, seed, style, subject)
    code = WRITERS[style](rng, plan)
    family = plan.family.name
    kind = "" if style == "good" else "-" + style.replace("_", "-")
    composition = {"near_empty": "tiny-mark", "scribbly": "blob-ring"}.get(style, plan.composition)
    if style == "overfilled":
        composition = "edge-to-edge"
    return SeedSketch(
        id=f"{family}-{plan.palette.name}{kind}-{seed:04d}",
        seed=seed,
        subject_slug=subject.slug,
        subject_text=subject.text,
        prompt=user_message(subject.text),
        style=style,
        palette=plan.palette.name,
        composition=composition,
        code=code,
    )


def generate_pool(count: int, *, seed: int = POOL_SEED, weak_share: float = 0.3) -> list[SeedSketch]:
    """`count` sketches, deterministic for (count, seed, weak_share).

    Subjects go round in a shuffled order, so each appears count/len(subjects) times
    (+-1); round(count * weak_share) of them are weak, spread evenly over the positions
    and dealt out over the weak kinds in turn.
    """
    if not 0 <= count <= SEEDS_PER_POOL:
        raise ValueError(f"count must be within [0, {SEEDS_PER_POOL}]")
    if not 0.0 <= weak_share <= 1.0:
        raise ValueError("weak_share must be within [0, 1]")
    rng = random.Random(f"seedgen-pool:{seed}")
    subjects = list(SEED_SUBJECTS)
    rng.shuffle(subjects)
    weak_total = round(count * weak_share)
    # Evenly spaced weak positions (Bresenham-style), so any prefix keeps about the share.
    weak_at = {int(i * count / weak_total) for i in range(weak_total)} if weak_total else set()
    kinds = list(WEAK_STYLES)
    rng.shuffle(kinds)
    pool: list[SeedSketch] = []
    weak_seen = 0
    for i in range(count):
        style = "good"
        if i in weak_at:
            style = kinds[weak_seen % len(kinds)]
            weak_seen += 1
        item_seed = seed * SEEDS_PER_POOL + i
        pool.append(generate(item_seed, style=style, subject_slug=subjects[i % len(subjects)].slug))
    return pool


def sft_pairs(count: int, *, seed: int = WARM_START_SEED) -> list[tuple[list[dict[str, str]], str]]:
    """(prompt messages, assistant reply) pairs from good sketches only."""
    pairs = []
    for sketch in generate_pool(count, seed=seed, weak_share=0.0):
        messages = sketch.messages()
        pairs.append((messages[:2], messages[2]["content"]))
    return pairs
