"""Measured capacity rows: the configuration matrix capacity planners keep from load tests."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable

from pydantic import Field

from models.common import OmitDefaults, Precision


class MeasuredCapacity(OmitDefaults):
    """One load-tested configuration. Where it matches a workload it overrides the analytic model.

    ``tested_peak_rps`` is the replica's SLO-holding rate: the highest request rate at which the
    test held the workload's TTFT and per-token P95.
    """

    omit_when_default = ("source",)

    model: str = Field(min_length=1)
    model_digest: str | None = None
    gpu: str = Field(min_length=1)
    runtime: str = Field(min_length=1)
    precision: Precision
    tp: int = Field(ge=1)
    workload: str = Field(min_length=1)
    max_stable_sequences: int = Field(ge=1)
    tested_peak_rps: float = Field(gt=0)
    ttft_p95_ms: float = Field(gt=0)
    decode_p95_ms_per_token: float = Field(gt=0)
    measured_on: dt.date
    source: str | None = None
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
        writer.writerow(["" if values.get(c) is None else values[c] for c in MEASURED_COLUMNS])
    return out.getvalue()
