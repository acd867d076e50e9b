"""Load-test result files shaped exactly as each tool writes them, from a few figures per load.

Every builder writes every key the tool's own writer puts in the file (names, nesting, units and
number formats as in the tool's source), filling the figures a test does not set with consistent
values. Versions:

- vLLM ``benchmarks/benchmark_serving.py --save-result`` of vLLM 0.6-0.8 (:func:`vllm_old`):
  per-request arrays always saved, P99 only, no ``failed``;
- ``vllm bench serve --save-result --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles
  95,99`` of vLLM 0.9 and later (:func:`vllm_new`), its default percentiles (P99 only, no e2el:
  ``percentiles=(99,)``), ``--append-result`` (JSON lines) and ``vllm bench sweep serve``'s
  ``summary.json`` (:func:`vllm_sweep_summary`);
- GuideLLM ``benchmarks.json`` of GuideLLM 0.2-0.3 (:func:`guidellm_02`) and 0.4 and later
  (:func:`guidellm_04`);
- GenAI-Perf ``profile_export_genai_perf.json`` (:func:`genai_perf`), AIPerf
  ``profile_export_aiperf.json`` of AIPerf 0.1 (metrics under ``records``, :func:`aiperf_01`) and
  0.2 and later (:func:`aiperf`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
START_EPOCH_S = 1_790_000_000.0  # 2026-09-21 (UTC)
DATE = "20260921-101500"


@dataclass(frozen=True)
class Load:
    """One tested load: what it offered and what the replica served."""

    load: float
    """Offered rate [1/s] or concurrency, as the builder's run kind says; ``inf`` unbounded."""
    served_rps: float
    ttft_p95_ms: float
    tpot_p95_ms: float
    e2e_mean_ms: float = 5000.0
    failed: int = 0
    completed: int = 500
    peak_in_flight: int = 40


def _stats(p95: float) -> dict[str, float]:
    """Mean, median, std and percentiles consistent with a P95 (median 60 %, P99 125 %)."""
    return {"mean": p95 * 0.62, "median": p95 * 0.6, "std": p95 * 0.2, "p95": p95,
            "p99": p95 * 1.25}


def _vllm_common(x: Load, rate: float | str, max_concurrency: int | None) -> dict[str, Any]:
    return {"date": DATE, "backend": "vllm", "model_id": MODEL, "tokenizer_id": MODEL,
            "num_prompts": x.completed + x.failed, "request_rate": rate, "burstiness": 1.0,
            "max_concurrency": max_concurrency, "duration": x.completed / x.served_rps,
            "completed": x.completed, "total_input_tokens": x.completed * 1000,
            "total_output_tokens": x.completed * 200, "request_throughput": x.served_rps,
            "output_throughput": x.served_rps * 200,
            "total_token_throughput": x.served_rps * 1200}


def _vllm_metrics(x: Load, percentiles: tuple[int, ...], metrics: tuple[str, ...]
                  ) -> dict[str, float]:
    out: dict[str, float] = {}
    p95 = {"ttft": x.ttft_p95_ms, "tpot": x.tpot_p95_ms, "itl": x.tpot_p95_ms * 0.95,
           "e2el": x.e2e_mean_ms * 1.5}
    for metric in metrics:
        s = _stats(p95[metric])
        if metric == "e2el":
            s["mean"] = x.e2e_mean_ms
        out[f"mean_{metric}_ms"] = s["mean"]
        out[f"median_{metric}_ms"] = s["median"]
        out[f"std_{metric}_ms"] = s["std"]
        for p in percentiles:
            out[f"p{p}_{metric}_ms"] = s[f"p{p}"]
    return out


def vllm_new(x: Load, *, kind: str = "rate", percentiles: tuple[int, ...] = (95, 99),
             e2el: bool = True) -> dict[str, Any]:
    """``vllm bench serve --save-result`` (vLLM >= 0.9), rate or concurrency run."""
    rate: float | str = x.load if kind == "rate" else "inf"
    cap = int(x.load) if kind == "concurrency" else None
    doc = _vllm_common(x, rate, cap)
    doc = {"date": DATE, "endpoint_type": "vllm", "label": None, **doc}
    doc.update({"failed": x.failed, "request_goodput": None,
                "max_output_tokens_per_s": x.served_rps * 260,
                "max_concurrent_requests": x.peak_in_flight})
    doc.update(_vllm_metrics(x, percentiles, ("ttft", "tpot", "itl", "e2el") if e2el
                             else ("ttft", "tpot", "itl")))
    return doc


def vllm_old(x: Load, samples: int = 40) -> dict[str, Any]:
    """``benchmark_serving.py --save-result`` of vLLM 0.6-0.8: arrays always, P99 only.

    The per-request samples are spread so that numpy's P95 of TTFT and of the time per output
    token after the first equal the load's figures (as ``x.ttft_p95_ms``, ``x.tpot_p95_ms``).
    """
    doc = _vllm_common(x, x.load, None)
    doc["best_of"] = 1
    n_out = 200
    ttft_ms = _spread(x.ttft_p95_ms, samples)
    tpot_ms = _spread(x.tpot_p95_ms, samples)
    doc.update({
        "input_lens": [1000] * samples, "output_lens": [n_out] * samples,
        "ttfts": [t / 1000 for t in ttft_ms],
        "itls": [[tp / 1000] * (n_out - 1) for tp in tpot_ms],
        "generated_texts": ["…"] * samples, "errors": [""] * samples})
    doc.update(_vllm_metrics(x, (99,), ("ttft", "tpot", "itl")))
    return doc


def _spread(p95: float, n: int) -> list[float]:
    """n values whose numpy P95 (linear) is ``p95``: a ramp scaled to put P95 there."""
    ramp = [(i + 1) / n for i in range(n)]
    rank = 0.95 * (n - 1)
    lo = math.floor(rank)
    at = ramp[lo] + (rank - lo) * (ramp[lo + 1] - ramp[lo])
    return [r * p95 / at for r in ramp]


def vllm_sweep_summary(loads: list[Load]) -> list[dict[str, Any]]:
    """``vllm bench sweep serve``'s summary.json: the runs with run_number and the swept key."""
    return [{**vllm_new(x), "run_number": 0, "request_rate": x.load} for x in loads]


def _dist(mean: float, p95: float, maximum: float | None = None) -> dict[str, Any]:
    percentiles = {k: p95 * f for k, f in (("p001", 0.1), ("p01", 0.2), ("p05", 0.3),
                                           ("p10", 0.4), ("p25", 0.5), ("p50", 0.6),
                                           ("p75", 0.8), ("p90", 0.9), ("p95", 1.0),
                                           ("p99", 1.2), ("p999", 1.3))}
    return {"mean": mean, "median": p95 * 0.6, "mode": p95 * 0.55, "variance": (p95 / 5) ** 2,
            "std_dev": p95 / 5, "min": p95 * 0.05, "max": maximum or p95 * 1.4, "count": 500,
            "total_sum": mean * 500, "percentiles": percentiles}


def _status(successful: dict[str, Any], errored: int) -> dict[str, Any]:
    empty = _dist(0.0, 0.0, 0.0) | {"count": errored}
    return {"successful": successful, "errored": empty, "incomplete": empty,
            "total": successful}


def _guidellm_metrics(x: Load, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests_per_second": _status(_dist(x.served_rps, x.served_rps * 1.4), x.failed),
        "request_concurrency": _status(_dist(x.served_rps * x.e2e_mean_ms / 1000,
                                             x.peak_in_flight, x.peak_in_flight), x.failed),
        "request_latency": _status(_dist(x.e2e_mean_ms / 1000, x.e2e_mean_ms / 800), x.failed),
        "prompt_token_count": _status(_dist(1000, 1000), x.failed),
        "output_token_count": _status(_dist(200, 200), x.failed),
        "time_to_first_token_ms": _status(_dist(x.ttft_p95_ms * 0.6, x.ttft_p95_ms), x.failed),
        "time_per_output_token_ms": _status(_dist(x.tpot_p95_ms, x.tpot_p95_ms * 1.3),
                                            x.failed),
        "inter_token_latency_ms": _status(_dist(x.tpot_p95_ms * 0.7, x.tpot_p95_ms), x.failed),
        "output_tokens_per_second": _status(_dist(200, 300), x.failed),
        "tokens_per_second": _status(_dist(1200, 1800), x.failed),
        **extra,
    }


def _strategy(x: Load, kind: str) -> dict[str, Any]:
    if kind == "rate":
        return {"type_": "constant", "rate": x.load, "initial_burst": True}
    if kind == "concurrency":
        return {"type_": "concurrent", "streams": int(x.load)}
    return {"type_": "throughput", "max_concurrency": None}


def guidellm_02(loads: list[Load], kind: str = "rate") -> dict[str, Any]:
    """GuideLLM 0.2-0.3 ``benchmarks.json`` (a sweep: one benchmark per load): counts in the
    benchmark's ``request_totals`` and ``run_stats.requests_made`` (``GenerativeBenchmark`` and
    ``BenchmarkRunStats`` of guidellm v0.2.0-v0.3.1, ``src/guidellm/benchmark/benchmark.py``)."""
    benchmarks = []
    for i, x in enumerate(loads):
        start = START_EPOCH_S + 120 * i
        made = {"successful": x.completed, "errored": x.failed, "incomplete": 0,
                "total": x.completed + x.failed}
        benchmarks.append({
            "type_": "generative_benchmark", "id_": f"b{i}", "run_id": "run-1",
            "args": {"profile": {"type_": "sweep", "sweep_size": len(loads)},
                     "strategy_index": i, "strategy": _strategy(x, kind), "max_number": None,
                     "max_duration": 60.0, "warmup_number": None, "warmup_duration": None,
                     "cooldown_number": None, "cooldown_duration": None},
            "run_stats": {"start_time": start, "end_time": start + 60,
                          "requests_made": made, "queued_time_avg": 0.01,
                          "scheduled_time_delay_avg": 0.0, "scheduled_time_sleep_avg": 0.0,
                          "worker_start_delay_avg": 0.0, "worker_time_avg": 1.0,
                          "worker_start_time_targeted_delay_avg": 0.0,
                          "request_start_time_delay_avg": 0.0,
                          "request_start_time_targeted_delay_avg": 0.0,
                          "request_time_delay_avg": 0.0, "request_time_avg": 1.0},
            "worker": {"type_": "generative_requests_worker", "backend_type": "openai_http",
                       "backend_target": "http://localhost:8000", "backend_model": MODEL,
                       "backend_info": {}},
            "request_loader": {"type_": "generative_request_loader", "data": "prompt_tokens=1000",
                               "processor": MODEL},
            "extras": {}, "start_time": start, "end_time": start + 60, "duration": 60,
            "metrics": _guidellm_metrics(x, {}),
            "request_totals": made, "request_samples": None,
            "requests": {"successful": [], "incomplete": [], "errored": [], "total": None},
        })
    return {"benchmarks": benchmarks}


def guidellm_04(loads: list[Load], kind: str = "rate") -> dict[str, Any]:
    """GuideLLM 0.4 and later ``benchmarks.json``: report args, benchmarks with config."""
    benchmarks = []
    for i, x in enumerate(loads):
        start = START_EPOCH_S + 120 * i
        made = {"successful": x.completed, "incomplete": 0, "errored": x.failed,
                "total": x.completed + x.failed}
        benchmarks.append({
            "type_": "generative_benchmark",
            "config": {"id_": f"c{i}", "run_id": "run-1", "run_index": i,
                       "strategy": _strategy(x, kind), "constraints": {},
                       "sample_requests": 20, "warmup": {"percent": None, "value": None,
                                                         "mode": "prefer_duration"},
                       "cooldown": {"percent": None, "value": None, "mode": "prefer_duration"},
                       "prefer_response_metrics": True,
                       "profile": {"type_": "sweep", "sweep_size": len(loads)},
                       "requests": {"data": ["prompt_tokens=1000,output_tokens=200"]},
                       "backend": {"type_": "openai_http", "target": "http://localhost:8000",
                                   "model": MODEL},
                       "environment": {}},
            "scheduler_state": {"node_id": 0, "num_processes": 1, "start_time": start},
            "scheduler_metrics": {"start_time": start, "request_start_time": start,
                                  "measure_start_time": start, "measure_end_time": start + 60,
                                  "request_end_time": start + 60, "end_time": start + 61,
                                  "requests_made": made, "queued_time_avg": 0.01,
                                  "resolve_start_delay_avg": 0.0,
                                  "resolve_targeted_start_delay_avg": 0.0,
                                  "request_start_delay_avg": 0.0,
                                  "request_targeted_start_delay_avg": 0.0,
                                  "request_time_avg": 1.0, "resolve_end_delay_avg": 0.0,
                                  "resolve_time_avg": 1.0, "finalized_delay_avg": 0.0,
                                  "processed_delay_avg": 0.0},
            "metrics": _guidellm_metrics(x, {"request_totals": made}),
            "requests": {"successful": [], "incomplete": [], "errored": [], "total": None},
            "start_time": start, "end_time": start + 60, "duration": 60.0,
            "warmup_duration": 0.0, "cooldown_duration": 0.0,
        })
    return {"args": {"target": "http://localhost:8000", "model": MODEL, "backend": "openai_http",
                     "profile": "sweep", "data": ["prompt_tokens=1000,output_tokens=200"]},
            "benchmarks": benchmarks}


def _json_metric(unit: str, avg: float, p95: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"unit": unit, "avg": avg}
    if p95 is not None:
        out |= {"p1": p95 * 0.2, "p5": p95 * 0.3, "p10": p95 * 0.4, "p25": p95 * 0.5,
                "p50": p95 * 0.6, "p75": p95 * 0.8, "p90": p95 * 0.9, "p95": p95,
                "p99": p95 * 1.2, "min": p95 * 0.1, "max": p95 * 1.4, "std": p95 / 5}
    return out


def _perf_metrics(x: Load) -> dict[str, Any]:
    return {
        "request_throughput": _json_metric("requests/sec", x.served_rps),
        "request_latency": _json_metric("ms", x.e2e_mean_ms, x.e2e_mean_ms * 1.5),
        "request_count": _json_metric("requests", x.completed),
        "time_to_first_token": _json_metric("ms", x.ttft_p95_ms * 0.6, x.ttft_p95_ms),
        "time_to_second_token": _json_metric("ms", x.tpot_p95_ms, x.tpot_p95_ms * 1.2),
        "inter_token_latency": _json_metric("ms", x.tpot_p95_ms * 0.7, x.tpot_p95_ms),
        "output_token_throughput": _json_metric("tokens/sec", x.served_rps * 200),
        "output_token_throughput_per_user": _json_metric("tokens/sec/user", 30, 40),
        "output_sequence_length": _json_metric("tokens", 200, 200),
        "input_sequence_length": _json_metric("tokens", 1000, 1000),
    }


def genai_perf(x: Load, kind: str = "concurrency") -> dict[str, Any]:
    """GenAI-Perf ``profile_export_genai_perf.json``: metrics, then the arguments."""
    args = {"model": [MODEL], "backend": "tensorrtllm", "endpoint_type": "chat",
            "service_kind": "openai", "streaming": True, "url": "localhost:8000",
            "concurrency": int(x.load) if kind == "concurrency" else None,
            "request_rate": x.load if kind == "rate" else None,
            "synthetic_input_tokens_mean": 1000, "output_tokens_mean": 200,
            "measurement_interval": 10000, "profile_export_file": "profile_export.json",
            "artifact_dir": "artifacts/run", "extra_inputs": {}}
    return {**_perf_metrics(x), "input_config": args}


def _aiperf_config(x: Load, kind: str) -> dict[str, Any]:
    loadgen: dict[str, Any] = {"request_count": x.completed}
    if kind == "concurrency":
        loadgen |= {"concurrency": int(x.load), "request_rate_mode": "concurrency_burst"}
    else:
        loadgen |= {"request_rate": x.load, "request_rate_mode": "poisson"}
    return {"endpoint": {"model_names": [MODEL], "type": "chat", "streaming": True,
                         "url": "localhost:8000"},
            "input": {"random_seed": 0, "prompt": {"output_tokens": {"mean": 200}}},
            "loadgen": loadgen, "cli_command": "aiperf profile -m ..."}


def aiperf(x: Load, kind: str = "concurrency") -> dict[str, Any]:
    """AIPerf 0.2 and later ``profile_export_aiperf.json``: metrics at the top level."""
    return {"schema_version": "1.3", "aiperf_version": "0.5.0", **_perf_metrics(x),
            "benchmark_duration": _json_metric("sec", x.completed / x.served_rps),
            "error_request_count": (_json_metric("requests", x.failed) if x.failed else None),
            "was_cancelled": False, "error_summary": [],
            "start_time": "2026-09-21T10:15:00.000000", "end_time": "2026-09-21T10:25:00.000000",
            "input_config": _aiperf_config(x, kind)}


#: Tags AIPerf 0.1 gave the metrics later releases name in full (its ``TTFTMetric.tag =
#: "ttft"``, ``TTSTMetric.tag = "ttst"``; ai-dynamo/aiperf ``aiperf/metrics/types/``, and its
#: ``examples/artifacts/run1/profile_export_aiperf.json``; ``MetricTag.ISL = "isl"``,
#: ``OSL = "osl"`` in ``aiperf/common/enums/metric_enums.py``).
AIPERF_01_TAGS = {"time_to_first_token": "ttft", "time_to_second_token": "ttst",
                  "input_sequence_length": "isl", "output_sequence_length": "osl"}


def aiperf_01(x: Load, kind: str = "concurrency") -> dict[str, Any]:
    """AIPerf 0.1 ``profile_export_aiperf.json``: the metrics under ``records``, by 0.1's tags."""
    records = {AIPERF_01_TAGS.get(name, name): {"tag": AIPERF_01_TAGS.get(name, name),
                                                "header": name.replace("_", " ").title(), **m,
                                                "count": 500}
               for name, m in _perf_metrics(x).items()}
    errors = ([{"error_details": {"code": 500, "type": "InternalServerError",
                                  "message": "Server encountered an internal error"},
                "count": x.failed}] if x.failed else [])
    return {"records": records, "input_config": _aiperf_config(x, kind), "was_cancelled": False,
            "error_summary": errors, "start_time": "2026-09-21T10:15:00.000000",
            "end_time": "2026-09-21T10:25:00.000000"}


def write_json(path: Path, doc: Any) -> Path:
    """The document as the tools write it (json.dump, indent as vLLM's sweep writes)."""
    path.write_text(json.dumps(doc, indent=4), encoding="utf-8")
    return path


def write_json_lines(path: Path, docs: list[Any]) -> Path:
    """``--append-result``: one JSON object per line."""
    path.write_text("\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    return path
