"""Availability zones and what each offers: price, stock and terms per purchase kind."""

from __future__ import annotations

from pydantic import Field, model_validator

from models.common import Frozen, PurchaseKind


class ReservedTerms(Frozen):
    """Committed capacity: paid every hour of the month, for the whole term."""

    price_per_gpu_hour: float = Field(gt=0)
    stock_gpus: int = Field(ge=0)
    """GPUs the provider can commit in this zone."""
    commitment_months: int = Field(12, ge=1)
    lead_time_weeks: float = Field(0.0, ge=0)
    """Time from order to capacity in service [weeks]."""


class OnDemandTerms(Frozen):
    """Elastic capacity: paid for the hours it runs; must start before it serves."""

    price_per_gpu_hour: float = Field(gt=0)
    stock_gpus: int = Field(ge=0)
    startup_minutes: float = Field(10.0, ge=0)
    """Time to provision a node and load weights before it serves [min]."""


class SpotTerms(Frozen):
    """Interruptible capacity: cheapest, never failover capacity, never for interactive pools."""

    price_per_gpu_hour: float = Field(gt=0)
    stock_gpus: int = Field(ge=0)
    interruption_rate_per_hour: float = Field(0.05, ge=0, lt=1)
    """Expected share of spot capacity reclaimed per hour [1/h]."""


class Offer(Frozen):
    """What one zone sells of one GPU type."""

    gpu: str = Field(min_length=1)
    instance_type: str | None = None
    """Provider's node type (e.g. ``p5.48xlarge``), for the purchase order."""
    gpus_per_node: int | None = Field(None, ge=1, le=64)
    """GPUs per node of this offer; defaults to the GPU type's ``gpus_per_node``."""
    reserved: ReservedTerms | None = None
    on_demand: OnDemandTerms | None = None
    spot: SpotTerms | None = None
    price_source: str | None = None

    @model_validator(mode="after")
    def _sells_something(self) -> Offer:
        if self.reserved is None and self.on_demand is None and self.spot is None:
            raise ValueError("an offer needs at least one of reserved, on_demand, spot")
        return self

    def terms(self, kind: PurchaseKind) -> ReservedTerms | OnDemandTerms | SpotTerms | None:
        """Terms of one purchase kind, or ``None`` where the zone does not sell it."""
        return {
            PurchaseKind.reserved: self.reserved,
            PurchaseKind.on_demand: self.on_demand,
            PurchaseKind.spot: self.spot,
        }[kind]


class Zone(Frozen):
    """An availability zone: the failure domain that ``zone_loss`` survives."""

    id: str = Field(min_length=1)
    region: str = Field(min_length=1)
    offers: tuple[Offer, ...] = ()

    @model_validator(mode="after")
    def _one_offer_per_gpu(self) -> Zone:
        seen: set[str] = set()
        for offer in self.offers:
            if offer.gpu in seen:
                raise ValueError(f"zone {self.id} has two offers for GPU {offer.gpu}")
            seen.add(offer.gpu)
        return self
