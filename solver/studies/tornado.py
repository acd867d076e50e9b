"""Which input moves the cost most: the swings of a sweep, and their tornado chart.

A key's swing is the spread of the mean monthly cost across its values (docs/sweep.md):

- a key with levels: the mean cost of the variants at each level (averaged over every other
  key's values: in a grid each level meets each of them equally often); the swing runs from the
  cheapest level's mean to the dearest's;
- a key drawn from a distribution: the variants are ranked by the value drawn, and the swing
  runs between the mean cost of the lowest third and that of the highest third.

Only variants with a fleet count (an infeasible or failed variant has no cost); the chart says
how many were left out. Bars are sorted widest first, around the mean cost of all variants.
"""

from __future__ import annotations

import io
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from models.text import chart_text
from solver.studies.sweep_results import SweepResult

DPI = 100


@dataclass(frozen=True)
class Swing:
    """How far one key moves the mean monthly cost."""

    key: str
    low_value: str
    """The level (or third of the draws) with the lowest mean cost."""
    low_cost: float
    high_value: str
    high_cost: float
    variants: int
    """Variants with a cost the means were taken over."""

    @property
    def width(self) -> float:
        """high − low mean cost [currency/month]."""
        return self.high_cost - self.low_cost


def _cost(result: SweepResult) -> float | None:
    row = result.row
    return row.cost_per_month if row is not None else None


def _level_means(key: str, costed: Sequence[tuple[SweepResult, float]]
                 ) -> list[tuple[str, float]]:
    by_level: dict[str, list[float]] = {}
    for result, cost in costed:
        value = dict(result.variant.values)[key]
        by_level.setdefault(str(value), []).append(cost)
    return [(level, statistics.fmean(c)) for level, c in by_level.items()]


def _third_means(key: str, costed: Sequence[tuple[SweepResult, float]]
                 ) -> list[tuple[str, float]]:
    ranked = sorted(costed, key=lambda rc: float(dict(rc[0].variant.values)[key]))
    third = len(ranked) // 3
    if third == 0:
        return []
    low, high = ranked[:third], ranked[-third:]
    top_low = float(dict(low[-1][0].variant.values)[key])
    bottom_high = float(dict(high[0][0].variant.values)[key])
    times = "×" if key in ranked[0][0].variant.factors else ""  # a drawn factor, not a value
    return [(f"lowest third (≤ {times}{top_low:.4g})", statistics.fmean(c for _, c in low)),
            (f"highest third (≥ {times}{bottom_high:.4g})",
             statistics.fmean(c for _, c in high))]


def swings(results: Sequence[SweepResult], keys: Sequence[str],
           drawn: Sequence[str] = ()) -> list[Swing]:
    """Each key's swing, widest first (a key with fewer than two values to compare has none).
    ``drawn`` names the keys drawn from a distribution."""
    costed = [(r, c) for r in results if (c := _cost(r)) is not None]
    out = []
    for key in keys:
        means = _third_means(key, costed) if key in drawn else _level_means(key, costed)
        if len(means) < 2:
            continue
        low = min(means, key=lambda m: m[1])
        high = max(means, key=lambda m: m[1])
        out.append(Swing(key, low[0], low[1], high[0], high[1], len(costed)))
    return sorted(out, key=lambda s: (-s.width, s.key))


def tornado_chart(bars: Sequence[Swing], center: float | None, currency: str,
                  left_out: int) -> bytes:
    """PNG of the swings: one bar per key from its cheapest to its dearest mean cost."""
    height = max(2.4, 0.55 * len(bars) + 1.6)
    fig = Figure(figsize=(9.0, height), layout="constrained")
    ax = fig.add_subplot()
    ordered = list(reversed(bars))  # widest at the top
    for y, swing in enumerate(ordered):
        ax.barh(y, swing.width, left=swing.low_cost, color="#0072B2", height=0.6)
        if swing.width == 0:
            ax.annotate("no effect on the cost", (swing.low_cost, y), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=8)
            continue
        ax.annotate(chart_text(swing.low_value), (swing.low_cost, y), xytext=(-4, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=8)
        ax.annotate(chart_text(swing.high_value), (swing.high_cost, y), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", fontsize=8)
    if bars:  # room beside the bars for their labels
        lo = min(s.low_cost for s in bars)
        hi = max(s.high_cost for s in bars)
        pad = 0.35 * (hi - lo) if hi > lo else 0.1 * max(abs(hi), 1.0)
        ax.set_xlim(lo - pad, hi + pad)
    ax.set_yticks(range(len(ordered)), [chart_text(s.key) for s in ordered], fontsize=8)
    if center is not None:
        ax.axvline(center, color="#555555", linewidth=1, linestyle="--")
    ax.xaxis.set_major_formatter("{x:,.0f}")
    ax.set_xlabel(f"mean cost [{chart_text(currency)}/month]")
    note = f"; {left_out} variant(s) without a fleet left out" if left_out else ""
    ax.set_title("Which input moves the cost most (mean cost at each end; dashed: mean of "
                 f"all variants{note})", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    if not bars:
        ax.text(0.5, 0.5, "no key moved the cost (fewer than two costed values per key)",
                transform=ax.transAxes, ha="center", va="center")
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()
