"""Failure arithmetic on a fleet: demand, usable capacity and what survives a failure.

The verifier, the survivability checker and the replay simulator all read a
:class:`~models.inventory.Fleet` (made by :mod:`solver.survivability.fleet`) and share this plain
arithmetic, without ``pulp`` (docs/survivability.md):

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
from models.inventory import Fleet, FleetReplicaGroup
from models.offers import SpotTerms
from models.policy import TimeBlock
from models.scenario import Scenario
from models.workload import SECONDS_PER_HOUR, Workload
from solver.capacity.packing import PackItem, fullest_packing

#: A capacity within this relative distance of the demand holds it [1] (rounding of rates).
REL_TOL = 1e-6
#: ... and within this absolute distance (demand of zero) [1/s].
ABS_TOL_RPS = 1e-9


def capacity_holds(capacity_rps: float, demand_rps: float) -> bool:
    """Capacity meets demand, within the tolerance every check shares."""
    return capacity_rps >= demand_rps * (1.0 - REL_TOL) - ABS_TOL_RPS


# --- demand ------------------------------------------------------------------------------------


def slice_demand_rps(workload: Workload, block: TimeBlock) -> float:
    """Demand of one slice: the workload's hourly demand at the busiest hour of the block [1/s]."""
    hourly = workload.hourly_demand_rps()
    return max(hourly[h] for h in block.hours)


def block_hours_in_window(workload: Workload, block: TimeBlock) -> int:
    """Hours of a block inside a batch workload's window (all its hours without a window) [h]."""
    if workload.batch is None:
        return len(block.hours)
    window = set(workload.batch.window_hours)
    return sum(1 for h in block.hours if h in window)


def volume_demand_rps(
    workload: Workload, blocks: Sequence[TimeBlock], capacity_rps: dict[str, float]
) -> dict[str, float]:
    """Rate a batch volume runs at in each slice, spread in proportion to the capacity there
    [1/s].

    The program places a daily volume anywhere in its window (docs/program.md, C1), so a slice
    is judged by the work the fleet does there: ``V × cap_s ÷ Σ_t 3600 h_t cap_t`` for a slice
    of ``h_s`` window hours, which is at most ``cap_s`` in every slice exactly when the fleet
    completes ``V`` (a fleet that does not is short in each slice alike). Without capacity in
    the window the volume is spread evenly over it (:func:`slice_demand_rps`).
    """
    assert workload.batch is not None
    done = sum(capacity_rps[b.name] * block_hours_in_window(workload, b) * SECONDS_PER_HOUR
               for b in blocks)  # requests a day [1/s × h × s/h]
    if done <= 0:
        return {b.name: slice_demand_rps(workload, b) for b in blocks}
    share = workload.batch.daily_requests / done  # [1]
    return {b.name: capacity_rps[b.name] * share if block_hours_in_window(workload, b) else 0.0
            for b in blocks}


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


def spot_terms(scenario: Scenario, zone: str, gpu: str) -> SpotTerms | None:
    """The spot terms of a GPU in a zone, if it sells spot."""
    for z in scenario.zones:
        if z.id == zone:
            for offer in z.offers:
                if offer.gpu == gpu and offer.spot is not None:
                    return offer.spot
    return None


def spot_available_share(scenario: Scenario, zone: str, gpu: str) -> float:
    """Expected share of a zone's spot capacity of a GPU serving at any time [1] (1 without
    spot): :attr:`~models.offers.SpotTerms.available_share`."""
    terms = spot_terms(scenario, zone, gpu)
    return 1.0 if terms is None else terms.available_share


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
            rps *= spot_available_share(scenario, g.zone, g.gpu)  # [1]
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
    rate, counts = fullest_packing([PackItem(g.tp, g.slo_rps, g.replicas) for g in groups],
                                   gpus_per_node)
    return rate, {i: n for i, n in enumerate(counts) if n}


def surviving_replicas(
    fleet: Fleet,
    workload: Workload,
    scenario: Scenario,
    slice_name: str,
    failure: Failure,
    count_spot: bool = False,
) -> list[tuple[FleetReplicaGroup, int]]:
    """Replica groups of a workload still serving in a slice after a failure, with counts.

    Only running, non-spot replicas count: spot is never failover capacity. (``count_spot``
    keeps surviving spot replicas, to report what a workload that need not survive the failure
    still has.) A zone or region failure removes every replica there; a node failure removes
    what the worst node of that pool holds of this workload (:func:`worst_node_loss`).
    ``none`` removes nothing.
    """
    region_of = {z.id: z.region for z in scenario.zones}
    live = [
        g
        for g in fleet.replicas
        if g.workload == workload.name
        and runs_in(g.slice, slice_name)
        and (count_spot or g.purchase is not PurchaseKind.spot)
        and g.replicas > 0
    ]
    if failure.kind is FailureKind.zone:
        live = [g for g in live if g.zone != failure.zone]
    elif failure.kind is FailureKind.region:
        live = [g for g in live if region_of.get(g.zone) != failure.region]
    lost: dict[int, int] = {}
    if failure.kind is FailureKind.node:
        pool_idx = [
            i
            for i, g in enumerate(live)
            if (g.zone, g.gpu, g.purchase) == (failure.zone, failure.gpu, failure.purchase)
        ]
        if pool_idx:
            assert failure.zone is not None and failure.gpu is not None
            gpn = fleet.gpus_per_node(failure.zone, failure.gpu, live[pool_idx[0]].purchase)
            gpn = gpn or offer_gpus_per_node(scenario, failure.zone, failure.gpu)
            _, pool_lost = worst_node_loss([live[i] for i in pool_idx], gpn)
            lost = {pool_idx[j]: n for j, n in pool_lost.items()}
    return [(g, g.replicas - lost.get(i, 0)) for i, g in enumerate(live)]


def failover_capacity_rps(
    fleet: Fleet,
    workload: Workload,
    scenario: Scenario,
    slice_name: str,
    failure: Failure,
) -> float:
    """Capacity of a workload in a slice after a failure, at the failure utilization [1/s].

    Σ surviving replicas × slo_rps × failure utilization (:func:`surviving_replicas`).
    """
    util = scenario.policy.failure_utilization
    return (
        sum(
            n * g.slo_rps
            for g, n in surviving_replicas(fleet, workload, scenario, slice_name, failure)
        )
        * util
    )  # [1/s]


def required_failures(workload: Workload, failures: Iterable[Failure]) -> tuple[Failure, ...]:
    """Failures a workload must survive: n_plus_1 → any node; zone_loss → any zone and node."""
    need = {
        "none": set(),
        "n_plus_1": {FailureKind.node},
        "zone_loss": {FailureKind.node, FailureKind.zone},
    }[workload.survivability.value]
    return tuple(f for f in failures if f.kind in need)
