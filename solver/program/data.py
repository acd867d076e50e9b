"""Plain data the fleet integer program is built from, derived from a scenario and a capacity table.

Pure: no solver, no I/O. Everything the builder in :mod:`solver.program.build` reads is here,
already
indexed by sorted domain labels so the program (and its variable names) is deterministic.

Reductions that never change the optimum are applied here, each switchable for tests:

- *dominated candidates*: on one GPU type, a configuration whose TP is a multiple of another's
  and whose rate per GPU is no higher is dropped (``tp'/tp`` replicas of the other use the same
  GPUs, carry at least as much, and lose no more per node than the pair could);
- *slice groups*: blocks of the day with equal demand for every workload and outside every
  batch window are planned as one slice (their elastic choice is the same; hours add up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from models.capacity import CapacityRow, CapacityTable
from models.common import CapacitySource, PurchaseKind, Survivability, WorkloadClass
from models.offers import SpotTerms
from models.scenario import Scenario
from models.workload import HOURS_PER_DAY
from solver.program.keys import StockKey

#: Purchase kinds whose capacity may differ by slice and is paid for the hours it runs.
ELASTIC_KINDS = (PurchaseKind.on_demand, PurchaseKind.spot)


@dataclass(frozen=True)
class Candidate:
    """One feasible configuration of one workload: what a replica carries at its SLO."""

    workload: str
    gpu: str
    tp: int
    """GPUs per replica, all in one node."""
    slo_rps: float
    """SLO-holding rate of one replica [1/s]."""
    source: CapacitySource


@dataclass(frozen=True)
class OfferTerm:
    """One purchase kind of one GPU type in one zone."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    gpus_per_node: int
    price_per_gpu_hour: float
    """[currency/(GPU·h)]."""
    stock_gpus: int
    available_share: float = 1.0
    """Expected share of this capacity serving at any time [1]: spot's
    :attr:`~models.offers.SpotTerms.available_share`, 1 for every other kind."""
    instance_type: str | None = None


@dataclass(frozen=True)
class SliceGroup:
    """Blocks of the peak day planned as one slice."""

    name: str
    blocks: tuple[str, ...]
    """Names of the policy's time blocks in this group."""
    hours_per_day: int
    """Hours of the day the group covers [h]."""


@dataclass(frozen=True)
class WorkloadInfo:
    """What the program needs of a workload besides its demand."""

    name: str
    tenant: str
    utilization: float
    """Target utilization: usable capacity = SLO-holding rate × this [1]."""
    survivability: Survivability
    interactive: bool


@dataclass(frozen=True)
class ProgramData:
    """Index sets and parameters of the fleet program (see :mod:`solver.program.build`)."""

    workloads: tuple[WorkloadInfo, ...]
    candidates: tuple[Candidate, ...]
    offers: tuple[OfferTerm, ...]
    slices: tuple[SliceGroup, ...]
    zones: tuple[str, ...]
    demand_rps: Mapping[tuple[str, str], float]
    """Fixed demand per (workload, slice) [1/s], the busiest hour of the slice; absent = none."""
    volume_requests: Mapping[str, float]
    """Daily volume of batch workloads that may place work anywhere in their window [requests]."""
    hours_in_window: Mapping[tuple[str, str], int]
    """Hours of a slice inside a volume workload's window [h]; absent = none."""
    failure_utilization: float
    hours_per_month: float
    monthly_budget: float | None
    currency: str
    dropped: tuple[Candidate, ...] = field(default=())
    """Candidates removed as dominated (for explanations)."""
    share_nodes: bool = False
    """Replicas of different workloads may share a node (else each workload has its own pools)."""
    stock_taken: Mapping[StockKey, int] = field(
        default_factory=dict)
    """GPUs per (zone, gpu, purchase, slice or None) already bought by workloads outside this
    program (a part of the fleet solved on its own); the stock rows leave them out."""

    def stock_left(self, o: OfferTerm, slice_name: str | None) -> int:
        """GPUs of an offer this program may still buy in a slice (reserved: ``None``)."""
        return o.stock_gpus - self.stock_taken.get(
            StockKey(o.zone, o.gpu, o.purchase, slice_name), 0)

    def workload(self, name: str) -> WorkloadInfo:
        """Workload by name."""
        return next(w for w in self.workloads if w.name == name)

    def paid_hours_per_month(self, slice_name: str) -> float:
        """Hours per month elastic capacity of a slice is paid for [h/month]."""
        sl = next(s for s in self.slices if s.name == slice_name)
        return sl.hours_per_day * self.hours_per_month / HOURS_PER_DAY

    def candidates_of(self, workload: str) -> tuple[Candidate, ...]:
        """Candidates of one workload."""
        return self._candidates_by_workload.get(workload, ())

    @cached_property
    def _candidates_by_workload(self) -> dict[str, tuple[Candidate, ...]]:
        # the builder asks per slot and per pool: index once (a frozen dataclass may cache)
        out: dict[str, list[Candidate]] = {}
        for c in self.candidates:
            out.setdefault(c.workload, []).append(c)
        return {w: tuple(cs) for w, cs in out.items()}

    @cached_property
    def node_rps_cache(self) -> dict[tuple[str, str, int], float]:
        """Memo of :func:`solver.program.packing.worst_node_rps` by (workload, GPU, GPUs per
        node)."""
        return {}

    def demand_slices(self, workload: str) -> tuple[str, ...]:
        """Slices in which a workload has demand (fixed or a share of its volume)."""
        return tuple(
            s.name
            for s in self.slices
            if self.demand_rps.get((workload, s.name), 0.0) > 0
            or self.hours_in_window.get((workload, s.name), 0) > 0
        )


def candidates_from_table(
    scenario: Scenario, table: CapacityTable, prune: bool = True
) -> tuple[tuple[Candidate, ...], tuple[Candidate, ...]]:
    """Candidates per workload from the capacity table; returns (kept, dropped as dominated).

    Rows outside a workload's ``allowed_gpus`` are ignored; where two rows share a
    (workload, GPU, TP), the first of the workload's precision is used (as the verifier does).
    """
    best: dict[tuple[str, str, int], CapacityRow] = {}
    names = {w.name for w in scenario.workloads}
    for row in table.rows:
        if row.workload not in names:
            continue
        wl = scenario.workload(row.workload)
        if wl.allowed_gpus is not None and row.gpu not in wl.allowed_gpus:
            continue
        key = (row.workload, row.gpu, row.tp)
        if key not in best or (best[key].precision != wl.precision
                               and row.precision == wl.precision):
            best[key] = row
    cands = [
        Candidate(r.workload, r.gpu, r.tp, r.slo_rps, r.source)
        for _, r in sorted(best.items())
    ]
    if not prune:
        return tuple(cands), ()
    kept, dropped = [], []
    for c in cands:
        if any(_dominates(o, c) for o in cands if o is not c):
            dropped.append(c)
        else:
            kept.append(c)
    return tuple(kept), tuple(dropped)


def _dominates(a: Candidate, b: Candidate) -> bool:
    """``a`` dominates ``b``: same workload and GPU, b's TP a multiple of a's, no better per GPU."""
    if (a.workload, a.gpu) != (b.workload, b.gpu) or b.tp % a.tp != 0:
        return False
    if a.tp == b.tp:
        return False
    return b.slo_rps / b.tp <= a.slo_rps / a.tp


def offers_from_scenario(scenario: Scenario) -> tuple[OfferTerm, ...]:
    """Every (zone, GPU, purchase kind) the scenario sells, sorted."""
    out = []
    for zone in sorted(scenario.zones, key=lambda z: z.id):
        for offer in sorted(zone.offers, key=lambda o: o.gpu):
            node = offer.gpus_per_node or scenario.gpu(offer.gpu).gpus_per_node
            for kind in PurchaseKind:
                terms = offer.terms(kind)
                if terms is None:
                    continue
                share = terms.available_share if isinstance(terms, SpotTerms) else 1.0
                out.append(
                    OfferTerm(zone.id, offer.gpu, kind, node, terms.price_per_gpu_hour,
                              terms.stock_gpus, share, offer.instance_type)
                )
    return tuple(out)


def _block_demands(scenario: Scenario) -> tuple[dict[tuple[str, str], float],
                                               dict[tuple[str, str], int]]:
    """Fixed demand (busiest hour) and volume-window hours per (workload, block)."""
    demand: dict[tuple[str, str], float] = {}
    window: dict[tuple[str, str], int] = {}
    for w in scenario.workloads:
        hourly = w.hourly_demand_rps()
        for block in scenario.policy.time_blocks:
            if w.batch is not None:
                inside = sum(1 for h in block.hours if h in w.batch.window_hours)
                if inside:
                    window[(w.name, block.name)] = inside
            else:
                peak = max(hourly[h] for h in block.hours)
                if peak > 0:
                    demand[(w.name, block.name)] = peak
    return demand, window


def group_slices(
    scenario: Scenario, demand: Mapping[tuple[str, str], float],
    window: Mapping[tuple[str, str], int], group: bool = True,
) -> tuple[SliceGroup, ...]:
    """Slice groups of the policy's time blocks, in block order (see the module docstring)."""
    groups: dict[object, list[tuple[str, int]]] = {}
    names = [w.name for w in scenario.workloads]
    for i, block in enumerate(scenario.policy.time_blocks):
        in_window = any((n, block.name) in window for n in names)
        key: object = (
            ("own", i) if in_window or not group
            else tuple(demand.get((n, block.name), 0.0) for n in names)
        )
        groups.setdefault(key, []).append((block.name, len(block.hours)))
    return tuple(
        SliceGroup(members[0][0], tuple(m for m, _ in members), sum(h for _, h in members))
        for members in groups.values()
    )


def build_program_data(
    scenario: Scenario, table: CapacityTable, prune: bool = True, group: bool = True
) -> ProgramData:
    """Index sets and parameters of the program for a scenario and its capacity table."""
    cands, dropped = candidates_from_table(scenario, table, prune)
    block_demand, block_window = _block_demands(scenario)
    slices = group_slices(scenario, block_demand, block_window, group)
    demand: dict[tuple[str, str], float] = {}
    window: dict[tuple[str, str], int] = {}
    for sl in slices:
        for (w, b), rps in block_demand.items():
            if b == sl.name:
                demand[(w, sl.name)] = rps
        for (w, b), hours in block_window.items():
            if b == sl.name:
                window[(w, sl.name)] = hours
    workloads = tuple(
        WorkloadInfo(w.name, w.tenant, w.utilization, w.survivability,
                     w.workload_class is WorkloadClass.interactive)
        for w in sorted(scenario.workloads, key=lambda w: w.name)
    )
    volumes = {w.name: w.batch.daily_requests for w in scenario.workloads if w.batch is not None}
    zones = tuple(sorted(z.id for z in scenario.zones))
    return ProgramData(
        workloads=workloads, candidates=cands, offers=offers_from_scenario(scenario),
        slices=slices, zones=zones, demand_rps=demand, volume_requests=volumes,
        hours_in_window=window, failure_utilization=scenario.policy.failure_utilization,
        hours_per_month=scenario.policy.hours_per_month,
        monthly_budget=scenario.policy.monthly_budget, currency=scenario.policy.currency,
        dropped=dropped, share_nodes=scenario.policy.share_nodes,
    )
