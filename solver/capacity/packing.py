"""The fullest node: which replicas of a workload one node of G GPUs holds at most.

One bounded knapsack over the node's GPUs serves every place that asks: the program's node-loss
bound and dedicated-pool packing (:mod:`solver.program.packing`) and the failure arithmetic's
"worst node of a pool" (:func:`solver.survivability.failures.worst_node_loss`). A replica of TP
``t`` takes ``t`` GPUs, so a node holds ⌊G ÷ t⌋ of one degree, and mixed degrees as they fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: A rate counts as larger than another only beyond this [1/s] (keeps ties deterministic).
TIE_RPS = 1e-12


@dataclass(frozen=True)
class PackItem:
    """Replicas of one kind a node may hold: GPUs each, SLO-holding rate each, and how many."""

    tp: int
    rate_rps: float
    limit: int | None = None
    """At most this many (a pool's replica count); ``None``: as many as fit."""


def fullest_packing(items: Sequence[PackItem], gpus_per_node: int) -> tuple[float, tuple[int, ...]]:
    """The largest total rate one node of ``gpus_per_node`` GPUs holds of ``items`` [1/s], and how
    many replicas of each item that packing takes (in ``items`` order).

    A 0/1 knapsack over each item's copies (at most ``limit``, at most ⌊G ÷ tp⌋). On a tie the
    packing found first is kept: the earlier items, then the fewer GPUs — callers order items.
    """
    n = len(items)
    best: list[tuple[float, tuple[int, ...]]] = [(0.0, (0,) * n)] * (gpus_per_node + 1)
    for i, item in enumerate(items):
        if item.tp > gpus_per_node:
            continue
        copies = gpus_per_node // item.tp
        if item.limit is not None:
            copies = min(copies, item.limit)
        for _ in range(copies):
            nxt = list(best)
            for used in range(item.tp, gpus_per_node + 1):
                rate, counts = best[used - item.tp]
                if counts[i] >= copies:
                    continue
                if rate + item.rate_rps > nxt[used][0] + TIE_RPS:
                    nxt[used] = (rate + item.rate_rps,
                                 (*counts[:i], counts[i] + 1, *counts[i + 1:]))
            best = nxt
    return max(best, key=lambda t: t[0])
