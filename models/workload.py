"""Workload pools: who sends what, how fast, and what latency they were promised."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from models.common import Frozen, OmitDefaults, Precision, Survivability, WorkloadClass
from models.limits import LimitedList, Name, Real, Whole, bounded

HOURS_PER_DAY = 24
#: Seconds in an hour: rates [1/s] × this = requests an hour.
SECONDS_PER_HOUR = 3600.0

#: Target utilization when a workload does not state one: interactive pools keep queueing low.
DEFAULT_TARGET_UTILIZATION: dict[WorkloadClass, float] = {
    WorkloadClass.interactive: 0.7,
    WorkloadClass.batch: 0.9,
}


class TokenPercentiles(Frozen):
    """Token-length percentiles of one direction (input or output) [tokens]."""

    p50: Whole = bounded("p50")
    p95: Whole = bounded("p95")
    p99: Whole = bounded("p99")
    mean: Real | None = bounded("mean", None)
    """Mean length where known (traces give it); used for token volumes, else P50 is used."""
    p5: Whole | None = bounded("p5", None)
    """5th percentile where known (traces give it): the lower tail, where the short outputs
    that set the per-token P95 are (docs/capacity-model.md, "Length distributions")."""

    @model_validator(mode="after")
    def _rising(self) -> TokenPercentiles:
        if not self.p50 <= self.p95 <= self.p99:
            raise ValueError(
                f"percentiles must rise: p50 {self.p50} <= p95 {self.p95} <= p99 {self.p99}"
            )
        if self.p5 is not None and self.p5 > self.p50:
            raise ValueError(f"percentiles must rise: p5 {self.p5} <= p50 {self.p50}")
        return self

    @property
    def typical(self) -> float:
        """Tokens per request for volume and cost figures: the mean, else the median [tokens]."""
        return self.mean if self.mean is not None else float(self.p50)


class Slo(Frozen):
    """Latency promised at the 95th percentile."""

    ttft_p95_ms: Real = bounded("ttft_p95_ms")
    """Time to first token [ms]."""
    tpot_p95_ms: Real | None = bounded("tpot_p95_ms", None)
    """Time per output token after the first [ms]; required unless the workload's outputs are
    one token at P95 (an embedding or a reranker: no second token, no per-token time), which
    plan on the TTFT alone (:attr:`Workload.tpot_slo_ms`)."""
    e2e_p95_ms: Real | None = bounded("e2e_p95_ms", None)
    """End-to-end request latency [ms], optional."""


class FollowerPoint(Frozen):
    """The arrivals that follow one arrival within a window, over a trace's arrivals
    (``fleetplan profile``; docs/capacity-model.md, "Bursts divided over replicas")."""

    window_gaps: Real = bounded("window_gaps")
    """The window × the trace's busiest-minute rate: the arrivals a steady stream at the peak
    brings in it [1]."""
    followers_mean: Real = bounded("followers_mean")
    """Mean number of arrivals following an arrival within the window [requests]."""
    followers_variance: Real = bounded("followers_variance")
    """Their variance [requests²]."""


class Burst(Frozen):
    """How bursty arrivals are beside a Poisson stream of the same rate (``fleetplan profile``
    measures it from a trace; docs/capacity-model.md, "Bursty arrivals").

    The capacity model uses ``interarrival_scv``; the peak ratios describe the trace (a
    Poisson stream of 5 req/s has a busiest second of about 3× its mean in an hour)."""

    interarrival_scv: Real = bounded("interarrival_scv", 1.0)
    """Squared coefficient of variation of the times between arrivals [1]: 1 for Poisson,
    above 1 when requests come in bursts."""
    peak_1s_ratio: Real | None = bounded("peak_1s_ratio", None)
    """Busiest 1-s rate ÷ the mean rate of its hour [1]."""
    peak_10s_ratio: Real | None = bounded("peak_10s_ratio", None)
    """Busiest 10-s rate ÷ the mean rate of its hour [1]."""
    peak_60s_ratio: Real | None = bounded("peak_60s_ratio", None)
    """Busiest minute's rate ÷ the mean rate of its hour [1]."""
    followers: tuple[FollowerPoint, ...] | None = None
    """Arrivals following an arrival, per window (rising ``window_gaps``): with it the model
    divides bursts over the replicas and counts a request's burst-mates (docs/capacity-model.md,
    "Bursts divided over replicas"); ``None``: the SCV alone."""
    measured_from: str | None = None
    """The trace the planner measured this block from, as ``fleetplan profile`` prints it,
    where the workload links a trace (``arrival.trace``) and states no ``burst``
    (docs/replay.md, "Replay in the plan"); ``None``: stated in the scenario. A scenario that
    states a block with ``measured_from`` (a plan's ``scenario.resolved.yaml`` read back) has
    it kept as measured only while its figures equal what profiling that trace gives
    (solver.replay.trace_burst.with_trace_bursts); else it is taken as stated, edited."""
    _planner_measured: bool = PrivateAttr(default=False)
    """The planner measured this block because the scenario states none (set by
    ``with_trace_bursts``, never read from a file)."""
    _edited_from: str | None = PrivateAttr(default=None)
    """Where the scenario stated ``measured_from`` but the figures are not what that trace
    gives: why, and the trace (set by ``with_trace_bursts``): the block is taken as stated."""

    @property
    def planner_measured(self) -> bool:
        """Measured by the planner from the linked trace: the scenario states no block."""
        return self._planner_measured

    @property
    def edited_from(self) -> str | None:
        """Why a block stating ``measured_from`` is taken as stated instead (its figures differ
        from the trace's, or the trace could not be read); ``None`` otherwise."""
        return self._edited_from

    @field_validator("followers")
    @classmethod
    def _rising_windows(cls, points: tuple[FollowerPoint, ...] | None
                        ) -> tuple[FollowerPoint, ...] | None:
        if points is not None:
            gaps = [p.window_gaps for p in points]
            if not points or any(b <= a for a, b in itertools.pairwise(gaps)):
                raise ValueError(f"followers: window_gaps must rise, got {gaps}")
        return points


class TraceLink(Frozen):
    """A request trace of the workload, replayed against the plan at its peak (``fleetplan
    plan``; docs/replay.md, "Replay in the plan")."""

    path: str
    """Trace file, relative to the scenario file (absolute once the scenario is resolved)."""
    format: Literal["azure", "mooncake", "csv"] | None = None
    """Trace format (default: detected from the file)."""
    scale_to: Literal["peak_minute", "peak_hour"] = "peak_minute"
    """What of the trace is scaled to the planned peak (``peak_rps``): its busiest minute, or
    its busiest hour's mean (the whole trace's mean when it spans under an hour)."""
    _window: ReplayedArrivals | None = PrivateAttr(default=None)
    """The arrivals ``plan`` replays of this trace (set by
    ``solver.replay.plan_replay.with_replay_windows``, never read from a file): the capacity
    model's TTFT from the trace (docs/capacity-model.md, "The TTFT P95 on the replayed
    window")."""

    @property
    def window(self) -> ReplayedArrivals | None:
        """The arrivals ``plan`` replays of this trace, where the scenario's loader cut them;
        ``None``: not cut (the capacity model then uses its queueing estimate alone)."""
        return self._window


@dataclass(frozen=True)
class ReplayedArrivals:
    """A trace's arrivals as the plan's replay cuts them: scaled so its busiest minute (or
    hour) is ``peak_rps``, warm-up and window, times from the cut's start."""

    arrival_s: tuple[float, ...]
    """Arrival times [s from the cut's start], rising."""
    input_tokens: tuple[int, ...] | None
    """Each request's prompt [tokens]; ``None``: the trace has no lengths."""
    since_s: float
    """Start of the window the replay's P95s are over (the warm-up before it) [s]."""
    peak_rps: float
    """The planned peak the times were scaled to [1/s]."""
    output_tokens: tuple[int, ...] | None = None
    """Each request's output [tokens]; ``None``: the workload's typical output for each."""


class Arrival(Frozen):
    """Arrival rate at the busiest minute and the shape of the peak day around it."""

    peak_rps: Real = bounded("peak_rps")
    """Requests per second at the busiest minute [1/s]."""
    hourly_shape: tuple[Real, ...] = (1.0,) * HOURS_PER_DAY
    """Peak-day demand per hour as a share of ``peak_rps``; 24 values, the largest 1.0."""
    burst: Burst | None = None
    """Burstiness of the arrivals; ``None``: a Poisson stream."""
    trace: TraceLink | None = None
    """A trace of these arrivals, replayed against the plan (``None``: no replay)."""

    @property
    def interarrival_scv(self) -> float:
        """The SCV of inter-arrival times the capacity model uses: 1 (Poisson) without
        ``burst`` [1]."""
        return 1.0 if self.burst is None else self.burst.interarrival_scv

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

    daily_requests: Real = bounded("daily_requests")
    window_hours: tuple[Whole, ...] = Field(min_length=1)
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


class DemandEvent(Frozen):
    """A known change of demand from one planning period on: a launch, a new customer.

    Adds a peak (``add_peak_rps`` at the hours of ``hourly_shape``, default the workload's own
    shape) or a daily volume (``add_daily_requests``, batch workloads) from ``from_period``
    (0 = the horizon's first period) on. Growth multiplies the workload's own demand, not an
    event's: a launch states what it adds in each period it is on.
    """

    name: Name
    from_period: Whole = Field(ge=0)
    add_peak_rps: Real | None = bounded("add_peak_rps", None)
    """Requests per second the event adds at its busiest hour [1/s]."""
    add_daily_requests: Real | None = bounded("add_daily_requests", None)
    """Requests per day the event adds to a batch volume [requests/day]."""
    hourly_shape: tuple[Real, ...] | None = None
    """The event's demand per hour as a share of ``add_peak_rps``; default the workload's."""

    @model_validator(mode="after")
    def _adds_one_thing(self) -> DemandEvent:
        if (self.add_peak_rps is None) == (self.add_daily_requests is None):
            raise ValueError("give exactly one of add_peak_rps or add_daily_requests")
        if self.hourly_shape is not None:
            Arrival(peak_rps=1.0, hourly_shape=self.hourly_shape)  # the same rules as a shape
        return self


class Migration(Frozen):
    """From one planning period on, a workload runs another model, precision or runtime.

    The capacity rows of what it ran before expire at that period (a measured row names its
    model, precision and runtime).
    """

    from_period: Whole = Field(ge=1)
    model: Name | None = None
    precision: Precision | None = None
    runtime: Name | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> Migration:
        if self.model is None and self.precision is None and self.runtime is None:
            raise ValueError("a migration names the model, precision or runtime it moves to")
        return self


class Workload(OmitDefaults):
    """One pool: a model at a precision serving one task for one tenant under one SLO."""

    omit_when_default = ("growth", "events", "migrations", "from_period")

    name: Name
    model: Name
    precision: Precision = Precision.bf16
    workload_class: WorkloadClass = Field(WorkloadClass.interactive, alias="class")
    tenant: Name = "default"
    """Tenant or product the cost is attributed to."""
    runtime: Name = "vllm"
    """Serving runtime and version (e.g. ``vllm-0.6.3``); a measured row on another is stale."""
    arrival: Arrival | None = None
    batch: BatchVolume | None = None
    input_tokens: TokenPercentiles
    output_tokens: TokenPercentiles
    prefix_cache_hit_rate: Real = bounded("prefix_cache_hit_rate", 0.0)
    """Share of input tokens whose KV is already cached and need no prefill [1]."""
    slo: Slo
    survivability: Survivability = Survivability.none
    allowed_gpus: Annotated[tuple[Name, ...], LimitedList] | None = None
    """GPU types this pool may use; ``None`` means every type in the catalog."""
    target_utilization: Real | None = bounded("target_utilization", None)
    """Share of the SLO-holding rate planned at peak; default 0.7 interactive, 0.9 batch."""
    growth: tuple[Real, ...] = ()
    """Demand multiplier per planning period of the ``horizon`` (peak rate and daily volume)
    [1]; empty: 1 in every period."""
    events: Annotated[tuple[DemandEvent, ...], LimitedList] = ()
    """Known changes of demand from a period on (launches)."""
    migrations: Annotated[tuple[Migration, ...], LimitedList] = ()
    """Model, precision or runtime changes from a period on, in period order."""
    from_period: Whole = Field(0, ge=0)
    """First planning period of the ``horizon`` the workload runs in (0 = the first; a period
    index, as an event's or a migration's ``from_period``): a launch. Before it the workload
    is absent from the plan — no demand, no replicas, no capacity rows — where an event only
    adds demand to a workload already running (which needs some demand, and so replicas,
    before). ``growth`` stays indexed by the horizon's periods; its values before this period
    are not used."""

    @field_validator("growth")
    @classmethod
    def _positive_growth(cls, growth: tuple[float, ...]) -> tuple[float, ...]:
        bad = [f"[{i}] is {g:g}" for i, g in enumerate(growth) if g <= 0]
        if bad:
            raise ValueError("growth multipliers must be > 0 (one per planning period): "
                             + ", ".join(bad))
        return growth

    @model_validator(mode="after")
    def _demand_given_once(self) -> Workload:
        if (self.arrival is None) == (self.batch is None):
            raise ValueError("give exactly one of arrival (peak rate) or batch (daily volume)")
        if self.batch is not None and self.workload_class is not WorkloadClass.batch:
            raise ValueError("a daily volume with a window (batch) needs class: batch")
        for event in self.events:
            if (event.add_daily_requests is None) != (self.batch is None):
                raise ValueError(f"event {event.name}: a batch workload adds "
                                 "add_daily_requests, an arrival adds add_peak_rps")
        starts = [m.from_period for m in self.migrations]
        if starts != sorted(set(starts)):
            raise ValueError("migrations must be listed in period order, one per period")
        if self.slo.tpot_p95_ms is None and self.has_second_token:
            raise ValueError(
                f"slo.tpot_p95_ms is required: outputs have a second token (output_tokens.p95 "
                f"{self.output_tokens.p95}); only a workload whose outputs are one token at P95 "
                "(an embedding, a reranker) plans on the TTFT alone (docs/capacity-model.md, "
                "\"One-token outputs\")")
        return self

    @property
    def has_second_token(self) -> bool:
        """Outputs decode past their first token: ``output_tokens.p95 > 1``. At a P95 of 1
        the P50 is 1 too and the capacity model's output lengths are one token each
        (``solver.capacity.queueing.length_samples``): no request has a per-token time."""
        return self.output_tokens.p95 > 1

    @property
    def tpot_slo_ms(self) -> float:
        """The per-token P95 SLO planned for [ms]: ``slo.tpot_p95_ms``, or infinite (never
        binding) where outputs have no second token or the SLO states none."""
        if self.slo.tpot_p95_ms is None or not self.has_second_token:
            return math.inf
        return self.slo.tpot_p95_ms

    def runs_in(self, period: int) -> bool:
        """The workload runs in planning period ``period`` (it has launched by then)."""
        return self.from_period <= period

    def in_period(self, period: int, multiplier: float = 1.0) -> Workload:
        """The workload as it runs in one planning period: its own growth there times
        ``multiplier`` (a demand scenario's) on its demand, the events on by then added, and
        the model, precision and runtime of the last migration started by then. The result has
        no growth, events or migrations: a single-period workload.
        """
        factor = (self.growth[period] if period < len(self.growth) else 1.0) * multiplier
        update: dict[str, object] = {"growth": (), "events": (), "migrations": (),
                                     "from_period": 0}
        for migration in self.migrations:
            if migration.from_period <= period:
                update.update({k: getattr(migration, k) for k in ("model", "precision", "runtime")
                               if getattr(migration, k) is not None})
        events = [e for e in self.events if e.from_period <= period]
        if self.batch is not None:
            volume = self.batch.daily_requests * factor + sum(
                e.add_daily_requests or 0.0 for e in events)
            update["batch"] = self.batch.model_copy(update={"daily_requests": volume})
        elif self.arrival is not None:
            hourly = [self.arrival.peak_rps * s * factor for s in self.arrival.hourly_shape]
            for e in events:
                shape = e.hourly_shape or self.arrival.hourly_shape
                hourly = [h + (e.add_peak_rps or 0.0) * s for h, s in zip(hourly, shape,
                                                                          strict=True)]
            peak = max(hourly)
            shape = (tuple(h / peak for h in hourly) if events else self.arrival.hourly_shape)
            update["arrival"] = self.arrival.model_copy(update={"peak_rps": peak,
                                                                "hourly_shape": shape})
        return self.model_copy(update=update)

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
        per_hour_rps = self.batch.daily_requests / (len(self.batch.window_hours) * SECONDS_PER_HOUR)
        window = set(self.batch.window_hours)
        return tuple(per_hour_rps if h in window else 0.0 for h in range(HOURS_PER_DAY))
