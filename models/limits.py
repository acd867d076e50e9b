"""Limits at the door: how large, how deep, how many and how big any input may be.

Every limit fleetplan puts on its inputs is named here once, with its reason; docs/limits.md
lists them for people (a test checks the page against this module). A file past a limit is
refused before it is parsed, or, for structure, before Python objects are built from it, with
an :class:`~models.errors.InputError` naming the file, the place and the limit (exit code 2).

The limits are far beyond any real scenario, fleet or trace, and low enough that the largest
input they allow is planned, checked or replayed in bounded time and memory
(benchmarks/results/hostile-input.md, "Inputs at their limits").
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# --- file sizes [bytes] ----------------------------------------------------------------------

#: A YAML or JSON document: scenario, catalog overlay, inventory, plan.json, contract.yaml. The
#: largest benchmark scenario resolved with every offer spelled out is under 1 MiB.
MAX_DOCUMENT_BYTES = 16 * MIB
#: A CSV table: price table, measured capacity rows, calibration measurements. SkyPilot's
#: whole AWS catalog is a few MiB.
MAX_TABLE_BYTES = 64 * MIB
#: A request trace (CSV or JSON lines): 10^7 requests of Mooncake JSON with prefix-block ids.
MAX_TRACE_BYTES = 2 * GIB
#: A scenario workbook, compressed as stored on disk.
MAX_WORKBOOK_BYTES = 16 * MIB

#: Largest file read of each kind [bytes] (``models.input_files`` reads every file by its kind).
#: A vLLM ``--save-detailed`` result of 10,000 requests, a month of one-minute Prometheus samples
#: of vLLM's series, and SkyPilot's whole AWS catalog (2.4 MB) each fit with room to spare.
MAX_INPUT_BYTES: dict[str, int] = {
    "YAML or JSON document": MAX_DOCUMENT_BYTES,
    "CSV table": MAX_TABLE_BYTES,
    "request trace": MAX_TRACE_BYTES,
    "scenario workbook": MAX_WORKBOOK_BYTES,
    "benchmark result": 64 * MIB,
    "metrics export": 64 * MIB,
    "price catalog": 32 * MIB,
    "zone mapping": 4 * MIB,
}

# --- structure of YAML and JSON documents ---------------------------------------------------

#: Nesting of mappings and lists. A scenario nests six deep (catalog.gpus[0].efficiency.x).
MAX_DEPTH = 32
#: YAML aliases (``*name``) in one document: each repeats a whole subtree.
MAX_ALIASES = 1_000
#: Values in one document, counting every alias at the size of what it repeats: stops an
#: alias-expansion bomb (ten aliases of ten make 10^10 values) before it is built.
MAX_NODES = 1_000_000
#: Entries of any one list of a document (workloads, zones, offers, nodes, measured rows).
MAX_LIST_ENTRIES = 10_000
#: Rows of a CSV table fleetplan validates row by row (measured capacity, calibration
#: measurements): ten times the shared public measurements.
MAX_TABLE_ROWS = 100_000

# --- names and text --------------------------------------------------------------------------

#: Characters of a name (scenario, workload, zone, region, GPU, model, tenant, time block):
#: Hugging Face model ids (``organisation/name``) reach about a hundred.
MAX_NAME_CHARS = 128
#: Characters of free text (descriptions, sources, runtimes, digests).
MAX_TEXT_CHARS = 4_000

# --- traces ----------------------------------------------------------------------------------

#: Requests in one trace: a month of 4 req/s, or the largest public traces ×10.
MAX_TRACE_REQUESTS = 10_000_000
#: First to last arrival of a trace [s]: a year. Per-minute rates of a year are 527,040 values;
#: timestamps spanning centuries would need gigabytes.
MAX_TRACE_SPAN_S = 366 * 86_400.0
#: Prefix-block ids (Mooncake ``hash_ids``) of one trace: 800 MB as int64. The public Mooncake
#: trace has 0.4 million for 23,608 requests.
MAX_TRACE_PREFIX_BLOCKS = 100_000_000
#: Requests ``simulate`` replays: the event replay runs at roughly 25,000 to 100,000 requests a
#: second on one core (benchmarks/results/replay.md), so 10^6 requests end within a minute.
MAX_REPLAY_REQUESTS = 1_000_000
#: ``--rate-scale`` of ``simulate``: from 1/1000 to 1000 times the trace's rate.
MIN_RATE_SCALE = 1e-3
MAX_RATE_SCALE = 1e3

# --- workbooks -------------------------------------------------------------------------------

#: Bytes of a workbook's parts once unzipped (a zip of a few KiB can expand to gigabytes).
MAX_WORKBOOK_UNZIPPED_BYTES = 64 * MIB
#: Parts (zip entries) of a workbook; Excel writes about twenty.
MAX_WORKBOOK_PARTS = 1_000
#: Rows of one sheet, header included (every workload, offer or measured row is one).
MAX_SHEET_ROWS = MAX_LIST_ENTRIES + 10
#: Columns of one sheet; the template's widest sheet has 23.
MAX_SHEET_COLUMNS = 200
#: Cells of one sheet: 10,000 rows of the widest sheet (23 columns) filled, with room. Read
#: twice (values and formulas) and validated row by row: 250,000 cells take about 25 s.
MAX_SHEET_CELLS = 250_000


@dataclass(frozen=True)
class Range:
    """Allowed values of a numeric field, with the reason for its bounds."""

    low: float
    high: float
    unit: str
    reason: str
    low_open: bool = False
    """The low bound itself is not allowed (``> low``)."""
    high_open: bool = False

    def text(self, name: str = "x") -> str:
        """``0.001 ≤ peak_rps ≤ 10^6 req/s`` (``<`` where a bound is open)."""
        low = "<" if self.low_open else "≤"
        high = "<" if self.high_open else "≤"
        unit = "" if self.unit in ("", "1") else f" {self.unit}"
        return f"{_num(self.low)} {low} {name} {high} {_num(self.high)}{unit}"


def _num(x: float) -> str:
    """``0.001``, ``60,000``, ``10^6``, ``3.6 × 10^6``: a bound as people read it."""
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:,.10g}"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = x / 10**exponent
    if math.isclose(mantissa, 1.0):
        return f"10^{exponent}"
    return f"{mantissa:.4g} × 10^{exponent}"


_RATE = "beyond 10^6 req/s no service exists to plan; below 0.001 req/s (86 a day) the solver " \
        "reads the demand as zero"
_PRICE = "a GPU-hour in any currency lies in this range; a price of 0 or a typo of 10^9 " \
         "makes the cheapest fleet meaningless"
_STOCK = "the largest clusters hold about 10^5 GPUs"
_TOKENS = "no model reads or writes more than 10^7 tokens in one request"
_SHARE = "a share of capacity"
_SLO_MS = "an SLO longer than an hour is not a latency target"
_TFLOPS = "the fastest accelerators reach a few thousand; 10^6 is a typo"
_BANDWIDTH = "HBM and links reach a few TB/s; 10^6 GB/s is a typo"
_ARCH = "no published model is this large"
_BURST = "a ratio of arrival statistics (1 for a Poisson stream); 10^6 is a typo"

#: Allowed values of every numeric input field, by field name (names carry their unit, so one
#: name means one quantity wherever it appears).
RANGES: dict[str, Range] = {
    "peak_rps": Range(1e-3, 1e6, "req/s", _RATE),
    "tested_peak_rps": Range(1e-3, 1e6, "req/s", _RATE),
    "daily_requests": Range(1, 1e11, "requests/day",
                            "10^6 req/s for a whole day is 8.6 × 10^10"),
    "hourly_shape": Range(0, 1, "1", "a share of the peak hour's demand"),
    "p5": Range(1, 1e7, "tokens", _TOKENS),
    "p50": Range(1, 1e7, "tokens", _TOKENS),
    "p95": Range(1, 1e7, "tokens", _TOKENS),
    "p99": Range(1, 1e7, "tokens", _TOKENS),
    "mean": Range(0, 1e7, "tokens", _TOKENS, low_open=True),
    "prefix_cache_hit_rate": Range(0, 1, "1", "a share of input tokens", high_open=True),
    "target_utilization": Range(0.05, 1, "1",
                                "planning below 5 % of capacity buys 20 times what is needed"),
    "ttft_p95_ms": Range(0, 3.6e6, "ms", _SLO_MS, low_open=True),
    "tpot_p95_ms": Range(0, 6e4, "ms", "a minute per token is not a latency target",
                         low_open=True),
    "e2e_p95_ms": Range(0, 8.64e7, "ms", "a day per request is not a latency target",
                        low_open=True),
    "decode_p95_ms_per_token": Range(0, 6e4, "ms", "a minute per token is not a latency target",
                                     low_open=True),
    "price_per_gpu_hour": Range(1e-4, 1e6, "currency/GPU-hour", _PRICE),
    "stock_gpus": Range(0, 1e6, "GPUs", _STOCK),
    "commitment_months": Range(1, 120, "months", "no provider commits for more than 10 years"),
    "lead_time_weeks": Range(0, 520, "weeks", "ten years"),
    "startup_minutes": Range(0, 1440, "min", "a node that takes more than a day to start is "
                             "not on-demand capacity"),
    "on_demand_startup_minutes": Range(0, 1440, "min", "a node that takes more than a day to "
                                       "start is not on-demand capacity"),
    "interruption_rate_per_hour": Range(0, 1, "1/h", "a share of spot capacity per hour",
                                        high_open=True),
    "spot_interruption_rate_per_hour": Range(0, 1, "1/h", "a share of spot capacity per hour",
                                             high_open=True),
    "discount_vs_on_demand": Range(0, 1, "1", "a share of the on-demand price", high_open=True),
    "gpus_per_node": Range(1, 64, "GPUs", "the largest nodes sold hold 8 (72 in one NVLink "
                           "domain, sold as racks)"),
    "hours_per_month": Range(1, 744, "h", "31 days × 24 h = 744"),
    "failure_utilization": Range(0.05, 1, "1", "a share of the SLO-holding rate; below 5 % "
                                 "is a typo"),
    "monthly_budget": Range(0, 1e12, "currency/month", "beyond any fleet's budget",
                            low_open=True),
    "memory_margin_fraction": Range(0, 1, "1", "a share of GPU memory", high_open=True),
    "measured_max_age_days": Range(1, 36_500, "days", "a century"),
    "measured_length_tolerance": Range(0, 10, "1", "a share of the workload's length; 10 "
                                       "(1,000 %) accepts any test"),
    "tested_tokens": Range(0, 1e7, "tokens", _TOKENS, low_open=True),
    "achieved_rps": Range(0, 1e6, "req/s", "beyond 10^6 req/s no service exists to plan; 0: "
                          "a load that served nothing"),
    "tested_concurrency": Range(1, 1e7, "requests", "no replica holds 10^7 sequences"),
    "tested_latency_ms": Range(0, 8.64e7, "ms", "a day per request is no load test's latency"),
    "memory_gib": Range(0.5, 1e4, "GiB", "the largest GPUs hold a few hundred GiB"),
    "hbm_bandwidth_gb_per_s": Range(1, 1e6, "GB/s", _BANDWIDTH),
    "link_bandwidth_gb_per_s": Range(0.1, 1e6, "GB/s", _BANDWIDTH),
    "bf16_tflops": Range(0.1, 1e6, "TFLOP/s", _TFLOPS),
    "fp8_tflops": Range(0.1, 1e6, "TFLOP/s", _TFLOPS),
    "int8_tops": Range(0.1, 1e6, "TOP/s", _TFLOPS),
    "compute_efficiency": Range(0.01, 1, "1", "a share of the datasheet peak; below 1 % is a "
                                "typo"),
    "bandwidth_efficiency": Range(0.01, 1, "1", "a share of the datasheet peak; below 1 % is "
                                  "a typo"),
    "kv_bandwidth_efficiency": Range(0.01, 1, "1", "a share of the datasheet peak; below 1 % "
                                     "is a typo"),
    "link_efficiency": Range(0.01, 1, "1", "a share of the datasheet peak; below 1 % is a typo"),
    "decode_step_overhead_ms": Range(0, 1000, "ms", "a second per step is not a serving "
                                     "runtime"),
    "step_overhead_ms_per_layer": Range(0, 100, "ms/layer", "a tenth of a second per layer is "
                                        "not a serving runtime"),
    "step_overhead_ms_per_seq": Range(0, 100, "ms/sequence", "a tenth of a second per "
                                      "sequence is not a serving runtime"),
    "allreduce_latency_us": Range(0, 1e6, "µs", "a second per all-reduce is a typo"),
    "runtime_overhead_gib": Range(0, 1e4, "GiB", "more than any GPU holds"),
    "runtime_overhead_fraction": Range(0, 1, "1", "a share of GPU memory", high_open=True),
    "layers": Range(1, 1e4, "layers", _ARCH),
    "hidden_size": Range(1, 1e6, "1", _ARCH),
    "attention_heads": Range(1, 1e4, "heads", _ARCH),
    "kv_heads": Range(1, 1e4, "heads", _ARCH),
    "head_dim": Range(1, 1e5, "1", _ARCH),
    "ffn_size": Range(1, 1e7, "1", _ARCH),
    "vocab_size": Range(1, 1e8, "tokens", _ARCH),
    "total_params_b": Range(0, 1e5, "billion parameters", _ARCH, low_open=True),
    "active_params_b": Range(0, 1e5, "billion parameters", _ARCH, low_open=True),
    "max_context_tokens": Range(1, 1e8, "tokens", _ARCH),
    "kv_latent_dim": Range(1, 1e6, "1", _ARCH),
    "routed_experts": Range(2, 1e5, "experts", _ARCH),
    "experts_per_token": Range(1, 1e4, "experts", _ARCH),
    "routed_expert_params_b": Range(0, 1e5, "billion parameters", _ARCH, low_open=True),
    "tp": Range(1, 64, "GPUs", "a replica's GPUs sit in one node of at most 64"),
    "max_stable_sequences": Range(1, 1e7, "sequences", "no replica holds 10^7 sequences"),
    "upfront_share": Range(0, 1, "1", "a share of the commitment"),
    "capex_per_node": Range(0, 1e10, "currency", "a node costs a few million in any currency",
                            low_open=True),
    "life_months": Range(1, 240, "months", "no hardware is amortised over more than 20 years"),
    "gpu_tdp_w": Range(0, 1e5, "W", "the hungriest accelerators draw about 1 kW",
                       low_open=True),
    "node_overhead_w": Range(0, 1e6, "W", "a node's CPUs, memory and fans draw a few kW"),
    "average_utilization": Range(0, 1, "1", "a share of full power", low_open=True),
    "price_per_kwh": Range(0, 1e4, "currency/kWh", "electricity costs well under one unit of "
                           "most currencies per kWh"),
    "pue": Range(1, 5, "1", "data centres run at 1.1 to 2; 5 is a typo"),
    "hosting_per_node_month": Range(0, 1e9, "currency/(node·month)", "beyond any colocation "
                                    "price"),
    "running_cost_per_node_month": Range(0, 1e9, "currency/(node·month)", "beyond any "
                                         "colocation price"),
    "probability": Range(0, 1, "1", "a probability", low_open=True),
    "add_peak_rps": Range(0, 1e6, "req/s", "beyond 10^6 req/s no service exists to plan",
                          low_open=True),
    "add_daily_requests": Range(0, 1e11, "requests/day", "10^6 req/s for a whole day is "
                                "8.6 × 10^10", low_open=True),
    "replan_months": Range(1, 480, "months", "forty years"),
    "nodes": Range(0, 1e5, "nodes", "beyond any cluster built: a few zeros too many (10^9) "
                   "would lay out a list per node"),
    "replicas": Range(0, 1e6, "replicas", "10^6 replicas is beyond any fleet"),
    "interarrival_scv": Range(0, 1e6, "1", _BURST, low_open=True),
    "peak_1s_ratio": Range(0, 1e6, "1", _BURST, low_open=True),
    "peak_10s_ratio": Range(0, 1e6, "1", _BURST, low_open=True),
    "peak_60s_ratio": Range(0, 1e6, "1", _BURST, low_open=True),
    "window_gaps": Range(0, 1e6, "1", "a window in mean gaps between arrivals at the peak; "
                         "10^6 is a typo", low_open=True),
    "followers_mean": Range(0, 1e7, "requests", "arrivals following one arrival in a window"),
    "followers_variance": Range(0, 1e12, "requests²", "variance of that count"),
}


def bounded(field: str, default: Any = ..., **kwargs: Any) -> Any:
    """A pydantic ``Field`` holding ``field``'s values to :data:`RANGES`\\ [``field``]."""
    r = RANGES[field]
    bounds: dict[str, Any] = {"gt" if r.low_open else "ge": r.low,
                              "lt" if r.high_open else "le": r.high, "allow_inf_nan": False,
                              **kwargs}
    return Field(default, **bounds)


def range_fix(field: str) -> str:
    """The fix for a value out of ``field``'s range: the range and its reason ("" if none)."""
    r = RANGES.get(field)
    return "" if r is None else f"give {r.text(field)} ({r.reason})"


def _not_bool(value: Any) -> Any:
    """``true`` is not 1 and ``false`` is not 0: YAML's and JSON's yes/no are refused where a
    number belongs (pydantic would read them as 1 and 0)."""
    if isinstance(value, bool):
        raise PydanticCustomError("bool_not_number", "`{value}` is yes/no, not a number",
                                  {"value": str(value).lower()})
    return value


#: A real number, never a yes/no.
Real = Annotated[float, BeforeValidator(_not_bool)]
#: A whole number, never a yes/no.
Whole = Annotated[int, BeforeValidator(_not_bool)]


def _limited_list(value: Any) -> Any:
    if isinstance(value, list | tuple) and len(value) > MAX_LIST_ENTRIES:
        raise PydanticCustomError("too_many_entries",
                                  "{count} entries; at most {limit} are read",
                                  {"count": f"{len(value):,}", "limit": f"{MAX_LIST_ENTRIES:,}"})
    return value


#: Checks a list's length before its entries are validated (pydantic's ``max_length`` comes
#: after: 10^6 bad entries would be validated, and reported, first).
LimitedList = BeforeValidator(_limited_list)

#: Characters a name may not hold: control and format characters (terminal escapes, bidi
#: overrides, NUL) and line or paragraph separators.
_FORBIDDEN_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def bad_characters(text: str, allow: str = "") -> list[str]:
    """Characters of ``text`` a name or text may not hold (``allow``: exceptions, e.g. newline),
    each written as a code point (``U+001B``)."""
    found = {c for c in text if c not in allow and
             (unicodedata.category(c) in _FORBIDDEN_CATEGORIES or (c.isspace() and c != " "))}
    return [f"U+{ord(c):04X}" for c in sorted(found)]


def _name(value: str) -> str:
    if len(value) > MAX_NAME_CHARS:
        raise PydanticCustomError("name_too_long", "name of {count} characters; at most {limit}",
                                  {"count": len(value), "limit": MAX_NAME_CHARS})
    bad = bad_characters(value)
    if bad:
        raise PydanticCustomError("name_characters",
                                  "name holds control or invisible characters {chars}",
                                  {"chars": ", ".join(bad[:5])})
    if value != value.strip():
        raise PydanticCustomError("name_spaces", "name starts or ends with a space", {})
    return value


def _text(value: str) -> str:
    if len(value) > MAX_TEXT_CHARS:
        raise PydanticCustomError("text_too_long", "text of {count} characters; at most {limit}",
                                  {"count": len(value), "limit": MAX_TEXT_CHARS})
    bad = bad_characters(value, allow="\n\t")
    if bad:
        raise PydanticCustomError("text_characters",
                                  "text holds control or invisible characters {chars}",
                                  {"chars": ", ".join(bad[:5])})
    return value


#: A name: 1 to :data:`MAX_NAME_CHARS` printable characters, no leading or trailing space.
Name = Annotated[str, Field(min_length=1), AfterValidator(_name)]
#: Free text: up to :data:`MAX_TEXT_CHARS` printable characters, newlines and tabs allowed.
Text = Annotated[str, AfterValidator(_text)]

#: Fixes for the errors the annotated types above raise, by error type.
FIXES = {
    "bool_not_number": "give a number (true and false are not numbers)",
    "too_many_entries": "split the input (docs/limits.md)",
    "name_too_long": f"use a name of at most {MAX_NAME_CHARS} characters",
    "name_characters": "remove the control characters (escape sequences, tabs, newlines)",
    "name_spaces": "remove the leading and trailing spaces",
    "text_too_long": f"shorten it to at most {MAX_TEXT_CHARS:,} characters",
    "text_characters": "remove the control characters (escape sequences)",
    "points_json": "leave the cell empty, or re-import the load test with `fleetplan "
                   "import-bench --out`",
}
