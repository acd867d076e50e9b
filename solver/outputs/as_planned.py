"""The capacity rows a plan was sized with: de-rated where trace replay de-rated them.

The replay loop (solver.solve.replay_loop) plans a configuration that missed in replay at a
lower rate than the capacity model's SLO-holding rate. The outputs rebuild the table from the
scenario, so without this the Pools sheet, the report and the contract would show the rate of
the plan's allocations next to the latencies the model predicts at the higher, un-de-rated rate.
"""

from __future__ import annotations

from models.capacity import CapacityRow, CapacityTable
from models.plan import Plan
from models.scenario import Scenario
from solver.capacity.replica import latency_slack, predict_at_rate

#: A planned rate this far below the table's is a de-rating, not a rounding [1].
REL_TOL = 1e-9


def as_planned(table: CapacityTable, plan: Plan, scenario: Scenario) -> CapacityTable:
    """``table`` with each row the plan runs at a lower rate replaced by the row at that rate:
    SLO-holding rate, token rates and cost per token scaled, P95 latencies and headroom as the
    model predicts them there, and a note saying the trace replay de-rated it."""
    planned: dict[tuple[str, str, int], float] = {}
    for a in plan.allocations:
        planned.setdefault((a.workload, a.gpu, a.tp), a.replica_capacity_rps)
    rows: list[CapacityRow] = []
    for row in table.rows:
        rate = planned.get((row.workload, row.gpu, row.tp))
        if rate is None or rate >= row.slo_rps * (1 - REL_TOL):
            rows.append(row)
            continue
        rows.append(_at_rate(row, rate, scenario))
    return table.model_copy(update={"rows": tuple(rows)})


def _at_rate(row: CapacityRow, rate_rps: float, scenario: Scenario) -> CapacityRow:
    wl = scenario.workload(row.workload)
    f = rate_rps / row.slo_rps
    at = predict_at_rate(scenario, wl, row, rate_rps)
    headroom = latency_slack(wl, at.ttft_p95_ms, at.tpot_p95_ms)
    note = (f"{row.note}; " if row.note else "") + (
        f"de-rated ×{f:.3f} by trace replay (model's SLO-holding rate {row.slo_rps:,.3f} req/s)"
        + (f"; latencies there {at.basis}" if at.basis else ""))
    return row.model_copy(update={
        "slo_rps": rate_rps,
        "input_tokens_per_s": row.input_tokens_per_s * f,
        "output_tokens_per_s": row.output_tokens_per_s * f,
        "cost_per_million_tokens": {k: v / f for k, v in row.cost_per_million_tokens.items()},
        "ttft_p95_ms": at.ttft_p95_ms, "tpot_p95_ms": at.tpot_p95_ms, "headroom": headroom,
        "note": note,
    })
