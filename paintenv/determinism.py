"""Does a painting depend on anything but its seed?

The render page seeds every random source and runs every clock virtually, and the
browser runs V8 on one thread so a sketch cannot read a timing-dependent stack budget
(render_config.py). What is left is caught by painting the sketch a second time with the
same seed and comparing: a sketch whose two paintings differ by more than same-seed
renders ever do fails with `nondeterministic`, a verdict like any other (worth 0).

Same-seed renders of one sketch paint strokes exactly and p5.brush's watercolour fills
within `TOLERANCE_SHARE` of the pixels at `TOLERANCE_LEVELS` (measured on every seed and
corpus sketch; bench/determinism.py prints the largest differences it sees). A sketch
that moves a single 20-pixel mark between renders changes ~0.1% of a 600 px canvas, so the
tolerance refuses any layout that moves.

Checking costs one more render of the sketch, so the trainer checks a sample of the
paintings that passed (1 in PAINTAPP_DETERMINISM_EVERY), and evaluation and the editor
check every one.
"""
from __future__ import annotations

from dataclasses import dataclass

from paintenv.image import image_diff_fraction
from paintenv.sandbox import NONDETERMINISTIC

__all__ = ["NONDETERMINISTIC", "TOLERANCE_LEVELS", "TOLERANCE_SHARE", "Comparison", "compare_paintings"]

TOLERANCE_LEVELS = 32  # a pixel differs when a channel moves by more than this (0-255)
TOLERANCE_SHARE = 0.0005  # 0.05% of the pixels may differ


@dataclass(frozen=True)
class Comparison:
    """Two renders of one (sketch, seed): whether they agree, and by how much they differ."""

    same: bool
    differing_share: float  # pixels differing by more than TOLERANCE_LEVELS
    reason: str = ""

    def to_dict(self) -> dict:
        return {"same": self.same, "differing_share": round(self.differing_share, 6), "reason": self.reason}


def compare_paintings(first_png: bytes | None, first_violations: list[str], second_png: bytes | None,
                      second_violations: list[str]) -> Comparison:
    """Compare two renders' outcomes: a verdict that changes, or pictures that differ beyond
    the same-seed tolerance, mean the painting depends on something besides its seed."""
    if sorted(first_violations) != sorted(second_violations):
        return Comparison(False, 1.0, f"the verdict changed between two renders: {sorted(first_violations)} "
                                      f"then {sorted(second_violations)}")
    if first_png is None or second_png is None:
        return Comparison(first_png is None and second_png is None, 0.0 if first_png == second_png else 1.0)
    if first_png == second_png:
        return Comparison(True, 0.0)
    try:
        share = image_diff_fraction(first_png, second_png, tol=TOLERANCE_LEVELS)
    except ValueError as exc:  # different sizes
        return Comparison(False, 1.0, f"the two renders differ in size: {exc}")
    if share > TOLERANCE_SHARE:
        return Comparison(False, share, f"{share:.2%} of the pixels changed between two renders with the same "
                                        f"seed (same-seed renders stay within {TOLERANCE_SHARE:.2%})")
    return Comparison(True, share)
