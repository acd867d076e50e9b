"""Fleets to check: read a ``plan.json`` or an inventory, and the failure arithmetic on them.

The verifier, the survivability checker and the replay simulator all read a
:class:`~models.inventory.Fleet`. This module makes one (``load_fleet``) and holds the plain
arithmetic they share (docs/survivability.md):

- the demand of a slice is the workload's hourly demand at the busiest hour of the slice;
- a replica's usable capacity is ``slo_rps`` × the workload's target utilization, spot capacity
  discounted by its interruption rate;
- after a failure, only running non-spot capacity counts, at ``slo_rps`` × the policy's failure
  utilization; losing a node loses the replicas of the workload that the worst node of that pool
  can hold (a node of G GPUs holds ⌊G / tp⌋ replicas of TP ``tp``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from models.common import Frozen, PurchaseKind
from models.inventory import (
    Fleet,
    FleetNodes,
    FleetReplicaGroup,
)
from models.plan import Plan
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import Workload

SECONDS_PER_HOUR = 3600.0

#: Order in which purchase kinds are filled when fleetplan lays replicas out.
FILL_ORDER = (PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.spot)


# --- demand ------------------------------------------------------------------------------------


def slice_demand_rps(workload: Workload, block: TimeBlock) -> float:
    """Demand of one slice: the workload's hourly demand at the busiest hour of the block [1/s]."""
    hourly = workload.hourly_demand_rps()
    return max(hourly[h] for h in block.hours)


def window_hours(workload: Workload, block: TimeBlock) -> int:
    """Hours of a block inside a batch workload's window (all its hours without a window) [h]."""
    if workload.batch is None:
        return len(block.hours)
    window = set(workload.batch.window_hours)
    return sum(1 for h in block.hours if h in window)


def peak_demand_rps(workload: Workload) -> float:
    """Highest hourly demand of the peak day [1/s] (a batch volume spread over its window)."""
    return max(workload.hourly_demand_rps())


# --- offers --------------------------------------------------------------------------------------


def offer_gpus_per_node(scenario: Scenario, zone: str, gpu: str) -> int:
    """GPUs per node of a zone's offer, else of the GPU type [GPUs]."""
    for z in scenario.zones:
        if z.id == zone:
            for offer in z.offers:
                if offer.gpu == gpu and offer.gpus_per_node is not None:
                    return offer.gpus_per_node
    return scenario.gpu(gpu).gpus_per_node


def spot_interruption_rate(scenario: Scenario, zone: str, gpu: str) -> float:
    """Expected share of spot capacity reclaimed per hour in a zone [1/h] (0 without spot)."""
    for z in scenario.zones:
        if z.id == zone:
            for offer in z.offers:
                if offer.gpu == gpu and offer.spot is not None:
                    return offer.spot.interruption_rate_per_hour
    return 0.0


# --- failure domains -----------------------------------------------------------------------------


class FailureKind(StrEnum):
    """What is lost: nothing (steady state), one node, one zone, or one region."""

    none = "none"
    node = "node"
    zone = "zone"
    region = "region"


class Failure(Frozen):
    """One failure domain. A node failure names its pool: zone, GPU type and purchase kind."""

    kind: FailureKind
    zone: str | None = None
    gpu: str | None = None
    purchase: PurchaseKind | None = None
    region: str | None = None

    @property
    def label(self) -> str:
        """``none``, ``node:<zone>/<gpu>/<purchase>``, ``zone:<zone>`` or ``region:<region>``."""
        if self.kind is FailureKind.node:
            return f"node:{self.zone}/{self.gpu}/{self.purchase}"
        if self.kind is FailureKind.zone:
            return f"zone:{self.zone}"
        if self.kind is FailureKind.region:
            return f"region:{self.region}"
        return "none"

    @property
    def plan_label(self) -> str:
        """The label plan.json uses: node failures name only ``<zone>/<gpu>``."""
        if self.kind is FailureKind.node:
            return f"node:{self.zone}/{self.gpu}"
        return self.label


STEADY = Failure(kind=FailureKind.none)


def failure_domains(fleet: Fleet, scenario: Scenario) -> tuple[Failure, ...]:
    """Steady state, each node pool holding nodes, each zone, and each region if several."""
    pools = sorted({(n.zone, n.gpu, n.purchase) for n in fleet.nodes if n.nodes > 0})
    zones = sorted({n.zone for n in fleet.nodes if n.nodes > 0} | {g.zone for g in fleet.replicas})
    region_of = {z.id: z.region for z in scenario.zones}
    regions = sorted({region_of[z] for z in zones if z in region_of})
    out = [STEADY]
    out += [Failure(kind=FailureKind.node, zone=z, gpu=g, purchase=p) for z, g, p in pools]
    out += [Failure(kind=FailureKind.zone, zone=z) for z in zones]
    if len(regions) > 1:
        out += [Failure(kind=FailureKind.region, region=r) for r in regions]
    return tuple(out)


def runs_in(group_slice: str | None, slice_name: str) -> bool:
    """Whether replicas or nodes of ``group_slice`` run in a slice (None means every slice)."""
    return group_slice is None or group_slice == slice_name


def usable_capacity_rps(
    groups: Iterable[FleetReplicaGroup], workload: Workload, scenario: Scenario, slice_name: str
) -> float:
    """Steady-state capacity of a workload in a slice [1/s].

    Σ replicas × slo_rps × target utilization over running groups; spot groups are discounted
    by (1 − interruption rate per hour) of their zone.
    """
    total = 0.0
    for g in groups:
        if g.workload != workload.name or not runs_in(g.slice, slice_name):
            continue
        rps = g.replicas * g.slo_rps * workload.utilization  # [1/s]
        if g.purchase is PurchaseKind.spot:
            rps *= 1.0 - spot_interruption_rate(scenario, g.zone, g.gpu)  # [1]
        total += rps
    return total


def worst_node_loss(
    groups: Sequence[FleetReplicaGroup], gpus_per_node: int
) -> tuple[float, dict[int, int]]:
    """Largest SLO-holding rate one node of a pool can hold of the given replica groups.

    A bounded knapsack over the node's GPUs: each replica of TP ``tp`` takes ``tp`` GPUs; a
    group contributes at most its replica count. With a single TP this is
    min(replicas, ⌊G / tp⌋) × slo_rps.

    Returns
    -------
    (rps, lost) : the SLO-holding rate lost [1/s] and replicas lost per index into ``groups``.
    """
    best: list[tuple[float, dict[int, int]]] = [(0.0, {})] * (gpus_per_node + 1)
    for i, g in enumerate(groups):
        copies = min(g.replicas, gpus_per_node // g.tp)
        for _ in range(copies):
            nxt = list(best)
            for used in range(g.tp, gpus_per_node + 1):
                rps, lost = best[used - g.tp]
                if lost.get(i, 0) >= copies:
                    continue
                cand = rps + g.slo_rps
                if cand > nxt[used][0] + 1e-12:
                    nxt[used] = (cand, {**lost, i: lost.get(i, 0) + 1})
            best = nxt
    return max(best, key=lambda t: t[0])


def failover_capacity_rps(
    fleet: Fleet,
    workload: Workload,
    scenario: Scenario,
    slice_name: str,
    failure: Failure,
) -> float:
    """Capacity of a workload in a slice after a failure, at the failure utilization [1/s].

    Only running, non-spot replicas count (spot is never failover capacity). A zone or region
    failure removes every replica there; a node failure removes what the worst node of that
    pool holds of this workload. The steady state (``none``) counts the same capacity.
    """
    region_of = {z.id: z.region for z in scenario.zones}
    live = [
        g
        for g in fleet.replicas
        if g.workload == workload.name
        and runs_in(g.slice, slice_name)
        and g.purchase is not PurchaseKind.spot
        and g.replicas > 0
    ]
    if failure.kind is FailureKind.zone:
        live = [g for g in live if g.zone != failure.zone]
    elif failure.kind is FailureKind.region:
        live = [g for g in live if region_of.get(g.zone) != failure.region]
    lost_rps = 0.0
    if failure.kind is FailureKind.node and failure.purchase is not PurchaseKind.spot:
        pool = [
            g for g in live if (g.zone, g.gpu, g.purchase) == (
                failure.zone, failure.gpu, failure.purchase)
        ]
        if pool:
            assert failure.zone is not None and failure.gpu is not None
            gpn = fleet.gpus_per_node(failure.zone, failure.gpu, pool[0].purchase)
            gpn = gpn or offer_gpus_per_node(scenario, failure.zone, failure.gpu)
            lost_rps, _ = worst_node_loss(pool, gpn)
    util = scenario.policy.failure_utilization
    return (sum(g.replicas * g.slo_rps for g in live) - lost_rps) * util  # [1/s]


def required_failures(workload: Workload, failures: Iterable[Failure]) -> tuple[Failure, ...]:
    """Failures a workload must survive: n_plus_1 → any node; zone_loss → any zone and node."""
    need = {
        "none": set(),
        "n_plus_1": {FailureKind.node},
        "zone_loss": {FailureKind.node, FailureKind.zone},
    }[workload.survivability.value]
    return tuple(f for f in failures if f.kind in need)


# --- making a fleet ------------------------------------------------------------------------------


def fleet_from_plan(plan: Plan, scenario: Scenario, source: str = "plan.json") -> Fleet:
    """The fleet a plan buys, with its own replica capacities (checked by the verifier)."""
    precision = {w.name: w.precision for w in scenario.workloads}
    groups = tuple(
        FleetReplicaGroup(
            workload=a.workload,
            zone=a.zone,
            gpu=a.gpu,
            tp=a.tp,
            precision=precision.get(a.workload, scenario.workloads[0].precision),
            purchase=a.purchase,
            slice=a.slice,
            replicas=a.replicas,
            slo_rps=a.replica_capacity_rps,
            capacity_source=a.capacity_source,
        )
        for a in plan.allocations
        if a.replicas > 0 and a.replica_capacity_rps > 0
    )
    nodes = tuple(
        FleetNodes(zone=n.zone, gpu=n.gpu, purchase=n.purchase, slice=n.slice, nodes=n.nodes,
                   gpus=n.gpus)
        for n in plan.nodes
        if n.nodes > 0
    )
    return Fleet(name=plan.scenario, source=source, replicas=groups, nodes=nodes)
