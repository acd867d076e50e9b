r"""The fleet integer program: the cheapest fleet that carries every workload through its failures.

Sets (all sorted; each could gain a quarter index ``q``: docs/program.md, "planning periods")

- :math:`W` workloads; :math:`W^I \subseteq W` interactive; :math:`W^{N1}`, :math:`W^{ZL}` those
  asking for ``n_plus_1`` / ``zone_loss``; :math:`W^V` batch workloads given as a daily volume.
- :math:`Z` zones, :math:`G` GPU types, :math:`K = \{R, D, S\}` reserved, on-demand, spot;
  :math:`O \subseteq Z\times G\times K` the offers sold.
- :math:`S` slices of the peak day (groups of the policy's time blocks), :math:`h_s` their hours.
- :math:`C_w` candidates of workload ``w``: feasible (GPU ``g_c``, TP ``t_c``) from the capacity
  table.
- Replica slots :math:`r = (w, c, z, k, s)` with :math:`(z, g_c, k) \in O`, :math:`t_c \le n_{zg}`;
  reserved slots carry no slice (:math:`s = *`) and count in every slice; :math:`r \ni s` below
  means "present in slice s".
- Node groups :math:`p = (z, g, k, s, o)`: with shared nodes (the default, ``policy.share_nodes``
  true) :math:`o` is empty and every workload's replicas of (z, g, k, s) share them; with
  dedicated pools the owner :math:`o` is the workload, a node serves one workload.

Parameters

- :math:`\rho_c` SLO-holding rate of a replica [1/s]; :math:`u_w` target utilization; :math:`\phi`
  the policy's failure utilization; :math:`a_k = 1 - \iota_{zg}` for spot (expected interruption),
  1 otherwise.
- :math:`d_{ws}` demand [1/s] (busiest hour of the slice); :math:`V_w` daily volume [requests],
  :math:`h_{ws}` hours of slice ``s`` inside the window of ``w``.
- :math:`n_{zg}` GPUs per node, :math:`\pi_{zgk}` price [currency/(GPU·h)],
  :math:`\sigma_{zgk}` stock [GPUs], :math:`H` hours per month, :math:`B` monthly budget.
- :math:`M_{wzgk} = \phi \max\{\sum_c m_c\rho_c : \sum_c m_c t_c \le n_{zg}\}` capacity of the
  fullest node of ``w`` in group (z, g, k): one node of TP ``t`` holds :math:`\lfloor n/t\rfloor`.

Variables

- :math:`x_r \in \mathbb{Z}_{\ge 0}` replicas; :math:`y_{zgk(s)} \in \mathbb{Z}_{\ge 0}` nodes
  (reserved: one per (z, g); elastic: per slice); :math:`\ell_{wzgks} \ge 0` capacity lost with the
  fullest node of a pool and :math:`b_{wzgk(s)} \in \{0, 1\}` "that node is full" (N+1 only).
- Auxiliaries that keep failure rows short: :math:`f_{ws} \le F_{ws}(\emptyset)` and
  :math:`c_{wzs} \ge` the non-spot capacity of ``w`` in zone ``z`` (at :math:`\phi`), so each
  N+1 and zone-loss row has a few terms instead of every slot of the workload.

Capacity of ``w`` in slice ``s``: :math:`U_{ws} = \sum_{r \ni s} u_w a_k \rho_c x_r` in normal
operation; after a failure only running non-spot replicas count, at :math:`\phi`:
:math:`F_{ws}(A) = \sum_{r \ni s, k_r \ne S, r \notin A} \phi \rho_c x_r` with ``A`` the lost slots.
"Meets demand" for capacity :math:`E_{ws}` means :math:`E_{ws} \ge d_{ws}` in every slice with
demand, or, for a volume workload, :math:`\sum_s 3600\, h_{ws} E_{ws} \ge V_w` (work may move
anywhere in its window).

Objective: :math:`\min \sum_{zg} \pi_{zgR} n_{zg} H y_{zgR} + \sum_{zgk \ne R,s} \pi_{zgk} n_{zg}
\frac{h_s H}{24} y_{zgks}` — reserved paid every hour, elastic for the hours of its slice.

Constraints

- C1 demand: :math:`U_{ws}` meets demand.
- C2 spot: no spot slots for :math:`w \in W^I` (never spot for interactive pools; a mask).
- C3 n_plus_1: for :math:`w \in W^{N1}`, :math:`F_{ws}(\emptyset)` meets demand (losing a spot
  node: spot never counts after a failure) and, for each non-spot pool (z, g, k) holding slots
  of ``w``, :math:`F_{ws}(\emptyset) - \ell_{wzgks}` meets demand, where the loss is
  :math:`\ell \ge \min(X_s, M)` with :math:`X_s` the pool's capacity at :math:`\phi`, linearised
  as :math:`\ell \ge X_s - (\bar X - M) b`, :math:`\ell \ge M b`, where :math:`\bar X` bounds the
  capacity an optimal pool needs (demand plus one node, see ``pool_capacity_bound``). Where
  :math:`\bar X \le M`, :math:`\ell = X_s` exactly. A reserved pool's ``b``
  is shared by all slices (:math:`X` is the same in each, so the min picks the same side). With
  several TPs on one pool, :math:`\min(X, M)` bounds the worst node's bounded knapsack from above
  (safe).
- C4 zone_loss: for :math:`w \in W^{ZL}` and each zone ``z``, :math:`F_{ws}(\text{slots in } z)`
  meets demand — only running, non-spot capacity counts. (Losing a node is implied.)
- C5 stock: :math:`\sum_o n_{zg} y_{zgk(s)o} \le \sigma_{zgk}` (less ``stock_taken``, stock
  already bought by workloads solved apart).
- C6 nodes: shared: :math:`\sum_{r \in p} t_c x_r \le n_{zg} y_p` (replicas pack into whole
  nodes; slots with :math:`t_c > n_{zg}` do not exist). Dedicated: every node runs the
  workload's fullest packing, :math:`x_r = m_{t_c} y_p` (:func:`best_packing`; slots exist only
  for its TPs). No optimum is lost: capacity grows at the same node count and a node loss takes
  exactly :math:`M` either way.
- C7 budget: objective :math:`\le B` where a budget is set.

Symmetry cut (not a requirement): zones selling identical non-spot (or spot) offers are
interchangeable, so their non-spot (spot) costs are ordered by zone id. Node cover cuts (implied
by C1, C4 and C6): the nodes running in a slice could carry the demand on their own. Two-replicas
cut (shared nodes; implied by C3, C4 and integrality): surviving a failure takes two whole
replicas that could each carry the demand after it, or enough capacity in smaller ones; with
dedicated pools the same cut on whole nodes (two-nodes cut).

With dedicated pools only C5 and C7 couple workloads, so :mod:`solver.solve.decompose` solves one
sub-program per workload (C1–C4, C6 and its own stock rows); the sum of their proven bounds is a
valid bound of this program (any fleet restricted to one workload is feasible for its
sub-program), and their fleets put together are optimal within the summed gap whenever they
respect stock and budget (docs/program.md).

The builder only reads :class:`~solver.program.data.ProgramData`. With ``elastic=True`` each
requirement row (C1, C3, C4, C5, C7) gets a non-negative slack variable, registered in
``Variables.slacks``, for :mod:`solver.solve.diagnose`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pulp

from models.common import PurchaseKind, Survivability
from solver.program.data import SECONDS_PER_HOUR, Candidate, OfferTerm, ProgramData

#: Replica slot: (workload, gpu, tp, zone, purchase, slice or None for reserved).
ReplicaKey = tuple[str, str, int, str, PurchaseKind, str | None]
#: Node group: (zone, gpu, purchase, slice or None for reserved, owner workload or None when
#: workloads share nodes).
NodeKey = tuple[str, str, PurchaseKind, str | None, str | None]


class NameBook:
    """Stable, unique solver names generated from labels (never parsed back)."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def name(self, prefix: str, *labels: object) -> str:
        """``prefix_label_label…`` with characters PuLP folds replaced; suffixed if taken."""
        base = "_".join([prefix, *(re.sub(r"[^A-Za-z0-9]", "_", str(x)) for x in labels)])
        out, i = base, 1
        while out in self._used:
            i += 1
            out = f"{base}__{i}"
        self._used.add(out)
        return out


@dataclass
class Slack:
    """A slack variable of the elastic program and what it relaxes."""

    family: str
    labels: tuple[object, ...]
    var: pulp.LpVariable
    unit: str


@dataclass
class Variables:
    """Decision variables by domain label, plus indexes the constraint families share."""

    names: NameBook
    elastic: bool = False
    spot_for_interactive: bool = False
    """Create spot slots for interactive workloads (only when C2 is switched off)."""
    replicas: dict[ReplicaKey, pulp.LpVariable] = field(default_factory=dict)
    nodes: dict[NodeKey, pulp.LpVariable] = field(default_factory=dict)
    loss: dict[tuple[str, str, str, PurchaseKind, str], pulp.LpVariable] = field(
        default_factory=dict
    )
    r""":math:`\ell`: capacity of a workload on the fullest node of a pool, per slice [1/s]."""
    full: dict[tuple[str, str, str, PurchaseKind, str | None], pulp.LpVariable] = field(
        default_factory=dict
    )
    """:math:`b`: the fullest node of a pool is full (reserved pools: one for all slices)."""
    cost: pulp.LpAffineExpression = field(default_factory=pulp.LpAffineExpression)
    slacks: list[Slack] = field(default_factory=list)
    zone_cap: dict[tuple[str, str, str], pulp.LpVariable] = field(default_factory=dict)
    """Non-spot capacity of a workload in a zone and slice at φ [1/s] (zone loss)."""
    firm: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    """:math:`F_{ws}(\\emptyset)`: non-spot capacity at φ per workload and slice [1/s]."""
    rate: dict[ReplicaKey, float] = field(default_factory=dict)
    """SLO-holding rate of a replica of each slot [1/s]."""
    offer: dict[tuple[str, str, PurchaseKind], OfferTerm] = field(default_factory=dict)
    by_slice: dict[tuple[str, str], list[ReplicaKey]] = field(default_factory=dict)
    """Slots of a workload present in a slice (reserved ones in every slice)."""


@dataclass
class Program:
    """A built program: the PuLP problem, its variables and the data it was built from."""

    prob: pulp.LpProblem
    v: Variables
    data: ProgramData


Family = Callable[[pulp.LpProblem, ProgramData, Variables], None]


def capacity_expr(
    data: ProgramData, v: Variables, keys: Iterable[ReplicaKey], utilization: float
) -> pulp.LpAffineExpression:
    """:math:`\\sum f a_k \\rho_c x_r` over slots [1/s] (built from pairs: PuLP's fast path)."""
    return pulp.LpAffineExpression([
        (v.replicas[k], utilization * v.offer[(k[3], k[1], k[4])].capacity_factor * v.rate[k])
        for k in keys
    ])


def _require(
    prob: pulp.LpProblem, v: Variables, family: str, labels: tuple[object, ...],
    lhs: pulp.LpAffineExpression, sense: str, rhs: pulp.LpAffineExpression | float, unit: str,
) -> None:
    """Add ``lhs >= rhs`` (sense ``>=``) or ``lhs <= rhs``; elastic programs get a slack."""
    name = v.names.name(family, *labels)
    if v.elastic:
        slack = prob.add_variable(v.names.name("slack_" + family, *labels), lowBound=0)
        v.slacks.append(Slack(family, labels, slack, unit))
        lhs = lhs + slack if sense == ">=" else lhs - slack
    prob += (lhs >= rhs if sense == ">=" else lhs <= rhs), name


# --- variables ---------------------------------------------------------------------------


def add_variables(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """Replica and node variables, and the cost expression."""
    v.offer = {(o.zone, o.gpu, o.purchase): o for o in data.offers}
    interactive = {w.name for w in data.workloads if w.interactive}
    packings = {} if data.share_nodes else {
        (w.name, o.zone, o.gpu, o.purchase): dict(best_packing(data, w.name, o))
        for w in data.workloads for o in data.offers}
    for c in data.candidates:
        slices = data.demand_slices(c.workload)
        for o in data.offers:
            if o.gpu != c.gpu or c.tp > o.gpus_per_node or not slices:
                continue
            if packings and c.tp not in packings[(c.workload, o.zone, o.gpu, o.purchase)]:
                continue  # dedicated pools: a node holds its workload's fullest packing
            if (o.purchase is PurchaseKind.spot and c.workload in interactive
                    and not v.spot_for_interactive):
                continue  # C2 as a mask: the slot does not exist
            for s in (None,) if o.purchase is PurchaseKind.reserved else slices:
                _add_replica(prob, v, c, o, s)
    used_groups = sorted({node_key(data, k) for k in v.replicas}, key=_node_sort)
    terms = []
    for z, g, kind, s, w in used_groups:
        o = v.offer[(z, g, kind)]
        labels = (z, g, kind.value, s or "all") + (() if w is None else (w,))
        y = prob.add_variable(v.names.name("y", *labels), 0, cat="Integer")
        v.nodes[(z, g, kind, s, w)] = y
        hours = data.hours_per_month if s is None else data.paid_hours_per_month(s)
        terms.append((y, o.price_per_gpu_hour * o.gpus_per_node * hours))
    v.cost = pulp.LpAffineExpression(terms)
    slices_of = {w.name: data.demand_slices(w.name) for w in data.workloads}
    for k in v.replicas:
        for s in (slices_of[k[0]] if k[5] is None else (k[5],)):
            v.by_slice.setdefault((k[0], s), []).append(k)


def node_key(data: ProgramData, k: ReplicaKey) -> NodeKey:
    """Node group of a replica slot: its workload's own pool unless workloads share nodes."""
    return (k[3], k[1], k[4], k[5], None if data.share_nodes else k[0])


def _node_sort(key: NodeKey) -> tuple[str, str, str, str, str]:
    return (key[0], key[1], key[2].value, key[3] or "", key[4] or "")


def _add_replica(
    prob: pulp.LpProblem, v: Variables, c: Candidate, o: OfferTerm, s: str | None
) -> None:
    key: ReplicaKey = (c.workload, c.gpu, c.tp, o.zone, o.purchase, s)
    v.replicas[key] = prob.add_variable(
        v.names.name("x", c.workload, c.gpu, f"tp{c.tp}", o.zone, o.purchase.value, s or "all"),
        0, cat="Integer",
    )
    v.rate[key] = c.slo_rps


# --- constraint families -----------------------------------------------------------------


def meet_demand(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, family: str,
    labels: tuple[object, ...], w: str, capacity: dict[str, pulp.LpAffineExpression],
) -> None:
    """Capacity per slice meets the demand of ``w``: per slice, or as a volume over its window."""
    if w in data.volume_requests:
        done = pulp.lpSum(
            SECONDS_PER_HOUR * data.window_hours[(w, s)] * cap for s, cap in capacity.items()
        )
        _require(prob, v, family, labels, done, ">=", data.volume_requests[w], "requests/day")
        return
    for s, cap in capacity.items():
        _require(prob, v, family, (*labels, s), cap, ">=", data.demand_rps[(w, s)], "req/s")


def running_capacity(
    data: ProgramData, v: Variables, w: str, s: str, utilization: float, failover: bool
) -> pulp.LpAffineExpression:
    r""":math:`U_{ws}` (``failover=False``) or :math:`F_{ws}(\emptyset)`: non-spot only [1/s]."""
    keys = v.by_slice.get((w, s), [])
    if failover:
        keys = [k for k in keys if k[4] is not PurchaseKind.spot]
    return capacity_expr(data, v, keys, utilization)


def firm_capacity(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, s: str
) -> pulp.LpAffineExpression:
    r""":math:`F_{ws}(\emptyset)` as one variable ``f ≤ Σ φ ρ x`` (non-spot), shared by the
    failure rows so each of them has a few terms instead of every slot of the workload."""
    if (w, s) not in v.firm:
        f = prob.add_variable(v.names.name("f", w, s), 0)
        prob += f <= running_capacity(data, v, w, s, data.failure_utilization, failover=True), (
            v.names.name("firm", w, s))
        v.firm[(w, s)] = f
    return pulp.LpAffineExpression([(v.firm[(w, s)], 1.0)])


def zone_capacity(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, w: str, z: str, s: str
) -> pulp.LpAffineExpression:
    """Non-spot capacity of ``w`` in zone ``z`` at φ, as one variable ``c ≥ Σ φ ρ x`` [1/s]."""
    keys = [k for k in v.by_slice.get((w, s), []) if k[3] == z and k[4] is not PurchaseKind.spot]
    if not keys:
        return pulp.LpAffineExpression()
    c = prob.add_variable(v.names.name("c", w, z, s), 0)
    v.zone_cap[(w, z, s)] = c
    prob += c >= capacity_expr(data, v, keys, data.failure_utilization), v.names.name(
        "zonecap", w, z, s)
    return pulp.LpAffineExpression([(c, 1.0)])


def add_demand(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C1: capacity at target utilization meets demand (per slice, or volume over the window)."""
    for w in data.workloads:
        capacity = {
            s: running_capacity(data, v, w.name, s, w.utilization, failover=False)
            for s in data.demand_slices(w.name)
        }
        meet_demand(prob, data, v, "demand", (w.name,), w.name, capacity)


def add_no_spot_for_interactive(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C2: interactive workloads get no spot replicas.

    Applied as a mask when the variables are made (the slots do not exist); any spot slot of an
    interactive workload that does exist is fixed to zero here.
    """
    interactive = {w.name for w in data.workloads if w.interactive}
    if not interactive:
        return
    for key, x in v.replicas.items():
        if key[4] is PurchaseKind.spot and key[0] in interactive:
            x.upBound = 0


def worst_node_rps(data: ProgramData, w: str, o: OfferTerm) -> float:
    """SLO-holding rate of ``w`` on the fullest node of an offer [1/s] (knapsack over TPs)."""
    key = (w, o.gpu, o.gpus_per_node)
    if key in data.node_rps_cache:
        return data.node_rps_cache[key]
    items = [(c.tp, c.slo_rps) for c in data.candidates_of(w)
             if c.gpu == o.gpu and c.tp <= o.gpus_per_node]
    best = [0.0] * (o.gpus_per_node + 1)
    for gpus in range(1, o.gpus_per_node + 1):
        best[gpus] = max([best[gpus - 1], *(best[gpus - t] + r for t, r in items if t <= gpus)])
    data.node_rps_cache[key] = best[o.gpus_per_node]
    return best[o.gpus_per_node]


def best_packing(data: ProgramData, w: str, o: OfferTerm) -> tuple[tuple[int, int], ...]:
    """(TP, replicas) of the fullest node of ``w`` on an offer, the knapsack of
    :func:`worst_node_rps` read back (ties: the smaller TP first is kept)."""
    items = sorted((c.tp, c.slo_rps) for c in data.candidates_of(w)
                   if c.gpu == o.gpu and c.tp <= o.gpus_per_node)
    best = [0.0] * (o.gpus_per_node + 1)
    pick: list[int | None] = [None] * (o.gpus_per_node + 1)
    for gpus in range(1, o.gpus_per_node + 1):
        best[gpus] = best[gpus - 1]
        for t, r in items:
            if t <= gpus and best[gpus - t] + r > best[gpus]:
                best[gpus], pick[gpus] = best[gpus - t] + r, t
    counts: dict[int, int] = {}
    gpus = o.gpus_per_node
    while gpus > 0:
        chosen = pick[gpus]
        if chosen is None:
            gpus -= 1
            continue
        counts[chosen] = counts.get(chosen, 0) + 1
        gpus -= chosen
    return tuple(sorted(counts.items()))


def demand_bound_rps(data: ProgramData, w: str, s: str) -> float:
    """Most a workload may need in a slice [1/s]: its demand, or its whole volume in that slice."""
    if w in data.volume_requests:
        return data.volume_requests[w] / (SECONDS_PER_HOUR * data.window_hours[(w, s)])
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
    z, g, kind = pool
    o = v.offer[pool]
    phi = data.failure_utilization
    lost = capacity_expr(data, v, [k for k in v.by_slice[(w, s)] if (k[3], k[1], k[4]) == pool],
                         phi)
    node = phi * worst_node_rps(data, w, o)
    reserved = kind is PurchaseKind.reserved
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
    prob += ell >= lost - (bound - node) * b, v.names.name("lossx", w, z, g, kind.value, s)
    prob += ell >= node * b, v.names.name("lossm", w, z, g, kind.value, s)
    return pulp.LpAffineExpression(ell)


def add_n_plus_1(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C3: after losing the fullest node of any non-spot pool, a workload still meets demand."""
    for w in data.workloads:
        if w.survivability is not Survivability.n_plus_1:
            continue
        slices = data.demand_slices(w.name)
        pools = sorted({(k[3], k[1], k[4]) for s in slices for k in v.by_slice.get((w.name, s), [])
                        if k[4] is not PurchaseKind.spot}, key=lambda p: (p[0], p[1], p[2].value))
        # losing a spot node (or one holding none of w) leaves the non-spot capacity
        firm = {s: firm_capacity(prob, data, v, w.name, s) for s in slices}
        meet_demand(prob, data, v, "n_plus_1", (w.name, "any", "any", "spot"), w.name, firm)
        for pool in pools:
            capacity = {s: firm[s] - node_loss(prob, data, v, w.name, pool, s) for s in slices}
            meet_demand(prob, data, v, "n_plus_1", (w.name, pool[0], pool[1], pool[2].value),
                        w.name, capacity)


def add_zone_loss(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C4: after losing any zone, running non-spot capacity elsewhere meets demand at φ."""
    for w in data.workloads:
        if w.survivability is not Survivability.zone_loss:
            continue
        slices = data.demand_slices(w.name)
        firm = {s: firm_capacity(prob, data, v, w.name, s) for s in slices}
        for z in data.zones:
            capacity = {s: firm[s] - zone_capacity(prob, data, v, w.name, z, s) for s in slices}
            meet_demand(prob, data, v, "zone_loss", (w.name, z), w.name, capacity)


def add_stock(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C5: GPUs bought per (zone, GPU, purchase kind[, slice]) ≤ the offer's stock.

    One row per offer and slice, summed over the workloads' own pools (the only row, with the
    budget, that couples workloads when they do not share nodes).
    """
    groups: dict[tuple[str, str, PurchaseKind, str | None], list[pulp.LpVariable]] = {}
    for key, y in v.nodes.items():
        groups.setdefault(key[:4], []).append(y)
    for (z, g, kind, s), ys in groups.items():
        o = v.offer[(z, g, kind)]
        _require(prob, v, "stock", (z, g, kind.value, s or "all"),
                 pulp.LpAffineExpression([(y, o.gpus_per_node) for y in ys]), "<=",
                 data.stock_left(o, s), "GPUs")


def add_nodes(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C6: replicas in a node group (a workload's own pool, or shared) pack into its nodes.

    A dedicated pool's nodes each hold the workload's fullest packing (:func:`best_packing`):
    :math:`x_r = m_{t_c} y`. No optimum is lost: capacity only grows, at the same node count, and
    a node loss takes at most :math:`M` either way, so demand, N+1 and zone loss still hold.
    """
    members: dict[NodeKey, list[ReplicaKey]] = {}
    for k in v.replicas:
        members.setdefault(node_key(data, k), []).append(k)
    for key, y in v.nodes.items():
        if key[4] is not None:
            packing = dict(best_packing(data, key[4], v.offer[key[:3]]))
            for k in members[key]:
                prob += v.replicas[k] == packing[k[2]] * y, v.names.name(
                    "pack", k[0], k[1], f"tp{k[2]}", k[3], k[4].value, k[5] or "all")
            continue
        gpus = pulp.LpAffineExpression([(v.replicas[k], k[2]) for k in members[key]])
        prob += gpus <= v.offer[key[:3]].gpus_per_node * y, v.names.name(
            "nodes", key[0], key[1], key[2].value, key[3] or "all", key[4] or "shared"
        )


def add_budget(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """C7: monthly cost ≤ the policy's budget."""
    if data.monthly_budget is None:
        return
    _require(prob, v, "budget", (), v.cost, "<=", data.monthly_budget, "currency/month")


def add_zone_symmetry(prob: pulp.LpProblem, data: ProgramData, v: Variables) -> None:
    """Symmetry cut: costs of interchangeable zones ordered by zone id.

    Zones selling the same non-spot offers are interchangeable for their non-spot fleets (demand,
    N+1, zone loss, stock and price see only which zone is which, never its name); spot fleets
    are interchangeable among zones selling the same spot offers (spot counts in no failure).
    Any fleet can be relabelled to satisfy the order at the same cost.
    """
    firm = (PurchaseKind.reserved, PurchaseKind.on_demand)
    for kinds in (firm, (PurchaseKind.spot,)):
        by_sig: dict[tuple[object, ...], list[str]] = {}
        for z in data.zones:
            sig = tuple(sorted((o.gpu, o.purchase.value, o.gpus_per_node, o.price_per_gpu_hour,
                                o.stock_gpus, o.interruption_rate_per_hour)
                               for o in data.offers if o.zone == z and o.purchase in kinds))
            if sig:
                by_sig.setdefault(sig, []).append(z)
        for zones in by_sig.values():
            costs = [
                pulp.lpSum(v.cost.get(y, 0.0) * y for key, y in v.nodes.items()
                           if key[0] == z and key[2] in kinds)
                for z in zones
            ]
            for i in range(len(zones) - 1):
                prob += costs[i] >= costs[i + 1], v.names.name(
                    "sym", kinds[0].value, zones[i], zones[i + 1])


def add_node_cover_cuts(
    prob: pulp.LpProblem, data: ProgramData, v: Variables, zone_loss: bool = True,
    n_plus_1: bool = True,
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
    it reads "at least two nodes", which the LP relaxation otherwise spreads thin.
    """
    for w in data.workloads:
        if w.name in data.volume_requests:
            continue
        for s in data.demand_slices(w.name):
            pools = sorted({node_key(data, k) for k in v.by_slice.get((w.name, s), [])},
                           key=_node_sort)
            node = {p: worst_node_rps(data, w.name, v.offer[p[:3]]) for p in pools}
            need = data.demand_rps[(w.name, s)]
            prob += pulp.LpAffineExpression([
                (v.nodes[p], min(w.utilization * v.offer[p[:3]].capacity_factor * node[p], need))
                for p in pools]) >= need, v.names.name("cover", w.name, s)
            firm = {p: min(data.failure_utilization * node[p], need) for p in pools
                    if p[2] is not PurchaseKind.spot}
            survives = firm and ((w.survivability is Survivability.zone_loss and zone_loss) or (
                w.survivability is Survivability.n_plus_1 and n_plus_1))
            if survives and (w.survivability is Survivability.zone_loss or not data.share_nodes):
                prob += pulp.LpAffineExpression([(v.nodes[p], c) for p, c in firm.items()]) >= (
                    need + min(firm.values())), v.names.name("covern1", w.name, s)
            if survives and data.share_nodes:
                add_two_replicas_cut(prob, data, v, w.name, s, w.survivability, need)
            elif survives:
                # a dedicated node is lost whole: count nodes (the replica cut, whose replicas
                # are small where nodes are big, slowed these sub-programs: 3.72 % vs 2.98 %)
                add_two_nodes_cut(prob, data, v, w.name, s, w.survivability, need)
            if not zone_loss or w.survivability is not Survivability.zone_loss:
                continue
            for z in data.zones:
                prob += pulp.LpAffineExpression([
                    (v.nodes[p], c) for p, c in firm.items() if p[0] != z]) >= need, (
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
    instead of 1.25; the LP relaxation of the demo rises from 87,556 to 92,513.
    """
    phi = data.failure_utilization
    keys = [k for k in v.by_slice.get((w, s), []) if k[4] is not PurchaseKind.spot]
    alpha = _alpha(survivability, len({k[3] for k in keys}))
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
    r"""Valid cut for dedicated pools: two whole *big* nodes, or enough capacity in *small* ones.

    The node version of :func:`add_two_replicas_cut`. A dedicated node runs its fullest packing
    and is lost whole, so a non-spot node group is *big* for ``w`` when one node alone carries
    the demand after a failure (:math:`\phi M_p \ge d`), *small* otherwise. With :math:`B` big
    nodes and :math:`S = \sum_{small\ p} \phi M_p y_p`:

    .. math:: B + \alpha\, S / d \ge 2,

    by the same cases: :math:`B \ge 2` trivially; :math:`B = 1`: losing that node (its zone)
    leaves only small nodes, so :math:`S \ge d` and :math:`\alpha \ge 1`; :math:`B = 0`: as for
    replicas, weights too (the node holding the largest share is lost whole). The node cover
    rows weigh a big node as :math:`d`, so their relaxation holds 0.2 of a big node in each zone;
    this one asks for two (or the small nodes' equivalent). On the largest benchmark's ``chat``
    sub-program it raises the LP relaxation from 49,065 to 60,851 and the solve proves 0.5 % in
    16 s instead of 9 % in 60 s.
    """
    phi = data.failure_utilization
    pools = sorted({node_key(data, k) for k in v.by_slice.get((w, s), [])
                    if k[4] is not PurchaseKind.spot}, key=_node_sort)
    alpha = _alpha(survivability, len({p[0] for p in pools}))
    if not pools or alpha is None:
        return
    terms = [(v.nodes[p], _two_cut_weight(phi * worst_node_rps(data, w, v.offer[p[:3]]), need,
                                          alpha)) for p in pools]
    prob += pulp.LpAffineExpression(terms) >= 2, v.names.name("twonodes", w, s)


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


def build_program(
    data: ProgramData,
    families: Iterable[str] = tuple(FAMILIES),
    elastic: bool = False,
    symmetry: bool = True,
    cuts: bool = True,
) -> Program:
    """Build the program: variables, then each constraint family, then the objective.

    ``families`` selects constraint families by name (tests drop one to show it matters);
    ``elastic`` adds a slack to each requirement (for diagnosis).
    """
    prob = pulp.LpProblem("fleet", pulp.LpMinimize)
    chosen = set(families)
    v = Variables(names=NameBook(), elastic=elastic, spot_for_interactive="spot" not in chosen)
    add_variables(prob, data, v)
    for name, add in FAMILIES.items():
        if name in chosen:
            add(prob, data, v)
    if symmetry and not elastic:
        add_zone_symmetry(prob, data, v)
    if cuts and not elastic and {"demand", "nodes"} <= chosen:
        add_node_cover_cuts(prob, data, v, zone_loss="zone_loss" in chosen,
                            n_plus_1="n_plus_1" in chosen)
    prob += v.cost
    return Program(prob, v, data)
