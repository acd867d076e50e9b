"""A workload profile from vLLM's Prometheus metrics, as ``profile`` makes one from a trace.

Input: a range query's JSON (``/api/v1/query_range``: ``{"status": "success", "data":
{"resultType": "matrix", "result": [{"metric": {labels}, "values": [[t, "v"], …]}]}}``, or a
JSON list of such responses), or a CSV export — wide (a time column, then one column per series
named by its selector ``vllm:request_success_total{instance="a"}``, as Grafana's "series joined
by time" export writes it) or long (columns ``timestamp``, ``metric`` holding the selector,
``value``). Times are Unix seconds or ISO datetimes (UTC). Export the raw series, e.g. the query
``{__name__=~"vllm:(request_success_total|request_prompt_tokens_.*|request_generation_tokens_.*|
prefix_cache_.*|gpu_prefix_cache_.*)"}`` at ``step=60s`` over a day or more.

Definitions (docs/replay.md, "Profiles from Prometheus"):

- **Counters** are summed over their series (replicas, finish reasons); each series' increase is
  corrected for resets as Prometheus' ``increase()`` does (a drop means the counter restarted
  from 0, so the new value is the increase). Requests: ``vllm:request_success_total``, else the
  ``_count`` of ``vllm:request_prompt_tokens`` or ``vllm:e2e_request_latency_seconds``.
- **Rates**: the summed request counter, interpolated linearly at whole minutes from the first
  sample, gives per-minute rates [1/s] (``peak_minute_rps``, ``p95_minute_rps``, as for traces);
  where the export's step is longer than a minute its steps are the windows (and it is said).
- **Hourly shape**: requests per UTC hour of the busiest day ÷ the busiest hour's, when the
  export spans a day or more.
- **Token lengths** from the histograms ``vllm:request_prompt_tokens`` and
  ``vllm:request_generation_tokens``: each bucket's increase over the export, summed by ``le``,
  then ``histogram_quantile`` as Prometheus computes it — the bucket holding rank q × count, the
  value interpolated linearly inside it (from 0 for the first bucket), the highest finite bound
  when the rank falls in ``+Inf``, buckets made monotonic first. The mean is the ``_sum``'s
  increase ÷ the ``_count``'s. A quantile is only as fine as the buckets (vLLM's are 1-2-5 steps).
- **Prefix-cache hit rate**: ``vllm:prefix_cache_hits_total`` ÷ ``vllm:prefix_cache_queries_total``
  increases (tokens; ``gpu_prefix_cache_*`` in earlier vLLM V1), else the time average of the V0
  gauge ``vllm:gpu_prefix_cache_hit_rate``; ``None`` when the export has neither.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from models.errors import InputError, Problem
from models.input_files import read_text
from models.workload import HOURS_PER_DAY
from solver.replay.profile import LengthStats, TraceProfile

FloatArray = npt.NDArray[np.float64]

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
#: Most series and samples read, and the longest span [s]: a year of one-minute samples of a
#: few hundred series.
MAX_SERIES = 20_000
MAX_SAMPLES = 20_000_000
MAX_SPAN_S = 400 * SECONDS_PER_DAY
#: Plausible sample times [s since 1970]: 2001 to 2100.
EARLIEST_S, LATEST_S = 1e9, 4.1e9

REQUEST_COUNTERS = ("vllm:request_success_total", "vllm:request_prompt_tokens_count",
                    "vllm:e2e_request_latency_seconds_count")
PROMPT, GENERATION = "vllm:request_prompt_tokens", "vllm:request_generation_tokens"
PREFIX_COUNTERS = (("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
                   ("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"))
PREFIX_GAUGE = "vllm:gpu_prefix_cache_hit_rate"

_SELECTOR = re.compile(r"^\s*([A-Za-z_:][A-Za-z0-9_:]*)?\s*(\{.*\})?\s*$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True, eq=False)
class Series:
    """One time series: its name, labels and samples in time order."""

    name: str
    labels: Mapping[str, str]
    times_s: FloatArray
    values: FloatArray


def _problem(file: str, where: str, message: str, fix: str) -> InputError:
    return InputError([Problem(file, where, message, fix)])


def parse_selector(text: str, file: str, where: str) -> tuple[str, dict[str, str]]:
    """``name{label="value", …}`` → (name, labels); ``__name__`` may stand in the braces."""
    match = _SELECTOR.match(text)
    labels: dict[str, str] = {}
    if match is None:
        raise _problem(file, where, f"`{text[:80]}` is not a series selector",
                       'name the column as Prometheus does: name{label="value"}')
    body = (match.group(2) or "{}")[1:-1]
    pos = 0
    while pos < len(body.rstrip()):
        found = _LABEL.match(body, pos)
        if found is None:
            raise _problem(file, where, f"`{text[:80]}` has unreadable labels",
                           'write labels as label="value", separated by commas')
        labels[found.group(1)] = re.sub(r"\\(.)", r"\1", found.group(2))
        pos = found.end()
    name = match.group(1) or labels.pop("__name__", "")
    labels.pop("__name__", None)
    if not name:
        raise _problem(file, where, f"`{text[:80]}` names no metric",
                       "export the raw series (their names, not an expression)")
    return name, labels


def _series(name: str, labels: Mapping[str, str], times: Sequence[float],
            values: Sequence[float], file: str, where: str) -> Series:
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    t, v = t[keep], v[keep]
    if t.size and (not np.all(np.isfinite(t)) or t.min() < EARLIEST_S or t.max() > LATEST_S):
        raise _problem(file, where, "sample times outside 2001-2100",
                       "give times as Unix seconds or ISO datetimes")
    order = np.argsort(t, kind="stable")
    return Series(name, dict(labels), t[order], v[order])


def _from_json(doc: Any, file: str) -> list[Series]:
    responses = doc if isinstance(doc, list) else [doc]
    out: list[Series] = []
    for i, resp in enumerate(responses):
        at = f"[{i}]" if isinstance(doc, list) else ""
        if not isinstance(resp, dict) or resp.get("status") not in ("success", "error"):
            raise _problem(file, at, "not a Prometheus query response",
                           "save the JSON of /api/v1/query_range as Prometheus returns it")
        if resp.get("status") != "success" or "data" not in resp:
            raise _problem(file, f"{at}status", f"the query failed: {resp.get('error', '?')}",
                           "fix the query and export it again")
        data = resp["data"]
        kind = data.get("resultType") if isinstance(data, dict) else None
        if kind != "matrix":
            raise _problem(file, f"{at}data.resultType", f"`{kind}`: not a range query",
                           "export a range query (/api/v1/query_range) over the period")
        for j, item in enumerate(data.get("result") or []):
            where = f"{at}data.result[{j}]"
            metric, values = item.get("metric"), item.get("values")
            if not isinstance(metric, dict) or not isinstance(values, list):
                raise _problem(file, where, "a result without `metric` and `values`",
                               "give the response as Prometheus returns it")
            name = str(metric.get("__name__", ""))
            if not name:
                raise _problem(file, where, "a series without `__name__`",
                               "export the raw series (their names), not an expression")
            try:
                times = [float(p[0]) for p in values]
                vals = [float(p[1]) for p in values]
            except (TypeError, ValueError, IndexError):
                raise _problem(file, f"{where}.values", "samples must be [time, \"value\"] pairs",
                               "give the response as Prometheus returns it") from None
            labels = {str(k): str(v) for k, v in metric.items() if k != "__name__"}
            out.append(_series(name, labels, times, vals, file, where))
            if len(out) > MAX_SERIES:
                raise _problem(file, "", f"more than {MAX_SERIES:,} series",
                               "export only vLLM's request, token and prefix-cache series")
    return out


def _times(cells: Sequence[str], file: str, column: str) -> list[float]:
    try:
        return [float(c) for c in cells]
    except ValueError:
        stamps = pd.to_datetime(pd.Series(list(cells)), errors="coerce", utc=True,
                                format="ISO8601")
        if stamps.isna().any():
            bad = int(np.flatnonzero(stamps.isna().to_numpy())[0])
            raise _problem(file, f"line {bad + 2}, column {column}",
                           f"`{cells[bad]}` is not a time",
                           "give Unix seconds or ISO datetimes") from None
        return [float(s.timestamp()) for s in stamps]


def _values(cells: Iterable[str]) -> list[float]:
    out = []
    for c in cells:
        try:
            out.append(float(c))
        except ValueError:
            out.append(math.nan)  # blank or "NaN": no sample at that time
    return out


def _from_csv(text: str, file: str) -> list[Series]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not rows[0]:
        raise _problem(file, "line 1", "no header", "start with a header row")
    header = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if any(c.strip() for c in r)]
    if any(len(r) != len(header) for r in body):
        bad = next(i for i, r in enumerate(body) if len(r) != len(header))
        raise _problem(file, f"line {bad + 2}", f"{len(body[bad])} cells, the header has "
                       f"{len(header)}", "give every row a cell per column")
    lowered = [h.lower() for h in header]
    time_col = next((i for i, h in enumerate(lowered) if h in ("time", "timestamp")), None)
    if time_col is None:
        raise _problem(file, "header", "no `time` or `timestamp` column",
                       "name the time column `time` (or `timestamp`)")
    times = _times([r[time_col] for r in body], file, header[time_col])
    if "metric" in lowered and "value" in lowered:  # long layout
        m, v = lowered.index("metric"), lowered.index("value")
        groups: dict[str, tuple[list[float], list[str]]] = {}
        for t, r in zip(times, body, strict=True):
            groups.setdefault(r[m], ([], []))
            groups[r[m]][0].append(t)
            groups[r[m]][1].append(r[v])
        return [_series(*parse_selector(sel, file, f"series `{sel[:40]}`"), ts, _values(vs),
                        file, f"series `{sel[:40]}`") for sel, (ts, vs) in groups.items()]
    out = []
    for i, col in enumerate(header):
        if i == time_col:
            continue
        name, labels = parse_selector(col, file, f"header, column {i + 1}")
        out.append(_series(name, labels, times, _values(r[i] for r in body), file,
                           f"column {col[:40]}"))
    return out


def read_prometheus(path: Path) -> list[Series]:
    """Every series of a Prometheus export (format in the module docstring)."""
    file = str(path)
    text = read_text(path, "metrics export")
    head = text.lstrip()[:1]
    if not head:
        raise _problem(file, "", "empty file", "export a range query as JSON or CSV")
    if head in "[{":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _problem(file, f"line {exc.lineno}, column {exc.colno}",
                           f"invalid JSON: {exc.msg}", "fix the syntax there") from None
        except RecursionError:
            raise _problem(file, "", "JSON nested too deeply to read",
                           "give the response as Prometheus returns it") from None
        series = _from_json(doc, file)
    else:
        series = _from_csv(text, file)
    if sum(s.times_s.size for s in series) > MAX_SAMPLES:
        raise _problem(file, "", f"more than {MAX_SAMPLES:,} samples",
                       "export a coarser step (60 s) or fewer series")
    return series


def _by_name(series: Sequence[Series], name: str) -> list[Series]:
    return [s for s in series if s.name == name]


def counter_increase(s: Series) -> FloatArray:
    """Cumulative increase of a counter at each sample, resets corrected [counts]."""
    if s.values.size == 0:
        return np.zeros(0)
    steps = np.diff(s.values)
    steps = np.where(steps < 0, s.values[1:], steps)  # a drop: restarted from 0
    return np.concatenate([[0.0], np.cumsum(steps)])


def total_increase(series: Sequence[Series]) -> float:
    """Increase over the export, summed over the series [counts]."""
    return float(sum(counter_increase(s)[-1] for s in series if s.values.size))


def cumulative_at(series: Sequence[Series], grid_s: FloatArray) -> FloatArray:
    """Summed reset-corrected increase of counters at the grid times (linear between samples,
    flat outside a series' samples) [counts]."""
    total = np.zeros(grid_s.size)
    for s in series:
        if s.values.size:
            total += np.interp(grid_s, s.times_s, counter_increase(s))
    return total


def histogram_quantile(q: float, bounds: Sequence[float], counts: Sequence[float]) -> float:
    """Prometheus' ``histogram_quantile``: q of a cumulative histogram (bounds ascending, the
    last +Inf); NaN without observations."""
    cum = np.maximum.accumulate(np.asarray(counts, dtype=np.float64))  # monotonic, as Prometheus
    if len(bounds) < 2 or not math.isinf(bounds[-1]) or cum[-1] <= 0:
        return math.nan
    rank = q * cum[-1]
    b = int(np.searchsorted(cum, rank, side="left"))
    if b == len(bounds) - 1:
        return float(bounds[-2])
    if b == 0 and bounds[0] <= 0:
        return float(bounds[0])
    lower = 0.0 if b == 0 else float(bounds[b - 1])
    below = 0.0 if b == 0 else float(cum[b - 1])
    inside = float(cum[b]) - below
    return lower + (float(bounds[b]) - lower) * (rank - below) / inside


def _length_stats(series: Sequence[Series], base: str, file: str) -> LengthStats:
    buckets: dict[float, float] = {}
    for s in _by_name(series, f"{base}_bucket"):
        le = s.labels.get("le")
        try:
            bound = float(le) if le is not None else math.nan
        except ValueError:
            bound = math.nan
        if math.isnan(bound):
            raise _problem(file, f"{base}_bucket", f"a bucket with le=`{le}`",
                           "export the histogram's buckets with their `le` labels")
        buckets[bound] = buckets.get(bound, 0.0) + total_increase([s])
    if not buckets or math.inf not in buckets:
        raise _problem(file, f"{base}_bucket", "the histogram's buckets are missing",
                       f"export {base}_bucket (all `le`), _sum and _count")
    bounds = sorted(buckets)
    counts = [buckets[b] for b in bounds]
    p50, p95, p99 = (histogram_quantile(q, bounds, counts) for q in (0.5, 0.95, 0.99))
    if math.isnan(p50):
        raise _problem(file, f"{base}_bucket", "no request observed in the export's window",
                       "export a period with traffic")
    count = total_increase(_by_name(series, f"{base}_count"))
    total = total_increase(_by_name(series, f"{base}_sum"))
    mean = total / count if count > 0 else p50
    return LengthStats(mean=mean, p50=p50, p95=p95, p99=p99)


def _prefix_hit_rate(series: Sequence[Series]) -> tuple[float | None, str]:
    for hits_name, queries_name in PREFIX_COUNTERS:
        queries = total_increase(_by_name(series, queries_name))
        if queries > 0:
            return total_increase(_by_name(series, hits_name)) / queries, hits_name
    gauge = [v for s in _by_name(series, PREFIX_GAUGE) for v in s.values]
    if gauge:
        return float(np.clip(np.mean(gauge), 0.0, 1.0)), PREFIX_GAUGE
    return None, ""


def grid(start_s: float, end_s: float, step_s: float) -> FloatArray:
    """Times start, start + step, … up to end (inclusive within rounding) [s]."""
    n = math.floor((end_s - start_s) / step_s + 1e-9)
    return start_s + step_s * np.arange(n + 1, dtype=np.float64)


def _hourly_shape(requests: Sequence[Series], start_s: float, end_s: float
                  ) -> tuple[float, ...] | None:
    if end_s - start_s < SECONDS_PER_DAY:
        return None
    first_hour = math.ceil(start_s / SECONDS_PER_HOUR) * SECONDS_PER_HOUR
    edges = grid(first_hour, end_s, SECONDS_PER_HOUR)
    per_hour = np.diff(cumulative_at(requests, edges))
    hour_of_day = ((edges[:-1] % SECONDS_PER_DAY) // SECONDS_PER_HOUR).astype(np.int64)
    day = (edges[:-1] // SECONDS_PER_DAY).astype(np.int64)
    per_day = {d: per_hour[day == d].sum() for d in np.unique(day)}
    busiest = max(per_day, key=lambda d: (per_day[d], -d))
    counts = np.zeros(HOURS_PER_DAY)
    np.add.at(counts, hour_of_day[day == busiest], per_hour[day == busiest])
    if counts.max() <= 0:
        return None
    shares = counts / counts.max()
    return tuple(1.0 if s == 1.0 else round(float(s), 3) for s in shares)


def profile_prometheus(series: Sequence[Series], source: str) -> tuple[TraceProfile, list[str]]:
    """The workload profile of an export (definitions in the module docstring) and notes."""
    models = sorted({s.labels["model_name"] for s in series if "model_name" in s.labels})
    if len(models) > 1:
        raise _problem(source, "model_name", f"the export mixes models: {', '.join(models)}",
                       "export one model's series (add {model_name=\"…\"} to the query)")
    requests, counter = [], ""
    for name in REQUEST_COUNTERS:
        requests = [s for s in _by_name(series, name) if s.values.size]
        if requests:
            counter = name
            break
    if not requests:
        raise _problem(source, "", "no request counter in the export",
                       f"export {REQUEST_COUNTERS[0]} (or the histograms' _count)")
    start = min(float(s.times_s[0]) for s in requests)
    end = max(float(s.times_s[-1]) for s in requests)
    if end - start > MAX_SPAN_S:
        raise _problem(source, "", f"the export spans {(end - start) / SECONDS_PER_DAY:,.0f} "
                       "days", f"export at most {MAX_SPAN_S / SECONDS_PER_DAY:.0f} days")
    notes = [f"requests from {counter}"]
    step = float(np.median(np.concatenate([np.diff(s.times_s) for s in requests]))
                 ) if any(s.times_s.size > 1 for s in requests) else 0.0
    total = total_increase(requests)
    duration = end - start
    window = max(SECONDS_PER_MINUTE, step)
    if window > SECONDS_PER_MINUTE:
        notes.append(f"the export's step is {step:g} s: peak and P95 rates are over {step:g}-s "
                     "windows (export at step=60s for minutes)")
    edges = grid(start, end, window)
    rates = np.diff(cumulative_at(requests, edges)) / window if edges.size > 1 else np.zeros(0)
    mean_rps = total / duration if duration > 0 else total
    peak, p95 = ((float(rates.max()), float(np.percentile(rates, 95))) if rates.size
                 else (mean_rps, mean_rps))
    reuse, reuse_from = _prefix_hit_rate(series)
    if reuse_from:
        notes.append(f"prefix-cache hit rate from {reuse_from}")
    profile = TraceProfile(
        source=source, requests=round(total), duration_s=duration, mean_rps=mean_rps,
        peak_minute_rps=peak, p95_minute_rps=p95,
        input_tokens=_length_stats(series, PROMPT, source),
        output_tokens=_length_stats(series, GENERATION, source),
        prefix_reuse=reuse, hourly_shape=_hourly_shape(requests, start, end))
    return profile, notes
