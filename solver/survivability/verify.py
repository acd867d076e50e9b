"""Independent verifier: re-check a plan with plain arithmetic, never with the integer program.

``verify_plan`` recomputes, from the plan's allocations and nodes, the scenario and the capacity
table, every promise a plan makes (docs/survivability.md states the rules):

1. references: workloads, zones, offers (or nodes the inventory holds), allowed GPUs and slices
   exist; ``gpus = replicas × tp``;
2. capacity: each allocation's ``replica_capacity_rps`` and source equal the table's row;
3. demand: per workload and slice, Σ replicas × slo_rps × target utilization ≥ demand (spot
   discounted by 1 − interruption rate); a batch volume instead needs Σ over its window's slices
   of capacity × window hours × 3600 ≥ daily requests;
4. spot: no spot replica for an interactive workload;
5. stock: per (GPU, zone, purchase) and slice, GPUs bought ≤ the inventory's + the offer's stock;
   every inventory node kept;
6. nodes: tp ≤ GPUs per node; per pool and slice the replicas, placed whole on whole nodes
   (largest TP first, each on the fullest node it fits), all find a place;
7. survival: n_plus_1 survives any node, zone_loss any zone and any node, counting only running
   non-spot capacity at slo_rps × failure utilization; the plan's survivability rows agree (a
   batch volume's row against the work the fleet does in that slice, the volume spread in
   proportion to the capacity of the window's slices);
8. cost: Σ nodes × GPUs per node × price × paid hours = ``cost.per_month`` (1e-6 relative);
   paid hours are ``hours_per_month`` for reserved (and all-day) nodes, else the slice's hours ×
   hours_per_month / 24; the budget holds. ``over_periods``: a committed pool's price blends its
   inventory and the orders held then, so only its rows' arithmetic is recomputed.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable

from models.capacity import CapacityRow, CapacityTable
from models.common import COMMITTED_KINDS, PurchaseKind, WorkloadClass, runs_all_day
from models.inventory import Fleet
from models.plan import NodeCount, Plan, SolveStatus
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import SECONDS_PER_HOUR, Workload
from solver.survivability.failures import (
    ABS_TOL_RPS,
    REL_TOL,
    Failure,
    FailureKind,
    block_hours_in_window,
    capacity_holds,
    failover_capacity_rps,
    failure_domains,
    offer_gpus_per_node,
    required_failures,
    runs_in,
    slice_demand_rps,
    usable_capacity_rps,
    volume_demand_rps,
)
from solver.survivability.fleet import fleet_from_plan, place_whole


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b)) + ABS_TOL_RPS


#: Statuses of a plan that, without allocations, claims no fleet.
NO_PROMISE = (SolveStatus.infeasible, SolveStatus.error, SolveStatus.time_limit,
              SolveStatus.interrupted)


def verify_plan(plan: Plan, scenario: Scenario, table: CapacityTable,
                over_periods: bool = False) -> list[str]:
    """Every way a plan breaks its scenario's rules, as sentences; empty means the plan is OK.

    A plan without allocations whose status is ``infeasible``, ``error``, ``time_limit`` or
    ``interrupted`` (no fleet found, or none before the clock ran out or the user stopped the
    solve) promises nothing and passes. ``over_periods``: ``plan`` is one period's fleet of a
    plan over periods, bought from every reserved quote and priced with the orders held then.
    """
    if plan.status in NO_PROMISE and not plan.allocations:
        return []
    blocks = scenario.policy.time_blocks
    out: list[str] = []
    out += _check_slices(plan, blocks)
    out += _check_references(plan, scenario, table)
    out += _check_spot(plan, scenario)
    if out:
        return out  # the arithmetic below trusts the references
    fleet = fleet_from_plan(plan, scenario)
    out += _check_demand(fleet, scenario, blocks)
    out += _check_stock(plan, scenario, blocks, over_periods)
    out += _check_nodes(plan, scenario, blocks)
    out += _check_survival(fleet, scenario, blocks)
    out += _check_survivability_rows(plan, fleet, scenario, blocks)
    out += _check_cost(plan, scenario, over_periods)
    return out


def _check_slices(plan: Plan, blocks: tuple[TimeBlock, ...]) -> list[str]:
    want = [(b.name, tuple(b.hours)) for b in blocks]
    have = [(s.name, tuple(s.hours)) for s in plan.slices]
    if have and have != want:
        return [
            f"plan slices {[n for n, _ in have]} differ from the scenario's time blocks "
            f"{[n for n, _ in want]}"
        ]
    return []


def _table_row(table: CapacityTable, wl: Workload, gpu: str, tp: int) -> CapacityRow | None:
    rows = [r for r in table.for_workload(wl.name) if r.gpu == gpu and r.tp == tp]
    same = [r for r in rows if r.precision == wl.precision]
    candidates = same or rows
    return candidates[0] if candidates else None


def _gpus_per_node(scenario: Scenario, zone: str, gpu: str, purchase: PurchaseKind) -> int:
    """GPUs per node of a pool: the inventory's node size where it holds nodes of that pool
    (the program refuses inventory of another size than an offer of the same pool sells, so a
    pool holds one size), else the zone offer's, else the GPU type's [GPUs]."""
    for line in scenario.inventory:
        if (line.zone, line.gpu, line.purchase.pool_kind) == (zone, gpu, purchase) \
                and line.gpus_per_node is not None:
            return line.gpus_per_node
    return offer_gpus_per_node(scenario, zone, gpu)


def _held_nodes(scenario: Scenario) -> dict[tuple[str, str, PurchaseKind], int]:
    """Nodes the scenario's inventory holds per committed pool (zone, GPU, kind)."""
    held: dict[tuple[str, str, PurchaseKind], int] = defaultdict(int)
    for line in scenario.inventory:
        assert line.gpu is not None  # resolved from the instance type on loading
        held[(line.zone, line.gpu, line.purchase.pool_kind)] += line.nodes
    return held


def _sells(scenario: Scenario, zone: str, gpu: str, purchase: PurchaseKind) -> bool:
    """The zone sells ``gpu`` as ``purchase`` (owned: hardware to buy), or holds such nodes."""
    if _held_nodes(scenario).get((zone, gpu, purchase), 0):
        return True
    offer = scenario.offer(zone, gpu)
    if offer is None:
        return False
    if purchase is PurchaseKind.owned:
        return offer.owned is not None
    return offer.terms(purchase) is not None


def _check_references(plan: Plan, scenario: Scenario, table: CapacityTable) -> list[str]:
    out: list[str] = []
    names = {b.name for b in scenario.policy.time_blocks}
    workloads = {w.name: w for w in scenario.workloads}
    zones = {z.id: z for z in scenario.zones}
    for i, a in enumerate(plan.allocations):
        where = f"allocation {i} ({a.workload} {a.gpu} tp{a.tp} {a.zone} {a.purchase})"
        wl = workloads.get(a.workload)
        zone = zones.get(a.zone)
        if wl is None or zone is None:
            out.append(f"{where}: unknown workload or zone")
            continue
        if not _sells(scenario, a.zone, a.gpu, a.purchase):
            out.append(f"{where}: zone {a.zone} does not sell {a.gpu} as {a.purchase}")
            continue
        if wl.allowed_gpus is not None and a.gpu not in wl.allowed_gpus:
            out.append(f"{where}: {a.gpu} is not in the workload's allowed_gpus")
        if a.slice is not None and a.slice not in names:
            out.append(f"{where}: unknown slice {a.slice}")
        if runs_all_day(a.purchase) and a.slice is not None:
            out.append(f"{where}: reserved capacity must run in every slice (slice null)")
        if a.gpus != a.replicas * a.tp:
            out.append(f"{where}: gpus {a.gpus} != replicas {a.replicas} × tp {a.tp}")
        row = _table_row(table, wl, a.gpu, a.tp)
        if row is None:
            out.append(f"{where}: no capacity-table row for this configuration")
            continue
        if not _close(a.replica_capacity_rps, row.slo_rps):
            out.append(
                f"{where}: replica_capacity_rps {a.replica_capacity_rps:.6g} != table "
                f"slo_rps {row.slo_rps:.6g}"
            )
        if a.capacity_source != row.source:
            out.append(f"{where}: capacity_source {a.capacity_source} != table {row.source}")
    for i, n in enumerate(plan.nodes):
        if n.zone not in zones or not _sells(scenario, n.zone, n.gpu, n.purchase):
            out.append(f"node row {i}: zone {n.zone} does not sell {n.gpu} as {n.purchase}")
            continue
        gpn = _gpus_per_node(scenario, n.zone, n.gpu, n.purchase)
        if n.gpus != n.nodes * gpn:
            out.append(
                f"node row {i} ({n.zone} {n.gpu} {n.purchase}): gpus {n.gpus} != "
                f"nodes {n.nodes} × {gpn} GPUs per node"
            )
        if n.slice is not None and n.slice not in names:
            out.append(f"node row {i}: unknown slice {n.slice}")
    return out


def _check_spot(plan: Plan, scenario: Scenario) -> list[str]:
    classes = {w.name: w.workload_class for w in scenario.workloads}
    classes.update(
        {a.workload: WorkloadClass.batch for a in plan.allocations if a.workload not in classes}
    )  # unknown: reported with the references
    return [
        f"interactive workload {a.workload} has {a.replicas} spot replicas in {a.zone}"
        for a in plan.allocations
        if a.purchase is PurchaseKind.spot
        and a.replicas > 0
        and classes[a.workload] is WorkloadClass.interactive
    ]


def _unmet(
    wl: Workload, blocks: tuple[TimeBlock, ...], capacity_rps: Callable[[str], float],
    prefix: str, window: str = "", usable: str = "",
) -> list[str]:
    """Where ``capacity_rps(slice)`` falls short of ``wl``'s demand: a batch volume over its
    window (capacity × hours of each slice inside it), else the demand of every slice."""
    if wl.batch is not None:
        done = sum(capacity_rps(b.name) * block_hours_in_window(wl, b)
                   * SECONDS_PER_HOUR  # [1/s] × [h] × [s/h] = requests
                   for b in blocks)
        if capacity_holds(done, wl.batch.daily_requests):
            return []
        return [f"{prefix} completes {done:.6g} requests{window}, "
                f"needs {wl.batch.daily_requests:.6g}"]
    out = []
    for b in blocks:
        need = slice_demand_rps(wl, b)
        have = capacity_rps(b.name)
        if not capacity_holds(have, need):
            out.append(f"{prefix} in {b.name} has {have:.6g} rps{usable}, needs {need:.6g}")
    return out


def _check_demand(fleet: Fleet, scenario: Scenario, blocks: tuple[TimeBlock, ...]) -> list[str]:
    out: list[str] = []
    for wl in scenario.workloads:
        usable = functools.partial(usable_capacity_rps, fleet.replicas, wl, scenario)
        out += _unmet(wl, blocks, usable, f"demand: {wl.name}", window=" in its window",
                      usable=" usable")
    return out


def _pool_gpus_by_slice(
    plan: Plan, blocks: tuple[TimeBlock, ...]
) -> dict[tuple[str, str, PurchaseKind, str], int]:
    gpus: dict[tuple[str, str, PurchaseKind, str], int] = defaultdict(int)
    for n in plan.nodes:
        for b in blocks:
            if runs_in(n.slice, b.name):
                gpus[(n.zone, n.gpu, n.purchase, b.name)] += n.gpus
    return gpus


def _stock_gpus(scenario: Scenario, pool: tuple[str, str, PurchaseKind], over_periods: bool
                ) -> int:
    """GPUs a pool may hold: its inventory, plus what its offer may add (reserved: the cheapest
    quote's stock, or ``over_periods`` every quote's, as orders of each quote are limited by its
    own; owned: the hardware's stock) [GPUs]."""
    zone, gpu, purchase = pool
    held = _held_nodes(scenario).get(pool, 0) * _gpus_per_node(scenario, zone, gpu, purchase)
    offer = scenario.offer(zone, gpu)
    if offer is None:
        return held
    if purchase is PurchaseKind.owned:
        return held + (0 if offer.owned is None else offer.owned.stock_gpus)
    if purchase is PurchaseKind.reserved and over_periods:
        return held + sum(q.stock_gpus for q in offer.reserved_quotes)
    terms = offer.terms(purchase)
    return held + (0 if terms is None else terms.stock_gpus)


def _check_stock(plan: Plan, scenario: Scenario, blocks: tuple[TimeBlock, ...],
                 over_periods: bool) -> list[str]:
    """GPUs bought within stock, and every node the inventory holds kept (no early release)."""
    out: list[str] = []
    gpus = _pool_gpus_by_slice(plan, blocks)
    for (zone, gpu, purchase, name), bought in sorted(gpus.items()):
        stock = _stock_gpus(scenario, (zone, gpu, purchase), over_periods)
        if bought > stock:
            out.append(
                f"stock: {bought} {gpu} {purchase} GPUs in {zone} during {name}, "
                f"stock {stock}"
            )
    for (zone, gpu, purchase), nodes in sorted(_held_nodes(scenario).items()):
        held = nodes * _gpus_per_node(scenario, zone, gpu, purchase)
        for b in blocks:
            if gpus.get((zone, gpu, purchase, b.name), 0) < held:
                out.append(
                    f"inventory: {held} {purchase} {gpu} GPUs held in {zone}, the plan keeps "
                    f"{gpus.get((zone, gpu, purchase, b.name), 0)} during {b.name}"
                )
    return out


def _check_nodes(plan: Plan, scenario: Scenario, blocks: tuple[TimeBlock, ...]) -> list[str]:
    out: list[str] = []
    held: dict[tuple[str, str, PurchaseKind, str], dict[int, int]] = defaultdict(
        lambda: defaultdict(int))
    for a in plan.allocations:
        gpn = _gpus_per_node(scenario, a.zone, a.gpu, a.purchase)
        if a.tp > gpn:
            out.append(f"nodes: {a.workload} tp{a.tp} does not fit a {gpn}-GPU {a.gpu} node")
            continue
        for b in blocks:
            if runs_in(a.slice, b.name):
                held[(a.zone, a.gpu, a.purchase, b.name)][a.tp] += a.replicas
    bought: dict[tuple[str, str, PurchaseKind, str], int] = defaultdict(int)
    for n in plan.nodes:
        for b in blocks:
            if runs_in(n.slice, b.name):
                bought[(n.zone, n.gpu, n.purchase, b.name)] += n.nodes
    for key, replicas in sorted(held.items()):
        zone, gpu, purchase, name = key
        gpn = _gpus_per_node(scenario, zone, gpu, purchase)
        free = {gpn: bought.get(key, 0)}
        left = sum(n - place_whole(free, tp, n) for tp, n in sorted(replicas.items(),
                                                                    reverse=True))
        if left:
            mix = " + ".join(f"{n} × tp{tp}" for tp, n in sorted(replicas.items()) if n)
            out.append(
                f"nodes: {mix} {gpu} {purchase} replicas in {zone} during {name} do not fit "
                f"{bought.get(key, 0)} nodes of {gpn} GPUs ({left} of them without a place)"
            )
    return out


def _survival_shortfalls(
    fleet: Fleet,
    wl: Workload,
    scenario: Scenario,
    blocks: tuple[TimeBlock, ...],
    failure: Failure,
) -> list[str]:
    return _unmet(wl, blocks,
                  lambda s: failover_capacity_rps(fleet, wl, scenario, s, failure),
                  f"survival: {wl.name} after {failure.label}")


def _check_survival(fleet: Fleet, scenario: Scenario, blocks: tuple[TimeBlock, ...]) -> list[str]:
    out: list[str] = []
    domains = failure_domains(fleet, scenario)
    for wl in scenario.workloads:
        for failure in required_failures(wl, domains):
            out += _survival_shortfalls(fleet, wl, scenario, blocks, failure)
    return out


def _recompute_row(
    fleet: Fleet,
    wl: Workload,
    scenario: Scenario,
    failure_label: str,
    slice_name: str,
) -> float | None:
    """Capacity the plan's survivability row should show, or ``None`` for an unknown label."""
    if failure_label == "none":
        return usable_capacity_rps(fleet.replicas, wl, scenario, slice_name)
    kind, _, rest = failure_label.partition(":")
    if kind == "zone":
        return failover_capacity_rps(
            fleet, wl, scenario, slice_name, Failure(kind=FailureKind.zone, zone=rest)
        )
    if kind == "region":
        return failover_capacity_rps(
            fleet, wl, scenario, slice_name, Failure(kind=FailureKind.region, region=rest)
        )
    if kind == "node" and "/" in rest:
        zone, gpu = rest.split("/", 1)
        return min(
            failover_capacity_rps(
                fleet,
                wl,
                scenario,
                slice_name,
                Failure(kind=FailureKind.node, zone=zone, gpu=gpu, purchase=p),
            )
            for p in (PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.owned)
        )
    return None


def _check_survivability_rows(
    plan: Plan, fleet: Fleet, scenario: Scenario, blocks: tuple[TimeBlock, ...]
) -> list[str]:
    out: list[str] = []
    workloads = {w.name: w for w in scenario.workloads}
    by_name = {b.name: b for b in blocks}
    for i, row in enumerate(plan.survivability):
        wl = workloads.get(row.workload)
        block = by_name.get(row.slice)
        if wl is None or block is None:
            out.append(
                f"survivability row {i}: unknown workload {row.workload} or slice {row.slice}"
            )
            continue
        cap = _recompute_row(fleet, wl, scenario, row.failure, row.slice)
        if cap is None:
            out.append(f"survivability row {i}: unknown failure label {row.failure!r}")
            continue
        need = slice_demand_rps(wl, block)
        if wl.batch is not None:  # the volume as the fleet spreads it after this failure
            caps = {b.name: _recompute_row(fleet, wl, scenario, row.failure, b.name) or 0.0
                    for b in blocks}
            need = volume_demand_rps(wl, blocks, caps)[row.slice]
        where = f"survivability row {i} ({row.workload}, {row.failure}, {row.slice})"
        if not _close(row.demand_rps, need):
            out.append(f"{where}: demand_rps {row.demand_rps:.6g}, recomputed {need:.6g}")
        if not _close(row.capacity_rps, cap):
            out.append(f"{where}: capacity_rps {row.capacity_rps:.6g}, recomputed {cap:.6g}")
        if row.holds != capacity_holds(cap, need):
            out.append(
                f"{where}: says holds={row.holds}, recomputed {cap:.6g} rps vs {need:.6g} demand"
            )
    return out


def _offer_price(scenario: Scenario, n: NodeCount) -> float:
    """The offer's price of a node row's GPUs [currency/(GPU·h)]; owned hardware: capital,
    power and hosting per GPU-hour."""
    offer = scenario.offer(n.zone, n.gpu)
    assert offer is not None  # checked with the references
    if n.purchase is PurchaseKind.owned:
        assert offer.owned is not None  # checked with the references
        gpn = _gpus_per_node(scenario, n.zone, n.gpu, n.purchase)
        hours = scenario.policy.hours_per_month
        return offer.owned.cost_per_node_month(gpn, hours) / (gpn * hours)
    terms = offer.terms(n.purchase)
    assert terms is not None  # checked with the references
    return terms.price_per_gpu_hour


def _check_cost(plan: Plan, scenario: Scenario, over_periods: bool) -> list[str]:
    """Each node row at its price; over periods a committed pool's price blends its inventory
    and the orders held then, so only the row's own arithmetic is recomputed for it."""
    out: list[str] = []
    total = 0.0
    for i, n in enumerate(plan.nodes):
        blended = over_periods and n.purchase in COMMITTED_KINDS
        price = n.price_per_gpu_hour if blended else _offer_price(scenario, n)
        cost = n.gpus * price * scenario.policy.paid_hours_per_month(n.purchase, n.slice)
        total += cost  # [GPUs] × [currency/GPU/h] × [h/month]
        if not _close(n.price_per_gpu_hour, price):
            out.append(f"cost: node row {i} price {n.price_per_gpu_hour} != offer {price}")
        if not _close(n.cost_per_month, cost):
            out.append(
                f"cost: node row {i} ({n.zone} {n.gpu} {n.purchase} {n.slice}) costs "
                f"{n.cost_per_month:.6f}, recomputed {cost:.6f}"
            )
    if not _close(plan.cost.per_month, total):
        out.append(
            f"cost: plan says {plan.cost.per_month:.6f} per month, nodes add up to {total:.6f}"
        )
    budget = scenario.policy.monthly_budget
    if budget is not None and plan.cost.per_month > budget * (1.0 + REL_TOL):
        out.append(f"budget: {plan.cost.per_month:.2f} per month exceeds {budget:.2f}")
    return out
