"""The outputs of a plan the trace replay de-rated show the de-rated configurations at the rate
the plan runs them: the model's latencies there, not at its own SLO-holding rate."""

from __future__ import annotations

from pathlib import Path

import pytest
from openpyxl import load_workbook

from models.loader import load_scenario
from models.plan import ReplayCheck
from solver.capacity.replica import predict_at_rate
from solver.capacity.table import build_capacity_table
from solver.outputs.as_planned import as_planned
from solver.outputs.plan_dir import write_plan_outputs
from solver.solve.replay_loop import derate
from solver.solve.strategy import plan_scenario
from tests.plan_fixtures import h100_scenario_yaml


def test_a_derated_plan_shows_the_model_at_the_planned_rate(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(h100_scenario_yaml("one"))
    sc = load_scenario(path)
    table = build_capacity_table(sc)
    halved = derate(table, {(r.workload, r.gpu, r.tp): 0.5 for r in table.rows}, 1)
    plan = plan_scenario(sc, halved)
    check = ReplayCheck(round=1, workload="chat", failure="none", slice="day", requests=1,
                        ttft_p95_ms=900.0, ttft_slo_ms=500, tpot_p95_ms=30, tpot_slo_ms=60,
                        slo_attainment=0.5, holds=False)
    plan = plan.model_copy(update={"replay": (check,)})
    a = plan.allocations[0]
    row = next(r for r in table.rows if (r.gpu, r.tp) == (a.gpu, a.tp))
    shown = next(r for r in as_planned(table, plan, sc).rows if (r.gpu, r.tp) == (a.gpu, a.tp))
    at = predict_at_rate(sc, sc.workload("chat"), row, row.slo_rps / 2)
    assert shown.slo_rps == pytest.approx(row.slo_rps / 2)
    assert shown.slo_rps == pytest.approx(a.replica_capacity_rps)
    assert shown.ttft_p95_ms == pytest.approx(at.ttft_p95_ms)
    assert shown.tpot_p95_ms == pytest.approx(at.tpot_p95_ms)
    assert shown.ttft_p95_ms < row.ttft_p95_ms and shown.tpot_p95_ms < row.tpot_p95_ms
    assert shown.headroom > row.headroom
    assert "de-rated ×0.500 by trace replay" in shown.note
    # rows the plan does not run, or runs at the model's rate, are untouched
    others = [r for r in as_planned(table, plan, sc).rows if (r.gpu, r.tp) != (a.gpu, a.tp)]
    assert others == [r for r in table.rows if (r.gpu, r.tp) != (a.gpu, a.tp)]
    # the Pools sheet shows the latencies at the planned rate
    write_plan_outputs(plan, sc, tmp_path / "out")
    ws = load_workbook(tmp_path / "out" / "plan.xlsx", read_only=True)["Pools"]
    values = [v for r in ws.iter_rows(values_only=True) for v in r if isinstance(v, float)]
    ws.parent.close()
    assert any(v == pytest.approx(at.ttft_p95_ms) for v in values)
    assert not any(v == pytest.approx(row.ttft_p95_ms) for v in values)
