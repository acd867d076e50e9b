"""Measured capacity rows: the configuration matrix capacity planners keep from load tests."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable

from models.common import OmitDefaults, Precision
from models.limits import Name, Real, Text, Whole, bounded
from models.text import csv_cell


class MeasuredCapacity(OmitDefaults):
    """One load-tested configuration. Where it matches a workload it overrides the analytic model.

    ``tested_peak_rps`` is the replica's SLO-holding rate: the highest request rate at which the
    test held the workload's TTFT and per-token P95.
    """

    omit_when_default = ("source",)

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
    source: Text | None = None
    """Where the row came from (``fleetplan import-bench`` writes the tool, the files and how
    the rate was found)."""


#: Columns of a measured-capacity CSV, in the order fleetplan writes them.
MEASURED_COLUMNS = tuple(MeasuredCapacity.model_fields)


def measured_csv(rows: Iterable[MeasuredCapacity]) -> str:
    """Rows as a measured-capacity CSV (``measured_csv`` of a scenario), header first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(MEASURED_COLUMNS)
    for row in rows:
        values = row.model_dump(mode="json")
        writer.writerow(["" if values.get(c) is None else csv_cell(values[c])
                         for c in MEASURED_COLUMNS])
    return out.getvalue()
