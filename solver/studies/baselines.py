"""Rule-of-thumb fleets the planner is measured against (issue 4's two baselines).

The field's rule of thumb sizes a static, all on-demand fleet at the peak with 30 % headroom:

    replicas_w = ⌈peak_rps_w × 1.3 / slo_rps_w⌉

with ``slo_rps`` the SLO-holding rate of one replica of the chosen (GPU, TP) from the capacity
table (the same candidates the program reads), and the TP on that GPU the one needing the fewest
GPUs (``replicas × tp``; the smaller TP on a tie). ``peak_rps`` is the busiest hour of the peak
day; a batch volume counts as its even spread over its window
(:func:`solver.survivability.failures.peak_demand_rps`).

Two baselines:

- ``single_type``: one GPU type for every workload — of the types every workload can run on, the
  one whose fleet costs least;
- ``best_type_per_workload``: workloads in order of their GPU need (largest first) each take the
  GPU type that adds least to the cost of the fleet placed so far.

Placement: replicas (largest TP first) go into whole on-demand nodes, cheapest zone first
(on-demand price, then zone id); a replica fills an open node of its GPU type in that zone, else
opens one while the zone's on-demand stock allows, else moves to the next zone — so a fleet
spreads over zones only as stock forces it to. Pools always on share nodes; a batch volume pool
has its own nodes, running only the hours of its window.

Cost per month = Σ nodes × GPUs per node × on-demand price [USD/(GPU·h)] × paid hours, with paid
hours = the policy's ``hours_per_month`` (× window hours / 24 for a batch volume pool): the prices
and hours the planner uses. The rule of thumb ignores target utilization, survivability and
reserved or spot capacity; that is the point of the comparison. :func:`baseline_fleet` turns a
baseline into a :class:`~models.inventory.Fleet`, so ``check_fleet`` can say which requirements
of the scenario the rule-of-thumb fleet breaks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from models.capacity import CapacityTable
from models.common import CapacitySource, Frozen, PurchaseKind
from models.inventory import Fleet, FleetNodes, FleetReplicaGroup
from models.scenario import Scenario
from models.workload import HOURS_PER_DAY, Workload
from solver.program.data import Candidate, candidates_from_table
from solver.survivability.failures import offer_gpus_per_node, peak_demand_rps

#: Headroom of the rule of thumb: provision 1.3 × the peak [1].
PEAK_HEADROOM = 1.3
#: Replica counts this close below an integer are that integer (float noise in rate ratios).
CEIL_TOLERANCE = 1e-9


class BaselinePool(Frozen):
    """Replicas of one workload in a baseline fleet."""

    workload: str
    gpu: str
    tp: int
    replicas: int
    slo_rps: float
    """SLO-holding rate of one replica [1/s]."""
    peak_rps: float
    """Busiest hourly demand of the peak day [1/s]."""
    source: CapacitySource


class BaselineNodes(Frozen):
    """On-demand nodes of one GPU type in one zone, and what they cost."""

    zone: str
    gpu: str
    pool: str | None
    """``None`` for always-on nodes, else the batch volume workload running on them."""
    nodes: int
    gpus: int
    price_per_gpu_hour: float
    hours_per_month: float
    cost_per_month: float


class BaselinePlacement(Frozen):
    """Replicas of one workload placed in one zone."""

    workload: str
    zone: str
    gpu: str
    tp: int
    replicas: int


class Baseline(Frozen):
    """A rule-of-thumb fleet and its monthly cost."""

    name: str
    pools: tuple[BaselinePool, ...]
    placements: tuple[BaselinePlacement, ...]
    nodes: tuple[BaselineNodes, ...]
    cost_per_month: float
    currency: str


def rule_of_thumb_replicas(peak_rps: float, slo_rps: float) -> int:
    """⌈peak × 1.3 / SLO-holding rate⌉ replicas, at least one [replicas]."""
    need = peak_rps * PEAK_HEADROOM / slo_rps  # [1/s] × [1] / [1/s per replica]
    return max(1, math.ceil(need - CEIL_TOLERANCE))


def _pool_key(workload: Workload) -> str | None:
    """Always-on pools share nodes (``None``); a batch volume pool runs in its window only."""
    return workload.name if workload.batch is not None else None


def _paid_hours(scenario: Scenario, pool: str | None) -> float:
    hours = scenario.policy.hours_per_month
    if pool is None:
        return hours
    batch = scenario.workload(pool).batch
    assert batch is not None
    return hours * len(batch.window_hours) / HOURS_PER_DAY  # [h/month] × [h/day] / [h/day]


class _Placement:
    """Open nodes per (zone, GPU, pool) and on-demand nodes used per (zone, GPU)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.free: dict[tuple[str, str, str | None], list[int]] = defaultdict(list)
        self.used: dict[tuple[str, str], int] = defaultdict(int)
        self.pools: list[BaselinePool] = []
        self.placed: dict[tuple[str, str, str, int], int] = defaultdict(int)
        price: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
        for zone in scenario.zones:
            for offer in zone.offers:
                if offer.on_demand is not None:
                    node = offer_gpus_per_node(scenario, zone.id, offer.gpu)
                    limit = offer.on_demand.stock_gpus // node  # whole nodes in stock
                    price[offer.gpu].append((offer.on_demand.price_per_gpu_hour, zone.id, limit))
        self.zones = {g: sorted(rows) for g, rows in price.items()}

    def copy(self) -> _Placement:
        out = _Placement.__new__(_Placement)
        out.scenario, out.zones = self.scenario, self.zones
        out.free = defaultdict(list, {k: list(v) for k, v in self.free.items()})
        out.used = defaultdict(int, self.used)
        out.pools = list(self.pools)
        out.placed = defaultdict(int, self.placed)
        return out

    def place(self, pool: BaselinePool, key: str | None) -> bool:
        """Place a pool's replicas; ``False`` (state partly changed) when stock runs out."""
        self.pools.append(pool)
        for _ in range(pool.replicas):
            zone = self._place_one(pool.gpu, pool.tp, key)
            if zone is None:
                return False
            self.placed[(pool.workload, zone, pool.gpu, pool.tp)] += 1
        return True

    def _place_one(self, gpu: str, tp: int, key: str | None) -> str | None:
        """Zone a replica of ``tp`` GPUs went to, or ``None`` when no zone has room."""
        for _, zone, limit in self.zones.get(gpu, []):
            node = offer_gpus_per_node(self.scenario, zone, gpu)
            if tp > node:
                continue
            free = self.free[(zone, gpu, key)]
            for i, f in enumerate(free):
                if f >= tp:
                    free[i] -= tp
                    return zone
            if self.used[(zone, gpu)] < limit:
                self.used[(zone, gpu)] += 1
                free.append(node - tp)
                return zone
        return None

    def nodes(self) -> tuple[BaselineNodes, ...]:
        prices = {(z, g): p for g, rows in self.zones.items() for p, z, _ in rows}
        out = []
        for (zone, gpu, key), free in sorted(self.free.items(), key=lambda kv: (
                kv[0][0], kv[0][1], kv[0][2] or "")):
            if not free:
                continue
            gpus = len(free) * offer_gpus_per_node(self.scenario, zone, gpu)
            hours = _paid_hours(self.scenario, key)
            price = prices[(zone, gpu)]
            out.append(BaselineNodes(zone=zone, gpu=gpu, pool=key, nodes=len(free), gpus=gpus,
                                     price_per_gpu_hour=price, hours_per_month=hours,
                                     cost_per_month=gpus * price * hours))
        return tuple(out)

    def cost_per_month(self) -> float:
        return sum(n.cost_per_month for n in self.nodes())


def _max_node(scenario: Scenario, gpu: str) -> int:
    sizes = [offer_gpus_per_node(scenario, z.id, o.gpu) for z in scenario.zones
             for o in z.offers if o.gpu == gpu and o.on_demand is not None]
    return max(sizes, default=0)


def sized_pool(
    scenario: Scenario, workload: Workload, gpu: str, candidates: Iterable[Candidate]
) -> BaselinePool | None:
    """The rule-of-thumb pool of a workload on one GPU type (fewest GPUs), or ``None``."""
    peak = peak_demand_rps(workload)
    largest = _max_node(scenario, gpu)
    best: BaselinePool | None = None
    for c in sorted(candidates, key=lambda c: c.tp):
        if c.workload != workload.name or c.gpu != gpu or c.tp > largest:
            continue
        replicas = rule_of_thumb_replicas(peak, c.slo_rps)
        if best is None or replicas * c.tp < best.replicas * best.tp:
            best = BaselinePool(workload=workload.name, gpu=gpu, tp=c.tp, replicas=replicas,
                                slo_rps=c.slo_rps, peak_rps=peak, source=c.source)
    return best


def _baseline(name: str, scenario: Scenario, placement: _Placement) -> Baseline:
    pools = tuple(sorted(placement.pools, key=lambda p: p.workload))
    placed = tuple(BaselinePlacement(workload=w, zone=z, gpu=g, tp=tp, replicas=n)
                   for (w, z, g, tp), n in sorted(placement.placed.items()))
    return Baseline(name=name, pools=pools, placements=placed, nodes=placement.nodes(),
                    cost_per_month=placement.cost_per_month(),
                    currency=scenario.policy.currency)


def _candidates(scenario: Scenario, table: CapacityTable) -> tuple[Candidate, ...]:
    return candidates_from_table(scenario, table, prune=False)[0]


def _by_need(pools: Mapping[str, BaselinePool]) -> list[str]:
    """Workload names, largest GPU need first (then by name)."""
    return sorted(pools, key=lambda w: (-pools[w].replicas * pools[w].tp, w))


def single_type_baseline(scenario: Scenario, table: CapacityTable) -> Baseline | None:
    """Baseline (a): the cheapest fleet of one GPU type for every workload, or ``None``."""
    cands = _candidates(scenario, table)
    best: Baseline | None = None
    for gpu in sorted(g.name for g in scenario.gpus):
        pools = {w.name: sized_pool(scenario, w, gpu, cands) for w in scenario.workloads}
        if any(p is None for p in pools.values()):
            continue
        sized = {w: p for w, p in pools.items() if p is not None}
        placement = _Placement(scenario)
        if not all(placement.place(sized[w], _pool_key(scenario.workload(w)))
                   for w in _by_need(sized)):
            continue
        fleet = _baseline("single_type", scenario, placement)
        if best is None or fleet.cost_per_month < best.cost_per_month:
            best = fleet
    return best


def best_type_baseline(scenario: Scenario, table: CapacityTable) -> Baseline | None:
    """Baseline (b): each workload on the GPU type adding least cost, or ``None`` if none fits."""
    cands = _candidates(scenario, table)
    gpus = sorted(g.name for g in scenario.gpus)
    options: dict[str, list[BaselinePool]] = {}
    for w in scenario.workloads:
        sized = (sized_pool(scenario, w, g, cands) for g in gpus)
        options[w.name] = [p for p in sized if p is not None]
    if any(not pools for pools in options.values()):
        return None
    smallest = {w: min(pools, key=lambda p: (p.replicas * p.tp, p.gpu))
                for w, pools in options.items()}
    placement = _Placement(scenario)
    for name in _by_need(smallest):
        key = _pool_key(scenario.workload(name))
        base = placement.cost_per_month()
        chosen: tuple[float, str, _Placement] | None = None
        for pool in options[name]:
            trial = placement.copy()
            if trial.place(pool, key):
                added = trial.cost_per_month() - base
                if chosen is None or (added, pool.gpu) < (chosen[0], chosen[1]):
                    chosen = (added, pool.gpu, trial)
        if chosen is None:
            return None
        placement = chosen[2]
    return _baseline("best_type_per_workload", scenario, placement)


def baselines(scenario: Scenario, table: CapacityTable) -> dict[str, Baseline | None]:
    """Both baselines by name; ``None`` where no rule-of-thumb fleet fits the scenario's stock."""
    return {
        "single_type": single_type_baseline(scenario, table),
        "best_type_per_workload": best_type_baseline(scenario, table),
    }


def baseline_fleet(baseline: Baseline, scenario: Scenario) -> Fleet:
    """The baseline as a :class:`~models.inventory.Fleet`, for
    :func:`solver.survivability.check.check_fleet`.

    Every replica and node is on-demand and running in every slice (a batch volume pool's nodes
    run in its window; its check is over the window as a whole).
    """
    pools = {(p.workload, p.gpu, p.tp): p for p in baseline.pools}
    groups = tuple(
        FleetReplicaGroup(workload=p.workload, zone=p.zone, gpu=p.gpu, tp=p.tp,
                          precision=scenario.workload(p.workload).precision,
                          purchase=PurchaseKind.on_demand, slice=None, replicas=p.replicas,
                          slo_rps=pools[(p.workload, p.gpu, p.tp)].slo_rps,
                          capacity_source=pools[(p.workload, p.gpu, p.tp)].source)
        for p in baseline.placements
    )
    nodes: dict[tuple[str, str], tuple[int, int]] = {}
    for n in baseline.nodes:
        count, gpus = nodes.get((n.zone, n.gpu), (0, 0))
        nodes[(n.zone, n.gpu)] = (count + n.nodes, gpus + n.gpus)
    return Fleet(
        name=baseline.name, source=f"rule-of-thumb baseline {baseline.name}", replicas=groups,
        nodes=tuple(FleetNodes(zone=z, gpu=g, purchase=PurchaseKind.on_demand, slice=None,
                               nodes=count, gpus=gpus)
                    for (z, g), (count, gpus) in sorted(nodes.items())),
    )


__all__ = ["PEAK_HEADROOM", "Baseline", "BaselineNodes", "BaselinePlacement", "BaselinePool",
           "baseline_fleet", "baselines",
           "best_type_baseline", "rule_of_thumb_replicas", "single_type_baseline"]
