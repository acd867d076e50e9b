"""Shared enums and the frozen base model every schema derives from."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable schema that rejects unknown keys (typos must not pass silently)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Precision(StrEnum):
    """Numeric format of the weights (and of the KV cache unless stated otherwise)."""

    bf16 = "bf16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


#: Bytes per parameter (or per KV element) of each precision [bytes].
BYTES_PER_ELEMENT: dict[Precision, float] = {
    Precision.bf16: 2.0,
    Precision.fp8: 1.0,
    Precision.int8: 1.0,
    Precision.int4: 0.5,
}


class PurchaseKind(StrEnum):
    """How GPU capacity is bought in a zone."""

    reserved = "reserved"
    on_demand = "on_demand"
    spot = "spot"


class WorkloadClass(StrEnum):
    """Interactive pools carry a user waiting on the answer; batch pools do not."""

    interactive = "interactive"
    batch = "batch"


class Survivability(StrEnum):
    """Failure a workload must keep its SLO through."""

    none = "none"
    n_plus_1 = "n_plus_1"
    zone_loss = "zone_loss"


class CapacitySource(StrEnum):
    """Where a replica capacity figure came from: a measured row wins over the analytic model."""

    analytic = "analytic"
    measured = "measured"
