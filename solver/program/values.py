"""Values of a fleet in a program: every variable set from replica counts, cost, broken rows.

A fleet given as replica counts per slot becomes a full assignment of the program's variables —
the fewest whole nodes per pool, auxiliaries at the values their rows imply — so it can start a
solve, be compared with a solver's fleet, or be checked against every row.
"""

from __future__ import annotations

from solver.capacity.node_fit import nodes_needed
from solver.program.keys import NodeKey, ReplicaKey, StockKey
from solver.program.packing import best_packing
from solver.program.variables import Program, node_key

EPS = 1e-9


def start_from_replicas(program: Program, x: dict[ReplicaKey, int], checked: bool = True
                        ) -> dict[str, float] | None:
    """Values for every variable (by name) of a fleet given by its replica counts.

    Nodes are the fewest whole nodes per pool (whole replicas packed:
    :func:`solver.capacity.node_fit.nodes_needed`); auxiliaries take the values their rows imply
    (the smallest node loss). ``None`` when a slot is not in the program or the fleet breaks
    any row of it (stock and the budget are checked first, as the nodes are counted): a start
    is checked against every row before it is handed to a solver or compared with a fleet.
    ``checked=False``: the values whatever rows they break (``None`` only for a slot not in the
    program), for the elastic program of a diagnosis, whose slacks then take up the breaks.
    """
    data, v = program.data, program.v
    if not data.share_nodes:
        x = _fullest_nodes(program, x)
    if any(k not in v.replicas for k in x):
        return None
    values: dict[str, float] = {var.name: 0.0 for var in program.prob.variables()}
    for k, n in x.items():
        values[v.replicas[k].name] = float(n)
    cost = 0.0
    held = replicas_by_group(program, x)
    bought: dict[StockKey, int] = {}
    for key, y in v.nodes.items():
        o = v.offer[key.pool]
        nodes = nodes_needed(held.get(key, {}), o.gpus_per_node)
        bought[key.stock] = bought.get(key.stock, 0) + nodes * o.gpus_per_node
        if checked and bought[key.stock] > data.stock_left(o, key.slice):
            return None
        values[y.name] = float(nodes)
        cost += v.cost.get(y, 0.0) * nodes
    if checked and data.monthly_budget is not None and cost > data.monthly_budget:
        return None
    set_auxiliaries(program, values)
    return None if checked and violated_rows(program, values) else values


def replicas_by_group(
    program: Program, x: dict[ReplicaKey, int]
) -> dict[NodeKey, dict[int, int]]:
    """Replicas of a fleet per node group and TP degree [replicas]."""
    held: dict[NodeKey, dict[int, int]] = {}
    for k, n in x.items():
        by_tp = held.setdefault(node_key(program.data, k), {})
        by_tp[k.tp] = by_tp.get(k.tp, 0) + n
    return held


def _fullest_nodes(program: Program, x: dict[ReplicaKey, int]) -> dict[ReplicaKey, int]:
    """The same fleet with each dedicated pool's nodes (the fewest holding its replicas) filled
    with the workload's fullest packing, as the program's C6 requires (capacity only grows)."""
    out: dict[ReplicaKey, int] = {}
    for key, held in replicas_by_group(program, x).items():
        o = program.v.offer[key.pool]
        nodes = nodes_needed(held, o.gpus_per_node)
        if nodes == 0 or key.owner is None:
            continue
        for tp, m in best_packing(program.data, key.owner, o):
            out[ReplicaKey(key.owner, key.gpu, tp, key.zone, key.purchase, key.slice)] = m * nodes
    return out


def set_auxiliaries(program: Program, values: dict[str, float]) -> None:
    """Firm and zone capacities, node losses and their binaries, as their rows imply: each
    evaluated from the expression its row was written with (:class:`Auxiliary`), a column
    missing from ``values`` read as zero. A block's fleet planned alone takes them again in
    the program over periods: a node loss's big-M there counts the whole stock of a pool,
    which the block priced alone may not hold (quarterly_q2.yaml's first start broke its
    ``lossx`` rows)."""
    for aux in program.v.aux:
        capacity = sum(coef * values.get(var.name, 0.0) for var, coef in aux.capacity.items())
        if aux.full is None:
            values[aux.var.name] = capacity
            continue
        b = 1.0 if capacity > aux.node_rps + EPS else 0.0
        values[aux.full.name] = b
        values[aux.var.name] = max(capacity - (aux.bound_rps - aux.node_rps) * b,
                                   aux.node_rps * b)


def objective_of(program: Program, values: dict[str, float]) -> float:
    """Monthly cost of a start (for reports and tests), a column missing from ``values`` read
    as zero (as :func:`violated_rows`, :func:`load_values` and a solver's start read it): a
    plan over periods at medium × 25, load 10, stopped on a ``KeyError`` here, its blocks'
    fleet checked against every row and then not costed."""
    return float(sum(coef * values.get(var.name, 0.0) for var, coef in program.v.cost.items()))


def load_values(program: Program, values: dict[str, float]) -> None:
    """Set every variable of ``program`` to its value in ``values`` (a solved program)."""
    for var in program.prob.variables():
        var.varValue = values.get(var.name, 0.0)


def violated_rows(program: Program, values: dict[str, float], tol: float = 1e-6) -> list[str]:
    """Names of the rows of ``program`` that ``values`` (by variable name) break."""
    out = []
    for row in program.prob.constraints():
        lhs = sum(coef * values.get(var.name, 0.0) for var, coef in row.items()) + row.constant
        scale = tol * max(1.0, abs(row.constant))
        if (row.sense == 1 and lhs < -scale) or (row.sense == -1 and lhs > scale) or (
                row.sense == 0 and abs(lhs) > scale):
            out.append(row.name)
    return out
