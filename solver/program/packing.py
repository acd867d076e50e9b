"""The fullest node of a workload on an offer: a knapsack of its candidates' TP degrees."""

from __future__ import annotations

from solver.program.data import OfferTerm, ProgramData


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
