"""Why a plan's pool of replicas of very different capacity misses its per-token SLO after a
node loss (the one miss of the trust sweep, benchmarks/results/trust.md "Trust sweep").

The plan (``trust_sweep.py``, case ``small-s5-x2``) runs ``code-completion`` in slice h17 on
3 H100-SXM TP2 replicas (19.2 req/s each at the SLO) and 30 L40S TP1 replicas (0.204 req/s
each). Losing the usw2-az1 H100 node leaves 1 H100 + 30 L40S = 25.33 req/s at the failure
utilization 1 against 25.21 planned, and the replay's per-token P95 misses 30 ms. This replays
the parts apart, each at its share of the rate, with the same seeded Poisson traces
(``synthetic_trace``: the workload's lengths), so the cause can be read off:

- one L40S TP1 replica alone at its SLO-holding rate (and at 70 % of it);
- the 30 L40S alone at 30 × that rate; the H100 alone at its rate;
- the survivors together at the planned demand, weighted by SLO-holding rate (as the plan's
  replay routes), and with the L40S left out (the H100 alone at the same demand).

With the replay's former router (least ``(outstanding + 1) ÷ weight`` over every replica) the
survivors together replayed exactly as the H100 alone: the L40S took no request. Since the
two-level router (a configuration by its capacity, then least-loaded) they take their share and
the survivors hold (benchmarks/results/trust.md, "Trust sweep").

Run: ``nice -n 19 .venv/bin/python benchmarks/mixed_pool_probe.py SCENARIO PLAN_JSON
[--seeds 1,2,3]`` with the case's ``scenario.yaml`` and ``plan/plan.json`` as trust_sweep
writes them (``/tmp/adv17/run9/small-s5-x2/``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from models.inventory import FleetReplicaGroup
from models.loader import load_scenario
from solver.capacity.perf import replica_perf
from solver.capacity.table import build_capacity_table
from solver.replay.engine import EngineConfig, ReplicaSpec, replay, summarize
from solver.replay.traces import synthetic_trace, workload_rate_rps
from solver.survivability.fleet import load_fleet

WORKLOAD = "code-completion"
SLICE = "h17"
LOST = ("usw2-az1", "H100-SXM")
DURATION_S = 1800.0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", type=Path)
    p.add_argument("plan", type=Path)
    p.add_argument("--seeds", default="1,2,3")
    a = p.parse_args(argv)
    sc = load_scenario(a.scenario)
    wl = sc.workload(WORKLOAD)
    table = build_capacity_table(sc)
    fleet = load_fleet(a.plan, sc, table)
    groups = [g for g in fleet.replicas if g.workload == WORKLOAD and g.slice in (None, SLICE)
              and g.replicas > 0]
    demand_rps = max(wl.hourly_demand_rps()[h] for b in sc.policy.time_blocks
                     if b.name == SLICE for h in b.hours)
    cfg = EngineConfig(prefix_cache_hit_rate=wl.prefix_cache_hit_rate)

    def specs(keep: list[tuple[FleetReplicaGroup, int]]) -> list[ReplicaSpec]:
        out = []
        for g, n in keep:
            perf = replica_perf(sc, wl.model, g.gpu, g.precision, g.tp)
            out += [ReplicaSpec(f"{g.zone}/{g.gpu}/tp{g.tp}#{i}", g.zone, perf, weight=g.slo_rps)
                    for i in range(n)]
        return out

    survivors = [(g, g.replicas) for g in groups if (g.zone, g.gpu) != LOST]
    small = [(g, n) for g, n in survivors if g.slo_rps < 1.0]
    large = [(g, n) for g, n in survivors if g.slo_rps >= 1.0]
    one_small = [(small[0][0], 1)]
    cases = [
        ("one L40S TP1 alone at its SLO-holding rate", one_small, small[0][0].slo_rps),
        ("one L40S TP1 alone at 70 % of it", one_small, 0.7 * small[0][0].slo_rps),
        ("the L40S alone at their summed SLO-holding rate", small,
         sum(g.slo_rps * n for g, n in small)),
        ("the H100 alone at its SLO-holding rate", large, sum(g.slo_rps * n for g, n in large)),
        ("the survivors together at the planned demand", survivors, demand_rps),
        ("the H100 alone at the planned demand (no L40S)", large, demand_rps),
    ]
    print(f"{WORKLOAD} in {SLICE}: planned demand {demand_rps:.2f} req/s; survivors of losing "
          f"{LOST[0]}/{LOST[1]}: " + ", ".join(f"{n} × {g.gpu} TP{g.tp} at {g.slo_rps:.3f}"
                                                for g, n in survivors))
    print("| case | rate [req/s] | seed | requests | TTFT P95 [ms] | TPOT P95 [ms] | TPOT SLO |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, keep, rate_rps in cases:
        for seed in (int(s) for s in a.seeds.split(",")):
            trace = synthetic_trace(wl, DURATION_S, seed,
                                    rate_scale=rate_rps / workload_rate_rps(wl))
            s = summarize(replay(trace, specs(keep), cfg), wl.slo.ttft_p95_ms,
                          wl.slo.tpot_p95_ms)
            print(f"| {label} | {rate_rps:.3f} | {seed} | {s.requests:,} | {s.ttft_ms.p95:,.0f} "
                  f"| {s.tpot_ms.p95:.1f} | {wl.slo.tpot_p95_ms:.0f} |")


if __name__ == "__main__":
    main()
