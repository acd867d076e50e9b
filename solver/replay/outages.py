"""The failures a replay injects into a fleet: a zone, or one node of a pool as ``check`` loses it.

``check`` (solver.survivability.failures) loses, for a node failure, the node of the pool
(zone × GPU × purchase kind) that holds the most of the workload's SLO-holding rate: the fullest
packing of the pool's replicas into one node. The replay loses the same replicas, so a replayed
N+1 promise is the one the plan made. Without a purchase kind the pool of that zone and GPU
whose fullest node holds the most is taken (the worst case for the workload).
"""

from __future__ import annotations

from models.common import PurchaseKind
from models.inventory import Fleet, FleetReplicaGroup
from models.scenario import Scenario
from models.workload import Workload
from solver.replay.engine import Outage, ReplicaLoss, ReplicaSpec, ZoneFailure
from solver.survivability.failures import Failure, FailureKind, surviving_replicas

Groups = list[tuple[FleetReplicaGroup, list[ReplicaSpec]]]


def node_loss(fleet: Fleet, scenario: Scenario, workload: Workload, slice_name: str,
              groups: Groups, zone: str, gpu: str, at_s: float,
              purchase: PurchaseKind | None = None) -> ReplicaLoss | None:
    """The replicas the fullest node of pool ``zone``/``gpu`` (/``purchase``) holds of the
    workload, lost at ``at_s``; ``None`` when that pool runs none of its replicas in the slice.

    ``groups`` is :func:`solver.replay.engine.fleet_replica_groups` of the same fleet, workload
    and slice: the lost count of each fleet group takes its first replicas.
    """
    kinds = list(PurchaseKind) if purchase is None else [purchase]
    best: tuple[float, dict[int, int]] | None = None
    for kind in kinds:
        failure = Failure(kind=FailureKind.node, zone=zone, gpu=gpu, purchase=kind)
        lost: dict[int, int] = {}
        rate = 0.0
        for g, left in surviving_replicas(fleet, workload, scenario, slice_name, failure,
                                          count_spot=True):
            if left < g.replicas:
                lost[id(g)] = g.replicas - left
                rate += (g.replicas - left) * g.slo_rps
        if lost and (best is None or rate > best[0]):
            best = (rate, lost)
    if best is None:
        return None
    names = frozenset(spec.name for g, specs in groups for spec in specs[:best[1].get(id(g), 0)])
    return ReplicaLoss(names=names, at_s=at_s, label=f"node:{zone}/{gpu}")


def outage_for(failure: Failure, fleet: Fleet, scenario: Scenario, workload: Workload,
               slice_name: str, groups: Groups, at_s: float) -> Outage | None:
    """A failure domain of ``check`` as a replay failure at ``at_s`` (``None``: steady state,
    or a node pool that holds none of the workload's replicas)."""
    if failure.kind is FailureKind.zone:
        assert failure.zone is not None
        return ZoneFailure(zone=failure.zone, at_s=at_s)
    if failure.kind is FailureKind.node:
        assert failure.zone is not None and failure.gpu is not None
        loss = node_loss(fleet, scenario, workload, slice_name, groups, failure.zone,
                         failure.gpu, at_s, failure.purchase)
        return None if loss is None else ReplicaLoss(loss.names, at_s, failure.label)
    if failure.kind is FailureKind.region:
        zones = {z.id for z in scenario.zones if z.region == failure.region}
        names = frozenset(s.name for _, specs in groups for s in specs if s.zone in zones)
        return ReplicaLoss(names=names, at_s=at_s, label=failure.label)
    return None
