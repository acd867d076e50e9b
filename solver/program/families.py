"""The constraint families C1–C7 of the fleet program, one function each (``add_*``).

Each has the signature ``add_x(prob, data, v) -> None``; its docstring names its number and algebra
(the formulation is in :mod:`solver.program.build`). Requirement rows go through :func:`_require`,
which gives them a slack in the elastic program that :mod:`solver.solve.diagnose` reads.
"""

from __future__ import annotations

from collections.abc import Iterable

import pulp

from models.common import PurchaseKind, Survivability, runs_all_day
from models.workload import SECONDS_PER_HOUR
from solver.capacity.node_fit import slot_rows
from solver.program.data import OfferTerm, ProgramData
from solver.program.keys import NodeKey, PoolKey, ReplicaKey, RowKey
from solver.program.packing import best_packing, worst_node_rps
from solver.program.variables import (
    Auxiliary,
    Family,
    Slack,
    Variables,
    capacity_expr,
    node_key,
)


def _require(
    prob: pulp.LpProblem, v: Variables, row: RowKey, lhs: pulp.LpAffineExpression, sense: str,
    rhs: pulp.LpAffineExpression | float, unit: str,
) -> None:
    """Add ``lhs >= rhs`` (sense ``>=``) or ``lhs <= rhs``; elastic programs get a slack."""
    v.check()
    name = v.names.name(row.family, *row.labels())
    if v.elastic:
        slack = prob.add_variable(v.names.name("slack_" + row.family, *row.labels()), lowBound=0)
        v.slacks.append(Slack(row, slack, unit))
        lhs = lhs + slack if sense == ">=" else lhs - slack
    prob += (lhs >= rhs if sense == ">=" else lhs <= rhs), name


def meet_demand(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, row: RowKey,
    capacity: dict[str, pulp.LpAffineExpression],
) -> None:
    """Capacity per slice meets the demand of ``row.workload``: per slice, or as a volume over
    its window (one row, no slice)."""
    w = row.workload
    assert w is not None
    if w in data.volume_requests:
        done = pulp.lpSum(
            SECONDS_PER_HOUR * data.hours_in_window[(w, s)] * cap for s, cap in capacity.items()
        )
        _require(prob, v, row, done, ">=", data.volume_requests[w], "requests/day")
        return
    for s, cap in capacity.items():
        _require(prob, v, row._replace(slice=s), cap, ">=", data.demand_rps[(w, s)], "req/s")


def running_capacity(
    data: ProgramData, v: Variables, w: str, s: str, utilization: float, failover: bool
) -> pulp.LpAffineExpression:
    r""":math:`U_{ws}` (``failover=False``) or :math:`F_{ws}(\emptyset)`: non-spot only [1/s]."""
    keys = v.by_slice.get((w, s), [])
    if failover:
        keys = [k for k in keys if not k.spot]
    return capacity_expr(data, v, keys, utilization)


def firm_capacity(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, s: str
) -> pulp.LpAffineExpression:
    r""":math:`F_{ws}(\emptyset)` as one variable ``f ≤ Σ φ ρ x`` (non-spot), shared by the
    failure rows so each of them has a few terms instead of every slot of the workload."""
    if (w, s) not in v.firm:
        f = prob.add_variable(v.names.name("f", w, s), 0)
        capacity = running_capacity(data, v, w, s, data.failure_utilization, failover=True)
        prob += f <= capacity, v.names.name("firm", w, s)
        v.firm[(w, s)] = f
        v.aux.append(Auxiliary(f, capacity))
    return pulp.LpAffineExpression([(v.firm[(w, s)], 1.0)])


def zone_capacity(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, z: str, s: str
) -> pulp.LpAffineExpression:
    """Non-spot capacity of ``w`` in zone ``z`` at φ, as one variable ``c ≥ Σ φ ρ x`` [1/s]."""
    keys = [k for k in v.by_slice.get((w, s), []) if k.zone == z and not k.spot]
    if not keys:
        return pulp.LpAffineExpression()
    c = prob.add_variable(v.names.name("c", w, z, s), 0)
    v.zone_cap[(w, z, s)] = c
    capacity = capacity_expr(data, v, keys, data.failure_utilization)
    prob += c >= capacity, v.names.name("zonecap", w, z, s)
    v.aux.append(Auxiliary(c, capacity))
    return pulp.LpAffineExpression([(c, 1.0)])


def add_demand(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C1: capacity at target utilization meets demand (per slice, or volume over the window)."""
    for w in data.workloads:
        capacity = {
            s: running_capacity(data, v, w.name, s, w.utilization, failover=False)
            for s in data.demand_slices(w.name)
        }
        meet_demand(prob, data, v, RowKey("demand", w.name), capacity)


def add_no_spot_for_interactive(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C2: interactive workloads get no spot replicas.

    Applied as a mask when the variables are made (the slots do not exist); any spot slot of an
    interactive workload that does exist is fixed to zero here.
    """
    interactive = {w.name for w in data.workloads if w.interactive}
    if not interactive:
        return
    for key, x in v.replicas.items():
        if key.spot and key.workload in interactive:
            x.upBound = 0


def demand_bound_rps(data: ProgramData, w: str, s: str) -> float:
    """Most a workload may need in a slice [1/s]: its demand, or its whole volume in that slice."""
    if w in data.volume_requests:
        return data.volume_requests[w] / (SECONDS_PER_HOUR * data.hours_in_window[(w, s)])
    return data.demand_rps[(w, s)]


def pool_capacity_bound(
    data: ProgramData, w: str, o: OfferTerm, slices: Iterable[str]
) -> float:
    r""":math:`\bar X`: capacity at :math:`\phi` a pool never needs to exceed for ``w`` [1/s].

    With :math:`\bar D` the largest demand of the slices, any fleet whose pool holds more than
    :math:`\max(\bar D \phi / u, \bar D + M) + \phi\rho_{max}` still meets demand and survives
    every node loss with one replica fewer there (the pool alone covers the demand after losing a
    node), so some optimum stays below it. Capped by the pool at full stock.
    """
    phi = data.failure_utilization
    util = data.workload(w).utilization
    node = phi * worst_node_rps(data, w, o)
    rate = max(c.slo_rps for c in data.candidates_of(w) if c.gpu == o.gpu)
    need = max(demand_bound_rps(data, w, s) for s in slices)
    bound = max(need * phi / util, need + node) + phi * rate
    return min(bound, node * (o.stock_gpus // o.gpus_per_node))


def node_loss(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str,
    pool: tuple[str, str, PurchaseKind], s: str,
) -> pulp.LpAffineExpression:
    r""":math:`\ell`: what losing the fullest node of a pool takes from ``w`` in a slice [1/s].

    :math:`\ell \ge X - (\bar X - M) b` and :math:`\ell \ge M b`: the LP relaxation reads the
    chord :math:`\ell \ge X M / \bar X`, close to exact because :math:`\bar X` is kept small (see
    :func:`pool_capacity_bound`).
    """
    v.check()
    z, g, kind = pool
    o = v.offer[pool]
    phi = data.failure_utilization
    lost = capacity_expr(data, v, v.slots_in_pool(w, s, PoolKey(*pool)), phi)
    node = phi * worst_node_rps(data, w, o)
    reserved = runs_all_day(kind)
    bound = pool_capacity_bound(data, w, o, data.demand_slices(w) if reserved else (s,))
    if bound <= node:
        return lost  # the pool never needs more than one node: it loses all it holds
    bkey = (w, z, g, kind, None if reserved else s)
    if bkey not in v.full:
        v.full[bkey] = prob.add_variable(
            v.names.name("b", w, z, g, kind.value, bkey[4] or "all"), cat="Binary")
    b = v.full[bkey]
    ell = prob.add_variable(v.names.name("l", w, z, g, kind.value, s), 0)
    v.loss[(w, z, g, kind, s)] = ell
    v.aux.append(Auxiliary(ell, lost, b, node, bound))
    prob += ell >= lost - (bound - node) * b, v.names.name("lossx", w, z, g, kind.value, s)
    prob += ell >= node * b, v.names.name("lossm", w, z, g, kind.value, s)
    return pulp.LpAffineExpression(ell)


def add_n_plus_1(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C3: after losing the fullest node of any non-spot pool, a workload still meets demand."""
    for w in data.workloads:
        if w.survivability is not Survivability.n_plus_1:
            continue
        slices = data.demand_slices(w.name)
        pools = sorted({k.pool for s in slices for k in v.by_slice.get((w.name, s), [])
                        if not k.spot}, key=lambda p: (p.zone, p.gpu, p.purchase.value))
        # losing a spot node (or one holding none of w) leaves the non-spot capacity
        firm = {s: firm_capacity(prob, data, v, w.name, s) for s in slices}
        meet_demand(prob, data, v, RowKey("n_plus_1", w.name, spot_node=True), firm)
        for pool in pools:
            capacity = {s: firm[s] - node_loss(prob, data, v, w.name, pool, s) for s in slices}
            meet_demand(prob, data, v, RowKey("n_plus_1", w.name, pool.zone, pool.gpu,
                                              pool.purchase), capacity)


def add_zone_loss(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C4: after losing any zone, running non-spot capacity elsewhere meets demand at φ."""
    for w in data.workloads:
        if w.survivability is not Survivability.zone_loss:
            continue
        slices = data.demand_slices(w.name)
        firm = {s: firm_capacity(prob, data, v, w.name, s) for s in slices}
        for z in data.zones:
            capacity = {s: firm[s] - zone_capacity(prob, data, v, w.name, z, s) for s in slices}
            meet_demand(prob, data, v, RowKey("zone_loss", w.name, z), capacity)


def add_stock(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C5: GPUs bought per (zone, GPU, purchase kind[, slice]) ≤ the offer's stock.

    One row per offer and slice, summed over the workloads' own pools (the only row, with the
    budget, that couples workloads when they do not share nodes).
    """
    groups: dict[tuple[str, str, PurchaseKind, str | None], list[pulp.LpVariable]] = {}
    for key, y in v.nodes.items():
        groups.setdefault(key.stock, []).append(y)
    for (z, g, kind, s), ys in groups.items():
        o = v.offer[(z, g, kind)]
        _require(prob, v, RowKey("stock", zone=z, gpu=g, purchase=kind, slice=s),
                 pulp.LpAffineExpression([(y, o.gpus_per_node) for y in ys]), "<=",
                 data.stock_left(o, s), "GPUs")


def add_nodes(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C6: replicas in a node group (a workload's own pool, or shared) pack into its nodes.

    Shared nodes: for each TP degree ``t`` present, replicas of degree ≥ ``t`` use at most
    :math:`t \\lfloor n/t \\rfloor` GPUs of each node (exact whole-replica packing for any
    node size, odd ones included: :func:`solver.capacity.node_fit.slot_rows`).
    A dedicated pool's nodes each hold the workload's fullest packing (:func:`best_packing`):
    :math:`x_r = m_{t_c} y`. No optimum is lost: capacity only grows, at the same node count, and
    a node loss takes at most :math:`M` either way, so demand, N+1 and zone loss still hold.
    """
    members: dict[NodeKey, list[ReplicaKey]] = {}
    for k in v.replicas:
        members.setdefault(node_key(data, k), []).append(k)
    for key, y in v.nodes.items():
        v.check()
        if key.owner is not None:
            packing = dict(best_packing(data, key.owner, v.offer[key.pool]))
            for k in members[key]:
                prob += v.replicas[k] == packing[k.tp] * y, v.names.name(
                    "pack", k.workload, k.gpu, f"tp{k.tp}", k.zone, k.purchase.value,
                    k.slice or "all")
            continue
        rows = slot_rows({k.tp for k in members[key]}, v.offer[key.pool].gpus_per_node)
        for t, per_node in rows:
            gpus = pulp.LpAffineExpression([(v.replicas[k], k.tp) for k in members[key]
                                            if k.tp >= t])
            prob += gpus <= per_node * y, v.names.name(
                "nodes", key.zone, key.gpu, key.purchase.value, key.slice or "all",
                key.owner or "shared", *(() if t == rows[0][0] else (f"tp{t}",)))


def add_budget(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C7: monthly cost ≤ the policy's budget."""
    if data.monthly_budget is None:
        return
    _require(prob, v, RowKey("budget"), v.cost, "<=", data.monthly_budget, "currency/month")


#: Constraint families by name, in formulation order (C1…C7).
FAMILIES: dict[str, Family] = {
    "demand": add_demand,
    "spot": add_no_spot_for_interactive,
    "n_plus_1": add_n_plus_1,
    "zone_loss": add_zone_loss,
    "stock": add_stock,
    "nodes": add_nodes,
    "budget": add_budget,
}
