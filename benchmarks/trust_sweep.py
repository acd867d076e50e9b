"""Try to break the trust claim: plans that ``fleetplan plan`` writes (exit 0), then checked
and replayed by the other commands, as a skeptical buyer would.

For every case (a scenario file written into OUT):

1. ``fleetplan plan CASE --time-limit T --no-replay --out OUT/CASE`` (exit 0, 1 or 3 recorded);
2. if it wrote a plan: ``fleetplan check CASE --fleet plan.json --json`` — a miss is exit 1 or
   any finding of the independent verifier (``verification``), which check reports without
   changing its exit code;
3. for every workload with an arrival rate: a seeded Poisson trace at its planned peak with its
   own lengths (``solver.replay.traces.synthetic_trace``: lognormal from its P50/P95, clipped at
   P99), written as a CSV, replayed by ``fleetplan simulate`` intact, and, for each failure the
   workload claims to survive, with ``--fail node:ZONE/GPU@2`` for each pool holding its
   replicas in the replayed slice (``n_plus_1``, ``zone_loss``) and ``--fail zone:ZONE@2`` for
   each zone holding them (``zone_loss``). The verdict read is simulate's own P95 over the
   requests arriving after the failure (intact: over all requests). A replay that misses or
   comes within ``CLOSE`` of an SLO is run again with two more seeds; a miss is called only
   when every seed misses.

Cases: generated sizes (``benchmarks/generate.py``; ``small`` by default) over seeds and
scales, and mutations of each (odd node sizes 1/3/5/6/7 per GPU type, no spot offers, a budget
at the plan's own cost rounded up to the cent), plus hand-written edge cases (``hand_cases``).

With ``--traces DIR``, also a buyer's walk-through on each recorded trace there
(``trace_cases``): profiled, planned, and replayed on the trace itself (``TraceReplay``: its
busiest minute at the planned peak, the claim; and its mean at the peak, the walk-through's
scaling, counted apart as above the claim).

Run: ``nice -n 19 .venv/bin/python benchmarks/trust_sweep.py OUT [--sizes small,medium]
[--seeds 0-5] [--scales 1,3] [--time-limit 10] [--only NAME,…] [--traces
../shared/data/traces --trace-scales 1,5 --trace-kinds peak,walk]`` (bursty trace workloads
need ``--time-limit 60`` or more: their capacity table takes seconds per configuration).
Writes ``OUT/results.jsonl`` (one line per command run) and prints one line per command;
``trust_sweep.py --summarize OUT/results.jsonl…`` counts them. Figures and the command of
each run: benchmarks/results/trust.md, "Trust sweep".
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate import generate_scenario, scenario_file
from models.loader import load_scenario
from solver.replay.profile import minute_rates_rps, profile_trace, workload_fields
from solver.replay.traces import read_trace, synthetic_trace, workload_rate_rps

BIN = Path(sys.executable).parent / "fleetplan"
#: Replay at least this long, and long enough for this many requests, at most an hour [s].
MIN_DURATION_S = 1200.0
MIN_REQUESTS = 4000
MAX_DURATION_S = 3600.0
#: Failures strike at this minute of the replay (after a warm-up) [min].
FAIL_MINUTE = 2
#: A replay within this share of an SLO is re-run with more seeds [1].
CLOSE = 0.10
SEEDS = (1, 2, 3)
#: Odd node sizes tried per GPU type [GPUs per node].
NODE_SIZES = (1, 3, 5, 6, 7)

Doc = dict[str, Any]


def _run(args: list[str], timeout_s: float = 900.0) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


# --- cases ---------------------------------------------------------------------------------

def generated_doc(size: str, seed: int, scale: int) -> Doc:
    """A generated scenario as a scenario-file document."""
    sc = generate_scenario(size, seed, scale)
    doc: Doc = scenario_file(sc).model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return doc


def with_node_sizes(doc: Doc, sizes: dict[str, int]) -> Doc:
    """Every offer of a GPU type sold in nodes of ``sizes[gpu]`` GPUs, stock kept in nodes."""
    out = copy.deepcopy(doc)
    for zone in out["zones"]:
        for offer in zone["offers"]:
            old = offer.get("gpus_per_node", 8)
            new = sizes.get(offer["gpu"], old)
            offer["gpus_per_node"] = new
            for kind in ("reserved", "on_demand", "spot"):
                terms = offer.get(kind)
                if isinstance(terms, dict) and "stock_gpus" in terms:
                    terms["stock_gpus"] = max(1, terms["stock_gpus"] // old) * new
    return out


def without_spot(doc: Doc) -> Doc:
    out = copy.deepcopy(doc)
    for zone in out["zones"]:
        for offer in zone["offers"]:
            offer.pop("spot", None)
    return out


def with_budget(doc: Doc, budget: float) -> Doc:
    out = copy.deepcopy(doc)
    out.setdefault("policy", {})["monthly_budget"] = math.ceil(budget * 100) / 100  # cents
    return out


def generated_cases(sizes: list[str], seeds: list[int], scales: list[int]
                    ) -> Iterator[tuple[str, Doc]]:
    for size in sizes:
        yield from _generated(size, seeds, scales)


def _generated(size: str, seeds: list[int], scales: list[int]) -> Iterator[tuple[str, Doc]]:
    for scale in scales:
        for seed in seeds:
            base = generated_doc(size, seed, scale)
            yield f"{size}-s{seed}-x{scale}", base
            # odd node sizes: one size per GPU type, rotated by seed
            gpus = sorted({o["gpu"] for z in base["zones"] for o in z["offers"]})
            sizes = {g: NODE_SIZES[(seed + i) % len(NODE_SIZES)] for i, g in enumerate(gpus)}
            tag = "-".join(str(sizes[g]) for g in gpus)
            yield f"{size}-s{seed}-x{scale}-nodes{tag}", with_node_sizes(base, sizes)
            if seed % 2 == 0:
                yield f"{size}-s{seed}-x{scale}-nospot", without_spot(base)


def _tiny_base() -> Doc:
    return yaml.safe_load(Path("inputs/scenarios/tiny.yaml").read_text(encoding="utf-8"))


def hand_cases() -> Iterator[tuple[str, Doc]]:
    """Edge cases of demand, node size and survivability, each small enough to reason about."""
    tiny = _tiny_base()
    # a demand so small no replica is needed
    for rps in (1e-6, 0.001):
        d = copy.deepcopy(tiny)
        d["workloads"][0]["arrival"] = {"peak_rps": rps}
        yield f"tiny-demand-{rps}", d
    # demand just above one replica's capacity, on 1-GPU nodes (H100 TP1 holds ~19.1 req/s at
    # the SLO, 13.4 at target utilization 0.7): 13.5 needs two
    for rps in (13.41, 19.2, 26.9):
        d = copy.deepcopy(tiny)
        d["workloads"][0]["arrival"] = {"peak_rps": rps}
        d["zones"][0]["offers"][1]["reserved"]["stock_gpus"] = 4
        yield f"tiny-above-one-{rps}", d
    # N+1 with a single node per pool; 3-GPU nodes and a 70B model (TP2 on 3-GPU nodes)
    two_zone: Doc = {
        "name": "n1-single",
        "description": "N+1 where every pool has one node; odd node sizes.",
        "zones": [
            {"id": f"z{i}", "region": "r1", "offers": [
                {"gpu": "H100-SXM", "gpus_per_node": size, "price_source": "hand",
                 "reserved": {"price_per_gpu_hour": 2.4, "stock_gpus": size},
                 "on_demand": {"price_per_gpu_hour": 4.0, "stock_gpus": size * nodes}},
                {"gpu": "L40S", "gpus_per_node": lsize, "price_source": "hand",
                 "reserved": {"price_per_gpu_hour": 1.2, "stock_gpus": lsize},
                 "on_demand": {"price_per_gpu_hour": 1.9, "stock_gpus": lsize * nodes},
                 "spot": {"price_per_gpu_hour": 0.7, "stock_gpus": lsize * 4,
                          "interruption_rate_per_hour": 0.05}},
            ]} for i, (size, lsize, nodes) in enumerate(((3, 5, 2), (5, 7, 1), (7, 3, 1)))
        ],
        "workloads": [
            {"name": "chat70", "model": "Llama-3.1-70B", "precision": "fp8",
             "class": "interactive", "arrival": {"peak_rps": 5.0},
             "input_tokens": {"p50": 1020, "p95": 4083, "p99": 4142},
             "output_tokens": {"p50": 129, "p95": 451, "p99": 601},
             "slo": {"ttft_p95_ms": 1500, "tpot_p95_ms": 60}, "survivability": "n_plus_1"},
            {"name": "code8", "model": "Llama-3.1-8B", "precision": "bf16",
             "class": "interactive", "arrival": {"peak_rps": 9.0},
             "input_tokens": {"p50": 1469, "p95": 7303, "p99": 7436},
             "output_tokens": {"p50": 13, "p95": 90, "p99": 251},
             "prefix_cache_hit_rate": 0.5,
             "slo": {"ttft_p95_ms": 500, "tpot_p95_ms": 30}, "survivability": "zone_loss"},
            {"name": "batch8", "model": "Llama-3.1-8B", "precision": "bf16", "class": "batch",
             "arrival": {"peak_rps": 3.0},
             "input_tokens": {"p50": 3000, "p95": 6500, "p99": 8000},
             "output_tokens": {"p50": 250, "p95": 400, "p99": 500},
             "slo": {"ttft_p95_ms": 30000, "tpot_p95_ms": 150}, "survivability": "none"},
        ],
        "policy": {"hours_per_month": 730,
                   "time_blocks": [{"name": "day", "hours": list(range(24))}]},
    }
    yield "n1-single-odd", two_zone
    # the same with the stock binding hard: one node of each kind per zone
    d = copy.deepcopy(two_zone)
    for z in d["zones"]:
        for o in z["offers"]:
            o["on_demand"]["stock_gpus"] = o["gpus_per_node"]
    yield "n1-single-odd-binding", d
    # a zone that holds one node in all (zone loss must move everything to the others)
    d = copy.deepcopy(two_zone)
    d["zones"][2]["offers"] = [d["zones"][2]["offers"][0]]
    d["zones"][2]["offers"][0]["on_demand"]["stock_gpus"] = 0
    d["zones"][2]["offers"][0].pop("on_demand")
    yield "zone-one-node", d
    # the same pools on 1-GPU nodes
    d = with_node_sizes(two_zone, {"H100-SXM": 1, "L40S": 1})
    yield "n1-single-1gpu", d
    # 6-GPU nodes: TP4 + TP2 mixed on one node
    d = with_node_sizes(two_zone, {"H100-SXM": 6, "L40S": 6})
    yield "n1-6gpu", d
    # H100 stock for one TP2 replica per zone: the rest of chat70 on L40S (a pool of replicas
    # whose capacities differ several-fold, routed by weight); the H100 node's loss leaves L40S
    d = copy.deepcopy(two_zone)
    d["workloads"] = [d["workloads"][0]]
    for z in d["zones"]:
        z["offers"][0]["gpus_per_node"] = 2
        z["offers"][0]["reserved"]["stock_gpus"] = 2
        z["offers"][0]["on_demand"]["stock_gpus"] = 0
        z["offers"][1]["gpus_per_node"] = 4
        z["offers"][1]["on_demand"]["stock_gpus"] = 64
    yield "mixed-gpu-binding", d
    # every replica at its SLO-holding rate: target and failure utilization 1
    d = copy.deepcopy(two_zone)
    for w in d["workloads"]:
        w["target_utilization"] = 1.0
    yield "util-1", d
    # a long-prompt agent pool (Mooncake lengths) on 3-, 5- and 7-GPU nodes, N+1
    d = copy.deepcopy(two_zone)
    d["workloads"] = [{
        "name": "agent", "model": "Llama-3.1-70B", "precision": "fp8", "class": "interactive",
        "arrival": {"peak_rps": 1.5},
        "input_tokens": {"p50": 6909, "p95": 39550, "p99": 85400},
        "output_tokens": {"p50": 350, "p95": 698, "p99": 1119},
        "prefix_cache_hit_rate": 0.37,
        "slo": {"ttft_p95_ms": 6000, "tpot_p95_ms": 80}, "survivability": "zone_loss"}]
    for z in d["zones"]:
        z["offers"][0]["on_demand"]["stock_gpus"] = z["offers"][0]["gpus_per_node"] * 4
    yield "agent-odd", d
    # owned nodes of 3 GPUs held where the zone's offer sells 8-GPU nodes
    inv3: Doc = {
        "name": "inv3", "description": "owned 3-GPU nodes beside an 8-GPU offer",
        "zones": [{"id": zid, "region": "r1", "offers": [
            {"gpu": "H100-SXM", "gpus_per_node": 8, "price_source": "hand",
             "on_demand": {"price_per_gpu_hour": 4.0, "stock_gpus": 16}}]}
            for zid in ("za", "zb")],
        "inventory": [{"zone": "za", "gpu": "H100-SXM", "gpus_per_node": 3, "nodes": 3,
                       "purchase": "owned", "running_cost_per_node_month": 100}],
        "workloads": [two_zone["workloads"][0]],
        "policy": two_zone["policy"],
    }
    yield "inventory-3gpu-in-8gpu-zone", inv3
    # the same nodes in a zone that sells no H100 at all (the catalog's size is 8)
    d = copy.deepcopy(inv3)
    d["zones"].append({"id": "onprem", "region": "r2", "offers": [
        {"gpu": "L4", "gpus_per_node": 8, "price_source": "hand",
         "on_demand": {"price_per_gpu_hour": 1.0, "stock_gpus": 8}}]})
    d["inventory"][0]["zone"] = "onprem"
    yield "inventory-3gpu-no-offer", d
    # reserved 3-GPU nodes where the zone's reserved quote sells 8-GPU nodes: refused or right
    d = copy.deepcopy(inv3)
    d["zones"][0]["offers"][0]["reserved"] = {"price_per_gpu_hour": 2.4, "stock_gpus": 16}
    d["inventory"][0].update(purchase="reserved", ends="2027-12-31", price_per_gpu_hour=2.0)
    d["inventory"][0].pop("running_cost_per_node_month")
    yield "inventory-reserved-3gpu-in-8gpu-quote", d


@dataclass(frozen=True)
class TraceReplay:
    """A case replayed on a recorded trace instead of a Poisson one, at ``rate_scale`` with
    every failure at ``fail_minute`` of the replay. Two kinds per case: ``peak`` — the trace
    scaled so its busiest minute is the planned peak (as the plan's own replay scales a linked
    trace, what the plan claims), the failure a minute before that minute; ``walk`` — the
    trace's mean at the planned peak for its whole length, the failure half-way
    (docs/replay.md's walk-through; on a bursty trace its busiest minutes run above the
    planned peak, beyond the claim)."""

    kind: str
    path: Path
    workload: str
    rate_scale: float
    fail_minute: float


#: Shared traces (README: downloaded beside the clone) and what each is planned as: model,
#: precision, SLO [ms] — the demo's workload of the same kind.
TRACE_SPECS: dict[str, Doc] = {
    "AzureLLMInferenceTrace_conv.csv": {
        "model": "Llama-3.1-8B", "precision": "bf16", "ttft": 1000, "tpot": 50},
    "AzureLLMInferenceTrace_code.csv": {
        "model": "Llama-3.1-8B", "precision": "bf16", "ttft": 500, "tpot": 30},
    "mooncake_conversation_trace.jsonl": {
        "model": "Llama-3.1-70B", "precision": "fp8", "ttft": 6000, "tpot": 80},
    "mooncake_synthetic_trace.jsonl": {
        "model": "Llama-3.1-8B", "precision": "bf16", "ttft": 2000, "tpot": 50},
}


def trace_cases(traces_dir: Path, scales: list[int]
                ) -> Iterator[tuple[str, Doc, tuple[TraceReplay, ...]]]:
    """A buyer's walk-through on each shared trace: ``profile``'s block pasted under a name,
    model and SLO (zone loss, two AWS zones, H100 and L40S), planned; the trace replayed at its
    peak minute's rate (× scale) with a node or a zone lost half-way. Variants: the prefix-cache
    hit rate at 0 and 0.9 (the replay serves the rate the scenario states), the 8B model on
    Mooncake's long prompts (up to 128 k tokens against its 131,072 context), and an
    interactive workload beside a batch one on H100 alone."""
    for fname, spec in TRACE_SPECS.items():
        path = traces_dir / fname
        if not path.exists():
            continue
        trace = read_trace(path)
        prof = profile_trace(trace)
        fields = workload_fields(prof)
        base_rps = fields["arrival"]["peak_rps"]
        minutes = minute_rates_rps(trace)
        busiest = int(minutes.argmax())  # its index: the minute it starts at [min]
        span_s = float(trace.arrival_s[-1] - trace.arrival_s[0])
        stem = fname.split(".")[0].replace("AzureLLMInferenceTrace_", "azure-") \
            .replace("_trace", "").replace("_", "-")
        hits: list[float | None] = [None, 0.0, 0.9]
        for scale in scales:
            for hit in hits if scale == 1 else [None]:
                wl: Doc = {"name": "w", "model": spec["model"], "precision": spec["precision"],
                           "class": "interactive", "survivability": "zone_loss",
                           "slo": {"ttft_p95_ms": spec["ttft"], "tpot_p95_ms": spec["tpot"]},
                           **copy.deepcopy(fields)}
                wl["arrival"]["peak_rps"] = round(base_rps * scale, 3)
                if hit is not None:
                    wl["prefix_cache_hit_rate"] = hit
                doc: Doc = {
                    "name": f"trace-{stem}",
                    "price_tables": [{"path": "builtin:aws", "zones": ["use1-az1", "use1-az2"],
                                      "gpus": ["H100-SXM", "L40S"]}],
                    "workloads": [wl]}
                peak = wl["arrival"]["peak_rps"]
                walk_scale = peak / prof.mean_rps
                peak_scale = peak / float(minutes.max())
                replay = (
                    TraceReplay("peak", path, "w", peak_scale,
                                round(max(1.0, (busiest - 1) / peak_scale), 2)),
                    TraceReplay("walk", path, "w", walk_scale,
                                round(span_s / walk_scale / 2 / 60, 2)))
                tag = "" if hit is None else f"-hit{hit:g}"
                yield f"trace-{stem}-x{scale}{tag}", doc, replay
                if hit is None and scale == 1 and spec["model"] == "Llama-3.1-70B":
                    d8 = copy.deepcopy(doc)
                    d8["workloads"][0].update(model="Llama-3.1-8B", precision="bf16")
                    yield f"trace-{stem}-x1-8b", d8, replay
                if hit is None and scale == 1 and fname.endswith("conv.csv"):
                    mixed = copy.deepcopy(doc)
                    mixed["price_tables"][0]["gpus"] = ["H100-SXM"]
                    mixed["workloads"].append({
                        "name": "nightly", "model": spec["model"],
                        "precision": spec["precision"], "class": "batch",
                        "batch": {"daily_requests": 200000, "window_hours": [2, 3, 4, 5]},
                        "input_tokens": {"p50": 3000, "p95": 6500, "p99": 8000},
                        "output_tokens": {"p50": 250, "p95": 400, "p99": 500},
                        "slo": {"ttft_p95_ms": 30000, "tpot_p95_ms": 150},
                        "survivability": "none"})
                    mixed["policy"] = {"time_blocks": [
                        {"name": "night", "hours": [2, 3, 4, 5]},
                        {"name": "day", "hours": [h for h in range(24)
                                                 if h not in (2, 3, 4, 5)]}]}
                    yield f"trace-{stem}-x1-mixed-h100", mixed, replay


# --- one case ------------------------------------------------------------------------------

def _p95_after(sim: Doc, slo: str) -> tuple[float | None, int]:
    """simulate's verdict P95 of ``slo`` over the last group (after the failure, else all)."""
    verdict = next(v for v in sim["verdicts"] if v["slo"] == slo)
    group = verdict["groups"][-1]
    return group["p95_ms"], group["unanswered"]


def _replay(scen: Path, plan: Path, wl_name: str, rate_rps: float, fail: str | None,
            seed: int, work: Path, scenario: Any, slice_name: str | None = None,
            recorded: TraceReplay | None = None) -> Doc:
    """simulate of a Poisson trace at ``rate_rps`` (the workload's lengths), in ``slice_name``
    (default: simulate's, the peak slice), with ``fail`` (its minute in the spec); or of the
    ``recorded`` trace at its rate scale."""
    duration_s = min(MAX_DURATION_S, max(MIN_DURATION_S, MIN_REQUESTS / rate_rps))
    wl = scenario.workload(wl_name)
    trace_path = work / f"trace-{wl_name}-{rate_rps:.6g}-{seed}.csv"
    if recorded is not None:
        trace_path = recorded.path
    elif not trace_path.exists():
        tr = synthetic_trace(wl, duration_s, seed, rate_scale=rate_rps / workload_rate_rps(wl))
        with trace_path.open("w", encoding="utf-8") as f:
            f.write("arrival_s,input_tokens,output_tokens\n")
            for a, i, o in zip(tr.arrival_s, tr.input_tokens, tr.output_tokens, strict=True):
                f.write(f"{a:.6f},{i},{o}\n")
    args = [str(BIN), "simulate", str(scen), "--fleet", str(plan), "--trace", str(trace_path),
            "--workload", wl_name, "--json"]
    if fail:
        args += ["--fail", fail]
    if slice_name:
        args += ["--slice", slice_name]
    if recorded is not None:
        args += ["--rate-scale", f"{recorded.rate_scale:.6g}"]
    rc, out, err, wall = _run(args)
    rec: Doc = {"cmd": "simulate", "workload": wl_name, "fail": fail, "seed": seed, "rc": rc,
                "wall_s": round(wall, 2), "rate_rps": rate_rps, "slice_asked": slice_name}
    if rc in (0, 1) and out.strip().startswith("{"):
        sim = json.loads(out)
        ttft, un_t = _p95_after(sim, "ttft_p95_ms")
        tpot, _ = _p95_after(sim, "tpot_p95_ms")
        rec.update(slice=sim["slice"], replicas=len(sim["replicas"]),
                   planned_peak_rps=sim["planned_peak_rps"],
                   replayed_mean_rps=round(sim["replayed_mean_rps"], 3),
                   ttft_p95_ms=ttft, tpot_p95_ms=tpot, unanswered=un_t,
                   ttft_slo_ms=wl.slo.ttft_p95_ms, tpot_slo_ms=wl.slo.tpot_p95_ms,
                   rejected=sim["rejected"], rejected_too_long=sim["rejected_too_long"],
                   failed=sim["failed"], slo_held=sim["slo_held"])
        rec["holds_after"] = (ttft is not None and tpot is not None
                              and ttft <= wl.slo.ttft_p95_ms and tpot <= wl.slo.tpot_p95_ms)
        rec["close"] = (ttft is None or tpot is None
                        or ttft > (1 - CLOSE) * wl.slo.ttft_p95_ms
                        or tpot > (1 - CLOSE) * wl.slo.tpot_p95_ms)
    else:
        rec["error"] = (err or out)[-600:]
    return rec


def _loses_some(plan: Doc, row: Doc) -> bool:
    """Whether a check row's failure takes replicas of its workload in its slice."""
    kind, _, where = row["failure"].partition(":")
    if kind == "none":
        return True
    for a in plan["allocations"]:
        if a["workload"] != row["workload"] or a["replicas"] <= 0 \
                or a["slice"] not in (None, row["slice"]):
            continue
        if kind == "zone" and a["zone"] == where:
            return True
        if kind == "node" and f"{a['zone']}/{a['gpu']}/{a['purchase']}" == where:
            return True
    return False


def _tightest(plan: Doc, rows: list[Doc]) -> dict[tuple[str, str], Doc]:
    """Per (workload, required failure) of check's rows that loses some of its replicas: the
    slice with the smallest margin."""
    best: dict[tuple[str, str], Doc] = {}
    for row in rows:
        if not row["required"] or row["slice"] == "window" or row["demand_rps"] <= 0 \
                or not _loses_some(plan, row):
            continue
        key = (row["workload"], row["failure"])
        if key not in best or row["margin_pct"] < best[key]["margin_pct"]:
            best[key] = row
    return best


def _claims(plan: Doc, wl: Any, slice_name: str, minute: float = FAIL_MINUTE) -> list[str]:
    """The failures a workload claims to survive, as simulate names them, at ``minute``."""
    surv = str(wl.survivability)
    if surv not in ("n_plus_1", "zone_loss", "Survivability.n_plus_1",
                    "Survivability.zone_loss"):
        return []
    groups = [a for a in plan["allocations"]
              if a["workload"] == wl.name and a["replicas"] > 0
              and a["slice"] in (None, slice_name) and a["purchase"] != "spot"]
    pools = sorted({(a["zone"], a["gpu"]) for a in groups})
    fails = [f"node:{z}/{g}@{minute:g}" for z, g in pools]
    if surv.endswith("zone_loss"):
        fails += [f"zone:{z}@{minute:g}" for z in sorted({z for z, _ in pools})]
    return fails


def run_case(name: str, doc: Doc, out: Path, time_limit_s: float,
             recorded: tuple[TraceReplay, ...] = ()) -> list[Doc]:
    """Plan, check and replay one case; one record per command. With ``recorded``, its
    workload is replayed on that trace (one run each: a recorded trace has no other seed)."""
    work = out / name
    work.mkdir(parents=True, exist_ok=True)
    scen = work / "scenario.yaml"
    scen.write_text(yaml.safe_dump(doc, sort_keys=False, width=100), encoding="utf-8")
    plan_dir = work / "plan"
    rc, stdout, err, wall = _run([str(BIN), "plan", str(scen), "--out", str(plan_dir),
                                  "--time-limit", str(time_limit_s), "--no-replay", "--quiet",
                                  "--json"])
    records: list[Doc] = []
    rec: Doc = {"case": name, "cmd": "plan", "rc": rc, "wall_s": round(wall, 2)}
    plan_path = plan_dir / "plan.json"
    plan: Doc | None = None
    if plan_path.exists():
        plan = json.loads(plan_path.read_text(encoding="utf-8"))
        rec.update(status=plan["status"], cost=plan["cost"]["per_month"],
                   verified=plan.get("verified"), bound=plan["solver"].get("bound"),
                   gpus=sum(n["gpus"] for n in plan["nodes"]),
                   node_sizes=sorted({n["gpus"] // max(1, n["nodes"]) for n in plan["nodes"]
                                      if n["nodes"]}),
                   tps=sorted({a["tp"] for a in plan["allocations"]}),
                   bound_above_cost=(plan["solver"].get("bound") or 0)
                   > plan["cost"]["per_month"] * (1 + 1e-6))
    else:
        rec["error"] = (err or stdout)[-800:]
    records.append(rec)
    if rc != 0 or plan is None:
        return records
    rc, stdout, err, wall = _run([str(BIN), "check", str(scen), "--fleet", str(plan_path),
                                  "--json"])
    crec: Doc = {"case": name, "cmd": "check", "rc": rc, "wall_s": round(wall, 2)}
    if stdout.strip().startswith("{"):
        chk = json.loads(stdout)
        crec.update(ok=chk["ok"], broken=chk["broken"], verification=chk["verification"])
    else:
        crec["error"] = (err or stdout)[-800:]
    records.append(crec)
    scenario = load_scenario(scen)
    tight = _tightest(plan, chk["rows"]) if stdout.strip().startswith("{") else {}
    for wl in scenario.workloads:
        if wl.batch is not None:
            continue
        rate_rps = workload_rate_rps(wl)
        if recorded and wl.name == recorded[0].workload:
            for rp in recorded:
                runs = [_replay(scen, plan_path, wl.name, rate_rps, None, SEEDS[0], work,
                                scenario, recorded=rp)]
                if "slice" in runs[0]:
                    runs += [_replay(scen, plan_path, wl.name, rate_rps, f, SEEDS[0], work,
                                     scenario, recorded=rp)
                             for f in _claims(plan, wl, runs[0]["slice"], rp.fail_minute)]
                for r in runs:
                    r.update(case=name, trace=rp.path.name, replay_kind=rp.kind,
                             rate_scale=round(rp.rate_scale, 4),
                             miss_all_seeds=not r.get("holds_after"))
                records += runs
            continue
        if not any(a["workload"] == wl.name and a["replicas"] > 0
                   for a in plan["allocations"]):
            records.append({"case": name, "cmd": "simulate", "workload": wl.name,
                            "note": "no replica planned", "rate_rps": rate_rps})
            continue
        intact = _replay(scen, plan_path, wl.name, rate_rps, None, SEEDS[0], work, scenario)
        runs = [intact]
        if "slice" in intact:
            runs += [_replay(scen, plan_path, wl.name, rate_rps, f, SEEDS[0], work, scenario)
                     for f in _claims(plan, wl, intact["slice"])]
        # the tightest slice of each required failure (check's smallest margin), at the
        # demand check holds it against, when it is not the peak slice replayed above
        for (w, failure), row in sorted(tight.items()):
            if w != wl.name or row["slice"] == intact.get("slice"):
                continue
            fail = None if failure == "none" else f"{failure}@{FAIL_MINUTE}"
            r = _replay(scen, plan_path, wl.name, row["demand_rps"], fail, SEEDS[0], work,
                        scenario, row["slice"])
            r["tightest_margin_pct"] = round(row["margin_pct"], 1)
            runs.append(r)
        for r in runs:
            r["case"] = name
            if r.get("close") or ("error" in r and r["rc"] != 2):
                more = [_replay(scen, plan_path, wl.name, r["rate_rps"], r["fail"], s, work,
                                scenario, r.get("slice_asked")) for s in SEEDS[1:]]
                r["seeds"] = [{k: m.get(k) for k in ("seed", "ttft_p95_ms", "tpot_p95_ms",
                                                     "holds_after", "error")} for m in more]
                r["miss_all_seeds"] = (not r.get("holds_after")
                                       and all(not m.get("holds_after") for m in more))
            records.append(r)
    return records


def summarize(paths: list[Path]) -> list[str]:
    """Counts over results files: plans by exit code and status, checks, replays and the
    closest replays to their SLO (P95 ÷ SLO, the worse of TTFT and per-token)."""
    recs = [json.loads(line) for p in paths for line in p.read_text("utf-8").splitlines()
            if line.strip()]
    plans = [r for r in recs if r["cmd"] == "plan"]
    by: dict[str, int] = {}
    for r in plans:
        key = f"exit {r['rc']} {r.get('status') or 'refused'}"
        by[key] = by.get(key, 0) + 1
    checks = [r for r in recs if r["cmd"] == "check"]
    replayed = [r for r in recs if r["cmd"] == "simulate" and "holds_after" in r]
    # walk-through replays of a recorded trace run above the planned peak: counted apart
    sims = [r for r in replayed if r.get("replay_kind") != "walk"]
    walks = [r for r in replayed if r.get("replay_kind") == "walk"]
    seeds_run = sum(1 + len(r.get("seeds", [])) for r in sims)
    lines = [
        f"plans: {len(plans)} ({', '.join(f'{k}: {n}' for k, n in sorted(by.items()))}); "
        f"verified false: {sum(r.get('verified') is False for r in plans)}; "
        f"bound above cost with a fleet: "
        f"{sum(bool(r.get('bound_above_cost')) and bool(r.get('gpus')) for r in plans)}",
        f"checks: {len(checks)}, exit 0 and no verifier finding: "
        f"{sum(r['rc'] == 0 and r.get('ok') and not r.get('verification') for r in checks)}",
        f"replays: {len(sims)} ({seeds_run} with the extra seeds), "
        f"intact {sum(r['fail'] is None for r in sims)}, after a failure "
        f"{sum(r['fail'] is not None for r in sims)}, in check's tightest slice "
        f"{sum('tightest_margin_pct' in r for r in sims)}; "
        f"held {sum(r['holds_after'] for r in sims)}, "
        f"missed at every seed {sum(bool(r.get('miss_all_seeds')) for r in sims)}",
    ]
    if walks:
        lines.append(f"walk-through replays (trace mean at the peak, above the claim): "
                     f"{len(walks)}, held {sum(r['holds_after'] for r in walks)}")

    def ratio(r: Doc) -> float:
        return max((r["ttft_p95_ms"] or float("inf")) / r["ttft_slo_ms"],
                   (r["tpot_p95_ms"] or float("inf")) / r["tpot_slo_ms"])
    lines.append("closest replays (P95 ÷ SLO, worse of the two):")
    closest = sorted(sims, key=ratio, reverse=True)[:5]
    for r in closest + sorted(walks, key=ratio, reverse=True)[:3]:
        lines.append(f"  {ratio(r):.3f} {r['case']} {r.get('replay_kind', '')} {r['workload']} "
                     f"slice {r.get('slice')} "
                     f"{r['rate_rps']:.3g} req/s fail {r['fail']}: TTFT {r['ttft_p95_ms']:.0f}"
                     f"/{r['ttft_slo_ms']:.0f}, TPOT {r['tpot_p95_ms']:.1f}/{r['tpot_slo_ms']:.0f}"
                     f" ms")
    return lines


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "--summarize":
        print("\n".join(summarize([Path(x) for x in argv[1:]])))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--seeds", default="0-3", help="generated seeds, e.g. 0-5 or 1,4")
    p.add_argument("--scales", default="1,3")
    p.add_argument("--sizes", default="small", help="generated sizes, e.g. small,medium")
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--only", default=None,
                   help="run the cases whose name contains one of these (comma-separated)")
    p.add_argument("--no-generated", action="store_true")
    p.add_argument("--no-hand", action="store_true")
    p.add_argument("--traces", type=Path, default=None,
                   help="also the recorded-trace cases of the traces in this directory "
                        "(e.g. ../shared/data/traces)")
    p.add_argument("--trace-scales", default="1", help="peak multiples of the trace cases")
    p.add_argument("--trace-kinds", default="peak,walk",
                   help="which replays of a recorded trace: peak, walk or both")
    a = p.parse_args(argv)
    if "-" in a.seeds:
        lo, hi = (int(x) for x in a.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in a.seeds.split(",")]
    scales = [int(x) for x in a.scales.split(",")]
    a.out.mkdir(parents=True, exist_ok=True)
    cases: list[tuple[str, Doc]] = []
    if not a.no_hand:
        cases += list(hand_cases())
    if not a.no_generated:
        cases += list(generated_cases(a.sizes.split(","), seeds, scales))
    replays: dict[str, tuple[TraceReplay, ...]] = {}
    if a.traces is not None:
        # every trace's plain case first, then the variants (a run cut short has each trace)
        tcases = sorted(trace_cases(a.traces, [int(x) for x in a.trace_scales.split(",")]),
                        key=lambda c: (c[0].count("-") - c[0].startswith("trace-azure"),
                                       "hit" in c[0]))
        kinds = a.trace_kinds.split(",")
        for name, doc, replay in tcases:
            cases.append((name, doc))
            replays[name] = tuple(r for r in replay if r.kind in kinds)
    results = a.out / "results.jsonl"
    with results.open("a", encoding="utf-8") as f:
        for name, doc in cases:
            if a.only and not any(part in name for part in a.only.split(",")):
                continue
            records = run_case(name, doc, a.out, a.time_limit, replays.get(name, ()))
            # a budget at the plan's own cost: the same fleet must still be found or refused
            first = records[0]
            if first.get("rc") == 0 and first.get("cost") and "-nodes" not in name \
                    and name.split("-")[0] in ("small", "medium", "large"):
                records += run_case(f"{name}-budget", with_budget(doc, first["cost"]), a.out,
                                    a.time_limit)
            for r in records:
                f.write(json.dumps(r) + "\n")
                f.flush()
                print(_line(r), flush=True)


def _line(r: Doc) -> str:
    if r["cmd"] == "plan":
        return (f"{r['case']}: plan rc={r['rc']} {r.get('status')} cost={r.get('cost')} "
                f"bound={r.get('bound')} verified={r.get('verified')} "
                f"nodes={r.get('node_sizes')} tps={r.get('tps')} {r['wall_s']}s "
                f"{r.get('error', '')[-200:]}")
    if r["cmd"] == "check":
        return (f"{r['case']}: check rc={r['rc']} ok={r.get('ok')} broken={r.get('broken')} "
                f"verification={r.get('verification')} {r.get('error', '')[-200:]}")
    if "note" in r:
        return f"{r['case']}: simulate {r['workload']}: {r['note']}"
    return (f"{r['case']}: simulate {r.get('replay_kind', '')} {r['workload']} "
            f"slice={r.get('slice')} "
            f"rate={r.get('rate_rps', 0):.3g} fail={r['fail']} rc={r['rc']} "
            f"TTFT {r.get('ttft_p95_ms')}/{r.get('ttft_slo_ms')} "
            f"TPOT {r.get('tpot_p95_ms')}/{r.get('tpot_slo_ms')} "
            f"held={r.get('holds_after')} seeds={r.get('seeds')} "
            f"{r.get('error', '')[-300:]}")


if __name__ == "__main__":
    main()
