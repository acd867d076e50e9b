"""PNG charts for ``report.md``: cost by zone and purchase kind, capacity vs demand over the day.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend state, no
display needed), returned as PNG bytes so the caller decides where they go. PNG metadata
carries no software version or date, so the same plan gives the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from models.common import PurchaseKind
from models.text import chart_text
from models.workload import HOURS_PER_DAY

#: One colour per purchase kind (reserved, on-demand, spot, owned), colour-blind safe
#: (Okabe-Ito).
KIND_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7")
DPI = 100


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


@dataclass(frozen=True)
class DayPanel:
    """What one workload's panel shows, per hour of the peak day [req/s]."""

    title: str
    demand_rps: Sequence[float]
    usable_rps: Sequence[float]
    capacity_rps: Sequence[float]
    utilization: float
    spot: bool = False
    """The workload runs spot replicas: its usable capacity is discounted by interruption."""

    @property
    def usable_label(self) -> str:
        """Legend of the usable-capacity line: what it is a share of the SLO rate."""
        spot = ", spot × (1 − interruption)" if self.spot else ""
        return f"usable ({self.utilization:.0%} of SLO rate{spot})"


def cost_by_zone_chart(costs: Mapping[tuple[str, PurchaseKind], float], currency: str) -> bytes:
    """Stacked bars: monthly cost of each zone, split by purchase kind [currency/month]."""
    total = sum(costs.values())
    zones = sorted({z for z, _ in costs})
    fig = Figure(figsize=(max(4.0, 1.2 * len(zones) + 2.5), 3.6), layout="constrained")
    ax = fig.add_subplot()
    bottom = [0.0] * len(zones)
    for kind, colour in zip(PurchaseKind, KIND_COLOURS, strict=True):
        heights = [costs.get((z, kind), 0.0) for z in zones]
        if any(h > 0 for h in heights):
            ax.bar([chart_text(z) for z in zones], heights, bottom=bottom, color=colour,
                   label=kind.value.replace("_", "-"))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_ylabel(f"cost [{chart_text(currency)}/month]")
    ax.set_title(f"Monthly cost by zone and purchase kind\ntotal {total:,.0f} "
                 f"{chart_text(currency)}/month", fontsize=10)
    ax.yaxis.set_major_formatter("{x:,.0f}")
    if zones:
        ax.legend(frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def capacity_vs_demand_chart(panels: Sequence[DayPanel]) -> bytes:
    """One panel per workload: demand, usable capacity and capacity at SLO per hour [req/s]."""
    cols = 1 if len(panels) == 1 else 2
    rows = max(1, math.ceil(len(panels) / cols))
    fig = Figure(figsize=(5.2 * cols, 2.6 * rows + 0.4), layout="constrained")
    hours = list(range(HOURS_PER_DAY))
    for i, panel in enumerate(panels):
        ax = fig.add_subplot(rows, cols, i + 1)
        ax.step(hours, panel.capacity_rps, where="mid", color="#999999", linestyle="--",
                label="capacity at SLO")
        ax.step(hours, panel.usable_rps, where="mid", color="#0072B2",
                label=panel.usable_label)
        ax.step(hours, panel.demand_rps, where="mid", color="#D55E00", label="demand")
        ax.set_title(chart_text(panel.title), fontsize=10)
        ax.set_xlim(-0.5, HOURS_PER_DAY - 0.5)
        ax.set_xticks(range(0, HOURS_PER_DAY, 3))
        ax.set_xlabel("hour of the peak day")
        ax.set_ylabel("req/s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, frameon=False, loc="best")
    fig.suptitle("Capacity vs demand over the peak day")
    return _png(fig)
