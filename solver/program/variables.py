"""The program's variables: replica slots and node groups, their names, and the cost expression.

Replica slots exist only where a configuration can serve (a mask, never a zero rate): the offer
sells the GPU, the TP fits a node, no spot for interactive workloads (C2), and with dedicated pools
only the TPs of the workload's fullest packing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pulp

from models.common import PurchaseKind, runs_all_day
from solver.program.data import Candidate, OfferTerm, ProgramData
from solver.program.keys import NodeKey, PoolKey, ReplicaKey, RowKey
from solver.program.packing import best_packing


class NameBook:
    """Stable, unique solver names generated from labels (never parsed back)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._clean: dict[str, str] = {}

    def name(self, prefix: str, *labels: object) -> str:
        """``prefix_label_label…`` with characters PuLP folds replaced; suffixed if taken."""
        base = "_".join([prefix, *(self._label(str(x)) for x in labels)])
        out, i = base, 1
        while out in self._used:
            i += 1
            out = f"{base}__{i}"
        self._used.add(out)
        return out

    def _label(self, text: str) -> str:
        """A label with the characters PuLP folds replaced (a few hundred distinct labels name
        tens of thousands of variables: each is cleaned once)."""
        clean = self._clean.get(text)
        if clean is None:
            clean = self._clean[text] = re.sub(r"[^A-Za-z0-9]", "_", text)
        return clean


@dataclass
class Slack:
    """A slack variable of the elastic program and the requirement row it relaxes."""

    row: RowKey
    var: pulp.LpVariable
    unit: str

    @property
    def family(self) -> str:
        return self.row.family


@dataclass(frozen=True)
class Auxiliary:
    r"""An auxiliary variable and the capacity its row bounds, so a fleet's value of it comes from
    the expression the row was written with (:func:`solver.program.values.start_from_replicas`).

    Without ``full`` the variable equals ``capacity`` (firm capacity :math:`f`, zone capacity
    :math:`c`). With it, it is a node loss :math:`\ell = \max(X - (\bar X - M) b, M b)` with
    ``b`` = 1 exactly when the pool holds more than one node's worth, :math:`X > M`.
    """

    var: pulp.LpVariable
    capacity: pulp.LpAffineExpression
    full: pulp.LpVariable | None = None
    node_rps: float = 0.0
    bound_rps: float = 0.0


def _never() -> bool:
    return False


class BuildStopped(Exception):
    """The program's build was stopped (its clock ran out, or the user stopped the plan): the
    variables made so far come with it — enough for a bound without a solve
    (:func:`solver.solve.stages.capacity_bound`), never a program to solve."""

    def __init__(self, variables: Variables) -> None:
        super().__init__("the program's build was stopped")
        self.variables = variables


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
    aux: list[Auxiliary] = field(default_factory=list)
    """Auxiliary variables in the order they were made, with the expressions that define them."""
    zone_cap: dict[tuple[str, str, str], pulp.LpVariable] = field(default_factory=dict)
    """Non-spot capacity of a workload in a zone and slice at φ [1/s] (zone loss)."""
    firm: dict[tuple[str, str], pulp.LpVariable] = field(default_factory=dict)
    """:math:`F_{ws}(\\emptyset)`: non-spot capacity at φ per workload and slice [1/s]."""
    rate: dict[ReplicaKey, float] = field(default_factory=dict)
    """SLO-holding rate of a replica of each slot [1/s]."""
    offer: dict[tuple[str, str, PurchaseKind], OfferTerm] = field(default_factory=dict)
    by_slice: dict[tuple[str, str], list[ReplicaKey]] = field(default_factory=dict)
    """Slots of a workload present in a slice (reserved ones in every slice)."""
    _by_pool: dict[tuple[str, str], dict[PoolKey, list[ReplicaKey]]] = field(
        default_factory=dict, repr=False)
    stop: Callable[[], bool] = field(default=_never, repr=False)
    """Whether to stop building (checked row by row, see :meth:`check`)."""

    def check(self) -> None:
        """Raise :class:`BuildStopped` if asked to stop: the build of a large program takes
        seconds of CPU (large ×1: ~0.8 s, 25 k columns), more than a short time limit holds."""
        if self.stop():
            raise BuildStopped(self)

    def slots_in_pool(self, workload: str, slice_name: str, pool: PoolKey) -> list[ReplicaKey]:
        """Slots of a workload present in a slice that run in one pool (indexed once per
        workload and slice: the N+1 rows ask for every pool)."""
        key = (workload, slice_name)
        if key not in self._by_pool:
            index: dict[PoolKey, list[ReplicaKey]] = {}
            for k in self.by_slice.get(key, []):
                index.setdefault(k.pool, []).append(k)
            self._by_pool[key] = index
        return self._by_pool[key].get(pool, [])


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
        (v.replicas[k], utilization * v.offer[k.pool].available_share * v.rate[k])
        for k in keys
    ])


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
            for s in (None,) if runs_all_day(o.purchase) else slices:
                _add_replica(prob, v, c, o, s)
    used_groups = sorted({node_key(data, k) for k in v.replicas}, key=NodeKey.sort_key)
    terms = []
    for key in used_groups:
        o = v.offer[key.pool]
        labels: tuple[str, ...] = (key.zone, key.gpu, key.purchase.value, key.slice or "all")
        labels += () if key.owner is None else (key.owner,)
        y = prob.add_variable(v.names.name("y", *labels), 0, cat="Integer")
        v.nodes[key] = y
        hours = (data.hours_per_month if key.slice is None
                 else data.paid_hours_per_month(key.slice))
        terms.append((y, o.price_per_gpu_hour * o.gpus_per_node * hours))
    v.cost = pulp.LpAffineExpression(terms)
    slices_of = {w.name: data.demand_slices(w.name) for w in data.workloads}
    for k in v.replicas:
        for s in (slices_of[k.workload] if k.slice is None else (k.slice,)):
            v.by_slice.setdefault((k.workload, s), []).append(k)


def node_key(data: ProgramData, k: ReplicaKey) -> NodeKey:
    """Node group of a replica slot: its workload's own pool unless workloads share nodes."""
    return NodeKey(k.zone, k.gpu, k.purchase, k.slice, None if data.share_nodes else k.workload)


def _add_replica(
    prob: pulp.LpProblem, v: Variables, c: Candidate, o: OfferTerm, s: str | None
) -> None:
    key = ReplicaKey(c.workload, c.gpu, c.tp, o.zone, o.purchase, s)
    v.replicas[key] = prob.add_variable(
        v.names.name("x", c.workload, c.gpu, f"tp{c.tp}", o.zone, o.purchase.value, s or "all"),
        0, cat="Integer",
    )
    v.rate[key] = c.slo_rps
