"""The plan: a typed, frozen result of the integer program, written as ``plan.json``.

Semantics other tools depend on: a replica's usable capacity is ``replica_capacity_rps`` × the
workload's target utilization; after a failure it may run up to ``replica_capacity_rps`` × the
policy's failure utilization; a measured row's ``tested_peak_rps`` is its SLO-holding rate.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from models.common import CapacitySource, Frozen, PurchaseKind


class SolveStatus(StrEnum):
    """Outcome of a solve, read from the solver's own report (not PuLP's status word alone)."""

    optimal = "optimal"
    feasible = "feasible"
    infeasible = "infeasible"
    time_limit = "time_limit"
    error = "error"


class SolverReport(Frozen):
    """What the solver said: who, how long, and how close to proven optimal."""

    name: str
    seconds: float = Field(ge=0)
    gap: float | None = None
    """Relative MIP gap (objective − bound) / objective at the end [1]."""
    bound: float | None = None
    """Best proven lower bound on the monthly cost [currency/month]."""
    objective: float | None = None


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


class Allocation(Frozen):
    """Replicas of one workload in one configuration, zone and purchase kind (and slice)."""

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


class Plan(Frozen):
    """A fleet plan and everything needed to re-check it."""

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
