"""Valid inequalities of the fleet program: they cut fractional points, never a fleet.

The zone symmetry cut orders the costs of interchangeable zones; the node cover, two-replicas and
two-nodes cuts tighten the LP relaxation of the demand and failure rows. Each is implied by the
families it is added with (and proven so in its docstring).
"""

from __future__ import annotations

import pulp

from models.common import PurchaseKind, Survivability
from solver.program.data import ProgramData
from solver.program.keys import NodeKey
from solver.program.packing import worst_node_rps
from solver.program.variables import (
    Variables,
    node_key,
)


def add_zone_symmetry(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """Symmetry cut: costs of interchangeable zones ordered by zone id.

    Zones selling the same non-spot offers are interchangeable for their non-spot fleets (demand,
    N+1, zone loss, stock and price see only which zone is which, never its name); spot fleets
    are interchangeable among zones selling the same spot offers (spot counts in no failure).
    Any fleet can be relabelled to satisfy the order at the same cost.
    """
    firm = (PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.owned)
    for kinds in (firm, (PurchaseKind.spot,)):
        by_sig: dict[tuple[object, ...], list[str]] = {}
        for z in data.zones:
            sig = tuple(sorted((o.gpu, o.purchase.value, o.gpus_per_node, o.price_per_gpu_hour,
                                o.stock_gpus, o.available_share)
                               for o in data.offers if o.zone == z and o.purchase in kinds))
            if sig:
                by_sig.setdefault(sig, []).append(z)
        for zones in by_sig.values():
            costs = [
                pulp.lpSum(v.cost.get(y, 0.0) * y for key, y in v.nodes.items()
                           if key.zone == z and key.purchase in kinds)
                for z in zones
            ]
            for i in range(len(zones) - 1):
                prob += costs[i] >= costs[i + 1], v.names.name(
                    "sym", kinds[0].value, zones[i], zones[i + 1])


def add_node_cover_cuts(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, zone_loss: bool = True,
    n_plus_1: bool = True, shared_two_nodes: bool = False,
) -> None:
    r"""Valid cuts on node counts alone: the nodes running in a slice could carry the demand.

    One node of a pool carries at most :math:`M` of a workload (its fullest packing), so
    :math:`\sum_p \min(M_{wp}, d_{ws}) y_{ps} \ge d_{ws}` (steady state at :math:`u_w a_k`; for
    zone loss, non-spot pools outside each zone at :math:`\phi`). A coefficient is capped at the
    demand because one such node alone already meets it: the integer points are the same, the LP
    relaxation much tighter where nodes are large against the demand. Rows of integers only let
    the solver round them (mixed-integer rounding), which the replica rows hide. Implied by C1 and
    C6 (and C4 for the zone rows), so they are added only with those families. Zone loss (and
    N+1 with dedicated pools) adds :math:`\sum_p c_p y_{ps} \ge d_{ws} + \min_p c_p` over
    non-spot pools with :math:`c_p = \min(\phi M_{wp}, d_{ws})`: what is left after losing a zone
    (a node) that holds some of ``w`` still carries the demand, and that zone (node) held at least
    one node of some pool (a dedicated node loses exactly :math:`\phi M`). With :math:`c_p = d`
    it reads "at least two nodes", which the LP relaxation otherwise spreads thin. Workloads
    that must survive a failure also get the two-replicas cut (shared nodes) or the two-nodes
    cut (dedicated pools), and with shared nodes the two-nodes cut as well when
    ``shared_two_nodes`` (valid there too: :func:`add_two_nodes_cut`; asked for by the joint
    solve only, :func:`solver.program.build.build_program`).
    """
    for w in data.workloads:
        if w.name in data.volume_requests:
            continue
        for s in data.demand_slices(w.name):
            v.check()
            pools = sorted({node_key(data, k) for k in v.by_slice.get((w.name, s), [])},
                           key=NodeKey.sort_key)
            node = {p: worst_node_rps(data, w.name, v.offer[p.pool]) for p in pools}
            need = data.demand_rps[(w.name, s)]
            prob += pulp.LpAffineExpression([
                (v.nodes[p], min(w.utilization * v.offer[p.pool].available_share * node[p], need))
                for p in pools]) >= need, v.names.name("cover", w.name, s)
            firm = {p: min(data.failure_utilization * node[p], need) for p in pools
                    if not p.spot}
            survives = firm and ((w.survivability is Survivability.zone_loss and zone_loss) or (
                w.survivability is Survivability.n_plus_1 and n_plus_1))
            if survives and (w.survivability is Survivability.zone_loss or not data.share_nodes):
                prob += pulp.LpAffineExpression([(v.nodes[p], c) for p, c in firm.items()]) >= (
                    need + min(firm.values())), v.names.name("covern1", w.name, s)
            if survives and data.share_nodes:
                add_two_replicas_cut(prob, data, v, w.name, s, w.survivability, need)
            if survives and (shared_two_nodes or not data.share_nodes):
                # a dedicated node is lost whole: count nodes (the replica cut, whose replicas
                # are small where nodes are big, slowed these sub-programs: docs/program.md)
                add_two_nodes_cut(prob, data, v, w.name, s, w.survivability, need)
            if not zone_loss or w.survivability is not Survivability.zone_loss:
                continue
            for z in data.zones:
                prob += pulp.LpAffineExpression([
                    (v.nodes[p], c) for p, c in firm.items() if p.zone != z]) >= need, (
                        v.names.name("coverzone", w.name, z, s))


def add_two_replicas_cut(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, s: str,
    survivability: Survivability, need: float,
) -> None:
    r"""Valid cut: surviving a failure takes two whole *big* replicas, or enough *small* ones.

    A non-spot replica slot is *big* for ``w`` in slice ``s`` when one replica could carry the
    demand after a failure (:math:`\phi\rho_c \ge d`), *small* otherwise. With :math:`B` big
    replicas and :math:`S` the capacity at :math:`\phi` of the small ones:

    .. math:: B + \alpha\, S / d \ge 2,

    valid for every fleet: with :math:`B \ge 2` trivially; with :math:`B = 1`, losing the node
    (or zone) that replica runs in leaves only small ones, so :math:`S \ge d`; with
    :math:`B = 0`, zone loss over :math:`Z` zones needs :math:`S \ge d + \max_z S_z \ge
    dZ/(Z-1)` and N+1 needs :math:`S \ge d`. Hence :math:`\alpha = 2(Z-1)/Z` for zone loss,
    2 for N+1. Without it the LP relaxation spreads 0.4 of a replica over each of several zones.

    A small replica's weight is :math:`\min(\alpha, 2/(1+q))\, q` with :math:`q = \phi\rho/d`
    rather than :math:`\alpha q` (:func:`_two_cut_weight`): with :math:`B = 0` the node (zone)
    holding the largest replica loses at least it, so :math:`S/d \ge 1 + q_{max}` as well, and
    each weight is at least :math:`\min(\alpha, 2/(1+q_{max}))\, q`, whose sum is then
    :math:`\ge 2`; with :math:`B = 1` both factors are :math:`\ge 1`. For N+1
    (:math:`\alpha = 2`) this asks a pool of replicas of 0.8 of the demand for 2.25 of them
    instead of 1.25 (what it does to the relaxation is measured in docs/program.md).
    """
    phi = data.failure_utilization
    keys = [k for k in v.by_slice.get((w, s), []) if not k.spot]
    alpha = _alpha(survivability, len({k.zone for k in keys}))
    if not keys or alpha is None:
        return
    terms = [(v.replicas[k], _two_cut_weight(phi * v.rate[k], need, alpha)) for k in keys]
    prob += pulp.LpAffineExpression(terms) >= 2, v.names.name("tworeps", w, s)


def _alpha(survivability: Survivability, zones: int) -> float | None:
    """Weight of small capacity in the two-replicas and two-nodes cuts (``None``: no cut)."""
    if survivability is Survivability.zone_loss:
        return 2 * (zones - 1) / zones if zones >= 2 else None
    return 2.0


def _two_cut_weight(firm_rps: float, need_rps: float, alpha: float) -> float:
    """Coefficient of a replica or node in the two-replicas / two-nodes cut: 1 when it alone
    carries the demand after a failure (*big*), else its share ``q`` of the demand times
    ``min(alpha, 2 / (1 + q))`` (the argument is in :func:`add_two_replicas_cut`)."""
    if firm_rps >= need_rps * (1 - 1e-9):
        return 1.0
    share = firm_rps / need_rps
    return min(alpha, 2 / (1 + share)) * share


def add_two_nodes_cut(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, s: str,
    survivability: Survivability, need: float,
) -> None:
    r"""Valid cut: two whole *big* nodes, or enough capacity in *small* ones.

    The node version of :func:`add_two_replicas_cut`. A dedicated node runs its fullest packing
    and is lost whole, so a non-spot node group is *big* for ``w`` when one node alone carries
    the demand after a failure (:math:`\phi M_p \ge d`), *small* otherwise. With :math:`B` big
    nodes and :math:`S = \sum_{small\ p} \phi M_p y_p`:

    .. math:: B + \alpha\, S / d \ge 2,

    by the same cases: :math:`B \ge 2` trivially; :math:`B = 1`: losing that node (its zone)
    leaves only small nodes, so :math:`S \ge d` and :math:`\alpha \ge 1`; :math:`B = 0`: as for
    replicas, weights too (the node holding the largest share is lost whole). The node cover
    rows weigh a big node as :math:`d`, so their relaxation holds 0.2 of a big node in each zone;
    this one asks for two (or the small nodes' equivalent); its effect on the largest
    benchmark's sub-programs is measured in docs/program.md.

    *Shared nodes.* The cut reads node counts only, and every node count of a shared fleet
    (every node of a pool with slots of ``w``, holding ``w`` or not) is one of a fleet of ``w``
    alone on dedicated nodes that survives the same failures: give each node ``w``'s fullest
    packing. Its capacity in a pool, :math:`\phi M_p y_p`, is at least the shared
    :math:`X_p`, and losing one of its nodes takes :math:`\phi M_p`, no more than what the
    shared pool lost (:math:`\min(X_p, \phi M_p)`) plus what the packing added there
    (:math:`\ge \phi M_p - X_p` wherever :math:`y_p \ge 1`); a zone's loss leaves at least the
    shared capacity outside it. So the cases above hold. The relaxation reads a fractional
    node as big for every workload at once; on the demo it raises the LP relaxation from
    94,229 to 104,125, and it is added with shared nodes only where asked
    (``shared_two_nodes``: the joint solve, not the grouped stages, whose search it slowed;
    benchmarks/results/demo-proof.md, "A tighter program for the demo").
    """
    phi = data.failure_utilization
    pools = sorted({node_key(data, k) for k in v.by_slice.get((w, s), [])
                    if not k.spot}, key=NodeKey.sort_key)
    alpha = _alpha(survivability, len({p.zone for p in pools}))
    if not pools or alpha is None:
        return
    terms = [(v.nodes[p], _two_cut_weight(phi * worst_node_rps(data, w, v.offer[p.pool]), need,
                                          alpha)) for p in pools]
    prob += pulp.LpAffineExpression(terms) >= 2, v.names.name("twonodes", w, s)
