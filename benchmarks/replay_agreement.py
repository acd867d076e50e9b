"""Predicted vs replayed P95 latencies for a plan (the agreement tables of docs/replay.md).

For every configuration (workload, GPU, TP) a plan uses, one replica is replayed with a seeded
synthetic Poisson trace (lognormal lengths matched to the workload's P50/P95) at the load the plan
puts on it at peak — its SLO-holding rate × the workload's target utilization — and the replay's
TTFT/TPOT P95 are set beside ``solver.capacity.replica.predict_at_rate`` at the same rate (and the
replay's mean TPOT beside the model's mean, ``LoadPoint.tpot_mean_ms``). Then each
workload's replicas of its peak slice are replayed together at the workload's peak rate, intact
and after the failures it must survive (one node of each pool; each zone for a zone loss).
The replay splits requests over configurations in proportion to their SLO-holding capacity, then
routes to the least-loaded replica inside each (``solver.replay.engine``; ``fleet_replicas`` sets
the weights), the split the plan assumes, so no separate weighted-routing replay is needed.

Run: ``/work/venv/bin/python benchmarks/replay_agreement.py [PLAN_JSON]`` from the repository
root (without PLAN_JSON the demo is planned first, about 25 s). Prints two markdown tables.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from inputs import demo_scenario
from models.capacity import CapacityTable
from models.common import CapacitySource, Survivability
from models.inventory import Fleet
from models.loader import load_scenario
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.perf import replica_perf
from solver.capacity.replica import load_point, load_profile, predict_at_rate
from solver.capacity.table import build_capacity_table
from solver.replay.engine import (
    EngineConfig,
    ReplicaSpec,
    fleet_replicas,
    peak_slice,
    replay,
    summarize,
)
from solver.replay.traces import Trace, synthetic_trace, workload_rate_rps
from solver.survivability.fleet import load_fleet

SEED = 20261129
#: Each replay lasts long enough for this many requests, and at least an hour [requests].
MIN_REQUESTS = 4000
MIN_DURATION_S = 3600.0


def _duration_s(rate_rps: float) -> float:
    return max(MIN_DURATION_S, MIN_REQUESTS / rate_rps)


def _pct(sim: float, pred: float) -> str:
    return f"{(sim / pred - 1) * 100:+.0f} %" if pred > 0 else "—"  # NaN > 0 is False


def per_configuration(scenario: Scenario, fleet: Fleet, table: CapacityTable) -> list[str]:
    """One row per configuration: predicted vs replayed P95 at the planned per-replica load."""
    lines = [
        "| workload | GPU × TP | load [req/s] | TTFT P95 pred / sim [ms] | diff | "
        "TPOT P95 pred / sim [ms] | diff | TPOT mean pred / sim [ms] | diff |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    seen: set[tuple[str, str, int]] = set()
    for g in fleet.replicas:
        key = (g.workload, g.gpu, g.tp)
        if key in seen:
            continue
        seen.add(key)
        wl = scenario.workload(g.workload)
        row = next(r for r in table.for_workload(wl.name) if (r.gpu, r.tp) == (g.gpu, g.tp))
        rate_rps = row.slo_rps * wl.utilization
        pred = predict_at_rate(scenario, wl, row, rate_rps)
        perf = replica_perf(scenario, wl.model, g.gpu, g.precision, g.tp)
        trace = synthetic_trace(wl, _duration_s(rate_rps), SEED,
                                rate_scale=rate_rps / workload_rate_rps(wl))
        cfg = EngineConfig(prefix_cache_hit_rate=wl.prefix_cache_hit_rate)
        res = replay(trace, [ReplicaSpec("r", g.zone, perf)], cfg)
        s = summarize(res, wl.slo.ttft_p95_ms, wl.slo.tpot_p95_ms)
        assert s.rejected == 0, (wl.name, g.gpu, g.tp)
        tpot_mean = float(np.nanmean(res.tpot_ms))
        mean_pred = (load_point(load_profile(perf, wl), rate_rps).tpot_mean_ms
                     if row.source is CapacitySource.analytic else float("nan"))
        ttft, tpot = s.ttft_ms.p95, s.tpot_ms.p95
        lines.append(
            f"| {wl.name} | {g.gpu} × {g.tp} | {rate_rps:.2f} | "
            f"{pred.ttft_p95_ms:,.0f} / {ttft:,.0f} | {_pct(ttft, pred.ttft_p95_ms)} | "
            f"{pred.tpot_p95_ms:.1f} / {tpot:.1f} | {_pct(tpot, pred.tpot_p95_ms)} | "
            f"{mean_pred:.1f} / {tpot_mean:.1f} | {_pct(tpot_mean, mean_pred)} |"
        )
    return lines


def per_workload(scenario: Scenario, fleet: Fleet) -> list[str]:
    """Each workload's peak-slice replicas at its peak rate, intact and after each failure."""
    lines = [
        "| workload | slice | failure | replicas | requests | TTFT P95 [ms] (SLO) | "
        "TPOT P95 [ms] (SLO) | within SLO | rejected |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for wl in scenario.workloads:
        slice_name = peak_slice(scenario, wl)
        replicas = fleet_replicas(fleet, scenario, wl, slice_name)
        if not replicas:
            continue
        rate_rps = workload_rate_rps(wl)
        trace = synthetic_trace(wl, _duration_s(rate_rps), SEED)
        cases: list[tuple[str, list[ReplicaSpec]]] = [("none", replicas)]
        if wl.survivability in (Survivability.n_plus_1, Survivability.zone_loss):
            cases += _node_losses(fleet, replicas)
        if wl.survivability is Survivability.zone_loss:
            for zone in sorted({r.zone for r in replicas}):
                cases.append((f"zone:{zone}", [r for r in replicas if r.zone != zone]))
        for label, reps in cases:
            lines.append(_workload_row(wl, slice_name, label, reps, trace))
    return lines


def _node_losses(fleet: Fleet, replicas: list[ReplicaSpec]
                 ) -> list[tuple[str, list[ReplicaSpec]]]:
    """Losing one node of each pool (zone, GPU, TP, purchase): its first ⌊GPUs per node ÷ TP⌋
    replicas vanish."""
    out = []
    seen: set[str] = set()
    for g in fleet.replicas:
        pool = f"{g.zone}/{g.gpu}/tp{g.tp}/{g.purchase}"
        members = [r for r in replicas if r.name.startswith(pool + "#")]
        if not members or pool in seen:
            continue
        seen.add(pool)
        per_node = (fleet.gpus_per_node(g.zone, g.gpu, g.purchase) or g.tp) // g.tp
        lost = {r.name for r in members[:per_node]}
        out.append((f"node:{pool}", [r for r in replicas if r.name not in lost]))
    return out


def _workload_row(wl: Workload, slice_name: str, label: str, reps: list[ReplicaSpec],
                  trace: Trace) -> str:
    if not reps:
        return f"| {wl.name} | {slice_name} | {label} | 0 | {len(trace)} | — | — | 0 % | all |"
    cfg = EngineConfig(prefix_cache_hit_rate=wl.prefix_cache_hit_rate)
    s = summarize(replay(trace, reps, cfg), wl.slo.ttft_p95_ms, wl.slo.tpot_p95_ms)
    return (f"| {wl.name} | {slice_name} | {label} | {len(reps)} | {s.requests:,} | "
            f"{s.ttft_ms.p95:,.0f} ({wl.slo.ttft_p95_ms:,.0f}) | "
            f"{s.tpot_ms.p95:.1f} ({wl.slo.tpot_p95_ms:.0f}) | "
            f"{(s.slo_attainment or 0.0):.1%} | {s.rejected} |")


def main(argv: list[str]) -> None:
    """Print both tables for PLAN_JSON (or a fresh plan of the demo)."""
    scenario = load_scenario(demo_scenario())
    table = build_capacity_table(scenario)
    if argv:
        fleet = load_fleet(Path(argv[0]), scenario, table)
    else:
        from solver.solve.strategy import plan_scenario
        from solver.survivability.fleet import fleet_from_plan

        fleet = fleet_from_plan(plan_scenario(scenario, table), scenario)
    print("\n".join(per_configuration(scenario, fleet, table)))
    print()
    print("\n".join(per_workload(scenario, fleet)))


if __name__ == "__main__":
    main(sys.argv[1:])
