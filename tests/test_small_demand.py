"""Demand too small to need a whole replica: refused at validation with the reason, or planned
with the smallest fleet that carries it, never "optimal" with no fleet."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from models.plan import SolveStatus
from solver.cli import main
from solver.solve.strategy import plan_scenario
from solver.survivability.verify import verify_plan
from tests.plan_fixtures import blocks, offer, row, scenario, table, workload, zone

TINY = Path(__file__).resolve().parents[1] / "inputs" / "scenarios" / "tiny.yaml"


@pytest.mark.skipif(not TINY.exists(), reason="tiny scenario not shipped")
def test_a_peak_of_a_millionth_request_per_second_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    doc = yaml.safe_load(TINY.read_text())
    doc["workloads"][0]["arrival"]["peak_rps"] = 1e-6
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "workloads[0].arrival.peak_rps" in result.output
    assert "the solver reads the demand as zero" in result.output
    assert not (tmp_path / "out").exists()


def test_one_request_a_day_gets_the_smallest_fleet() -> None:
    # One request a day over the whole day (1.16e-5 req/s): one 1-GPU on-demand replica in one
    # half of the day (3.0 × 365 h = 1,095), every row holding, the other half without demand.
    sc = scenario([workload("b", None, cls="batch", utilization=1.0,
                            batch=(1.0, list(range(24))))],
                  [zone("a", offer(on_demand=(3.0, 8), gpus_per_node=1))],
                  time_blocks=blocks(("x", range(12)), ("y", range(12, 24))))
    tb = table(row("b", "H100", 1, 10.0))
    plan = plan_scenario(sc, tb, gap=1e-9)
    assert plan.status is SolveStatus.optimal
    assert [a.replicas for a in plan.allocations] == [1]
    assert plan.cost.per_month == pytest.approx(1095.0)
    assert all(r.holds for r in plan.survivability)
    assert verify_plan(plan, sc, tb) == []
