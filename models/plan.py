"""The plan: a typed, frozen result of the integer program, written as ``plan.json``.

Semantics other tools depend on: a replica's usable capacity is ``replica_capacity_rps`` × the
workload's target utilization; after a failure it may run up to ``replica_capacity_rps`` × the
policy's failure utilization; a measured row's ``tested_peak_rps`` is its SLO-holding rate.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import ClassVar

from pydantic import Field

from models.common import (
    CapacitySource,
    Frozen,
    OmitDefaults,
    PurchaseKind,
    SolveStatus,  # with the shared enums, so labels need not build the plan's models
    Upfront,
)


class SolverStage(OmitDefaults):
    """One stage of the solve (a start, an improvement step, the joint solve) and what it left."""

    omit_when_default: ClassVar[tuple[str, ...]] = ("cpu_s",)

    name: str
    seconds: float = Field(ge=0)
    """Wall time the stage ran [s]."""
    cost_after: float | None = None
    """Monthly cost of the best verified fleet when the stage ended [currency/month]."""
    bound_after: float | None = None
    """Best proven lower bound when the stage ended [currency/month]."""
    cpu_s: float | None = Field(default=None, ge=0)
    """CPU time of a stage run in a process of its own beside the plan's (the joint root over
    periods, ``joint-beside``), which the plan process's own CPU time does not count [s]."""


#: The stage a plan over periods records where no stage found a fleet within its time limit
#: and its fleet was built without a solver (solver/solve/horizon.py, ``fallback_fleet``).
FALLBACK_STAGE = "fallback"

#: The stages of a plan before its search, inside its time limit: the seconds before
#: planning began (the process's start-up and reading the scenario, where the plan's clock
#: counts from the process's start: ``fleetplan plan``), building its capacity tables, then
#: its program.
READ_STAGE = "read"
CAPACITY_STAGE = "capacity"
BUILD_STAGE = "build"


class SolverReport(OmitDefaults):
    """What the solver said: who, how long, and how close to proven optimal."""

    omit_when_default = ("gap_limit",)

    name: str
    seconds: float = Field(ge=0)
    gap: float | None = None
    """Relative MIP gap (objective − bound) / objective at the end [1]."""
    bound: float | None = None
    """Best proven lower bound on the monthly cost [currency/month]."""
    objective: float | None = None
    stages: tuple[SolverStage, ...] = ()
    """What each stage of the solve did, in the order they ended."""
    gap_limit: float | None = None
    """The relative gap the solve was asked to stop at (``plan --gap``) [1]: status
    ``optimal`` means ``gap`` ≤ this, not a proven cheapest fleet. ``None``: not recorded
    (plans of ``compare``, ``sweep`` and earlier versions)."""

    @property
    def fallback(self) -> bool:
        """The fleet is the fallback (``FALLBACK_STAGE``): no stage found one in time, or none
        as cheap."""
        return any(s.name == FALLBACK_STAGE for s in self.stages)

    @property
    def build_seconds(self) -> float | None:
        """Wall time of building the capacity tables and the program (``CAPACITY_STAGE``,
        ``BUILD_STAGE``) [s]; ``None``: not recorded."""
        built = [s.seconds for s in self.stages if s.name in (CAPACITY_STAGE, BUILD_STAGE)]
        return sum(built) if built else None

    @property
    def read_seconds(self) -> float:
        """Wall time before the plan's build (``READ_STAGE``: the start-up and reading the
        scenario) [s]; 0 where not recorded."""
        return sum(s.seconds for s in self.stages if s.name == READ_STAGE)


class Cost(Frozen):
    """Cost of the plan."""

    per_month: float
    per_million_tokens: float | None
    """Monthly cost ÷ all tokens (input + output) processed in the month at planned demand."""
    per_million_output_tokens: float | None
    currency: str


class Slice(Frozen):
    """A slice of the peak day: demand and elastic capacity are planned per slice."""

    name: str
    hours: tuple[int, ...]


class Allocation(OmitDefaults):
    """Replicas of one workload in one configuration, zone and purchase kind (and slice)."""

    omit_when_default = ("costs_fitted_on", "measured_row")

    workload: str
    zone: str
    gpu: str
    tp: int = Field(ge=1)
    purchase: PurchaseKind
    slice: str | None
    """``None`` for reserved capacity (present in every slice)."""
    replicas: int = Field(ge=0)
    gpus: int = Field(ge=0)
    replica_capacity_rps: float = Field(gt=0)
    """SLO-holding rate of one replica [1/s] (a replica that holds nothing is never planned)."""
    capacity_source: CapacitySource
    cost_per_month: float
    """Price of the GPUs these replicas occupy, for the hours they run [currency/month]."""
    costs_fitted_on: str | None = None
    """An analytic rate whose runtime fixed costs were fitted on another GPU: that GPU (no
    measurement of the runtime on ``gpu`` stands behind the rate;
    :func:`solver.capacity.table.borrowed_costs`). ``None`` (left out of ``plan.json``): the
    GPU's own costs, or a measured rate."""
    measured_row: str | None = None
    """A measured rate: the row it comes from — file and line (or scenario entry), test date,
    the load test it records, the token lengths tested
    (:func:`solver.capacity.measured.provenance`). ``None`` (left out): a predicted rate."""


class NodeCount(Frozen):
    """Whole nodes bought per zone, GPU type and purchase kind (and slice for elastic kinds)."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    slice: str | None
    nodes: int = Field(ge=0)
    gpus: int = Field(ge=0)
    instance_type: str | None = None
    price_per_gpu_hour: float = Field(ge=0)
    hours_per_month: float = Field(ge=0)
    """Hours per month these nodes are paid for (all hours for reserved) [h]."""
    cost_per_month: float


class SurvivabilityRow(Frozen):
    """Whether a workload still meets demand after one failure, in one slice."""

    workload: str
    failure: str
    """``none`` (steady state), ``node:<zone>/<gpu>`` or ``zone:<zone>``."""
    slice: str
    capacity_rps: float
    demand_rps: float
    holds: bool


class WorkloadCost(Frozen):
    """Cost attributed to one workload (its GPUs' share of the nodes)."""

    workload: str
    tenant: str
    cost_per_month: float
    tokens_per_month: float
    output_tokens_per_month: float
    per_million_tokens: float | None


class Shortfall(Frozen):
    """One requirement an infeasible scenario cannot meet, and by how much."""

    requirement: str
    """Constraint family, e.g. ``demand``, ``zone_loss``, ``stock``, ``budget``."""
    workload: str | None = None
    zone: str | None = None
    gpu: str | None = None
    slice: str | None = None
    amount: float
    unit: str
    message: str


class PeriodGpus(Frozen):
    """GPUs of one zone, type and purchase kind in one period: running, held, idle."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    gpus: int = Field(ge=0)
    """Committed kinds: GPUs held (paid for); elastic kinds: the most running in any slice."""
    busy_gpus: int = Field(ge=0)
    """GPUs carrying replicas at the busiest slice."""
    idle_nodes: int = Field(ge=0)
    """Committed nodes held (owned, reserved) that carry no replica in any slice."""


class PeriodWorkload(Frozen):
    """A workload's demand and capacity in one period."""

    workload: str
    model: str
    precision: str
    runtime: str
    demand_rps: float
    """Peak-hour demand (a batch volume: its even spread over the window) [1/s]."""
    capacity_rps: float
    """Usable capacity at that hour (target utilization; spot discounted) [1/s]."""
    daily_requests: float | None = None


class PeriodPlan(Frozen):
    """One period of one demand scenario: its fleet, cost and demand."""

    scenario: str
    period: int
    start: dt.date
    end: dt.date
    """The day after the period's last day."""
    cost_per_month: float
    """Elastic capacity, and every committed node held (idle or not) [currency/month]."""
    gpus: tuple[PeriodGpus, ...] = ()
    workloads: tuple[PeriodWorkload, ...] = ()
    allocations: tuple[Allocation, ...] = ()
    nodes: tuple[NodeCount, ...] = ()
    survivability: tuple[SurvivabilityRow, ...] = ()


class Order(Frozen):
    """Committed capacity to order: nodes of one quote (or owned hardware) for one period on."""

    scenario: str | None
    """``None``: due before the next re-plan, the same in every demand scenario."""
    zone: str
    gpu: str
    purchase: PurchaseKind
    instance_type: str | None = None
    nodes: int = Field(ge=1)
    gpus: int = Field(ge=1)
    order_period: int
    """Period holding the order-by date."""
    order_by: dt.date
    """Last day to order for the nodes to serve from ``usable_from`` (lead time)."""
    usable_period: int
    usable_from: dt.date
    arrives_from: dt.date | None = None
    """Set where lead times are not applied (an inventory without a horizon: one month from
    the plan date) and this order, placed on the plan date, cannot serve from ``usable_from``:
    the first day it can (``order_by`` is then the plan date, not a day already past)."""
    expires: dt.date
    """The day after the term's last day (owned: of the life the capital is amortised over):
    every end date of a plan is the day after the last, as an inventory line's ``ends`` is
    not (its last day held; docs/outputs.md, "Dates")."""
    term_months: int
    upfront: Upfront
    price_per_gpu_hour: float
    """Reserved: the quote's effective price; owned: capital, power and hosting per GPU-hour."""
    price_assumed: bool = False
    """The price is assumed (a discount on on-demand), not quoted."""
    cost_per_month: float
    cost_in_horizon: float
    """Paid inside the horizon: the upfront share, then each month held [currency]."""
    committed_total: float
    """The whole commitment (owned: the capital) [currency]."""


class ScenarioCost(Frozen):
    """What one demand scenario costs over the horizon."""

    scenario: str
    probability: float
    cost: float
    """The plan's objective for this scenario: elastic capacity per month of each period, and
    each order as the horizon counts it (docs/program.md) [currency]."""
    cost_in_horizon: float
    """Everything paid inside the horizon, held capacity included [currency]."""
    committed_total: float
    """Every order's whole commitment [currency]."""


class HorizonStart(StrEnum):
    """Where a plan's horizon start came from."""

    horizon = "horizon"
    """The scenario's ``horizon.start``."""
    as_of = "as_of"
    """No ``horizon``: ``policy.as_of``."""
    today = "today"
    """No ``horizon`` and no ``policy.as_of``: the day the plan was made, so the same scenario
    planned on another day has other dates (and measured rows other ages)."""


class HorizonSummary(Frozen):
    """The horizon a plan covers and what it costs."""

    start: dt.date
    start_from: HorizonStart | None = None
    """Where ``start`` came from; ``None`` in a plan.json written before it was recorded."""
    end: dt.date
    """The day after the horizon's last day (its last period's ``end``)."""
    period_months: float
    plan_date: dt.date
    replan_date: dt.date
    """Orders due before this day are shared by every demand scenario."""
    objective: str
    """``expected`` (probability-weighted) or ``worst_case`` (``--robust``)."""
    commitments: str
    expected_cost: float
    worst_cost: float
    scenarios: tuple[ScenarioCost, ...]
    fleet_shown: str
    """Demand scenario whose first period the plan's fleet (allocations, nodes) is."""


class Replanned(Frozen):
    """The earlier plan a re-plan (``plan --existing``) kept the placed orders of."""

    file: str
    """The earlier plan.json, as given on the command line."""
    scenario: str
    """The earlier plan's scenario name (a quarter's copy of a scenario may rename it)."""
    plan_date: dt.date
    """The day the earlier plan was made for."""
    kept: tuple[Order, ...] = ()
    """Its orders shared by every demand scenario and due before this plan's date
    (:meth:`Plan.placed_before`): placed, so held here as inventory."""
    not_yet_due: tuple[Order, ...] = ()
    """Its orders shared by every demand scenario (its "order now") due on or after this
    plan's date: not kept, decided again; a buyer who placed one early must say so in the
    inventory (fresh-s24 F5: a re-plan on 2027-03-05 forgot an "order now" due 2027-03-11)."""


#: The window a plan's replay covers around the busiest minute of the scaled trace, and the
#: warm-up replayed before it so queues start loaded [s] (solver.replay.plan_replay; a trace
#: too short for them gives less: :attr:`ReplayCheck.caveat`).
REPLAY_WINDOW_S = 600.0
REPLAY_WARMUP_S = 120.0


class ReplayCheck(OmitDefaults):
    """One trace replay of a workload against a plan at its planned peak (docs/replay.md,
    "Replay in the plan")."""

    omit_when_default = ("e2e_p95_ms", "e2e_slo_ms", "over_context", "cut_off")

    round: int = Field(ge=1)
    """Planning round the plan replayed was made in (1: the first solve)."""
    workload: str
    failure: str
    """``none`` (intact), ``node:<zone>/<gpu>/<purchase>`` or ``zone:<zone>``."""
    slice: str
    requests: int
    """Requests arriving in the window; the P95s and the attainment are over them less
    :attr:`over_context` and :attr:`cut_off` (docs/replay.md, "Requests no replica can serve:
    one rule")."""
    ttft_p95_ms: float | None
    """TTFT P95 [ms], requests left without an answer counted as infinitely late (``None``:
    no request judged, or more than 5 % of them unanswered — no P95)."""
    ttft_slo_ms: float
    tpot_p95_ms: float | None
    """Per-token latency P95 [ms], as :attr:`ttft_p95_ms`."""
    tpot_slo_ms: float | None
    """Per-token P95 SLO [ms]; ``None``: not planned, the outputs have no second token
    (``Workload.tpot_slo_ms``)."""
    slo_attainment: float | None
    """Share of those requests within every SLO stated [1]."""
    holds: bool
    """Every P95 within its SLO (the end-to-end one where stated), a request left without an
    answer (no live replica, or longer than every replica's KV cache) counted as infinitely
    late, as ``fleetplan simulate``'s verdicts count it."""
    derated: tuple[str, ...] = ()
    """After a miss: the configurations that served (``<gpu>×<tp>``), then the de-rating the
    loop applied to every configuration of the workload (``… ×<factor>``)."""
    window_s: float | None = None
    """Seconds of the scaled trace the P95s are over: :data:`REPLAY_WINDOW_S`, less where the
    trace ends sooner [s] (``None``: a record written before it was kept)."""
    warmup_s: float | None = None
    """Seconds replayed before the window: :data:`REPLAY_WARMUP_S`, less where the busiest
    minute is near the trace's start [s]."""
    e2e_p95_ms: float | None = None
    """End-to-end latency P95 [ms] where the workload states ``slo.e2e_p95_ms`` (else, or
    with no request served, ``None``)."""
    e2e_slo_ms: float | None = None
    """The workload's ``slo.e2e_p95_ms`` [ms]; ``None``: it states none."""
    over_context: int = Field(default=0, ge=0)
    """Of :attr:`requests`: longer than the model's context (input + output), rejected — no
    fleet serves them; counted, never as late."""
    cut_off: int = Field(default=0, ge=0)
    """Of :attr:`requests`: streaming on a replica when the failure took it — no fleet saves
    them; counted, never as late."""

    @property
    def caveat(self) -> str | None:
        """How the replay fell short of the standard window and warm-up, as words
        (``window 94 s of 600, no warm-up``); ``None`` for a full replay (or an old record)."""
        if self.window_s is None or self.warmup_s is None:
            return None
        short = []
        if self.window_s < REPLAY_WINDOW_S - 0.5:
            short.append(f"window {self.window_s:.0f} s of {REPLAY_WINDOW_S:.0f}")
        if self.warmup_s < 0.5:
            short.append("no warm-up")
        elif self.warmup_s < REPLAY_WARMUP_S - 0.5:
            short.append(f"warm-up {self.warmup_s:.0f} s of {REPLAY_WARMUP_S:.0f}")
        return ", ".join(short) or None

    @property
    def verdict(self) -> str:
        """``holds`` or ``MISSES``; a hold over a short window or warm-up says so:
        ``holds (window 94 s of 600, no warm-up: weak evidence)``."""
        if not self.holds:
            return "MISSES"
        return "holds" if self.caveat is None else f"holds ({self.caveat}: weak evidence)"


class Plan(OmitDefaults):
    """A fleet plan and everything needed to re-check it."""

    omit_when_default = ("horizon", "periods", "orders", "verified", "replay", "proven_cheapest",
                         "replanned_from", "warnings")

    def omitted_when_default(self) -> tuple[str, ...]:
        """A plan over periods always writes ``periods`` and ``orders``, ``[]`` when it orders
        nothing (a re-plan with no new orders), so a script reads ``p["orders"]`` of every such
        plan; a single-period plan leaves them out, as before they existed."""
        if self.horizon is None:
            return self.omit_when_default
        return tuple(n for n in self.omit_when_default if n not in ("periods", "orders"))

    scenario: str
    status: SolveStatus
    solver: SolverReport
    cost: Cost
    slices: tuple[Slice, ...]
    allocations: tuple[Allocation, ...] = ()
    nodes: tuple[NodeCount, ...] = ()
    survivability: tuple[SurvivabilityRow, ...] = ()
    workload_costs: tuple[WorkloadCost, ...] = ()
    diagnosis: tuple[Shortfall, ...] = ()
    """For an infeasible scenario: what cannot be met and by how much."""
    fingerprint: str = ""
    """Digest of the resolved scenario the plan was made from."""
    horizon: HorizonSummary | None = None
    """Planning over periods: dates, costs per demand scenario (``None``: one peak day)."""
    periods: tuple[PeriodPlan, ...] = ()
    orders: tuple[Order, ...] = ()
    verified: bool = False
    """The independent verifier found no broken row in this fleet before ``plan`` wrote it
    (:mod:`solver.survivability.signoff`); left out of plans no one signed off."""
    replay: tuple[ReplayCheck, ...] = ()
    """Trace replays of every round, in order (workloads naming ``arrival.trace``)."""
    proven_cheapest: bool | None = None
    """Whether the solve proved no fleet cheaper (:func:`proves_cheapest`): ``false`` for an
    ``optimal`` plan whose proven gap shows (within ``solver.gap_limit``, not proven
    cheapest). ``None`` (left out): not recorded, as ``solver.gap_limit``."""
    replanned_from: Replanned | None = None
    """A re-plan (``plan --existing``): the earlier plan and the orders of it kept as placed."""
    warnings: tuple[str, ...] = ()
    """What ``plan`` warned of on stderr that the plan's own figures depend on, in the same
    words (report.md's Warnings): a ``policy.as_of`` before the day it was planned, and the
    orders it dated before that day (``solver.cli.lead_times.date_warnings``). Left out where
    none."""

    def due_from(self, day: dt.date) -> tuple[Order, ...]:
        """The orders shared by every demand scenario due on or after ``day``: decided
        before the re-plan (its "order now"), yet not placed by ``day`` as
        :meth:`placed_before` counts."""
        return tuple(o for o in self.orders if o.scenario is None and o.order_by >= day)

    def placed_before(self, day: dt.date) -> tuple[Order, ...]:
        """The orders of this plan that were placed by ``day``: shared by every demand
        scenario (decided before the re-plan) and due before it. A re-plan on ``day`` holds
        them (``keep_orders``, :mod:`solver.solve.horizon`); the rest are decided again."""
        return tuple(o for o in self.orders if o.scenario is None and o.order_by < day)


#: Digits a relative gap is rounded to before it counts as zero (0.00 % as a percentage).
GAP_DIGITS = 4


def proves_cheapest(status: SolveStatus, solver: SolverReport) -> bool:
    """A solve that proved its fleet the cheapest: status ``optimal`` with a gap that rounds
    to 0.00 %. An ``optimal`` solve with a gap above that stopped within the requested gap
    only; a solver that reports no gap (CBC) proved the requested gap only."""
    return (status is SolveStatus.optimal and solver.gap is not None
            and round(solver.gap, GAP_DIGITS) <= 0)


def with_gap_limit(plan: Plan, gap_limit: float) -> Plan:
    """``plan`` recording the gap it was asked to stop at and whether it proved the cheapest
    fleet (``fleetplan plan`` writes both, so a script need not read ``optimal`` as proven)."""
    return plan.model_copy(update={
        "solver": plan.solver.model_copy(update={"gap_limit": gap_limit}),
        "proven_cheapest": proves_cheapest(plan.status, plan.solver)})
