"""KV-bound overload: the Azure conversation trace on one replica, as its rate grows.

Replays ``../shared/data/traces/AzureLLMInferenceTrace_conv.csv`` on one replica (default: one
A100-80GB of Llama-3.1-8B; ``--model``, ``--gpu``, ``--tp``; BF16, runtime ``vllm``: the built-in
catalog's step times) at a range of rate scales, with preemption by recomputation and by
swapping, and prints TTFT and per-token P50/P95, the share of requests preempted and the KV
cache's peak use. Run from the repository root::

    .venv/bin/python benchmarks/kv_overload.py [--trace PATH] [--scales 0.5,1,2,4]
        [--model Llama-3.1-8B] [--gpu A100-80GB] [--tp 1]

What it shows (docs/replay.md, "Preemption"): past the KV cache's capacity the replay preempts and
keeps serving, so latency grows with the overload instead of stalling behind reservations.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.common import Precision  # noqa: E402
from models.loader import load_catalog, load_runtimes  # noqa: E402
from models.runtime import resolve_runtime  # noqa: E402
from solver.capacity.perf import perf_model, runtime_efficiency  # noqa: E402
from solver.replay.engine import (  # noqa: E402
    EngineConfig,
    PreemptMode,
    ReplicaSpec,
    replay,
    summarize,
)
from solver.replay.traces import read_trace, scale_arrivals  # noqa: E402

DEFAULT_TRACE = ROOT.parent / "shared" / "data" / "traces" / "AzureLLMInferenceTrace_conv.csv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--scales", default="0.5,1,2,4")
    parser.add_argument("--model", default="Llama-3.1-8B")
    parser.add_argument("--gpu", default="A100-80GB")
    parser.add_argument("--tp", type=int, default=1)
    args = parser.parse_args(argv)
    gpus, models, _ = load_catalog()
    gpu = next(g for g in gpus if g.name == args.gpu)
    model = next(m for m in models if m.name == args.model)
    eff = runtime_efficiency(gpu, resolve_runtime("vllm", load_runtimes()), args.tp)
    perf = perf_model(model, gpu, Precision.bf16, args.tp, eff)
    trace = read_trace(args.trace)
    print(f"{model.name} BF16 on {args.tp} × {gpu.name} (vllm), KV "
          f"{perf.kv_capacity_tokens:,} tokens; {args.trace.name}, {len(trace):,} requests")
    print("| rate × | preempt | TTFT P50 | TTFT P95 | TPOT P50 | TPOT P95 | preempted | "
          "KV peak |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for scale in (float(x) for x in args.scales.split(",")):
        scaled = scale_arrivals(trace, scale)
        for mode in PreemptMode:
            cfg = EngineConfig(preempt=mode, max_context_tokens=model.max_context_tokens)
            res = replay(scaled, [ReplicaSpec("r0", "z", perf)], cfg)
            s = summarize(res, 1e12, 1e12)
            kv = float(max(res.kv_use[res.kv_use == res.kv_use], default=0.0))
            print(f"| {scale:g} | {mode.value} | {s.ttft_ms.p50:,.0f} | {s.ttft_ms.p95:,.0f} | "
                  f"{s.tpot_ms.p50:.1f} | {s.tpot_ms.p95:.1f} | "
                  f"{s.preempted / max(s.requests, 1):.1%} | {kv:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
