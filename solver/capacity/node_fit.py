r"""Whole replicas on whole nodes: how many nodes of G GPUs a set of TP replicas needs.

A replica of tensor-parallel degree ``t`` runs on ``t`` GPUs of one node, so a node of ``G`` GPUs
holds ⌊G ÷ t⌋ replicas of one degree, and replicas of mixed degrees as a bin-packing of its GPUs.
Counting GPUs alone is wrong for a node size that is not a multiple of every degree: three TP2
replicas use 6 GPUs but need three 3-GPU nodes, not two.

TP degrees are powers of two (:data:`solver.capacity.memory.TP_DEGREES`), so any set of them is a
*divisibility chain* (each divides the next). For such sizes the packing has a closed form
(docs/program.md, "C6 nodes"): ``n_t`` replicas of each degree ``t`` fit on ``y`` nodes iff, for
every degree ``t`` present,

.. math:: \sum_{t' \ge t} t'\, n_{t'} \;\le\; t \lfloor G / t \rfloor\, y .

Why: place the largest degree first. Each node then has used a multiple of the next smaller
degree ``t``, so it has exactly ⌊G ÷ t⌋ − (GPUs used ÷ t) free slots of size ``t`` however the
larger replicas were spread; summed over the nodes that is the row above, and the slots of one
node are as good as another's. The program writes these rows (C6), the starts and the fleet
values count nodes with :func:`nodes_needed`; the verifier places replicas node by node on its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping


def is_divisibility_chain(degrees: Iterable[int]) -> bool:
    """Whether each of the distinct ``degrees``, sorted, divides the next."""
    ds = sorted(set(degrees))
    return all(b % a == 0 for a, b in itertools.pairwise(ds))


def slot_rows(degrees: Iterable[int], gpus_per_node: int) -> tuple[tuple[int, int], ...]:
    """``(t, t ⌊G ÷ t⌋)`` for the distinct degrees ``t`` that fit a node, smallest first.

    Replicas of degree ≥ ``t`` may use at most ``t ⌊G ÷ t⌋`` GPUs of each node [GPUs]. A row
    whose bound equals the previous row's is implied by it and left out, so a node size that is
    a multiple of every degree keeps the single row "GPUs used ≤ GPUs bought".

    Raises
    ------
    ValueError
        When the degrees are not a divisibility chain (the rows would not be exact).
    """
    ds = sorted({t for t in degrees if t <= gpus_per_node})
    if not is_divisibility_chain(ds):
        raise ValueError(f"TP degrees {ds} are not a divisibility chain; node packing rows "
                         "are exact only for powers of two")
    rows: list[tuple[int, int]] = []
    for t in ds:
        per_node = t * (gpus_per_node // t)
        if not rows or per_node < rows[-1][1]:
            rows.append((t, per_node))
    return tuple(rows)


def nodes_needed(replicas: Mapping[int, int], gpus_per_node: int) -> int:
    """Fewest nodes of ``gpus_per_node`` GPUs holding ``replicas[t]`` replicas of each degree.

    The largest left-hand side of the rows of :func:`slot_rows` over its right-hand side, rounded
    up [nodes]. A degree larger than a node has no place at all.

    Raises
    ------
    ValueError
        When a replica cannot fit a node, or the degrees are not a divisibility chain.
    """
    counts = {t: n for t, n in replicas.items() if n > 0}
    if not counts:
        return 0
    too_big = [t for t in counts if t > gpus_per_node]
    if too_big:
        raise ValueError(f"a TP{max(too_big)} replica does not fit a {gpus_per_node}-GPU node")
    need = 0
    for t, per_node in slot_rows(counts, gpus_per_node):
        gpus = sum(tp * n for tp, n in counts.items() if tp >= t)  # [GPUs]
        need = max(need, -(-gpus // per_node))  # integer ceiling
    return need
