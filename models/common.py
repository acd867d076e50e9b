"""Shared enums and the frozen base model every schema derives from."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

#: Serialization context of a scenario's fingerprint: labels (``label_fields``) are left out.
FINGERPRINT_CONTEXT = {"fingerprint": True}


class Frozen(BaseModel):
    """Immutable schema that rejects unknown keys (typos must not pass silently)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class OmitDefaults(Frozen):
    """A schema whose later additions are left out of its dumps while they hold their defaults.

    Fields named in ``omit_when_default`` were added after plans had been made: a scenario or
    plan that does not use them dumps exactly as before, so its fingerprint, its
    ``scenario.resolved.yaml`` and its ``plan.json`` are byte-identical to those of earlier
    versions.
    """

    omit_when_default: ClassVar[tuple[str, ...]] = ()
    label_fields: ClassVar[tuple[str, ...]] = ()
    """Fields that label a figure (e.g. a price as *assumed*) without changing what is planned:
    left out of the fingerprint (``FINGERPRINT_CONTEXT``), which digests what was planned."""

    def omitted_when_default(self) -> tuple[str, ...]:
        """The fields this object leaves out of its dumps while they hold their defaults."""
        return self.omit_when_default

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler,
                       info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            fields = type(self).model_fields
            if info.context and info.context.get("fingerprint"):
                for name in self.label_fields:
                    data.pop(fields[name].alias or name, None)
            for name in self.omitted_when_default():
                key = fields[name].alias or name
                if key not in data:
                    key = name
                if key in data and getattr(self, name) == fields[name].get_default(
                        call_default_factory=True):
                    del data[key]
        return data


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
    """How GPU capacity is bought in a zone.

    Reserved and owned capacity are *committed*: bought by an order that binds for a term (or a
    hardware life), running every hour of the day, counted as failover capacity. On-demand and
    spot are elastic: bought per slice of the day, paid for the hours they run.
    """

    reserved = "reserved"
    on_demand = "on_demand"
    spot = "spot"
    owned = "owned"


#: Purchase kinds a cloud provider sells (price tables import these).
CLOUD_KINDS = (PurchaseKind.reserved, PurchaseKind.on_demand, PurchaseKind.spot)
#: Purchase kinds bought by orders that bind for a term and run all day.
COMMITTED_KINDS = (PurchaseKind.reserved, PurchaseKind.owned)


def kind_as_purchase(data: object) -> object:
    """An inventory line's ``kind:`` read as ``purchase:`` (a scenario's inventory named it
    ``kind`` first; ``check --fleet`` inventories and plan.json say ``purchase``). Both at once
    are refused, as they could disagree."""
    if not isinstance(data, dict) or "kind" not in data:
        return data
    if "purchase" in data:
        raise ValueError("give `purchase` only: `kind` is its older name (both given)")
    return {("purchase" if k == "kind" else k): v for k, v in data.items()}


def runs_all_day(kind: PurchaseKind) -> bool:
    """Committed capacity runs every hour of the day (it carries no slice)."""
    return kind in COMMITTED_KINDS


class Upfront(StrEnum):
    """How a reserved term is paid: monthly, part at the start of the term, or all of it then."""

    none = "none"
    partial = "partial"
    all = "all"


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


class SolveStatus(StrEnum):
    """Outcome of a solve, read from the solver's own report (not PuLP's status word alone)."""

    optimal = "optimal"
    feasible = "feasible"
    infeasible = "infeasible"
    time_limit = "time_limit"
    interrupted = "interrupted"
    """Stopped by the user (SIGINT, SIGTERM): the best verified fleet so far, with its bound."""
    error = "error"


class CatalogLayout(StrEnum):
    """Price-file layouts fleetplan reads (models/price_catalogs.py; a price table's layout)."""

    skypilot_aws = "skypilot-aws"
    skypilot_gcp = "skypilot-gcp"
    skypilot_azure = "skypilot-azure"
    fleetplan = "fleetplan"
    quotes = "quotes"
