"""Request traces: read the Azure, Mooncake and generic CSV formats, or draw a synthetic one.

A :class:`Trace` is what both ``profile`` and ``simulate`` read: arrival times [s] from the first
request, input and output lengths [tokens], and — where the trace carries them — the ids of each
request's 512-token prefix blocks (Mooncake ``hash_ids``: equal ids are reusable KV cache).

Formats (``--format``; detected from the file when omitted):

- ``azure``: the Azure LLM inference traces (Splitwise), CSV ``TIMESTAMP,ContextTokens,
  GeneratedTokens`` with wall-clock datetimes.
- ``mooncake``: JSON lines with ``timestamp`` [ms from start], ``input_length``,
  ``output_length`` and optional ``hash_ids``.
- ``csv``: any CSV with a header naming a time column (:data:`TIME_COLUMNS`: seconds, or
  datetimes; :data:`TIME_COLUMNS_MS`: milliseconds), an input-length column
  (:data:`INPUT_COLUMNS`) and an output-length column (:data:`OUTPUT_COLUMNS`), matched
  ignoring case, spaces, ``-`` and ``_``.

Bad rows raise :class:`~models.errors.InputError` naming file, line and column (up to
:data:`MAX_PROBLEMS` of them); a CSV row with more cells than its header is refused at its
line. Rows out of time order are sorted (stable), not rejected.
"""

from __future__ import annotations

import csv
import json
import math
from array import array
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
import pandas as pd

from models.errors import InputError, Problem
from models.input_files import check_file, duplicate_columns, first_long_row, missing_trace_fix
from models.limits import (
    MAX_RATE_SCALE,
    MAX_TRACE_PREFIX_BLOCKS,
    MAX_TRACE_REQUESTS,
    MAX_TRACE_SPAN_S,
    MIN_RATE_SCALE,
)
from models.workload import Workload
from solver.capacity.bench.formats import foreign_json

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Problems listed per bad file before the reader stops looking.
MAX_PROBLEMS = 10
#: Most tokens one request may have in either direction: far beyond any model's context, and
#: small enough that token sums stay exact in int64 (a typo like 1e30 wrapped to negatives).
MAX_TOKENS = 10**9
#: Rows read at a time when a CSV trace is read as text (datetimes, or bad cells to locate).
CHUNK_ROWS = 1_000_000
#: Bytes read to detect a trace's format and its CSV header.
HEAD_BYTES = 65_536
#: Tokens per prefix block in Mooncake's ``hash_ids`` [tokens].
PREFIX_BLOCK_TOKENS = 512
#: z-score of the 95th percentile of a standard normal: lognormal sigma = ln(p95/p50) / this.
Z_P95 = 1.6448536269514722

TIME_COLUMNS = ("timestamp_s", "arrival_s", "time_s", "arrival_time_s", "timestamp", "time")
#: Time columns in milliseconds (read ÷ 1,000): without them the fix "name one column
#: timestamp_s …" invited renaming a millisecond column to seconds, a trace 1,000× too slow.
TIME_COLUMNS_MS = ("timestamp_ms", "arrival_ms", "time_ms", "arrival_time_ms")
INPUT_COLUMNS = ("input_tokens", "input_length", "prompt_tokens", "context_tokens")
OUTPUT_COLUMNS = ("output_tokens", "output_length", "completion_tokens", "generated_tokens")
AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


class TraceFormat(StrEnum):
    """Trace file formats the readers understand."""

    azure = "azure"
    mooncake = "mooncake"
    csv = "csv"


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests in arrival order.

    Arrays are not copied by consumers; treat them as read-only.
    """

    source: str
    """File the trace came from, or ``synthetic:<workload>``."""
    arrival_s: FloatArray
    """Arrival time of each request from the first one [s]; non-decreasing, starts at 0."""
    input_tokens: IntArray
    output_tokens: IntArray
    start_epoch_s: float | None = None
    """Wall-clock time of the first request [s since 1970, UTC] where the trace has datetimes."""
    prefix_block_ids: IntArray | None = None
    """Every request's prefix-block ids, concatenated in arrival order (None: trace has none)."""

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    @property
    def duration_s(self) -> float:
        """Time from the first to the last arrival [s]."""
        return float(self.arrival_s[-1]) if self.arrival_s.size else 0.0

    @property
    def total_tokens(self) -> npt.NDArray[np.int64]:
        """Each request's input + output, in 64 bits (no overflow of the columns' type): what
        a model's context is compared with [tokens]."""
        return self.input_tokens.astype(np.int64) + self.output_tokens.astype(np.int64)


def detect_format(path: Path) -> TraceFormat:
    """Guess the format: JSON lines are Mooncake; a CSV with the Azure header is Azure. A
    load-test result or a Prometheus export is refused, saying which command reads it."""
    head = _read_head(path)
    if not head.strip():  # was "no CSV header", said of an empty Mooncake .jsonl too
        raise InputError([Problem(str(path), "", "empty file: no requests",
                                  "give one request a line: JSON lines (Mooncake), or a CSV "
                                  "with a header row naming the columns")])
    foreign = foreign_json(path, head, "a request trace")
    if foreign is not None:
        raise foreign
    if head.lstrip().startswith("{"):
        return TraceFormat.mooncake
    first_line = head.splitlines()[0] if head else ""
    columns = [c.strip() for c in first_line.split(",")]
    if all(c in columns for c in AZURE_COLUMNS):
        return TraceFormat.azure
    return TraceFormat.csv


def read_trace(path: Path, fmt: TraceFormat | None = None) -> Trace:
    """Read a trace file in ``fmt`` (detected when ``None``)."""
    detected = detect_format(path)
    if fmt is not None and fmt is not detected and TraceFormat.mooncake in (fmt, detected):
        # JSON lines read as CSV, or a CSV read line by line as JSON: one problem per line
        # (a fresh clone's `--format mooncake` on the Azure trace gave ten of them)
        reads = ("JSON lines (Mooncake)" if detected is TraceFormat.mooncake
                 else "an Azure CSV" if detected is TraceFormat.azure else "a CSV")
        raise InputError([Problem(str(path), "", f"--format {fmt.value}: the file reads as "
                                  f"{reads}", "drop --format (it is detected from the content) "
                                  f"or give --format {detected.value}")])
    fmt = fmt if fmt is not None else detected
    if fmt is TraceFormat.mooncake:
        return read_mooncake(path)
    if fmt is TraceFormat.azure:
        return read_columns(path, AZURE_COLUMNS)
    return read_generic_csv(path)


def read_generic_csv(path: Path) -> Trace:
    """Read a CSV with named time, input and output columns (see the module docstring)."""
    header = _csv_header(path)
    lowered = {_column_key(h): h for h in header}
    picked: list[str] = []
    problems: list[Problem] = []
    for role, names in (("time", TIME_COLUMNS + TIME_COLUMNS_MS), ("input", INPUT_COLUMNS),
                        ("output", OUTPUT_COLUMNS)):
        found = next((lowered[_column_key(n)] for n in names if _column_key(n) in lowered), None)
        if found is None:
            problems.append(Problem(str(path), "header", f"no {role} column among {header}",
                                    f"name one column {' or '.join(names)}"))
        else:
            picked.append(found)
    if problems and len(header) == 1 and ";" in header[0]:
        raise InputError([Problem(str(path), "header", f"one column `{header[0]}`: the file is "
                                  "separated by `;`", "save it as CSV with commas")])
    if problems:
        raise InputError(problems)
    in_ms = _column_key(picked[0]) in {_column_key(n) for n in TIME_COLUMNS_MS}
    return read_columns(path, (picked[0], picked[1], picked[2]),
                        seconds_per_unit=1e-3 if in_ms else 1.0)


def read_columns(path: Path, columns: tuple[str, str, str],
                 seconds_per_unit: float = 1.0) -> Trace:
    """Read a CSV given its (time, input tokens, output tokens) column names (matched ignoring
    spaces around them); numeric times are in units of ``seconds_per_unit`` seconds (1e-3: a
    ``_ms`` column). Numbers are read in one pass; a file with datetimes or bad cells is
    read again as text in chunks of :data:`CHUNK_ROWS`, so memory stays bounded either way."""
    check_file(path, "request trace")
    raw_header = _csv_header(path, strip=False)
    twice = duplicate_columns(raw_header, str(path))
    if twice is not None:  # pandas read the first and renamed the second `x.1`
        raise InputError([twice])
    by_name = {h.strip(): h for h in raw_header}
    missing = [c for c in columns if c not in by_name]
    if missing:
        raise InputError([Problem(str(path), "header", f"missing column(s) {missing}; "
                                  f"found {[h.strip() for h in raw_header]}",
                                  f"the header must name {list(columns)}")])
    raw = [by_name[c] for c in columns]
    long = first_long_row(path, str(path), "line")
    if long is not None:  # usecols drops the cells past the header: `1,5` read as 1 and 5
        raise InputError([long])
    try:
        numbers = pd.read_csv(path, usecols=raw, dtype=np.float64, nrows=MAX_TRACE_REQUESTS + 1,
                              encoding="utf-8-sig")
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OverflowError):
        return _read_columns_as_text(path, raw, seconds_per_unit)
    _check_count(path, numbers.shape[0])
    values = [numbers[c].to_numpy(dtype=np.float64) for c in raw]
    lines = np.arange(values[0].size) + 2  # header is line 1
    problems: list[Problem] = []
    times_s = _seconds(path, values[0], columns[0], lines, problems) * seconds_per_unit
    inputs = _counts(path, values[1], columns[1], lines, 1, problems)
    outputs = _counts(path, values[2], columns[2], lines, 1, problems)
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    return _build(str(path), times_s, inputs, outputs, None, None)


def _read_columns_as_text(path: Path, raw: list[str], seconds_per_unit: float = 1.0) -> Trace:
    """:func:`read_columns` for a file pandas cannot read as numbers: text in chunks, each cell
    read as seconds and as a datetime; the column is whichever reads more cells."""
    seconds: list[FloatArray] = []
    stamps_ns: list[npt.NDArray[np.int64]] = []
    counts: list[list[FloatArray]] = [[], []]
    rows = 0
    try:
        with pd.read_csv(path, usecols=raw, dtype=str, keep_default_na=False,
                         encoding="utf-8-sig", chunksize=CHUNK_ROWS) as chunks:
            for chunk in chunks:
                rows += chunk.shape[0]
                _check_count(path, rows)
                seconds.append(pd.to_numeric(chunk[raw[0]], errors="coerce")
                               .to_numpy(dtype=np.float64))
                stamps = pd.to_datetime(chunk[raw[0]], errors="coerce", format="ISO8601",
                                        utc=True)
                stamps_ns.append(stamps.to_numpy(dtype="datetime64[ns]").view(np.int64))
                for i, c in enumerate(raw[1:]):
                    counts[i].append(pd.to_numeric(chunk[c], errors="coerce")
                                     .to_numpy(dtype=np.float64))
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OverflowError) as exc:
        raise InputError([Problem(str(path), "", f"cannot parse as CSV: {exc}",
                                  "check the delimiter and quoting")]) from None
    if rows == 0:
        raise InputError([Problem(str(path), "", "the trace has no requests",
                                  "give at least one data row")])
    names = [h.strip() for h in raw]
    lines = np.arange(rows) + 2
    problems: list[Problem] = []
    secs = np.concatenate(seconds)
    ns = np.concatenate(stamps_ns)
    is_stamp = ns != np.iinfo(np.int64).min  # NaT
    start_epoch_s: float | None = None
    if np.isfinite(secs).sum() >= is_stamp.sum():
        times_s = _seconds(path, secs, names[0], lines, problems) * seconds_per_unit
    else:
        _flag(path, names[0], lines, ~is_stamp, "not a time (seconds, or a datetime like "
              "2023-11-16 18:15:46.68)", problems)
        first = int(ns[is_stamp].min()) if is_stamp.any() else 0
        if float(ns.max()) - first > MAX_TRACE_SPAN_S * 1e9:  # int64 ns would wrap: in float
            times_s = (ns.astype(np.float64) - first) / 1e9
        else:
            times_s = np.where(is_stamp, (ns - first) / 1e9, 0.0)
        start_epoch_s = first / 1e9
    inputs = _counts(path, np.concatenate(counts[0]), names[1], lines, 1, problems)
    outputs = _counts(path, np.concatenate(counts[1]), names[2], lines, 1, problems)
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    return _build(str(path), times_s, inputs, outputs, start_epoch_s, None)


def read_mooncake(path: Path) -> Trace:
    """Read Mooncake JSON lines: ``timestamp`` [ms], lengths and optional ``hash_ids``; line by
    line, into compact arrays (a trace at its size limit is read in bounded memory)."""
    check_file(path, "request trace")
    times_ms = array("d")
    inputs = array("q")
    outputs = array("q")
    blocks = array("q")
    has_blocks = True
    problems: list[Problem] = []
    try:
        with path.open(encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, start=1):
                if len(problems) >= MAX_PROBLEMS:
                    break
                if not line.strip():
                    continue
                _check_count(path, len(times_ms) + 1)
                row = _json_line(path, line, f"line {lineno}", problems)
                if row is None:
                    continue
                where = f"line {lineno}"
                t = _json_number(path, row, "timestamp", where, 0, problems, maximum=math.inf)
                n_in = _json_number(path, row, "input_length", where, 1, problems)
                n_out = _json_number(path, row, "output_length", where, 1, problems)
                ids = row.get("hash_ids")
                if ids is None:
                    has_blocks = False
                elif not (isinstance(ids, list) and all(
                        type(i) is int and -(2**63) <= i < 2**63 for i in ids)):
                    problems.append(Problem(str(path), f"{where}, column hash_ids",
                                            "hash_ids must be a list of integers",
                                            "fix or drop it"))
                elif has_blocks:
                    if len(blocks) + len(ids) > MAX_TRACE_PREFIX_BLOCKS:
                        raise InputError([Problem(str(path), where, "more than "
                                                  f"{MAX_TRACE_PREFIX_BLOCKS:,} prefix-block ids",
                                                  "replay a shorter part of the trace "
                                                  "(docs/limits.md)")])
                    blocks.extend(ids)
                if t is not None and n_in is not None and n_out is not None:
                    times_ms.append(t)
                    inputs.append(int(n_in))
                    outputs.append(int(n_out))
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text",
                                  "save the trace as UTF-8")]) from None
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}",
                                  "check the path")]) from None
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    if not times_ms:
        raise InputError([Problem(str(path), "", "the trace has no requests",
                                  "give at least one JSON line")])
    block_ids = np.frombuffer(blocks, dtype=np.int64).copy() if has_blocks else None
    return _build(str(path), np.frombuffer(times_ms, dtype=np.float64) / 1000.0,
                  np.frombuffer(inputs, dtype=np.int64).copy(),
                  np.frombuffer(outputs, dtype=np.int64).copy(), None, block_ids)


def _json_line(path: Path, line: str, where: str,
               problems: list[Problem]) -> dict[str, object] | None:
    """One line's JSON object, or None with a problem (bad syntax, nesting too deep, an
    integer of more than 4,300 digits, not an object)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        problems.append(Problem(str(path), where, f"invalid JSON: {exc.msg}",
                                "each line must be one JSON object"))
        return None
    except (ValueError, RecursionError) as exc:
        problems.append(Problem(str(path), where, f"cannot read as JSON: {exc}",
                                "each line must be one JSON object of numbers"))
        return None
    if not isinstance(row, dict):
        problems.append(Problem(str(path), where, "not a JSON object",
                                "each line must be one JSON object"))
        return None
    return row


def lognormal_params(p50: float, p95: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal whose median is ``p50`` and 95th percentile ``p95``.

    ln X ~ N(mu, sigma²): the median is e^mu and the P95 is e^(mu + 1.645 sigma).
    """
    mu = math.log(p50)
    sigma = max(math.log(p95) - mu, 0.0) / Z_P95
    return mu, sigma


def workload_rate_rps(workload: Workload) -> float:
    """Peak request rate of a workload [1/s]: ``arrival.peak_rps``, or a batch volume spread
    over its window."""
    return max(workload.hourly_demand_rps())


def synthetic_trace(workload: Workload, duration_s: float, seed: int,
                    rate_scale: float = 1.0) -> Trace:
    """A Poisson trace at the workload's peak rate × ``rate_scale``, seeded.

    Lengths are lognormal with the workload's P50 and P95 (:func:`lognormal_params`; below the
    median with the spread its P5 gives, where it states one), rounded to whole tokens and
    clipped to [1, P99] — the distribution the capacity model integrates
    over (``solver.capacity.queueing.length_samples``), so replay and prediction see the same
    workload.
    """
    rate_rps = workload_rate_rps(workload) * rate_scale
    rng = np.random.default_rng(seed)
    expected = rate_rps * duration_s
    n = int(expected + 6.0 * math.sqrt(expected) + 16.0)
    gaps_s = rng.exponential(1.0 / rate_rps, size=n)
    times_s = np.cumsum(gaps_s) - gaps_s[0]
    times_s = times_s[times_s < duration_s]
    size = times_s.size
    lengths = []
    for tokens in (workload.input_tokens, workload.output_tokens):
        mu, sigma = lognormal_params(tokens.p50, tokens.p95)
        if tokens.p5 is None:
            drawn = np.rint(rng.lognormal(mu, sigma, size=size))
        else:  # below the median the spread P5 gives (two-piece, as length_samples)
            z = rng.standard_normal(size)
            below = math.log(tokens.p50 / tokens.p5) / (-NormalDist().inv_cdf(0.05))
            drawn = np.rint(np.exp(mu + np.where(z < 0, below, sigma) * z))
        lengths.append(np.clip(drawn, 1.0, float(tokens.p99)).astype(np.int64))
    return Trace(source=f"synthetic:{workload.name}", arrival_s=times_s,
                 input_tokens=lengths[0], output_tokens=lengths[1])


def scale_arrivals(trace: Trace, rate_scale: float) -> Trace:
    """The same requests with inter-arrival times divided by ``rate_scale`` (K× the rate)."""
    if not MIN_RATE_SCALE <= rate_scale <= MAX_RATE_SCALE:
        raise InputError([Problem("--rate-scale", "", f"×{rate_scale:g} is outside "
                                  f"{MIN_RATE_SCALE:g} to {MAX_RATE_SCALE:g}",
                                  "scale the rate by a factor in that range (docs/limits.md)")])
    if rate_scale == 1.0:
        return trace
    if trace.duration_s / rate_scale > MAX_TRACE_SPAN_S:
        raise InputError([Problem(trace.source, "", f"scaled by ×{rate_scale:g}, the trace "
                                  f"would span {trace.duration_s / rate_scale / 86_400:,.0f} "
                                  f"days; at most {MAX_TRACE_SPAN_S / 86_400:,.0f} are replayed",
                                  "use a larger --rate-scale or a shorter trace")])
    return Trace(source=trace.source, arrival_s=trace.arrival_s / rate_scale,
                 input_tokens=trace.input_tokens, output_tokens=trace.output_tokens,
                 start_epoch_s=trace.start_epoch_s, prefix_block_ids=trace.prefix_block_ids)


def _build(source: str, times_s: FloatArray, inputs: IntArray, outputs: IntArray,
           start_epoch_s: float | None, block_ids: IntArray | None) -> Trace:
    """The trace in arrival order from its first request; refused past
    :data:`~models.limits.MAX_TRACE_SPAN_S` (per-minute rates of centuries need gigabytes)."""
    if times_s.size == 0:
        raise InputError([Problem(source, "", "the trace has no requests",
                                  "give at least one request")])
    span_s = float(times_s.max() - times_s.min())
    if not span_s <= MAX_TRACE_SPAN_S:
        raise InputError([Problem(source, "", f"its requests span {_span_text(span_s)} from "
                                  f"first to last; at most {MAX_TRACE_SPAN_S / 86_400:,.0f} "
                                  "days are read", "check the time column's unit, or split the "
                                  "trace (docs/limits.md)")])
    order = np.argsort(times_s, kind="stable")
    if np.any(order != np.arange(order.size)):
        times_s, inputs, outputs = times_s[order], inputs[order], outputs[order]
        # Prefix blocks keep file order: reuse counts what a cache would have seen.
    t0 = float(times_s[0])
    return Trace(source=source, arrival_s=times_s - t0, input_tokens=inputs,
                 output_tokens=outputs,
                 start_epoch_s=None if start_epoch_s is None else start_epoch_s + t0,
                 prefix_block_ids=block_ids)


def _seconds(path: Path, values: FloatArray, column: str, lines: IntArray,
             problems: list[Problem]) -> FloatArray:
    """Seconds, each finite and >= 0 (a bad cell is flagged, not every row)."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values < 0)
    _flag(path, column, lines, bad, "time must be a finite number of seconds >= 0", problems)
    return np.where(bad, 0.0, values)


def _counts(path: Path, numeric: FloatArray, column: str, lines: IntArray, minimum: int,
            problems: list[Problem]) -> IntArray:
    with np.errstate(invalid="ignore"):
        bad = (~np.isfinite(numeric) | (numeric < minimum) | (numeric > MAX_TOKENS)
               | (numeric != np.floor(numeric)))
    _flag(path, column, lines, bad,
          f"token count must be a whole number from {minimum} to {MAX_TOKENS:,}", problems)
    return np.where(bad, minimum, numeric).astype(np.int64)


def _check_count(path: Path, requests: int) -> None:
    if requests > MAX_TRACE_REQUESTS:
        raise InputError([Problem(str(path), "", f"more than {MAX_TRACE_REQUESTS:,} requests",
                                  "profile or replay a shorter part of the trace "
                                  "(docs/limits.md)")])


def _flag(path: Path, column: str, lines: IntArray, bad: npt.NDArray[np.bool_], message: str,
          problems: list[Problem]) -> None:
    for line in lines[bad][: MAX_PROBLEMS - len(problems)]:
        problems.append(Problem(str(path), f"line {int(line)}, column {column}", message,
                                "fix or remove this row"))


def _json_number(path: Path, row: dict[str, object], key: str, where: str, minimum: int,
                 problems: list[Problem], maximum: float = MAX_TOKENS) -> float | None:
    value = row.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        value = math.inf  # past any time or count, and past a float's range
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        problems.append(Problem(str(path), f"{where}, column {key}",
                                f"{key} missing or not a number", f"give {key} as a number"))
        return None
    if value < minimum or value > maximum or (key != "timestamp" and value != int(value)):
        most = "" if maximum == math.inf else f" and <= {maximum:,}"
        problems.append(Problem(str(path), f"{where}, column {key}",
                                f"{key} must be a whole number >= {minimum}{most}, got {value}",
                                "fix or remove this line"))
        return None
    return float(value)


def _column_key(name: str) -> str:
    """Column names match ignoring case, spaces, ``-`` and ``_`` (``ContextTokens``)."""
    return "".join(c for c in name.lower() if c.isalnum())


def _span_text(span_s: float) -> str:
    days = span_s / 86_400
    return f"{days:,.0f} days" if days < 1e9 else f"{days:.3g} days"


def _read_head(path: Path) -> str:
    check_file(path, "request trace", missing_fix=missing_trace_fix(path))
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES).decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}",
                                  "check the path")]) from None


def _csv_header(path: Path, strip: bool = True) -> list[str]:
    head = _read_head(path)
    rows = list(csv.reader(head.splitlines()[:1]))
    if not rows or not rows[0]:
        raise InputError([Problem(str(path), "line 1", "empty file: no CSV header",
                                  "start with a header row naming the columns")])
    return [c.strip() for c in rows[0]] if strip else rows[0]
