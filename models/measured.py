"""Measured capacity rows: the configuration matrix capacity planners keep from load tests."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from models.common import Frozen, OmitDefaults, Precision
from models.limits import LimitedList, Name, Real, Text, Whole, bounded
from models.text import csv_cell, decimal_float


class MeasuredPoint(Frozen):
    """One tested load of the sweep a measured row was imported from, as the load-test tool
    reported it (``fleetplan import-bench`` keeps every point; repeats of one load merged into
    their worst latencies and mean throughput).

    The load is an offered rate (``offered_rps``), a concurrency (``concurrency``) or neither
    (every request at once). Latencies are of the successful requests [ms]; ``tpot_*`` is the
    time per output token after the first (the SLO's per-token figure).
    """

    offered_rps: Real | None = bounded("achieved_rps", None)
    """Request rate the test offered [1/s] (``None``: the load was a concurrency)."""
    concurrency: Real | None = bounded("tested_concurrency", None)
    """Requests the test kept in flight [requests] (``None``: the load was a rate)."""
    achieved_rps: Real = bounded("achieved_rps")
    """Requests served per second at this load [1/s]."""
    ttft_p50_ms: Real | None = bounded("tested_latency_ms", None)
    ttft_p95_ms: Real = bounded("tested_latency_ms")
    tpot_p50_ms: Real | None = bounded("tested_latency_ms", None)
    """Median time per output token after the first [ms/token] (``None``: not reported)."""
    tpot_p95_ms: Real = bounded("tested_latency_ms")
    """95th-percentile time per output token after the first [ms/token]."""
    e2e_mean_ms: Real | None = bounded("tested_latency_ms", None)
    e2e_p50_ms: Real | None = bounded("tested_latency_ms", None)
    e2e_p95_ms: Real | None = bounded("tested_latency_ms", None)
    """End-to-end latency of a request: mean, median and P95 [ms] (``None``: not reported)."""

    def load_text(self) -> str:
        """The load as people name it: ``concurrency 4``, ``offered 2 req/s``, ``unbounded``."""
        if self.concurrency is not None:
            return f"concurrency {self.concurrency:g}"
        if self.offered_rps is not None:
            return f"offered {self.offered_rps:g} req/s"
        return "unbounded"


def _points_cell(value: Any) -> Any:
    """A measured CSV's ``points`` cell (JSON text, empty for none) as a list; a YAML list as
    it is."""
    if value is None:
        return ()
    if isinstance(value, str):
        if not value.strip():
            return ()
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise PydanticCustomError(
                "points_json", "not a JSON list of load-test points (as `fleetplan "
                "import-bench` writes them)", {}) from None
    return value


#: The sweep's points of a measured row, lightest load first (JSON text in a measured CSV).
MeasuredPoints = Annotated[tuple[MeasuredPoint, ...], LimitedList,
                           BeforeValidator(_points_cell)]


def points_cell(points: Iterable[MeasuredPoint]) -> str:
    """Points as the JSON text of a measured CSV's ``points`` cell: one object per point, the
    fields not reported left out, numbers to the CSV's digits ("" for none)."""
    out = [{k: decimal_float(v) for k, v in p.model_dump().items() if v is not None}
           for p in points]
    return json.dumps(out, separators=(",", ":")) if out else ""


class MeasuredCapacity(OmitDefaults):
    """One load-tested configuration. Where it matches a workload it overrides the analytic model.

    ``tested_peak_rps`` is the replica's SLO-holding rate: the highest request rate at which the
    test held the workload's TTFT and per-token P95.
    """

    omit_when_default = ("source", *(f"{d}_tokens_{s}" for d in ("input", "output")
                                      for s in ("mean", "p50", "p95")), "origin", "points")
    label_fields = ("origin",)

    model: Name
    model_digest: Text | None = None
    gpu: Name
    runtime: Name
    precision: Precision
    tp: Whole = bounded("tp")
    workload: Name
    max_stable_sequences: Whole = bounded("max_stable_sequences")
    tested_peak_rps: Real = bounded("tested_peak_rps")
    ttft_p95_ms: Real = bounded("ttft_p95_ms")
    decode_p95_ms_per_token: Real = bounded("decode_p95_ms_per_token")
    measured_on: dt.date
    input_tokens_mean: Real | None = bounded("tested_tokens", None)
    """Mean prompt length the load test sent [tokens]; ``None``: the files do not say."""
    input_tokens_p50: Real | None = bounded("tested_tokens", None)
    """Median prompt length of the test [tokens] (``None``: not recorded)."""
    input_tokens_p95: Real | None = bounded("tested_tokens", None)
    """95th-percentile prompt length of the test [tokens] (``None``: not recorded)."""
    output_tokens_mean: Real | None = bounded("tested_tokens", None)
    """Mean output length of the test [tokens] (``None``: not recorded)."""
    output_tokens_p50: Real | None = bounded("tested_tokens", None)
    """Median output length of the test [tokens] (``None``: not recorded)."""
    output_tokens_p95: Real | None = bounded("tested_tokens", None)
    """95th-percentile output length of the test [tokens] (``None``: not recorded)."""
    points: MeasuredPoints = ()
    """Every tested load of the sweep the row was imported from, lightest first (empty: the
    row keeps only its SLO-holding point). ``check`` interpolates its steady-state latencies
    between them (docs/capacity-model.md, "Latency at another rate")."""
    source: Text | None = None
    """Where the row came from (``fleetplan import-bench`` writes the tool, the files and how
    the rate was found)."""
    origin: Text | None = None
    """Where the scenario read the row: ``measured.csv line 3`` or ``chat.yaml measured[0]``
    (set by the loader, kept by ``scenario.resolved.yaml``; not a CSV column)."""

    def tested_lengths(self, direction: str) -> dict[str, float]:
        """The recorded lengths of ``direction`` (``input`` or ``output``) by statistic
        (``mean``, ``p50``, ``p95``), leaving out those not recorded [tokens]."""
        values = {s: getattr(self, f"{direction}_tokens_{s}") for s in ("mean", "p50", "p95")}
        return {s: v for s, v in values.items() if v is not None}


#: Columns of a measured-capacity CSV, in the order fleetplan writes them (``origin`` is where
#: the scenario read a row, not a column).
MEASURED_COLUMNS = tuple(f for f in MeasuredCapacity.model_fields if f != "origin")


def measured_csv(rows: Iterable[MeasuredCapacity]) -> str:
    """Rows as a measured-capacity CSV (``measured_csv`` of a scenario), header first; the
    ``points`` column only where a row keeps points (a table of rows without stays as it was
    written before the column existed)."""
    rows = list(rows)
    columns = [c for c in MEASURED_COLUMNS if c != "points" or any(r.points for r in rows)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        values = row.model_dump(mode="json")
        values["points"] = points_cell(row.points)
        writer.writerow(["" if values.get(c) is None else csv_cell(values[c])
                         for c in columns])
    return out.getvalue()
