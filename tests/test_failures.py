"""The failure arithmetic on a fleet: failure domains and the node-loss knapsack."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.common import CapacitySource, Precision, PurchaseKind
from models.inventory import FleetReplicaGroup
from solver.survivability.failures import Failure, FailureKind, failure_domains, worst_node_loss
from solver.survivability.fleet import load_fleet
from tests import fleet_cases as fc

R = PurchaseKind.reserved


def _group(
    workload: str,
    tp: int,
    replicas: int,
    slo_rps: float,
    zone: str = "z1",
    purchase: PurchaseKind = R,
) -> FleetReplicaGroup:
    return FleetReplicaGroup(
        workload=workload,
        zone=zone,
        gpu="H100",
        tp=tp,
        precision=Precision.bf16,
        purchase=purchase,
        slice=None,
        replicas=replicas,
        slo_rps=slo_rps,
        capacity_source=CapacitySource.analytic,
    )


def test_worst_node_loss_single_tp() -> None:
    # 8-GPU node holds ⌊8/2⌋ = 4 tp2 replicas: 4 × 2.0 = 8 rps
    rps, lost = worst_node_loss([_group("chat", 2, 6, 2.0)], 8)
    assert rps == pytest.approx(8.0)
    assert lost == {0: 4}
    # fewer replicas than a node holds: all 3 are lost
    assert worst_node_loss([_group("chat", 2, 3, 2.0)], 8)[0] == pytest.approx(6.0)


def test_worst_node_loss_mixed_tp_is_a_knapsack() -> None:
    # tp4 at 5 rps (3 replicas) and tp2 at 2 rps (5 replicas) on 8 GPUs:
    # 2 × tp4 = 10; tp4 + 2 × tp2 = 9; 4 × tp2 = 8 → worst node loses 10 rps.
    groups = [_group("chat", 4, 3, 5.0), _group("chat", 2, 5, 2.0)]
    rps, lost = worst_node_loss(groups, 8)
    assert rps == pytest.approx(10.0)
    assert lost == {0: 2}


def test_failure_domains_of_the_plan_fleet(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(fc.plan().model_dump_json(), encoding="utf-8")
    fleet = load_fleet(path, fc.scenario(), fc.table())
    labels = tuple(f.label for f in failure_domains(fleet, fc.scenario()))
    assert labels == fc.FAILURE_LABELS
    two_regions = failure_domains(fleet, fc.scenario(regions=("r1", "r2")))
    assert Failure(kind=FailureKind.region, region="r2") in two_regions


@settings(max_examples=60, deadline=None)
@given(
    gpn=st.sampled_from([1, 2, 4, 8]),
    items=st.lists(
        st.tuples(st.sampled_from([1, 2, 4, 8]), st.integers(0, 5), st.floats(0.1, 10.0)),
        min_size=1,
        max_size=3,
    ),
)
def test_worst_node_loss_matches_brute_force(gpn: int, items: list[tuple[int, int, float]]) -> None:
    groups = [_group("chat", tp, n, rps) for tp, n, rps in items]
    best = 0.0
    for counts in itertools.product(*(range(n + 1) for _, n, _ in items)):
        used = sum(c * tp for c, (tp, _, _) in zip(counts, items, strict=True))
        if used <= gpn:
            best = max(best, sum(c * rps for c, (_, _, rps) in zip(counts, items, strict=True)))
    rps, lost = worst_node_loss(groups, gpn)
    assert rps == pytest.approx(best)
    assert sum(lost.get(i, 0) * g.tp for i, g in enumerate(groups)) <= gpn
    assert sum(lost.get(i, 0) * g.slo_rps for i, g in enumerate(groups)) == pytest.approx(rps)
