"""GuideLLM benchmark reports (``benchmarks.json``): one point per benchmark of the report.

Two layouts are read, by their keys:

- **GuideLLM 0.2–0.3**: ``{"benchmarks": [{"type_": "generative_benchmark", "args": {"strategy":
  …}, "worker": {"backend_model": …}, "run_stats": {"requests_made": …}, "start_time": …,
  "metrics": …, "request_totals": …}]}``;
- **GuideLLM 0.4 and later**: ``{"args": {"model": …}, "benchmarks": [{"type_":
  "generative_benchmark", "config": {"strategy": …}, "scheduler_metrics": {"requests_made": …},
  "metrics": {"request_totals": …, …}}]}`` (0.7 puts ``metadata`` and ``config`` where 0.4–0.6
  have ``args``; the model is then the benchmark's ``config.backend.model``).

Each metric is a distribution per request status (``successful``, ``errored``, …) with ``mean``,
``max`` and ``percentiles`` (``p50``, ``p95``). Read: ``requests_per_second.successful.mean``
(the throughput), ``time_to_first_token_ms`` and ``inter_token_latency_ms`` P95 (and P50, kept
with the point) of the successful requests (GuideLLM's inter-token latency excludes the first
token: the SLO's per-token figure; its ``time_per_output_token_ms`` includes it and is not used),
``request_latency.successful`` mean, P50 and P95 [s], ``request_concurrency.successful.max``
(peak in flight), ``prompt_token_count`` and ``output_token_count`` (mean, median, P95 of the
successful requests), errored counts, the strategy (``synchronous``, ``concurrent`` with
``streams``, ``throughput``, ``constant``/``poisson`` with ``rate``) and the start time [s since
1970]. GuideLLM does not record the serving engine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from models.errors import InputError, Problem
from solver.capacity.bench.points import (
    MS_PER_S,
    BenchPoint,
    Lengths,
    LoadKind,
    PercentileBasis,
    epoch_date,
    number,
)

TOOL_02 = "GuideLLM benchmarks.json (GuideLLM 0.2-0.3)"
TOOL_04 = "GuideLLM benchmarks.json (GuideLLM 0.4 and later)"


def is_guidellm_report(doc: Any) -> bool:
    """A GuideLLM report: an object whose ``benchmarks`` are generative benchmarks."""
    benchmarks = doc.get("benchmarks") if isinstance(doc, dict) else None
    return (isinstance(benchmarks, list) and bool(benchmarks) and all(
        isinstance(b, dict) and "metrics" in b for b in benchmarks))


def _dig(doc: Any, path: str, file: str, where: str) -> Any:
    node = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            raise InputError([Problem(file, f"{where}.{path}", "missing",
                                      "give the report as GuideLLM wrote it")])
        node = node[key]
    return node


def _stat(metrics: Mapping[str, Any], path: str, file: str, where: str) -> float:
    *parents, key = path.split(".")
    holder = _dig(metrics, ".".join(parents), file, f"{where}.metrics") if parents else metrics
    return number(holder, key, file, f"{where}.metrics.{'.'.join(parents)}") or 0.0


def _count(benchmark: Mapping[str, Any], status: str) -> int | None:
    """Requests of a status, from whichever count the layout keeps (0.4+: ``metrics.
    request_totals``, ``scheduler_metrics.requests_made``; 0.2-0.3: the benchmark's
    ``request_totals``, ``run_stats.requests_made``)."""
    for path in (("metrics", "request_totals"), ("scheduler_metrics", "requests_made"),
                 ("request_totals",), ("run_stats", "requests_made")):
        node: Any = benchmark
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            value = node.get(status)
            if isinstance(value, int) and value >= 0:
                return value
    return None


def _load(strategy: Any, file: str, where: str) -> tuple[LoadKind, float]:
    kind = strategy.get("type_") if isinstance(strategy, dict) else None
    if kind == "synchronous":
        return LoadKind.concurrency, 1.0
    if kind == "concurrent":
        return LoadKind.concurrency, number(strategy, "streams", file, where, minimum=1) or 1.0
    if kind in ("constant", "poisson"):
        return LoadKind.rate, number(strategy, "rate", file, where) or 0.0
    if kind == "throughput":
        return LoadKind.unbounded, math.inf
    raise InputError([Problem(file, where, f"unknown strategy `{kind}`",
                              "give the report as GuideLLM wrote it")])


def guidellm_points(report: Mapping[str, Any], file: str) -> list[BenchPoint]:
    """One point per benchmark of a GuideLLM report."""
    args: dict[str, Any] = report["args"] if isinstance(report.get("args"), dict) else {}
    points = []
    for i, bench in enumerate(report["benchmarks"]):
        where = f"benchmarks[{i}]"
        new = "config" in bench
        strategy = (bench.get("config", {}).get("strategy") if new else
                    bench.get("args", {}).get("strategy"))
        kind, load = _load(strategy, file, f"{where}.{'config' if new else 'args'}.strategy")
        metrics = _dig(bench, "metrics", file, where)
        throughput = _stat(metrics, "requests_per_second.successful.mean", file, where)
        ttft = _stat(metrics, "time_to_first_token_ms.successful.percentiles.p95", file, where)
        itl = _stat(metrics, "inter_token_latency_ms.successful.percentiles.p95", file, where)
        mean_e2e = _stat(metrics, "request_latency.successful.mean", file, where) * MS_PER_S
        sequences, seq_basis = (load, "the run's concurrent streams") if (
            kind is LoadKind.concurrency) else (None, "")
        if sequences is None and isinstance(metrics.get("request_concurrency"), dict):
            sequences = _stat(metrics, "request_concurrency.successful.max", file, where)
            seq_basis = "the peak in flight GuideLLM observed"
        start = bench.get("start_time")
        if not isinstance(start, int | float):
            start = (bench.get("scheduler_metrics") or {}).get("measure_start_time")
        worker: dict[str, Any] = bench["worker"] if isinstance(bench.get("worker"), dict) else {}
        backend = (bench.get("config") or {}).get("backend") if new else None
        model = (worker.get("backend_model") or args.get("model")
                 or (backend.get("model") if isinstance(backend, dict) else None))
        points.append(BenchPoint(
            file=file, where=where, tool=TOOL_04 if new else TOOL_02, load_kind=kind, load=load,
            throughput_rps=throughput, ttft_p95_ms=ttft, tpot_p95_ms=itl,
            basis=PercentileBasis.p95, completed=_count(bench, "successful"),
            failed=_count(bench, "errored") or 0, mean_e2e_ms=mean_e2e, sequences=sequences,
            sequences_basis=seq_basis,
            measured_on=epoch_date(float(start)) if isinstance(start, int | float) else None,
            engine=None, model=str(model) if model else None,
            input_tokens=_lengths(metrics, "prompt_token_count", file, where),
            output_tokens=_lengths(metrics, "output_token_count", file, where),
            ttft_p50_ms=_optional(metrics, "time_to_first_token_ms", "p50", file, where),
            tpot_p50_ms=_optional(metrics, "inter_token_latency_ms", "p50", file, where),
            e2e_p50_ms=_seconds_ms(_optional(metrics, "request_latency", "p50", file, where)),
            e2e_p95_ms=_seconds_ms(_optional(metrics, "request_latency", "p95", file, where))))
    return points


def _successful(metrics: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The distribution of ``name`` over the successful requests (``None``: the report has
    none)."""
    dist = metrics.get(name)
    dist = dist.get("successful") if isinstance(dist, dict) else None
    return dist if isinstance(dist, dict) else None


def _optional(metrics: Mapping[str, Any], name: str, stat: str, file: str, where: str
              ) -> float | None:
    """A percentile (``p50``, ``p95``) of the successful requests' ``name``: the report's
    ``percentiles``, the ``median`` for ``p50`` where those lack it (``None``: neither)."""
    dist = _successful(metrics, name)
    if dist is None:
        return None
    at = f"{where}.metrics.{name}.successful"
    found = dist.get("percentiles")
    if isinstance(found, dict) and stat in found:
        return number(found, stat, file, f"{at}.percentiles", required=False)
    return number(dist, "median", file, at, required=False) if stat == "p50" else None


def _seconds_ms(value: float | None) -> float | None:
    return None if value is None else value * MS_PER_S  # request_latency is in seconds


def _lengths(metrics: Mapping[str, Any], name: str, file: str, where: str) -> Lengths | None:
    """Mean, median and P95 of a token-count distribution of the successful requests
    (``None`` where the report has none)."""
    dist = _successful(metrics, name)
    if dist is None:
        return None
    at = f"{where}.metrics.{name}.successful"
    found = dist.get("percentiles")
    percentiles: Mapping[str, Any] = found if isinstance(found, dict) else {}
    median = (number(percentiles, "p50", file, f"{at}.percentiles", required=False)
              if "p50" in percentiles else number(dist, "median", file, at, required=False))
    lengths = Lengths(mean=number(dist, "mean", file, at, required=False), p50=median,
                      p95=number(percentiles, "p95", file, f"{at}.percentiles", required=False))
    return lengths if lengths.known else None
