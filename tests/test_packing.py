"""The fullest node: one knapsack, checked by hand and against enumeration."""

from __future__ import annotations

import itertools
import random

import pytest

from solver.capacity.packing import PackItem, fullest_packing


def test_one_degree_fills_the_node_whole_replicas_only() -> None:
    # 3-GPU node, TP2 replicas of 5 req/s: ⌊3 / 2⌋ = 1 replica, one GPU idle
    assert fullest_packing([PackItem(2, 5.0)], 3) == (5.0, (1,))
    # 8-GPU node, TP1 at 1 req/s: 8 replicas
    assert fullest_packing([PackItem(1, 1.0)], 8) == (8.0, (8,))


def test_mixed_degrees_pack_as_they_fit() -> None:
    # 5-GPU node: TP4 at 10 + TP1 at 2 = 12 beats 5 × TP1 = 10 and TP4 alone = 10
    rate, counts = fullest_packing([PackItem(1, 2.0), PackItem(4, 10.0)], 5)
    assert (rate, counts) == (12.0, (1, 1))


def test_a_limit_caps_an_item() -> None:
    # a pool holds 2 TP1 replicas (3 req/s) and 5 TP2 (4 req/s) on an 8-GPU node:
    # 2 × 3 + 3 × 4 = 18 (TP2 takes the remaining 6 GPUs)
    assert fullest_packing([PackItem(1, 3.0, 2), PackItem(2, 4.0, 5)], 8) == (18.0, (2, 3))


def test_ties_keep_the_earlier_item() -> None:
    # TP1 at 1 and TP2 at 2 fill 4 GPUs equally: the earlier item (TP1) is kept
    assert fullest_packing([PackItem(1, 1.0), PackItem(2, 2.0)], 4) == (4.0, (4, 0))
    assert fullest_packing([PackItem(2, 2.0), PackItem(1, 1.0)], 4) == (4.0, (2, 0))


def test_nothing_fits() -> None:
    assert fullest_packing([PackItem(8, 9.0)], 4) == (0.0, (0,))
    assert fullest_packing([], 4) == (0.0, ())


@pytest.mark.parametrize("seed", range(40))
def test_optimal_against_enumeration(seed: int) -> None:
    rng = random.Random(seed)
    gpus = rng.randint(1, 16)
    items = [PackItem(rng.choice([1, 2, 3, 4, 8]), round(rng.uniform(0.5, 9.0), 2),
                      rng.choice([None, 0, 1, 2, 3])) for _ in range(rng.randint(1, 3))]
    rate, counts = fullest_packing(items, gpus)
    ranges = [range((gpus // it.tp if it.limit is None else min(it.limit, gpus // it.tp)) + 1)
              for it in items]
    best = max(sum(n * it.rate_rps for n, it in zip(ns, items, strict=True))
               for ns in itertools.product(*ranges)
               if sum(n * it.tp for n, it in zip(ns, items, strict=True)) <= gpus)
    assert rate == pytest.approx(best)
    assert sum(n * it.tp for n, it in zip(counts, items, strict=True)) <= gpus
    assert sum(n * it.rate_rps for n, it in zip(counts, items, strict=True)) == pytest.approx(rate)
