"""benchmarks/quarterly_blocks.py: a block without committed capacity solved one group of
slices at a time is the block's optimum, and its bound bounds it (the measurement the
benchmark reports would be wrong otherwise); the table's last row is the best fleet's gap."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.quarterly_blocks import (  # noqa: E402
    has_committed,
    markdown,
    plan_by_slices,
    slice_groups,
)
from models.offers import Offer, OnDemandTerms, SpotTerms  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import ProgramData, build_program_data  # noqa: E402
from solver.program.values import objective_of, violated_rows  # noqa: E402
from solver.solve.backends import solve  # noqa: E402
from solver.solve.block_plans import BLOCK_FAMILIES  # noqa: E402
from tests.plan_fixtures import blocks, row, scenario, table, workload, zone  # noqa: E402

#: Four slices of six hours; the batch window (hours 4-9) spans the first two.
QUARTERS = blocks(("night", range(6)), ("morning", range(6, 12)), ("afternoon", range(12, 18)),
                  ("evening", range(18, 24)))
SHAPE = [0.3] * 6 + [0.7] * 6 + [1.0] * 6 + [0.6] * 6
TABLE = table(row("chat", "G", 1, 1.0), row("chat", "G", 2, 2.4), row("nightly", "G", 1, 1.0))


def _data(share_nodes: bool = True) -> ProgramData:
    offer = Offer(gpu="G", gpus_per_node=2,
                  on_demand=OnDemandTerms(price_per_gpu_hour=1.0, stock_gpus=64),
                  spot=SpotTerms(price_per_gpu_hour=0.4, stock_gpus=6,
                                 interruption_rate_per_hour=0.05))
    chat = workload("chat", 7.3, shape=SHAPE, survivability="zone_loss", utilization=1.0)
    nightly = workload("nightly", cls="batch", batch=(200_000, range(4, 10)), utilization=1.0)
    sc = scenario([chat, nightly], [zone("a", offer), zone("b", offer, region="r2")],
                  time_blocks=QUARTERS)
    sc = sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"share_nodes": share_nodes})})
    return build_program_data(sc, TABLE)


def test_a_batch_window_joins_the_slices_it_spans() -> None:
    data = _data()
    assert not has_committed(data)
    assert [[s.name for s in g] for g in slice_groups(data)] == [
        ["night", "morning"], ["afternoon"], ["evening"]]


@pytest.mark.parametrize("share_nodes", [True, False])
def test_the_groups_together_are_the_blocks_optimum(share_nodes: bool) -> None:
    data = _data(share_nodes)
    whole = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    outcome = solve(whole.prob, "highs", 30, 1e-9)
    assert outcome.report.objective is not None
    optimum = outcome.report.objective
    program, values, bound = plan_by_slices(data, 30, 1e-9)
    assert values is not None and bound is not None
    assert violated_rows(program, values) == []
    assert objective_of(program, values) == pytest.approx(optimum)
    assert optimum * (1 - 1e-6) <= bound <= optimum * (1 + 1e-6)


def test_the_table_ends_with_the_best_fleets_gap() -> None:
    lines = markdown("c", "shared", [("lp", None, 90.0, 1.0), ("block", 120.0, None, 5.0),
                                     ("cold", 110.0, 100.0, 9.0)])
    assert lines[1].endswith("| 1.200 |") and lines[-1].endswith("| gap 9.09% |")
