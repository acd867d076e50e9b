"""Why a plan's replay misses by an order of magnitude after a failure: the replay of one
workload's plan, intact and after the first failure it must survive, minute by minute.

For each case: the live replicas, the window's mean rate per live replica, the P95s over the
window (as the plan's replay check takes them), and per minute of the replayed trace the
arrivals, the TTFT median and P95 of the requests arriving in it and the most requests waiting
for their first token; for the failure, the first tokens given per minute per survivor (the rate
the survivors serve while a queue stands), the preemptions and the KV in use. A queue that grows
while the first tokens per survivor stay flat is overload, not a burst (docs/capacity-model.md,
"A miss by an order of magnitude"). Run from the repository root, on a scenario whose workload
names a trace and on a plan of it made without the loop::

    nice -n 19 .venv/bin/fleetplan plan LINKED.yaml --no-replay --out /tmp/nr
    nice -n 19 .venv/bin/python benchmarks/first_round_miss.py LINKED.yaml /tmp/nr/plan.json \\
        [--workload NAME]

(LINKED.yaml: e.g. inputs/scenarios/twenty_rps.yaml with its workload's ``arrival.trace`` set
to the Azure conversation trace and ``measured_csv`` made absolute, as
tests/test_linked_examples.py writes it.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.plan import Plan
from solver.cli.common import load
from solver.replay import plan_replay
from solver.replay.engine import (
    EngineConfig,
    Outage,
    fleet_replica_groups,
    peak_slice,
    replay,
    summarize,
)
from solver.replay.outages import outage_for
from solver.survivability.failures import failure_domains, required_failures
from solver.survivability.fleet import fleet_from_plan

SECONDS_PER_MINUTE = 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("plan", type=Path)
    parser.add_argument("--workload", default=None)
    args = parser.parse_args()
    scenario = load(args.scenario)
    plan = Plan.model_validate_json(args.plan.read_text())
    wl = next(w for w in scenario.workloads
              if (args.workload is None and w.arrival is not None and w.arrival.trace is not None)
              or w.name == args.workload)
    assert wl.arrival is not None and wl.arrival.trace is not None, "the workload names no trace"
    trace = plan_replay.read_linked(wl.arrival.trace)
    fleet = fleet_from_plan(plan, scenario)
    slice_name = peak_slice(scenario, wl)
    groups = fleet_replica_groups(fleet, scenario, wl, slice_name)
    replicas = [spec for _, specs in groups for spec in specs]
    window = plan_replay.peak_window(trace, max(wl.hourly_demand_rps()),
                                     wl.arrival.trace.scale_to)
    config = EngineConfig(prefix_cache_hit_rate=wl.prefix_cache_hit_rate,
                          max_context_tokens=scenario.model(wl.model).max_context_tokens)
    cases: list[tuple[str, Outage | None]] = [("none", None)]
    for failure in required_failures(wl, failure_domains(fleet, scenario)):
        outage = outage_for(failure, fleet, scenario, wl, slice_name, groups, window.start_s)
        if outage is not None and any(outage.hits(r) for r in replicas):
            cases.append((failure.label, outage))
            break
    print(f"{wl.name}: {len(replicas)} replicas; window {window.window_s:.0f} s after "
          f"{window.start_s:.0f} s of warm-up, the trace at {window.rate_scale:.3f}× its rate")
    for label, outage in cases:
        result = replay(window.trace, replicas, config, outage)
        lost = 0 if outage is None else sum(outage.hits(r) for r in replicas)
        live = len(replicas) - lost
        inside = result.arrival_s >= window.start_s
        rate_rps = inside.sum() / window.window_s
        s = summarize(result, wl.slo.ttft_p95_ms, wl.slo.tpot_p95_ms, since_s=window.start_s)
        print(f"\n{label}: {live} live replicas, {rate_rps:.2f} req/s in the window = "
              f"{rate_rps / live:.2f} per live replica; mean input "
              f"{float(np.mean(window.trace.input_tokens[inside])):,.0f} tokens, output "
              f"{float(np.mean(result.output_tokens[inside])):,.0f}; TTFT P95 "
              f"{s.ttft_ms.p95:,.0f} ms (SLO {wl.slo.ttft_p95_ms:,.0f}), per-token P95 "
              f"{s.tpot_ms.p95:.1f} ms (SLO {wl.slo.tpot_p95_ms:g})")
        end_s = window.start_s + window.window_s
        first_token_s = result.arrival_s + result.ttft_ms / 1000.0
        for minute in range(int(end_s // SECONDS_PER_MINUTE)):
            t0 = minute * SECONDS_PER_MINUTE
            arriving = (result.arrival_s >= t0) & (result.arrival_s < t0 + SECONDS_PER_MINUTE)
            if not arriving.any():
                continue
            served = ((first_token_s >= t0) & (first_token_s < t0 + SECONDS_PER_MINUTE)).sum()
            waiting = (result.queue_depth_max[minute]
                       if minute < result.queue_depth_max.size else -1)
            print(f"  minute {minute:2d}: arrivals {arriving.sum():5d}, TTFT median "
                  f"{np.nanmedian(result.ttft_ms[arriving]):8,.0f} ms, P95 "
                  f"{np.nanpercentile(result.ttft_ms[arriving], 95):8,.0f} ms, waiting at most "
                  f"{waiting:4d}, first tokens {served / SECONDS_PER_MINUTE / live:5.2f} req/s "
                  "per live replica")
        print(f"  preemptions {int(result.preemptions.sum())}, largest share of KV in use "
              f"{float(np.nanmax(result.kv_use)):.2f}")


if __name__ == "__main__":
    main()
