"""The geometry of the taste judge's reliability diagram on the pool page (an inline SVG:
no plotting library in the page)."""
from __future__ import annotations

import math
from collections.abc import Sequence

from django import template

register = template.Library()

PLOT = 200  # the square's side in SVG units
PAD = 30  # room for the axis labels


@register.simple_tag
def reliability_plot(bins: Sequence[dict] | None) -> dict | None:
    """{"size", "pad", "plot", "ticks", "points"} for reliability_bins rows, or None when there
    are none. A point sits at (mean predicted P, observed share); its area follows its count."""
    if not bins:
        return None
    largest = max(int(b["count"]) for b in bins)

    def x(p: float) -> float:
        return round(PAD + p * PLOT, 1)

    def y(p: float) -> float:
        return round(PAD + (1.0 - p) * PLOT, 1)

    points = [{
        "cx": x(float(b["mean_predicted"])), "cy": y(float(b["observed"])),
        "r": round(2.0 + 8.0 * math.sqrt(int(b["count"]) / largest), 1),
        "low": b["low"], "high": b["high"], "count": b["count"],
        "mean_predicted": b["mean_predicted"], "observed": b["observed"],
    } for b in bins]
    ticks = [{"label": f"{t:.1f}", "x": x(t), "y": y(t)} for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    return {"size": PLOT + 2 * PAD, "pad": PAD, "plot": PLOT, "far": PAD + PLOT, "ticks": ticks, "points": points}
