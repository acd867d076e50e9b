"""The capacity table: what one replica of each feasible configuration carries under its SLO.

One row per (workload, GPU, TP) that fits; configurations that cannot work are absent from
``rows`` (a mask, never a zero throughput) and listed with their reason in ``rejected``.
This is the capacity contract the integer program, the checker and the workbook all read.
"""

from __future__ import annotations

from pydantic import Field

from models.common import CapacitySource, Frozen, Precision, PurchaseKind


class CapacityRow(Frozen):
    """One candidate configuration of one workload."""

    workload: str
    model: str
    model_digest: str | None = None
    gpu: str
    runtime: str
    precision: Precision
    tp: int = Field(ge=1)
    """Tensor-parallel degree = GPUs per replica (all in one node)."""
    source: CapacitySource
    max_stable_sequences: int = Field(ge=1)
    """Concurrent sequences at the P95 context that the KV cache holds [sequences]."""
    slo_rps: float = Field(gt=0)
    """SLO-holding rate: requests/s one replica carries while holding TTFT and TPOT P95, and
    the end-to-end P95 where the workload states one [1/s]."""
    input_tokens_per_s: float = Field(ge=0)
    """Input tokens/s at the SLO-holding rate (mean input length × rate) [tokens/s]."""
    output_tokens_per_s: float = Field(ge=0)
    """Output tokens/s at the SLO-holding rate [tokens/s]."""
    ttft_p95_ms: float = Field(ge=0)
    """Predicted (or measured) TTFT P95 at the SLO-holding rate [ms]."""
    tpot_p95_ms: float = Field(ge=0)
    """Predicted (or measured) decode time per output token P95 at that rate [ms/token]."""
    headroom: float
    """Smallest share of an SLO left unused at the SLO-holding rate [1]:
    min(1 − ttft/slo, 1 − tpot/slo), and 1 − e2e/slo where the workload states one
    (``solver.capacity.replica.latency_slack``)."""
    weights_gib_per_gpu: float | None = None
    kv_capacity_tokens: int | None = None
    cost_per_million_tokens: dict[PurchaseKind, float] = Field(default_factory=dict)
    """At the cheapest zone price of each purchase kind, at the SLO-holding rate [currency/Mtok]."""
    note: str = ""
    """Why the figure is what it is (e.g. which measured row overrode the model)."""


class RejectedConfig(Frozen):
    """A configuration that is not a candidate, and why (shown by ``--explain``)."""

    workload: str
    gpu: str
    precision: Precision
    tp: int
    reason: str


class CapacityTable(Frozen):
    """Every candidate of every workload, plus the rejected configurations."""

    rows: tuple[CapacityRow, ...]
    rejected: tuple[RejectedConfig, ...] = ()

    def for_workload(self, workload: str) -> tuple[CapacityRow, ...]:
        """Candidates of one workload."""
        return tuple(r for r in self.rows if r.workload == workload)

    def row(self, workload: str, gpu: str, tp: int) -> CapacityRow | None:
        """The candidate of ``workload`` on ``gpu`` at ``tp``, if the table has it."""
        return next((r for r in self.rows if (r.workload, r.gpu, r.tp) == (workload, gpu, tp)),
                    None)
