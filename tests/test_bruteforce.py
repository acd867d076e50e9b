"""Brute-force oracle: seeded random tiny scenarios, every replica count enumerated, same optimum.

The oracle below is plain arithmetic written from the rules (not from the program): nodes are the
fewest whole nodes holding the replicas; demand at target utilization (spot discounted by its
interruption rate); after any failure only non-spot capacity counts: N+1 loses the fullest node
(⌊n / tp⌋ replicas) of any non-spot pool (or a spot node, which leaves all non-spot capacity);
zone loss keeps only non-spot capacity elsewhere; stock per pool; cost per paid hour. Nodes are
each workload's own (the default) or shared by all workloads (``policy.share_nodes``).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

import pytest

from models.common import PurchaseKind
from models.plan import SolveStatus
from models.scenario import Scenario
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import blocks, offer, row, scenario, table, workload, zone

HALVES = blocks(("x", range(0, 12)), ("y", range(12, 24)))
HOURS_PER_MONTH = 730.0
SLICE_HOURS = 12 * HOURS_PER_MONTH / 24  # 365 h a month for each half-day slice
R, D, S = PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.spot


@dataclass(frozen=True)
class Case:
    """One random instance and what the oracle needs to know about it."""

    sc: Scenario
    rate: dict[str, float]
    demand: dict[tuple[str, str], float]
    util: dict[str, float]
    surv: dict[str, str]
    node: int
    offers: dict[tuple[str, PurchaseKind], tuple[float, int, float]]
    """(zone, kind) → (price, stock, interruption rate)."""


def make_case(seed: int) -> Case:
    rng = random.Random(seed)
    shape_kind = rng.choice(["two_zones", "two_workloads", "batch_spot"])
    node = rng.choice([1, 2])
    zones = ["a", "b"] if shape_kind == "two_zones" else ["a"]
    n_workloads = 2 if shape_kind == "two_workloads" else 1
    kinds = [R, D, S] if shape_kind == "batch_spot" else [R, D]
    offers: dict[tuple[str, PurchaseKind], tuple[float, int, float]] = {}
    zone_objs = []
    for z in zones:
        terms = {}
        for k in kinds:
            price = {R: rng.choice([2.0, 2.5]), D: rng.choice([3.0, 4.0]),
                     S: rng.choice([1.0, 1.5])}[k]
            stock = rng.randint(1, 4) * node
            rate = 0.1 if k is S else 0.0
            offers[(z, k)] = (price, stock, rate)
            terms[k] = (price, stock, rate)
        zone_objs.append(zone(z, offer(
            reserved=terms[R][:2], on_demand=terms[D][:2],
            spot=terms.get(S), gpus_per_node=node)))
    wls, rates, demand, utils, survs = [], {}, {}, {}, {}
    for i in range(n_workloads):
        name = f"w{i}"
        r = float(rng.choice([4, 5, 8]))
        u = rng.choice([0.7, 1.0])
        surv = rng.choice(["none", "n_plus_1", "zone_loss"] if len(zones) > 1
                          else ["none", "n_plus_1"])
        cls = "batch" if shape_kind == "batch_spot" else "interactive"
        peak = round(rng.uniform(0.3, 1.4) * r, 2)
        low = rng.choice([0.5, 1.0])
        shape = [1.0] * 12 + [low] * 12
        wls.append(workload(name, peak, shape=shape, cls=cls, survivability=surv, utilization=u))
        rates[name], utils[name], survs[name] = r, u, surv
        demand[(name, "x")], demand[(name, "y")] = peak, peak * low
    sc = scenario(wls, zone_objs, time_blocks=HALVES)
    return Case(sc, rates, demand, utils, survs, node, offers)


def slots(case: Case) -> list[tuple[str, str, PurchaseKind, str | None]]:
    """(workload, zone, kind, slice) replica counts to enumerate; spot only for batch."""
    out: list[tuple[str, str, PurchaseKind, str | None]] = []
    for w in sorted(case.rate):
        for (z, k) in sorted(case.offers, key=lambda t: (t[0], t[1].value)):
            if k is R:
                out.append((w, z, k, None))
            else:
                out += [(w, z, k, "x"), (w, z, k, "y")]
    return out


def oracle(case: Case, share_nodes: bool) -> float | None:
    """Cheapest feasible fleet by exhaustive enumeration; None when nothing is feasible."""
    keys = slots(case)
    limits = [math.ceil(max(case.demand[(w, s)] for s in "xy")
                        / (case.rate[w] * min(case.util[w], 1.0))) + case.node
              for w, *_ in keys]
    best: float | None = None
    for counts in itertools.product(*(range(m + 1) for m in limits)):
        x = dict(zip(keys, counts, strict=True))
        cost = fleet_cost(case, x, share_nodes)
        if cost is None or (best is not None and cost >= best - 1e-9):
            continue
        if all(feasible(case, x, s) for s in "xy"):
            best = cost
    return best


def fleet_cost(case: Case, x: dict[tuple[str, str, PurchaseKind, str | None], int],
               share_nodes: bool) -> float | None:
    """Cost of the fewest whole nodes holding the replicas (TP 1); None over stock.

    Dedicated pools: each workload's replicas round up to whole nodes on their own.
    """
    total = 0.0
    owners: list[list[str]] = [sorted(case.rate)] if share_nodes else [[w] for w in case.rate]
    for (z, k), (price, stock, _) in case.offers.items():
        for s in ([None] if k is R else ["x", "y"]):
            nodes = sum(
                math.ceil(sum(n for (w, zz, kk, ss), n in x.items()
                              if w in mine and (zz, kk, ss) == (z, k, s)) / case.node)
                for mine in owners)
            if nodes * case.node > stock:
                return None
            total += nodes * case.node * price * (HOURS_PER_MONTH if k is R else SLICE_HOURS)
    return total


def feasible(case: Case, x: dict[tuple[str, str, PurchaseKind, str | None], int],
             s: str) -> bool:
    for w, r in case.rate.items():
        need = case.demand[(w, s)]
        running = {(z, k): n for (ww, z, k, ss), n in x.items() if ww == w and ss in (None, s)}
        steady = sum(n * r * case.util[w] * (1 - case.offers[zk][2]) for zk, n in running.items())
        if steady < need - 1e-9:
            return False
        firm = {zk: n for zk, n in running.items() if zk[1] is not S}
        total = sum(firm.values()) * r  # at failure utilization 1.0
        if case.surv[w] == "n_plus_1":
            if total < need - 1e-9:  # losing a spot node: spot never counts after a failure
                return False
            for n in firm.values():
                if n and total - min(n, case.node) * r < need - 1e-9:
                    return False
        if case.surv[w] == "zone_loss":
            for z in {zk[0] for zk in case.offers}:
                if sum(n for zk, n in firm.items() if zk[0] != z) * r < need - 1e-9:
                    return False
    return True


@pytest.mark.parametrize("share_nodes", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_program_matches_exhaustive_enumeration(seed: int, share_nodes: bool) -> None:
    case = make_case(seed)
    sc = case.sc.model_copy(update={
        "policy": case.sc.policy.model_copy(update={"share_nodes": share_nodes})})
    tb = table(*(row(w, "H100", 1, r) for w, r in case.rate.items()))
    expected = oracle(case, share_nodes)
    plan = plan_scenario(sc, tb, gap=1e-9)
    if expected is None:
        assert plan.status is SolveStatus.infeasible
        assert plan.diagnosis
    else:
        assert plan.status is SolveStatus.optimal
        assert plan.cost.per_month == pytest.approx(expected, rel=1e-9)
        assert verify_plan(plan, sc, tb) == []
