"""Measured capacity rows: the configuration matrix capacity planners keep from load tests."""

from __future__ import annotations

import datetime as dt

from pydantic import Field

from models.common import Frozen, Precision


class MeasuredCapacity(Frozen):
    """One load-tested configuration. Where it matches a workload it overrides the analytic model.

    ``tested_peak_rps`` is the replica's SLO-holding rate: the highest request rate at which the
    test held the workload's TTFT and per-token P95.
    """

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
