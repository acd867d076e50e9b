"""Figures a reviewer reads, derived from a plan: one formula per figure.

The derivations (GPUs by type, demand vs capacity per slice, survivability margins, reserved
share) are pure functions of a :class:`~models.plan.Plan` and its
:class:`~models.scenario.Scenario`; the workbook, the comparison and the report all read them, so
one figure has one formula (documented in docs/outputs.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from models.capacity import CapacityTable
from models.common import PurchaseKind
from models.plan import HorizonSummary, Plan, Slice
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import HOURS_PER_DAY, Workload
from solver.survivability.failures import spot_available_share, volume_demand_rps

#: Purchase kinds in the order they are shown everywhere.
PURCHASE_ORDER = (PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.spot,
                  PurchaseKind.owned)


@dataclass(frozen=True)
class GpuCount:
    """GPUs held in one zone, of one type, bought one way, at the busiest slice."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    gpus: int
    """Reserved: the GPUs bought; elastic: the most GPUs running in any one slice [GPUs]."""
    cost_per_month: float
    """All rows of this zone, GPU and kind (every slice) [currency/month]."""


@dataclass(frozen=True)
class SliceFigures:
    """Demand and capacity of one workload in one slice of the peak day."""

    workload: str
    slice: str
    demand_rps: float
    """Busiest hour of the slice: peak × hourly share, or the batch volume spread evenly [1/s]."""
    capacity_rps: float
    """Σ replicas × SLO-holding rate of the replicas running in the slice [1/s]."""
    expected_rps: float
    """The same with spot replicas discounted by their zone's interruption rate [1/s]."""
    usable_rps: float
    """Σ replicas × rate × target utilization (× (1 − interruption) for spot) [1/s]."""
    work_rps: float
    """The rate the workload's requests run at in the slice [1/s]: its demand, or for a batch
    volume its share of the work done there, in proportion to the expected capacity
    (:func:`batch_work_rps`) — what utilization and capacity headroom read."""


def batch_work_rps(plan: Plan, workload: Workload, expected_rps: dict[str, float]
                   ) -> dict[str, float]:
    """Slice → the rate a batch workload's daily volume runs at there [1/s]: the program places
    the volume anywhere in its window (docs/program.md, C1), so the work in a slice is the
    volume × the slice's share of the capacity the window gives it
    (:func:`~solver.survivability.failures.volume_demand_rps`, as the survivability rows and
    the verifier judge it). Read against the capacity there, every slice then shows the same
    utilization: the volume ÷ what the fleet can do in the window. The even spread over the
    window (``demand_rps``) against a fleet that runs the work in three of its six hours read
    130 % in one and nothing in the others (trust-s22)."""
    blocks = [TimeBlock(name=s.name, hours=s.hours) for s in plan.slices]
    return volume_demand_rps(workload, blocks, expected_rps)


@dataclass(frozen=True)
class Margin:
    """Worst survivability margin of one workload under one failure, over every slice."""

    failure: str
    workload: str
    slice: str
    capacity_rps: float
    demand_rps: float
    margin: float | None
    """(capacity − demand) ÷ demand at the worst slice [1]; ``None`` where demand is zero."""
    holds: bool
    """The plan's own verdict: true only if it holds in every slice."""


def gpu_counts(plan: Plan) -> tuple[GpuCount, ...]:
    """GPUs per (zone, GPU, purchase kind): reserved as bought, elastic at its busiest slice."""
    peak: dict[tuple[str, str, PurchaseKind], int] = defaultdict(int)
    cost: dict[tuple[str, str, PurchaseKind], float] = defaultdict(float)
    for n in plan.nodes:
        key = (n.zone, n.gpu, n.purchase)
        peak[key] = max(peak[key], n.gpus)
        cost[key] += n.cost_per_month
    order = {k: i for i, k in enumerate(PURCHASE_ORDER)}
    keys = sorted(peak, key=lambda k: (k[0], k[1], order[k[2]]))
    return tuple(GpuCount(z, g, p, peak[(z, g, p)], cost[(z, g, p)]) for z, g, p in keys)


def gpus_by(plan: Plan, field: str) -> dict[str, int]:
    """Sum of :func:`gpu_counts` by ``zone``, ``gpu`` or ``purchase`` [GPUs], sorted by key."""
    out: dict[str, int] = defaultdict(int)
    for c in gpu_counts(plan):
        out[str(getattr(c, field))] += c.gpus
    return dict(sorted(out.items()))


def cost_by_zone_and_kind(plan: Plan) -> dict[tuple[str, PurchaseKind], float]:
    """Monthly cost per (zone, purchase kind), from the node rows [currency/month]."""
    out: dict[tuple[str, PurchaseKind], float] = defaultdict(float)
    for n in plan.nodes:
        out[(n.zone, n.purchase)] += n.cost_per_month
    return dict(out)


def reserved_share(plan: Plan) -> float | None:
    """Share of the monthly cost paid for reserved capacity alone [1]; ``None`` for a zero-cost
    plan."""
    return _cost_share(plan, (PurchaseKind.reserved,))


#: Purchase kinds that are committed capacity: bought by an order binding for a term (reserved)
#: or a hardware life (owned), running every hour (models.common.PurchaseKind).
COMMITTED_KINDS = (PurchaseKind.reserved, PurchaseKind.owned)


def committed_share(plan: Plan) -> float | None:
    """Share of the monthly cost paid for committed capacity, reserved and owned [1]; ``None``
    for a zero-cost plan. The figure ``compare``, the comparison workbook and report.md show:
    an all-owned fleet read 0 % as a "reserved share"."""
    return _cost_share(plan, COMMITTED_KINDS)


def _cost_share(plan: Plan, kinds: tuple[PurchaseKind, ...]) -> float | None:
    total = sum(n.cost_per_month for n in plan.nodes)
    if total <= 0:
        return None
    return sum(n.cost_per_month for n in plan.nodes if n.purchase in kinds) / total


def slice_demand_rps(workload: Workload, slice_: Slice) -> float:
    """Demand of a slice: its busiest hour (the program plans each slice for its peak) [1/s]."""
    hourly = workload.hourly_demand_rps()
    return max(hourly[h] for h in slice_.hours)


def slice_figures(plan: Plan, scenario: Scenario) -> tuple[SliceFigures, ...]:
    """Demand and capacity of every workload in every slice, in slice then workload order.

    Usable capacity counts as the program does: Σ replicas × SLO-holding rate × target
    utilization, spot replicas discounted by their zone's interruption rate.
    """
    out = []
    for slice_ in plan.slices:
        for wl in scenario.workloads:
            running = [a for a in plan.allocations
                       if a.workload == wl.name and a.slice in (None, slice_.name)]
            capacity = sum(a.replicas * a.replica_capacity_rps for a in running)
            expected = sum(
                a.replicas * a.replica_capacity_rps  # [1/s]
                * (spot_available_share(scenario, a.zone, a.gpu)
                   if a.purchase is PurchaseKind.spot else 1.0)
                for a in running)
            out.append(SliceFigures(
                workload=wl.name,
                slice=slice_.name,
                demand_rps=slice_demand_rps(wl, slice_),
                work_rps=slice_demand_rps(wl, slice_),
                capacity_rps=capacity,
                expected_rps=expected,
                usable_rps=expected * wl.utilization,
            ))
    return _with_batch_work(plan, scenario, out)


def _with_batch_work(plan: Plan, scenario: Scenario, figures: list[SliceFigures]
                     ) -> tuple[SliceFigures, ...]:
    """``figures`` with each batch workload's :attr:`SliceFigures.work_rps` set
    (:func:`batch_work_rps`); the others as they are."""
    for wl in scenario.workloads:
        if wl.batch is None:
            continue
        mine = {f.slice: f.expected_rps for f in figures if f.workload == wl.name}
        work = batch_work_rps(plan, wl, mine)
        figures = [replace(f, work_rps=work[f.slice]) if f.workload == wl.name else f
                   for f in figures]
    return tuple(figures)


def peak_utilization(figures: Sequence[SliceFigures], workload: str) -> float | None:
    """Highest demand ÷ capacity at SLO over the slices of one workload [1], spot replicas at
    their expected rate (as the program counts them); ``None`` without capacity."""
    ratios = [f.work_rps / f.expected_rps for f in figures
              if f.workload == workload and f.expected_rps > 0]
    return max(ratios) if ratios else None


def _margin(capacity: float, demand: float) -> float | None:
    return (capacity - demand) / demand if demand > 0 else None


def survivability_margins(plan: Plan) -> tuple[Margin, ...]:
    """Worst slice per (failure, workload) of the plan's survivability rows, in plan order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, row in enumerate(plan.survivability):
        groups.setdefault((row.failure, row.workload), []).append(i)
    out = []
    for (failure, workload), idx in groups.items():
        rows = [plan.survivability[i] for i in idx]
        worst = min(rows, key=lambda r: (r.capacity_rps - r.demand_rps) / r.demand_rps
                    if r.demand_rps > 0 else float("inf"))
        out.append(Margin(failure, workload, worst.slice, worst.capacity_rps, worst.demand_rps,
                          _margin(worst.capacity_rps, worst.demand_rps),
                          all(r.holds for r in rows)))
    return tuple(out)


def intact_at_failure_utilization(m: Margin, scenario: Scenario) -> Margin | None:
    """A workload's no-failure margin with its capacity at the failure utilization, the basis
    of every failure row, where the no-failure row counts the target utilization (70 %, say,
    against 100 %): beside this one a failure's margin can only be lower or equal, while beside
    the no-failure row a failure that spares the workload showed more margin than no failure
    (qa4 11). For comparison only: the no-failure verdict stays at the target utilization.
    ``None`` for a workload the scenario does not have."""
    wl = next((w for w in scenario.workloads if w.name == m.workload), None)
    if wl is None:
        return None
    target = wl.utilization
    capacity = m.capacity_rps / target * scenario.policy.failure_utilization
    return Margin(m.failure, m.workload, m.slice, capacity, m.demand_rps,
                  _margin(capacity, m.demand_rps), m.holds)


def tightest_cases(margins: Sequence[Margin], workloads: Sequence[str],
                    ) -> list[tuple[Margin, int, int]]:
    """Per workload (in scenario order): its least margin over its rows (no failure and the
    failures it was checked against), how many failures it was checked against — rows other
    than ``none``, the count the printed summary's *Failures checked* gives (the workbook
    counted the no-failure row too: chat 11 there, 10 in the terminal) — and how many of its
    rows fail."""
    out = []
    for name in workloads:
        rows = [m for m in margins if m.workload == name]
        if rows:
            worst = min(rows, key=lambda m: (m.holds, m.margin if m.margin is not None
                                             else float("inf")))
            failures = sum(m.failure != "none" for m in rows)
            out.append((worst, failures, sum(not m.holds for m in rows)))
    return out


def tokens_per_month(plan: Plan) -> float:
    """All tokens (input + output) the plan carries in a month, from its cost attribution."""
    return sum(w.tokens_per_month for w in plan.workload_costs)


def tenant_costs(plan: Plan) -> dict[str, tuple[float, float]]:
    """Per tenant: (cost per month [currency/month], tokens per month), sorted by tenant."""
    out: dict[str, tuple[float, float]] = {}
    for w in plan.workload_costs:
        cost, tokens = out.get(w.tenant, (0.0, 0.0))
        out[w.tenant] = (cost + w.cost_per_month, tokens + w.tokens_per_month)
    return dict(sorted(out.items()))


def used_configs(plan: Plan, table: CapacityTable) -> tuple[tuple[str, str, int], ...]:
    """(workload, GPU, TP) configurations the plan allocates replicas to, in table order."""
    used = {(a.workload, a.gpu, a.tp) for a in plan.allocations if a.replicas > 0}
    seen: list[tuple[str, str, int]] = []
    for r in table.rows:
        key = (r.workload, r.gpu, r.tp)
        if key in used and key not in seen:
            seen.append(key)
    seen.extend(sorted(used - set(seen)))
    return tuple(seen)


def cost_by_zone_gpu_and_kind(plan: Plan) -> dict[tuple[str, str, PurchaseKind], float]:
    """Monthly cost per (zone, GPU type, purchase kind), from the node rows [currency/month]."""
    out: dict[tuple[str, str, PurchaseKind], float] = defaultdict(float)
    for n in plan.nodes:
        out[(n.zone, n.gpu, n.purchase)] += n.cost_per_month
    return dict(out)


def capacity_headroom(figures: Sequence[SliceFigures], workload: str) -> float | None:
    """Demand growth the intact fleet absorbs at the SLO before its tightest slice is full [1]:
    min over slices with demand of expected capacity at SLO ÷ demand − 1 (spot replicas at
    their expected rate). ``None`` without demand or capacity."""
    ratios = [f.expected_rps / f.work_rps - 1.0 for f in figures
              if f.workload == workload and f.work_rps > 0 and f.expected_rps > 0]
    return min(ratios) if ratios else None


@dataclass(frozen=True)
class DaySeries:
    """One workload's figures for every hour of the peak day [req/s], in the scenario's time
    zone (hour h covers [h, h + 1))."""

    workload: str
    demand_rps: tuple[float, ...]
    """The workload's demand in each hour: peak × hourly share, or the batch volume spread
    evenly over its window (zero outside it)."""
    usable_rps: tuple[float, ...]
    """Usable capacity of the slice holding the hour (:class:`SliceFigures`)."""
    after_failure_rps: tuple[float, ...] | None
    """Capacity left after the worst failure the workload must survive, in the slice holding
    the hour (replicas at the policy's failure utilization); ``None`` when it must survive
    none."""
    worst_failure: tuple[str, ...]
    """Per hour, the failure leaving the least capacity (``""`` where there is none)."""
    utilization: float
    """The workload's target utilization [1]."""
    spot: bool
    """The workload runs spot replicas (its usable capacity is discounted by interruption)."""
    batch_window: tuple[int, ...]
    """Hours of a batch workload's window (empty for an interactive workload)."""


def day_series(plan: Plan, scenario: Scenario) -> tuple[DaySeries, ...]:
    """Per workload, the hour-by-hour series the capacity-vs-demand charts draw."""
    figures = {(f.workload, f.slice): f for f in slice_figures(plan, scenario)}
    hour_slice = {h: s.name for s in plan.slices for h in s.hours}
    out = []
    for wl in scenario.workloads:
        slices = [hour_slice.get(h, "") for h in range(HOURS_PER_DAY)]
        usable = tuple(f.usable_rps if (f := figures.get((wl.name, sl))) else 0.0
                       for sl in slices)
        worst: dict[str, tuple[float, str]] = {}
        for row in plan.survivability:
            if row.workload == wl.name and row.failure != "none":
                old = worst.get(row.slice)
                if old is None or row.capacity_rps < old[0]:
                    worst[row.slice] = (row.capacity_rps, row.failure)
        after = (tuple(worst[sl][0] if sl in worst else 0.0 for sl in slices)
                 if worst else None)
        out.append(DaySeries(
            workload=wl.name,
            demand_rps=wl.hourly_demand_rps(),
            usable_rps=usable,
            after_failure_rps=after,
            worst_failure=tuple(worst[sl][1] if sl in worst else "" for sl in slices),
            utilization=wl.utilization,
            spot=any(a.workload == wl.name and a.purchase is PurchaseKind.spot
                     for a in plan.allocations),
            batch_window=wl.batch.window_hours if wl.batch is not None else (),
        ))
    return tuple(out)


def objective_cost(h: HorizonSummary) -> float:
    """A plan over periods' objective as minimised: the expected cost, or (``--robust``) the
    worst demand scenario's [currency]."""
    return h.worst_cost if h.objective == "worst_case" else h.expected_cost
