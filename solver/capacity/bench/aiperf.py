"""AIPerf and GenAI-Perf profile exports: one point per file (one load per run).

Layouts read, by their keys:

- **GenAI-Perf** ``profile_export_genai_perf.json``: each metric at the top level as
  ``{"unit", "avg", "p25" … "p99", "min", "max", "std"}``, and ``input_config`` (the command's
  arguments: ``model`` (a list), ``concurrency``, ``request_rate``);
- **AIPerf 0.1** ``profile_export_aiperf.json``: the metrics under ``records`` (each with
  ``tag``, ``header``, ``unit`` and the statistics), ``input_config`` (``endpoint.model_names``,
  ``loadgen.concurrency``/``request_rate``), ``error_summary``, ``start_time`` (ISO 8601);
- **AIPerf 0.2 and later**: the metrics at the top level as GenAI-Perf writes them, with
  ``input_config`` as AIPerf's, ``start_time``, ``error_request_count`` and, in newer releases,
  ``schema_version`` and ``aiperf_version``.

Metrics read: ``request_throughput`` (requests/sec), ``time_to_first_token`` (AIPerf 0.1's tag:
``ttft``) and ``inter_token_latency`` P95 (both tools' inter-token latency is (request latency −
TTFT) ÷ (output tokens − 1): the SLO's per-token figure; P99 as an upper bound where P95 is
absent),
``request_latency`` mean (and its P50 and P95, and the P50s of TTFT and inter-token latency, kept
with the point), ``request_count``, ``error_request_count``, ``input_sequence_length``
and ``output_sequence_length`` (AIPerf 0.1's tags: ``isl``, ``osl``; mean, P50, P95 [tokens]).
Times are converted from their ``unit`` (``ns``, ``us``, ``ms``, ``s``/``sec``). Neither tool
records the serving engine; GenAI-Perf records no date.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from models.errors import InputError, Problem
from solver.capacity.bench.points import BenchPoint, Lengths, LoadKind, PercentileBasis, number

TOOL_GENAI = "GenAI-Perf profile_export_genai_perf.json"
TOOL_AIPERF_01 = "AIPerf profile_export_aiperf.json (AIPerf 0.1, metrics under records)"
TOOL_AIPERF = "AIPerf profile_export_aiperf.json (AIPerf 0.2 and later)"
#: Milliseconds per unit of time as the tools name them.
MS_PER_UNIT = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0, "sec": 1000.0}
#: The time to first token by the name each release writes: GenAI-Perf and AIPerf 0.2 and later
#: ``time_to_first_token``, AIPerf 0.1 its tag ``ttft`` (aiperf/metrics/types/ttft_metric.py of
#: ai-dynamo/aiperf 0.1, and the profile export in its examples/artifacts/run1).
TTFT_NAMES = ("time_to_first_token", "ttft")
#: The input and output sequence lengths [tokens] by the names each release writes: AIPerf 0.1's
#: tags are ``isl`` and ``osl`` (its ``MetricTag.ISL``/``OSL``, aiperf/common/enums/
#: metric_enums.py of 0.1), later releases and GenAI-Perf write them in full.
ISL_NAMES = ("input_sequence_length", "isl")
OSL_NAMES = ("output_sequence_length", "osl")


def _metrics(doc: Any) -> Mapping[str, Any] | None:
    if not isinstance(doc, dict):
        return None
    records = doc.get("records")
    holder = records if isinstance(records, dict) else doc
    throughput = holder.get("request_throughput")
    return holder if isinstance(throughput, dict) and "avg" in throughput else None


def is_perf_export(doc: Any) -> bool:
    """An AIPerf or GenAI-Perf profile export: metrics as ``{"unit", "avg", …}`` objects."""
    return _metrics(doc) is not None


def _tool(doc: Mapping[str, Any]) -> str:
    config = doc.get("input_config")
    if isinstance(doc.get("records"), dict):
        return TOOL_AIPERF_01
    if "aiperf_version" in doc or "schema_version" in doc or (
            isinstance(config, dict) and isinstance(config.get("endpoint"), dict)):
        return TOOL_AIPERF
    return TOOL_GENAI


def _time_ms(metrics: Mapping[str, Any], name: str, stat: str, file: str) -> float | None:
    metric = metrics.get(name)
    if not isinstance(metric, dict) or stat not in metric:
        return None
    unit = str(metric.get("unit", "ms")).strip().lower()
    if unit not in MS_PER_UNIT:
        raise InputError([Problem(file, f"{name}.unit", f"unknown time unit `{unit}`",
                                  "give the export as the tool wrote it")])
    value = number(metric, stat, file, name)
    return None if value is None else value * MS_PER_UNIT[unit]


def _first(config: Any, *paths: str) -> Any:
    for path in paths:
        node = config
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            node = node[0] if node else None
        if node is not None:
            return node
    return None


def _count(metrics: Mapping[str, Any], name: str, file: str) -> int | None:
    metric = metrics.get(name)
    if not isinstance(metric, dict):
        return None
    return int(number(metric, "avg", file, name) or 0)


def perf_export_point(doc: Mapping[str, Any], file: str) -> BenchPoint:
    """The one tested load of an AIPerf or GenAI-Perf export (fields in the module docstring)."""
    metrics = _metrics(doc)
    assert metrics is not None
    tool = _tool(doc)
    throughput = number(metrics["request_throughput"], "avg", file, "request_throughput") or 0.0
    ttft_name = next((n for n in TTFT_NAMES if n in metrics), TTFT_NAMES[0])
    ttft = _time_ms(metrics, ttft_name, "p95", file)
    itl = _time_ms(metrics, "inter_token_latency", "p95", file)
    basis = PercentileBasis.p95
    if ttft is None or itl is None:
        ttft = _time_ms(metrics, ttft_name, "p99", file)
        itl = _time_ms(metrics, "inter_token_latency", "p99", file)
        basis = PercentileBasis.p99_bound
    if ttft is None or itl is None:
        raise InputError([Problem(file, "time_to_first_token", "no P95 of time to first token "
                                  "and inter-token latency", "profile a streaming endpoint "
                                  "(--streaming): both figures need the first token's time")])
    config = doc.get("input_config")
    rate = _first(config, "loadgen.request_rate", "request_rate",
                  "perf_analyzer.stimulus.request_rate")
    concurrency = _first(config, "loadgen.concurrency", "concurrency",
                         "perf_analyzer.stimulus.concurrency")
    if isinstance(rate, int | float) and not isinstance(rate, bool) and rate > 0:
        kind, load = LoadKind.rate, float(rate)
    elif isinstance(concurrency, int | float) and not isinstance(concurrency, bool) and (
            concurrency >= 1):
        kind, load = LoadKind.concurrency, float(concurrency)
    else:
        kind, load = LoadKind.unbounded, math.inf
    failed = _count(metrics, "error_request_count", file)
    if failed is None:
        summary = doc.get("error_summary")
        failed = sum(int(e.get("count", 0)) for e in summary if isinstance(e, dict)
                     ) if isinstance(summary, list) else 0
    started = doc.get("start_time")
    measured_on = None
    if isinstance(started, str):
        try:
            measured_on = dt.datetime.fromisoformat(started).date()
        except ValueError:
            measured_on = None
    model = _first(config, "endpoint.model_names", "model_names", "model")
    return BenchPoint(
        file=file, where="", tool=tool, load_kind=kind, load=load, throughput_rps=throughput,
        ttft_p95_ms=ttft, tpot_p95_ms=itl, basis=basis,
        completed=_count(metrics, "request_count", file), failed=failed,
        mean_e2e_ms=_time_ms(metrics, "request_latency", "avg", file),
        sequences=load if kind is LoadKind.concurrency else None,
        sequences_basis="the run's concurrency" if kind is LoadKind.concurrency else "",
        measured_on=measured_on, engine=None, model=str(model) if model else None,
        input_tokens=_lengths(metrics, ISL_NAMES, file),
        output_tokens=_lengths(metrics, OSL_NAMES, file),
        ttft_p50_ms=_time_ms(metrics, ttft_name, "p50", file),
        tpot_p50_ms=_time_ms(metrics, "inter_token_latency", "p50", file),
        e2e_p50_ms=_time_ms(metrics, "request_latency", "p50", file),
        e2e_p95_ms=_time_ms(metrics, "request_latency", "p95", file))


def _lengths(metrics: Mapping[str, Any], names: tuple[str, ...], file: str) -> Lengths | None:
    """Mean, median and P95 of a sequence-length metric, by the first of ``names`` exported
    [tokens] (``None``: none is)."""
    name = next((n for n in names if isinstance(metrics.get(n), dict)), None)
    if name is None:
        return None
    metric = metrics[name]
    lengths = Lengths(*(number(metric, stat, file, name, required=False)
                        for stat in ("avg", "p50", "p95")))
    return lengths if lengths.known else None
