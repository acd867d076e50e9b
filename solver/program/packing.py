"""The fullest node of a workload on an offer, from its candidates (the knapsack is
:func:`solver.capacity.packing.fullest_packing`)."""

from __future__ import annotations

from solver.capacity.packing import PackItem, fullest_packing
from solver.program.data import Candidate, OfferTerm, ProgramData


def _fits(data: ProgramData, w: str, o: OfferTerm) -> list[Candidate]:
    """Candidates of ``w`` on the offer's GPU that fit one of its nodes, by TP."""
    return sorted((c for c in data.candidates_of(w) if c.gpu == o.gpu and c.tp <= o.gpus_per_node),
                  key=lambda c: (c.tp, c.slo_rps))


def worst_node_rps(data: ProgramData, w: str, o: OfferTerm) -> float:
    """SLO-holding rate of ``w`` on the fullest node of an offer [1/s] (knapsack over TPs)."""
    key = (w, o.gpu, o.gpus_per_node)
    if key not in data.node_rps_cache:
        items = [PackItem(c.tp, c.slo_rps) for c in _fits(data, w, o)]
        data.node_rps_cache[key] = fullest_packing(items, o.gpus_per_node)[0]
    return data.node_rps_cache[key]


def best_packing(data: ProgramData, w: str, o: OfferTerm) -> tuple[tuple[int, int], ...]:
    """(TP, replicas) of the fullest node of ``w`` on an offer (ties: the smaller TP first)."""
    fits = _fits(data, w, o)
    _, counts = fullest_packing([PackItem(c.tp, c.slo_rps) for c in fits], o.gpus_per_node)
    by_tp: dict[int, int] = {}
    for c, n in zip(fits, counts, strict=True):
        if n:
            by_tp[c.tp] = by_tp.get(c.tp, 0) + n
    return tuple(sorted(by_tp.items()))
