"""Workload pools: who sends what, how fast, and what latency they were promised."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from models.common import Frozen, Precision, Survivability, WorkloadClass

HOURS_PER_DAY = 24

#: Target utilization when a workload does not state one: interactive pools keep queueing low.
DEFAULT_TARGET_UTILIZATION: dict[WorkloadClass, float] = {
    WorkloadClass.interactive: 0.7,
    WorkloadClass.batch: 0.9,
}


class TokenPercentiles(Frozen):
    """Token-length percentiles of one direction (input or output) [tokens]."""

    p50: int = Field(ge=1)
    p95: int = Field(ge=1)
    p99: int = Field(ge=1)
    mean: float | None = Field(None, gt=0)
    """Mean length where known (traces give it); used for token volumes, else P50 is used."""

    @model_validator(mode="after")
    def _rising(self) -> TokenPercentiles:
        if not self.p50 <= self.p95 <= self.p99:
            raise ValueError(
                f"percentiles must rise: p50 {self.p50} <= p95 {self.p95} <= p99 {self.p99}"
            )
        return self

    @property
    def typical(self) -> float:
        """Tokens per request for volume and cost figures: the mean, else the median [tokens]."""
        return self.mean if self.mean is not None else float(self.p50)


class Slo(Frozen):
    """Latency promised at the 95th percentile."""

    ttft_p95_ms: float = Field(gt=0)
    """Time to first token [ms]."""
    tpot_p95_ms: float = Field(gt=0)
    """Time per output token after the first [ms]."""
    e2e_p95_ms: float | None = Field(None, gt=0)
    """End-to-end request latency [ms], optional."""


class Arrival(Frozen):
    """Arrival rate at the busiest minute and the shape of the peak day around it."""

    peak_rps: float = Field(gt=0)
    """Requests per second at the busiest minute [1/s]."""
    hourly_shape: tuple[float, ...] = (1.0,) * HOURS_PER_DAY
    """Peak-day demand per hour as a share of ``peak_rps``; 24 values, the largest 1.0."""

    @field_validator("hourly_shape")
    @classmethod
    def _shape(cls, shape: tuple[float, ...]) -> tuple[float, ...]:
        if len(shape) != HOURS_PER_DAY:
            raise ValueError(f"hourly_shape needs 24 values (one per hour), got {len(shape)}")
        if any(v < 0 or v > 1 for v in shape):
            raise ValueError("hourly_shape values are shares of the peak and must lie in [0, 1]")
        if max(shape) != 1.0:
            raise ValueError(
                f"the largest hourly_shape value must be 1.0 (the peak hour), got {max(shape)}; "
                "divide every value by the largest"
            )
        return shape


class BatchVolume(Frozen):
    """A batch job stated as a daily volume that must finish inside a window of hours."""

    daily_requests: float = Field(gt=0)
    window_hours: tuple[int, ...] = Field(min_length=1)
    """Hours of the day (0-23, local to the plan) in which the work may run."""

    @field_validator("window_hours")
    @classmethod
    def _hours(cls, hours: tuple[int, ...]) -> tuple[int, ...]:
        bad = [h for h in hours if not 0 <= h < HOURS_PER_DAY]
        if bad:
            raise ValueError(f"window hours must lie in 0..23, got {bad}")
        if len(set(hours)) != len(hours):
            raise ValueError("window_hours lists an hour twice")
        return tuple(sorted(hours))


class Workload(Frozen):
    """One pool: a model at a precision serving one task for one tenant under one SLO."""

    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    precision: Precision = Precision.bf16
    workload_class: WorkloadClass = Field(WorkloadClass.interactive, alias="class")
    tenant: str = "default"
    """Tenant or product the cost is attributed to."""
    runtime: str = "vllm"
    """Serving runtime and version (e.g. ``vllm-0.6.3``); a measured row on another is stale."""
    arrival: Arrival | None = None
    batch: BatchVolume | None = None
    input_tokens: TokenPercentiles
    output_tokens: TokenPercentiles
    prefix_cache_hit_rate: float = Field(0.0, ge=0, lt=1)
    """Share of input tokens whose KV is already cached and need no prefill [1]."""
    slo: Slo
    survivability: Survivability = Survivability.none
    allowed_gpus: tuple[str, ...] | None = None
    """GPU types this pool may use; ``None`` means every type in the catalog."""
    target_utilization: float | None = Field(None, gt=0, le=1)
    """Share of the SLO-holding rate planned at peak; default 0.7 interactive, 0.9 batch."""

    @model_validator(mode="after")
    def _demand_given_once(self) -> Workload:
        if (self.arrival is None) == (self.batch is None):
            raise ValueError("give exactly one of arrival (peak rate) or batch (daily volume)")
        if self.batch is not None and self.workload_class is not WorkloadClass.batch:
            raise ValueError("a daily volume with a window (batch) needs class: batch")
        return self

    @property
    def utilization(self) -> float:
        """Target utilization in force: the stated one, else the class default [1]."""
        if self.target_utilization is not None:
            return self.target_utilization
        return DEFAULT_TARGET_UTILIZATION[self.workload_class]

    def hourly_demand_rps(self) -> tuple[float, ...]:
        """Arrival rate per hour of the peak day [1/s]; zero outside a batch window.

        A batch volume is spread evenly over its window (the program may reshape it).
        """
        if self.arrival is not None:
            return tuple(self.arrival.peak_rps * s for s in self.arrival.hourly_shape)
        assert self.batch is not None
        per_hour_rps = self.batch.daily_requests / (len(self.batch.window_hours) * 3600.0)
        window = set(self.batch.window_hours)
        return tuple(per_hour_rps if h in window else 0.0 for h in range(HOURS_PER_DAY))
