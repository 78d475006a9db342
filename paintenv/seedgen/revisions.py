"""Flawed drafts of good seed sketches, for the tiny model's revision warm start (issue #16).

A revision example is a conversation: the subject, a flawed draft as the model would
reply, the studio's real feedback on it, then the good sketch as the answer. This module
makes the drafts, systematically and seeded; the caller judges each draft with the real
gate (and renderer) and keeps it only when the verdict shows the flaw (`shows_flaw`).

The kinds, dealt in turn over the good sketches:

  gate-refused (judged in-process, never painted)
    bare_primitive  one brush.* call written as p5's own (circle, vertex, ...), or a
                    bare rect/ellipse added to setup()
    text            a text() label added to setup()
    forbidden_api   a name outside the sketch API (fetch, eval, loadImage, document, ...)
    syntax_error    a bracket or brace left out
    missing_brush   every brush.fill(...) line left out: nothing can paint
  raising at run time (the gate passes; needs a render)
    const_reassign  a top-level const assigned in setup()
    undefined_member  a method called on a palette entry past the array's end
  weak (passes and paints; needs a render for the coverage note)
    near_empty, overfilled  the seed generator's weak style of the same plan
  keep (`keeps`, not dealt by `revisions`): the good sketch itself, painted well

The answer is the un-mutated sketch for a mutation, the good sketch of the same seed and
subject (the same plan, painted well) for a weak one, and KEEP for a keep (`Revision.answer`).

Why keeps: in a run most first sketches pass the gate and paint (96% in bench/multiturn.py's
runs), so the commonest turn-2 chat is a good sketch with a passing verdict, a judge section
and a reward line. Trained on flawed drafts only, the tiny model met that chat for the first
time in GRPO and its second sketch came out worse than its first in every seed (final 0.517
against first 0.689). Keeps answered with the same sketch again narrowed that (final 0.627
against first 0.674) but never gave an exact copy (0 of 401 good first sketches): a 1.5M
parameter model at temperature 1 rewrites ~570 tokens as a new sample. So a keep is answered
KEEP, the revision turn's other answer (paintenv.extraction.KEEP_REPLY): the painting
stands, and GRPO learns which paintings to revise.

With `RevisionScoring` the feedback of a painted draft also carries the judge's verdicts
against reference paintings and the reward line, exactly as the trainer's feedback does
(`feedback_text` of a Turn with judge and reward), and a refused one the reward line. The
warm start has no curator's pool, so its judge is `QualityPairJudge`: a pairwise judge on
the features quality score. The sections' words and layout are what the model must learn;
the trainer's judge gives its own verdicts in the same words.
"""
from __future__ import annotations

import contextlib
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from paintenv.extraction import KEEP_REPLY
from paintenv.feedback import Turn, feedback_text, revision_messages
from paintenv.judges import judge_against_references
from paintenv.quality.features import FeatureQualityScorer
from paintenv.reward import DEFAULT_STUDIO_PRESET, PRESETS, Recipe, combine
from paintenv.seedgen import SeedSketch, generate

if TYPE_CHECKING:
    from paintenv.paint import Painting
    from paintenv.renderer import Renderer

__all__ = [
    "GATE_KINDS",
    "KEEP",
    "RENDER_KINDS",
    "REVISION_KINDS",
    "RENDER_SIZE",
    "QualityPairJudge",
    "Revision",
    "RevisionScoring",
    "keeps",
    "revision_examples",
    "revisions",
    "shows_flaw",
]

GATE_KINDS: tuple[str, ...] = ("bare_primitive", "text", "forbidden_api", "syntax_error", "missing_brush")
RUNTIME_KINDS: tuple[str, ...] = ("const_reassign", "undefined_member")
WEAK_KINDS: tuple[str, ...] = ("near_empty", "overfilled")
KEEP = "keep"
RENDER_KINDS: tuple[str, ...] = RUNTIME_KINDS + WEAK_KINDS + (KEEP,)
REVISION_KINDS: tuple[str, ...] = GATE_KINDS + RUNTIME_KINDS + WEAK_KINDS  # the flawed kinds `revisions` deals

# The size a draft is rendered at: paint coverage is a share of the sheet, the same at any
# size within a point or two, and a 256 px render costs a fraction of a 600 px one.
RENDER_SIZE = 256


@dataclass(frozen=True)
class Revision:
    kind: str
    draft: str  # the flawed sketch's code
    target: SeedSketch  # the good sketch to answer with

    @property
    def seed(self) -> int:
        """The render seed (the target's, as the seed pool renders it)."""
        return self.target.seed

    @property
    def needs_render(self) -> bool:
        return self.kind in RENDER_KINDS

    @property
    def draft_reply(self) -> str:
        """The draft as the model's reply: one js fence, as SeedSketch.reply writes it."""
        return f"```js\n{self.draft}```"

    @property
    def answer(self) -> str:
        """What the model should reply to the draft's feedback: KEEP for a keep (its painting
        stands), the good sketch otherwise."""
        return KEEP_REPLY if self.kind == KEEP else self.target.reply


def revisions(bases: Sequence[SeedSketch], *, seed: int) -> list[Revision]:
    """One draft per good sketch in `bases`, the kinds dealt in a seeded order in turn;
    deterministic for (bases, seed). A mutation that finds nothing to mutate in a sketch
    gives no draft for it (none does on the seed generator's sketches)."""
    kinds = list(REVISION_KINDS)
    random.Random(f"seedgen-revisions:{seed}").shuffle(kinds)
    out = []
    for i, base in enumerate(bases):
        kind = kinds[i % len(kinds)]
        if kind in WEAK_KINDS:
            draft: str | None = generate(base.seed, style=kind, subject_slug=base.subject_slug).code
        else:
            draft = _MUTATIONS[kind](random.Random(f"seedgen-revision:{base.seed}:{kind}"), base)
        if draft is not None and draft != base.code:
            out.append(Revision(kind=kind, draft=draft, target=base))
    return out


def keeps(bases: Sequence[SeedSketch]) -> list[Revision]:
    """A keep per good sketch: the sketch as its own draft and its own answer."""
    return [Revision(kind=KEEP, draft=base.code, target=base) for base in bases]


def shows_flaw(kind: str, painting: Painting) -> bool:
    """Whether a draft's real verdict (`painting`: gate, and render for RENDER_KINDS) shows
    the flaw its kind put in: refused by the gate, raised at run time, or painted with the
    coverage its weak style is named for; for a keep, that it passed and painted a
    balanced share of the sheet (nothing to fix)."""
    from paintenv.image import BALANCED_COVERAGE, BLANK_THRESHOLD

    render = painting.render
    if kind in GATE_KINDS:
        return not painting.gate.passed and render is None
    if render is None or not painting.gate.passed:
        return False
    if kind in RUNTIME_KINDS:
        return bool(render.errors)
    low, high = BALANCED_COVERAGE
    share = render.paint_fraction
    coverage = "near_empty" if BLANK_THRESHOLD <= share < low else "overfilled" if share > high else None
    if kind == KEEP:
        return painting.passed and share >= BLANK_THRESHOLD and coverage is None
    return not render.errors and not render.violations and coverage == kind


class QualityPairJudge:
    """The warm start's pairwise judge: P(candidate beats reference) = sigmoid((q(c) - q(r)) / T)
    on the features quality score q, rounded to 2 places; None when an image cannot be
    scored. Symmetric in the presentation order, like the taste judge."""

    name = "quality-pair"
    TEMPERATURE = 0.05  # a 0.1 lead in quality wins ~88% of the time

    def __init__(self) -> None:
        self._scorer = FeatureQualityScorer()

    def compare(self, candidate_png: bytes, reference_png: bytes, *, prompt: str = "",
                candidate_first: bool = True) -> float | None:
        mine, theirs = self._scorer.score(candidate_png), self._scorer.score(reference_png)
        if mine is None or theirs is None:
            return None
        return round(1.0 / (1.0 + math.exp(-(mine - theirs) / self.TEMPERATURE)), 2)


@dataclass(frozen=True)
class RevisionScoring:
    """What gives a draft's feedback its judge and reward sections, as the trainer's pipeline
    does (painting.pipeline.reward_of): a refused or failing sketch gets the reward line
    with "gate failed"; a painted one is judged against `references` ((id, png) pairs) in
    both orders, quality-scored, and gets the judge section and the reward line."""

    references: tuple[tuple[Any, bytes], ...]
    recipe: Recipe = field(default_factory=lambda: PRESETS[DEFAULT_STUDIO_PRESET])
    judge: Any = field(default_factory=QualityPairJudge)
    quality: Any = field(default_factory=FeatureQualityScorer)

    def turn(self, painting: Painting, *, prompt: str) -> Turn:
        length = self.recipe.length_part(painting.painting_tokens)
        if not painting.passed or not painting.png:
            return Turn(painting=painting, reward=combine(self.recipe, False, length, None, None))
        judged = None
        if self.recipe.w_judge > 0:
            judged = judge_against_references(self.judge, painting.png, list(self.references), prompt=prompt,
                                              concurrency=1)
        quality = self.quality.score(painting.png, prompt=prompt) if self.recipe.w_quality > 0 else None
        reward = combine(self.recipe, True, length, judged.score if judged else None, quality)
        return Turn(painting=painting, judge=judged, reward=reward)


def revision_examples(drafts: Sequence[Revision], *, renderer: Renderer | None = None,
                      scoring: RevisionScoring | None = None) -> list[dict[str, Any]]:
    """Conversational prompt/completion rows that teach a revision turn: prompt = exactly
    the trainer's turn-2 chat (`revision_messages(build_messages(subject), draft reply,
    feedback_text(its real verdict))`), completion = [assistant: `Revision.answer`].

    Each draft is judged as a reply by the studio's own pipeline (`paint_reply`): the gate
    in-process, and the real renderer (`renderer`, or one opened here) for the kinds whose
    flaw shows only when the sketch runs, at RENDER_SIZE. A draft whose verdict
    does not show its flaw (a render that timed out on a busy machine, say) is left out.
    With `scoring` the feedback also has the judge and reward sections (RevisionScoring).
    """
    from paintenv.paint import paint_reply
    from paintenv.prompts import build_messages, make_subject

    with contextlib.ExitStack() as stack:
        if renderer is None and any(d.needs_render for d in drafts):
            from paintenv.renderer import Renderer

            renderer = stack.enter_context(Renderer())
        rows = []
        for draft in drafts:
            painting = paint_reply(draft.draft_reply, renderer=renderer if draft.needs_render else None,
                                   seed=draft.seed, size=RENDER_SIZE)
            if not shows_flaw(draft.kind, painting):
                continue
            messages = build_messages(make_subject(draft.target.subject_text))
            turn = (scoring.turn(painting, prompt=draft.target.subject_text) if scoring is not None
                    else Turn(painting=painting))
            chat = revision_messages(messages, draft.draft_reply, feedback_text(turn))
            rows.append({"prompt": chat, "completion": [{"role": "assistant", "content": draft.answer}]})
    return rows


# ---------------------------------------------------------------------------------------
# Mutations: (rng, good sketch) -> flawed code, or None when there is nothing to mutate


def _setup_lines(code: str) -> list[int]:
    """Indexes (into code.splitlines(keepends=True)) of setup()'s own statement lines
    after the canvas is made: where a line may be added."""
    lines = code.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("function setup()"))
    except StopIteration:
        return []
    out = []
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("}"):
            break
        if re.match(r"  [^ /].*;\n$", lines[i]) and "createCanvas" not in lines[i]:
            out.append(i)
    return out


def _add_line(rng: random.Random, code: str, statement: str) -> str | None:
    """`statement` on a line of its own after one of setup()'s statements."""
    where = _setup_lines(code)
    if not where:
        return None
    lines = code.splitlines(keepends=True)
    at = rng.choice(where)
    lines.insert(at + 1, f"  {statement}\n")
    return "".join(lines)


def _point(rng: random.Random) -> tuple[int, int]:
    return rng.randrange(150, 450), rng.randrange(150, 450)


def _bare_primitive(rng: random.Random, base: SeedSketch) -> str | None:
    calls = [m for m in re.finditer(r"brush\.(circle|vertex|beginShape|endShape)\(", base.code)]
    if calls and rng.random() < 0.5:
        call = rng.choice(calls)
        return base.code[: call.start()] + base.code[call.start() + len("brush."):]
    x, y = _point(rng)
    w = rng.randrange(40, 160)
    shape = rng.choice([f"ellipse({x}, {y}, {w}, {w})", f"rect({x}, {y}, {w}, {rng.randrange(20, 80)})"])
    return _add_line(rng, base.code, f"{shape}; // {rng.choice(['a soft centre', 'the vase', 'a shadow'])}")


def _text(rng: random.Random, base: SeedSketch) -> str | None:
    label = rng.choice([base.subject_text, "watercolour", "signed"])
    x, y = rng.randrange(30, 120), rng.randrange(540, 585)
    return _add_line(rng, base.code, f'text("{label}", {x}, {y});')


_FORBIDDEN = (
    'fetch("palette.json");',
    'eval("noLoop()");',
    'const paper = loadImage("paper.jpg");',
    'document.title = "watercolour";',
    'localStorage.setItem("painted", "yes");',
    'setTimeout("redraw()", 100);',
    'const grain = new XMLHttpRequest();',
)


def _forbidden_api(rng: random.Random, base: SeedSketch) -> str | None:
    return _add_line(rng, base.code, rng.choice(_FORBIDDEN))


def _syntax_error(rng: random.Random, base: SeedSketch) -> str | None:
    """A `)` of a brush call, or the closing `}` of a function, left out."""
    code = base.code
    closers = [m.end() - 3 for m in re.finditer(r"brush\.\w+\([^\n]*\);\n", code)]
    braces = [m.start() for m in re.finditer(r"^}\n", code, flags=re.M)]
    spots = closers if rng.random() < 0.5 else braces
    if not spots:
        return None
    at = rng.choice(spots)
    return code[:at] + code[at + 1:]


def _missing_brush(rng: random.Random, base: SeedSketch) -> str | None:
    code = re.sub(r"^[ \t]*brush\.fill\([^\n]*\n", "", base.code, flags=re.M)
    return code if code != base.code else None


def _const_reassign(rng: random.Random, base: SeedSketch) -> str | None:
    names = re.findall(r"^const ([A-Z_]+) = (\d+(?:\.\d+)?);", base.code, flags=re.M)
    if not names:
        return None
    name, value = rng.choice(names)
    number = float(value) * rng.choice([0.5, 0.8, 1.25, 1.5])
    shown = f"{number:.2f}".rstrip("0").rstrip(".") if "." in value else str(round(number))
    return _add_line(rng, base.code, f"{name} = {shown};")


def _undefined_member(rng: random.Random, base: SeedSketch) -> str | None:
    arrays = re.findall(r"^const ([A-Z_]+) = \[", base.code, flags=re.M)
    if not arrays:
        return None
    name = rng.choice(arrays)
    local = rng.choice(["deepest", "accent", "last"])
    return _add_line(rng, base.code, f"const {local} = {name}[{name}.length].toLowerCase();")


_MUTATIONS: dict[str, Callable[[random.Random, SeedSketch], str | None]] = {
    "bare_primitive": _bare_primitive,
    "text": _text,
    "forbidden_api": _forbidden_api,
    "syntax_error": _syntax_error,
    "missing_brush": _missing_brush,
    "const_reassign": _const_reassign,
    "undefined_member": _undefined_member,
}
