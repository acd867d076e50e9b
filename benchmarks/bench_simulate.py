"""Time the trace replay: the Azure conversation trace and a one-million-request synthetic trace.

Targets (issue 5): the 19,366-request Azure conversation trace in under 2 s, and one million
synthetic requests within 60 s, on 2 cores. Both replay the demo scenario's ``chat`` workload
(Llama-3.1-70B FP8) on H100-SXM TP2 replicas with the capacity model's step times:

- Azure: 4 replicas (about 1.4 req/s each at the trace's 5.5 req/s mean).
- Synthetic: Poisson at 100 req/s for 10,000 s with the chat profile's lognormal lengths (seed 1),
  on 32 replicas (about 3.1 req/s each).

Run: ``/work/venv/bin/python benchmarks/bench_simulate.py`` (from the repository root).
"""

from __future__ import annotations

import time
from pathlib import Path

from inputs import demo_scenario
from models.loader import load_scenario
from solver.capacity.perf import replica_perf
from solver.replay.engine import ReplicaSpec, replay, summarize
from solver.replay.traces import Trace, read_trace, synthetic_trace

AZURE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "traces" / (
    "AzureLLMInferenceTrace_conv.csv")
AZURE_TARGET_S = 2.0
MILLION_TARGET_S = 60.0
MILLION_RATE_RPS = 100.0
MILLION_REQUESTS = 1_000_000


def _time(label: str, trace: Trace, replicas: int, target_s: float) -> None:
    scenario = load_scenario(demo_scenario())
    chat = scenario.workload("chat")
    perf = replica_perf(scenario, chat.model, "H100-SXM", chat.precision, 2)
    specs = [ReplicaSpec(f"r{i}", "z", perf) for i in range(replicas)]
    start, cpu_start = time.perf_counter(), time.process_time()
    result = replay(trace, specs)
    wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    s = summarize(result, chat.slo.ttft_p95_ms, chat.slo.tpot_p95_ms)
    print(f"{label}: {len(trace):,} requests on {replicas} replicas in {wall_s:.2f} s "
          f"(CPU {cpu_s:.2f} s; target {target_s:g} s, ratio {wall_s / target_s:.2f}); "
          f"TTFT P95 {s.ttft_ms.p95:,.0f} ms, TPOT P95 {s.tpot_ms.p95:.1f} ms, "
          f"within SLO {s.slo_attainment:.1%}")


def main() -> None:
    """Run both timings and print each against its target."""
    if AZURE.exists():
        _time("azure conversation", read_trace(AZURE), 4, AZURE_TARGET_S)
    else:
        print(f"azure conversation: skipped, {AZURE} not found")
    chat = load_scenario(demo_scenario()).workload("chat")
    assert chat.arrival is not None
    trace = synthetic_trace(chat, duration_s=MILLION_REQUESTS / MILLION_RATE_RPS, seed=1,
                            rate_scale=MILLION_RATE_RPS / chat.arrival.peak_rps)
    _time("synthetic 1M", trace, 32, MILLION_TARGET_S)


if __name__ == "__main__":
    main()
