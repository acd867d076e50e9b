"""PNG charts for ``report.md``: what the plan costs where, and what it is sized for.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend state, no
display needed). The ``*_figure`` functions return the figure (tests read its series back);
:func:`png` renders one to bytes. PNG metadata carries no software version or date, so the same
plan gives the same bytes.

- :func:`cost_by_zone_figure`: monthly cost of each zone, stacked by GPU type × purchase kind,
  each segment and each bar's total labelled with its value.
- :func:`capacity_vs_demand_figure`: per workload, hour by hour in the scenario's time zone,
  demand, usable capacity and the capacity left after the worst failure the workload must
  survive, as steps on the hour; a batch window is shaded over its hours, with the work it
  carries as its demand.
- :func:`capacity_by_period_figure`: a plan over periods (quarters): per workload, each period's
  peak demand and usable capacity, one colour per demand scenario.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from models.common import PurchaseKind
from models.plan import Plan
from models.text import chart_text
from models.workload import HOURS_PER_DAY
from solver.outputs.figures import DaySeries
from solver.outputs.labels import label

#: One colour per GPU type, in order of first appearance (Okabe-Ito, colour-blind safe).
GPU_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000")
#: Each purchase kind a fill pattern, so a GPU type's kinds share its colour.
KIND_HATCH = {PurchaseKind.reserved: "", PurchaseKind.owned: "..", PurchaseKind.on_demand: "//",
              PurchaseKind.spot: "xx"}
KIND_ORDER = (PurchaseKind.owned, PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.spot)
DPI = 100
#: Legend and label size [pt]: readable when the PNG is shown at its size in a report.
TEXT_PT = 9
#: Line labels of the capacity-vs-demand panels (tests find the series by them).
DEMAND, USABLE, AFTER_FAILURE, WINDOW = ("demand", "usable capacity",
                                         "after the worst required failure", "batch window")


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes, without software or date metadata."""
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _money(value: float) -> str:
    return f"{value / 1000:,.1f}k" if value >= 1_000 else f"{value:,.0f}"


def cost_by_zone_figure(costs: Mapping[tuple[str, str, PurchaseKind], float],
                        currency: str) -> Figure:
    """Stacked bars: monthly cost of each zone by GPU type × purchase kind [currency/month].

    A GPU type has one colour, a purchase kind one fill pattern; each segment large enough to
    hold it carries its value, and each bar its zone's total.
    """
    zones = sorted({z for z, _, _ in costs})
    gpus = sorted({g for _, g, _ in costs})
    colour = {g: GPU_COLOURS[i % len(GPU_COLOURS)] for i, g in enumerate(gpus)}
    total = sum(costs.values())
    fig = Figure(figsize=(max(5.5, 1.5 * len(zones) + 3.5), 4.2), layout="constrained")
    ax = fig.add_subplot()
    bottom = [0.0] * len(zones)
    tallest = max((sum(v for (z, _, _), v in costs.items() if z == zone) for zone in zones),
                  default=0.0)
    for gpu in gpus:
        for kind in KIND_ORDER:
            heights = [costs.get((z, gpu, kind), 0.0) for z in zones]
            if not any(h > 0 for h in heights):
                continue
            bars = ax.bar([chart_text(z) for z in zones], heights, bottom=bottom, color=colour[gpu],
                          hatch=KIND_HATCH[kind], edgecolor="white", linewidth=0.8,
                          label=chart_text(f"{gpu} {label(kind).lower()}"))
            ax.bar_label(bars, labels=[_money(h) if h >= 0.06 * tallest else ""
                                       for h in heights],
                         label_type="center", fontsize=TEXT_PT - 1, color="white",
                         fontweight="bold")
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    for i, height in enumerate(bottom):
        if height > 0:
            ax.annotate(_money(height), (i, height), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=TEXT_PT, fontweight="bold")
    ax.set_ylabel(f"cost [{chart_text(currency)}/month]", fontsize=TEXT_PT)
    ax.set_title(f"Monthly cost by zone, GPU type and purchase kind: total {total:,.0f} "
                 f"{chart_text(currency)}/month", fontsize=TEXT_PT + 1)
    ax.yaxis.set_major_formatter("{x:,.0f}")
    ax.set_ylim(0, tallest * 1.12 if tallest > 0 else 1.0)
    ax.tick_params(labelsize=TEXT_PT)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if zones:
        ax.legend(fontsize=TEXT_PT, frameon=False, loc="upper left",
                  bbox_to_anchor=(1.0, 1.0))
    return fig


def _steps(values: Sequence[float]) -> tuple[list[int], list[float]]:
    """x and y of a step line holding ``values[h]`` over each hour [h, h + 1)."""
    return list(range(len(values) + 1)), [*values, values[-1]]


def _runs(hours: Sequence[int]) -> list[tuple[int, int]]:
    """Contiguous runs of hours as [start, end) spans (a window may wrap past midnight)."""
    spans: list[tuple[int, int]] = []
    for h in sorted(hours):
        if spans and spans[-1][1] == h:
            spans[-1] = (spans[-1][0], h + 1)
        else:
            spans.append((h, h + 1))
    return spans


#: Margins of a grid of panels, in inches (:func:`panel_grid`): left of the panels (y tick
#: labels of five digits and the axis label), right, above (the figure's title), below (the
#: bottom row's x axis and the legend), between columns (the next panel's y axis) and rows
#: (a panel's x axis and the next one's title).
GRID_LEFT_IN, GRID_RIGHT_IN, GRID_TOP_IN, GRID_BOTTOM_IN = 0.8, 0.2, 0.75, 0.95
GRID_WSPACE_IN, GRID_HSPACE_IN = 0.85, 0.8
#: The figure's title below its top edge, and a legend row's height [in]: one column is too
#: narrow for the four entries of a legend in a row (main's one-panel chart cut its ends), so
#: it stacks them, on a figure taller by three rows.
GRID_TITLE_IN, LEGEND_ROW_IN = 0.1, 0.2


def panel_grid(panels: int, title: str) -> tuple[Figure, int, int]:
    """A figure titled ``title`` for ``panels`` panels of 6 × 2.9 in, two to a row (one alone),
    and its rows and columns, laid out at fixed margins (:data:`GRID_LEFT_IN`…; one column
    keeps room for a legend of four rows): matplotlib's constrained layout measured every tick
    label twice and took 40 % of the capacity-vs-demand chart's drawing (1.5 of 2.0 CPU-s for
    the 12 panels of the large benchmark size)."""
    cols = 1 if panels == 1 else 2
    rows = max(1, math.ceil(panels / cols))
    stacked_in = 3 * LEGEND_ROW_IN if cols == 1 else 0.0
    width_in, height_in = 6.0 * cols, 2.9 * rows + 0.9 + stacked_in
    fig = Figure(figsize=(width_in, height_in))
    bottom_in = GRID_BOTTOM_IN + stacked_in
    panel_w = (width_in - GRID_LEFT_IN - GRID_RIGHT_IN - (cols - 1) * GRID_WSPACE_IN) / cols
    panel_h = (height_in - GRID_TOP_IN - bottom_in - (rows - 1) * GRID_HSPACE_IN) / rows
    fig.subplots_adjust(left=GRID_LEFT_IN / width_in, right=1 - GRID_RIGHT_IN / width_in,
                        top=1 - GRID_TOP_IN / height_in, bottom=bottom_in / height_in,
                        wspace=GRID_WSPACE_IN / panel_w, hspace=GRID_HSPACE_IN / panel_h)
    fig.suptitle(title, fontsize=TEXT_PT + 2, y=1 - GRID_TITLE_IN / height_in, va="top")
    return fig, rows, cols


def capacity_vs_demand_figure(series: Sequence[DaySeries], time_zone: str,
                              failure_utilization: float) -> Figure:
    """One panel per workload, hour by hour of the peak day [req/s]: demand, usable capacity and
    capacity after the worst failure the workload must survive, as steps on the hour."""
    fig, rows, cols = panel_grid(len(series), "Capacity vs demand over the peak day")
    for i, s in enumerate(series):
        ax = fig.add_subplot(rows, cols, i + 1)
        for start, end in _runs(s.batch_window):
            ax.axvspan(start, end, color="#999999", alpha=0.18, linewidth=0,
                       label=WINDOW if start == _runs(s.batch_window)[0][0] else None)
        if s.after_failure_rps is not None:
            ax.step(*_steps(s.after_failure_rps), where="post", color="#009E73",
                    linestyle="--", linewidth=1.6, label=AFTER_FAILURE)
        ax.step(*_steps(s.usable_rps), where="post", color="#0072B2", linewidth=1.8,
                label=USABLE)
        ax.step(*_steps(s.demand_rps), where="post", color="#D55E00", linewidth=1.8,
                label=DEMAND)
        spot = ", spot × (1 − interruption)" if s.spot else ""
        ax.set_title(chart_text(f"{s.workload}: usable = {s.utilization:.0%} of SLO rate{spot}"),
                     fontsize=TEXT_PT + 1)
        ax.set_xlim(0, HOURS_PER_DAY)
        ax.set_xticks(range(0, HOURS_PER_DAY + 1, 3))
        ax.set_xlabel(f"hour of the peak day ({chart_text(time_zone)})", fontsize=TEXT_PT)
        ax.set_ylabel("req/s", fontsize=TEXT_PT)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=TEXT_PT)
        ax.grid(alpha=0.3)
    handles: dict[str, Artist] = {}
    for ax in fig.axes:
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(text, handle)
    names = {AFTER_FAILURE: f"{AFTER_FAILURE} (at {failure_utilization:.0%} of SLO rate)",
             USABLE: f"{USABLE} (target utilization of the SLO rate)"}
    order = [t for t in (DEMAND, USABLE, AFTER_FAILURE, WINDOW) if t in handles]
    fig.legend([handles[t] for t in order], [names.get(t, t) for t in order],
               loc="lower center", ncols=len(order) if cols > 1 else 1, fontsize=TEXT_PT,
               frameon=False)
    return fig


def capacity_by_period_figure(plan: Plan) -> Figure:
    """A plan over periods: per workload, each period's peak demand and usable capacity, one
    colour per demand scenario, as steps held over each period [req/s]."""
    workloads = sorted({w.workload for p in plan.periods for w in p.workloads})
    scenarios = list(dict.fromkeys(p.scenario for p in plan.periods))
    fig, rows, cols = panel_grid(len(workloads), "Peak demand and usable capacity per period")
    colour = {s: GPU_COLOURS[i % len(GPU_COLOURS)] for i, s in enumerate(scenarios)}
    for i, name in enumerate(workloads):
        ax = fig.add_subplot(rows, cols, i + 1)
        for scenario in scenarios:
            periods = sorted((p for p in plan.periods if p.scenario == scenario),
                             key=lambda p: p.period)
            found = [(p, next((w for w in p.workloads if w.workload == name), None))
                     for p in periods]
            demand = [w.demand_rps if w else 0.0 for _, w in found]
            usable = [w.capacity_rps if w else 0.0 for _, w in found]
            if not demand:
                continue
            ax.step(*_steps(demand), where="post", color=colour[scenario], linewidth=1.8,
                    label=chart_text(f"{scenario}: {DEMAND}"))
            ax.step(*_steps(usable), where="post", color=colour[scenario], linewidth=1.4,
                    linestyle="--", label=chart_text(f"{scenario}: {USABLE}"))
            ax.set_xticks(range(len(periods)),
                          [p.start.isoformat() for p in periods], fontsize=TEXT_PT - 1)
        ax.set_title(chart_text(name), fontsize=TEXT_PT + 1)
        ax.set_xlabel("period (start date)", fontsize=TEXT_PT)
        ax.set_ylabel("req/s", fontsize=TEXT_PT)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=TEXT_PT)
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=TEXT_PT - 1, frameon=False)
    return fig
