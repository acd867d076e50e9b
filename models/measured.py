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

    omit_when_default = ("source", *(f"{d}_tokens_{s}" for d in ("input", "output")
                                      for s in ("mean", "p50", "p95")), "origin")
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
    """Rows as a measured-capacity CSV (``measured_csv`` of a scenario), header first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(MEASURED_COLUMNS)
    for row in rows:
        values = row.model_dump(mode="json")
        writer.writerow(["" if values.get(c) is None else csv_cell(values[c])
                         for c in MEASURED_COLUMNS])
    return out.getvalue()
