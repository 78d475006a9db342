"""The legitimate side: sketches that must pass both the gate and the renderer (the good
corpus, the bench sketches that paint, seed-generator sketches, a few pool items, and the
hostile cases' own skeleton)."""
from __future__ import annotations

from pathlib import Path

from paintenv import seedgen
from paintenv.seedgen import SeedSketch
from tests.paintenv.adversarial.skeleton import skeleton

ROOT = Path(__file__).resolve().parents[3]
GOOD_DIR = Path(__file__).resolve().parents[1] / "corpus" / "good"
BENCH_DIR = ROOT / "bench" / "sketches"

# Files under the legit folders that are deliberately not paintings.
LEGIT_EXCLUDED: dict[str, str] = {
    "bench/sketches/trivial.js": "paints nothing by design (measures the per-render overhead)",
}


def _seed_sketches() -> list[SeedSketch]:
    """~40 seed-generator sketches: one per seed subject (so every flower family
    appears), seeds spread over 0..4000, every other one in a weak style (each weak style
    2-3 times); then the generator's own choices of style and subject over the range;
    then a few pool items."""
    out = []
    subjects = seedgen.SEED_SUBJECTS
    step = 3990 // max(1, len(subjects) - 1)
    for i, subject in enumerate(subjects):
        style = "good" if i % 2 == 0 else seedgen.WEAK_STYLES[(i // 2) % len(seedgen.WEAK_STYLES)]
        out.append(seedgen.generate(7 + i * step, style=style, subject_slug=subject.slug))
    for j in range(40 - len(subjects)):
        out.append(seedgen.generate(4000 - j * 283))
    return out


def _legit(seeded: list[SeedSketch], pool: list[SeedSketch]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path in sorted(GOOD_DIR.glob("*.js")):
        out.append((f"good/{path.name}", path.read_text()))
    for path in sorted(BENCH_DIR.glob("*.js")):
        rel = f"bench/sketches/{path.name}"
        if rel not in LEGIT_EXCLUDED:
            out.append((rel, path.read_text()))
    out += [(f"seedgen/{sk.id}", sk.code) for sk in seeded]
    out += [(f"pool/{sk.id}", sk.code) for sk in pool]
    out.append(("adversarial/skeleton", skeleton()))
    names = [n for n, _ in out]
    assert len(names) == len(set(names)), "duplicate legit names"
    return out


def _pool() -> list[SeedSketch]:
    return seedgen.generate_pool(6, seed=3)


# The SeedSketch records behind the seedgen/ and pool/ entries of LEGIT.
_SEEDED = _seed_sketches()
_POOL = _pool()
LEGIT_SEEDGEN: list[SeedSketch] = _SEEDED + _POOL
LEGIT: list[tuple[str, str]] = _legit(_SEEDED, _POOL)
LEGIT_NAMES: frozenset[str] = frozenset(name for name, _ in LEGIT)
