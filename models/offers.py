"""Availability zones and what each offers: price, stock and terms per purchase kind."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AliasChoices, Discriminator, Tag, model_validator

from models.common import Frozen, OmitDefaults, PurchaseKind, Upfront
from models.limits import LimitedList, Name, Real, Text, Whole, bounded


class AssumedFigure(StrEnum):
    """A figure of an offer that no provider gave: derived or defaulted, so labelled *assumed*
    in every output that shows it (docs/outputs.md, "Assumed figures")."""

    reserved_price = "reserved_price"
    """A reserved price derived as a discount on on-demand (public catalogs publish none)."""
    reserved_term = "reserved_term"
    """Commitment and lead time of a derived reserved offer."""
    stock = "stock"
    """Stock of every purchase kind, from a price table's assumed stock (catalogs publish none)."""
    spot_interruption_rate = "spot_interruption_rate"
    """The spot interruption rate: a price table's, or the default where an offer gives none."""
    on_demand_startup = "on_demand_startup"
    """The on-demand start-up time: a price table's, or the default where an offer gives none."""


#: The offer's field of terms each assumed figure belongs to (others belong to no one kind).
FIGURE_TERMS: dict[AssumedFigure, str] = {
    AssumedFigure.spot_interruption_rate: "spot",
    AssumedFigure.on_demand_startup: "on_demand",
    AssumedFigure.reserved_price: "reserved",
    AssumedFigure.reserved_term: "reserved",
}


#: Share of a partial-upfront term paid at its start when the quote does not say [1].
DEFAULT_PARTIAL_UPFRONT_SHARE = 0.5


class ReservedTerms(OmitDefaults):
    """Committed capacity: paid every hour of the month, for the whole term.

    One quote of a provider: an offer may list several (``reserved: [{term_months: 12, …},
    {term_months: 36, …}]``). ``price_per_gpu_hour`` is the effective price — the whole
    commitment spread over the term's hours — however it is paid (``upfront``).
    """

    omit_when_default = ("upfront", "upfront_share", "assumed", "lead_time_assumed")
    label_fields = ("assumed", "lead_time_assumed")

    price_per_gpu_hour: Real = bounded("price_per_gpu_hour")
    stock_gpus: Whole = bounded("stock_gpus")
    """GPUs the provider can commit in this zone."""
    commitment_months: Whole = bounded("commitment_months", 12, validation_alias=AliasChoices(
        "commitment_months", "term_months"))
    """Term of the commitment [months] (also read as ``term_months``); paid whole even where it
    runs past the planning horizon."""
    lead_time_weeks: Real = bounded("lead_time_weeks", 0.0)
    """Time from order to capacity in service [weeks]."""
    upfront: Upfront = Upfront.none
    """How the commitment is paid: monthly (``none``), ``partial`` (``upfront_share`` of it at
    the start of the term, the rest monthly) or ``all`` at the start."""
    upfront_share: Real | None = bounded("upfront_share", None)
    """Share of the commitment paid at the start of a ``partial`` term [1] (default 0.5)."""
    assumed: bool = False
    """The price is assumed, not quoted: a discount applied to on-demand by a price table."""
    lead_time_assumed: bool = False
    """The quote gives no ``lead_time_weeks``: its 0 weeks is assumed (over periods an order
    then serves from the period it is placed in); set when the scenario is read."""

    @property
    def term_months(self) -> int:
        """Term of the commitment [months]."""
        return self.commitment_months

    @property
    def paid_upfront_share(self) -> float:
        """Share of the commitment paid at the start of the term [1]."""
        if self.upfront is Upfront.all:
            return 1.0
        if self.upfront is Upfront.partial:
            return (DEFAULT_PARTIAL_UPFRONT_SHARE if self.upfront_share is None
                    else self.upfront_share)
        return 0.0

    @model_validator(mode="after")
    def _share_only_for_partial(self) -> ReservedTerms:
        if self.upfront_share is not None and self.upfront is not Upfront.partial:
            raise ValueError("upfront_share is the part paid at the start of a partial-upfront "
                             f"term; this quote is upfront: {self.upfront.value}")
        return self


class OwnedTerms(OmitDefaults):
    """Hardware bought outright: capital amortised over its life, plus power and hosting.

    Cost per node and month: ``capex_per_node / life_months`` + power
    ``(gpu_tdp_w × GPUs per node + node_overhead_w) / 1000 × average_utilization ×
    price_per_kwh × pue × hours per month`` + ``hosting_per_node_month`` (docs/program.md).
    """

    capex_per_node: Real = bounded("capex_per_node")
    """Purchase price of one node, installed [currency]."""
    life_months: Whole = bounded("life_months", 48)
    """Months the capital is amortised over [months]."""
    gpu_tdp_w: Real = bounded("gpu_tdp_w")
    """Thermal design power of one GPU [W]."""
    node_overhead_w: Real = bounded("node_overhead_w", 0.0)
    """Power of the rest of the node at full load: CPUs, memory, NICs, fans [W]."""
    average_utilization: Real = bounded("average_utilization", 0.6)
    """Average share of its full power a node draws over a month [1]."""
    price_per_kwh: Real = bounded("price_per_kwh")
    """Electricity price [currency/kWh]."""
    pue: Real = bounded("pue", 1.3)
    """Power usage effectiveness of the site: facility power ÷ IT power [1]."""
    hosting_per_node_month: Real = bounded("hosting_per_node_month", 0.0)
    """Rack space, network and operations per node [currency/(node·month)]."""
    stock_gpus: Whole = bounded("stock_gpus")
    """GPUs that can be delivered (and racked) in this zone."""
    lead_time_weeks: Real = bounded("lead_time_weeks", 0.0)
    """Time from order to a node in service [weeks]."""
    lead_time_assumed: bool = False
    """The scenario gives no ``lead_time_weeks``: its 0 weeks is assumed (over periods a node
    ordered then serves from the period it is ordered in); set when the scenario is read."""

    omit_when_default = ("lead_time_assumed",)
    label_fields = ("lead_time_assumed",)

    def power_per_node_month(self, gpus_per_node: int, hours_per_month: float) -> float:
        """Electricity of one node over a month [currency/(node·month)]."""
        watts = self.gpu_tdp_w * gpus_per_node + self.node_overhead_w  # [W] at full load
        return (watts / 1000 * self.average_utilization * self.price_per_kwh * self.pue
                * hours_per_month)  # [kW] × [1] × [currency/kWh] × [1] × [h/month]

    def running_per_node_month(self, gpus_per_node: int, hours_per_month: float) -> float:
        """Power and hosting of one node over a month [currency/(node·month)]."""
        return self.power_per_node_month(gpus_per_node, hours_per_month) + (
            self.hosting_per_node_month)

    def cost_per_node_month(self, gpus_per_node: int, hours_per_month: float) -> float:
        """Amortised capital, power and hosting of one node [currency/(node·month)]."""
        return self.capex_per_node / self.life_months + self.running_per_node_month(
            gpus_per_node, hours_per_month)


class OnDemandTerms(Frozen):
    """Elastic capacity: paid for the hours it runs; must start before it serves."""

    price_per_gpu_hour: Real = bounded("price_per_gpu_hour")
    stock_gpus: Whole = bounded("stock_gpus")
    startup_minutes: Real = bounded("startup_minutes", 10.0)
    """Time to provision a node and load weights before it serves [min]."""


#: Hours a reclaimed spot node is out of service: its replacement must start up, and capacity
#: still starting up never counts [h].
SPOT_RECLAIM_HOURS = 1.0


class SpotTerms(Frozen):
    """Interruptible capacity: cheapest, never failover capacity, never for interactive pools."""

    price_per_gpu_hour: Real = bounded("price_per_gpu_hour")
    stock_gpus: Whole = bounded("stock_gpus")
    interruption_rate_per_hour: Real = bounded("interruption_rate_per_hour", 0.05)
    """Interruptions per node per hour: the expected share of spot nodes reclaimed in an hour
    [1/h]."""

    @property
    def available_share(self) -> float:
        """Expected share of this spot capacity serving at any time [1]: 1 − interruptions per
        hour × the hours each takes out (:data:`SPOT_RECLAIM_HOURS`). The one place the rate
        becomes a share; every capacity count reads this."""
        return max(0.0, 1.0 - self.interruption_rate_per_hour * SPOT_RECLAIM_HOURS)


#: Tags of the two shapes ``reserved`` may take (validation errors leave them out of locations).
ONE_QUOTE, QUOTE_LIST = "one quote", "quote list"


def _quote_shape(value: Any) -> str:
    return QUOTE_LIST if isinstance(value, list | tuple) else ONE_QUOTE


ReservedQuotes = Annotated[
    Annotated[ReservedTerms, Tag(ONE_QUOTE)] | Annotated[tuple[ReservedTerms, ...],
                                                         Tag(QUOTE_LIST)],
    Discriminator(_quote_shape),
]
"""One reserved quote (a mapping), or several (a list): errors are those of the shape given."""


class Offer(OmitDefaults):
    """What one zone sells of one GPU type."""

    omit_when_default = ("owned", "assumed")
    label_fields = ("assumed",)

    gpu: Name
    instance_type: Name | None = None
    """Provider's node type (e.g. ``p5.48xlarge``), for the purchase order."""
    gpus_per_node: Whole | None = bounded("gpus_per_node", None)
    """GPUs per node of this offer; defaults to the GPU type's ``gpus_per_node``."""
    reserved: ReservedQuotes | None = None
    """One reserved quote, or several (e.g. 12- and 36-month terms)."""
    on_demand: OnDemandTerms | None = None
    spot: SpotTerms | None = None
    owned: OwnedTerms | None = None
    """Hardware bought outright and hosted in this zone (an on-premise site)."""
    price_source: Text | None = None
    assumed: tuple[AssumedFigure, ...] = ()
    """Figures of this offer that are assumed rather than given (set where the offer is
    imported or defaulted; every output that shows them says *assumed*)."""

    @model_validator(mode="after")
    def _sells_something(self) -> Offer:
        if (self.reserved is None or self.reserved == ()) and self.on_demand is None and (
                self.spot is None and self.owned is None):
            raise ValueError("an offer needs at least one of reserved, on_demand, spot, owned")
        seen: set[tuple[int, Upfront]] = set()
        for quote in self.reserved_quotes:
            key = (quote.term_months, quote.upfront)
            if key in seen:
                raise ValueError(f"two reserved quotes of {key[0]} months, upfront "
                                 f"{key[1].value}, for GPU {self.gpu}")
            seen.add(key)
        for figure in self.assumed:
            kind = FIGURE_TERMS.get(figure)
            if kind is not None and not self._sells(kind):
                # a figure of terms it does not sell: outputs would list no value
                raise ValueError(f"assumed lists {figure.value}, but the offer of GPU "
                                 f"{self.gpu} sells no {kind}: remove it from assumed")
        return self

    def _sells(self, terms: str) -> bool:
        """It sells the terms named by that field (``reserved``, ``on_demand``, ``spot``)."""
        return bool(self.reserved_quotes) if terms == "reserved" else (
            getattr(self, terms) is not None)

    def without(self, terms: str) -> Offer | None:
        """This offer no longer selling the terms of that field, and the assumed figures of them
        gone with them (a stale one would list an empty value); ``None`` if it then sells
        nothing."""
        kept = tuple(f for f in self.assumed if FIGURE_TERMS.get(f) != terms)
        left = self.model_copy(update={terms: None, "assumed": kept})
        sells = any(left._sells(t) for t in ("reserved", "on_demand", "spot")) or (
            left.owned is not None)
        return left if sells else None

    @property
    def reserved_quotes(self) -> tuple[ReservedTerms, ...]:
        """Every reserved quote, in the order given."""
        if self.reserved is None:
            return ()
        return self.reserved if isinstance(self.reserved, tuple) else (self.reserved,)

    def stock_of(self, kind: PurchaseKind) -> int | None:
        """GPUs the zone can supply of one purchase kind (reserved: over its quotes)
        [GPUs]; ``None`` where it does not sell the kind. 0: stated, but nothing to buy."""
        if kind is PurchaseKind.reserved:
            quotes = self.reserved_quotes
            return sum(q.stock_gpus for q in quotes) if quotes else None
        terms = self.owned if kind is PurchaseKind.owned else self.terms(kind)
        return None if terms is None else terms.stock_gpus

    def terms(self, kind: PurchaseKind) -> ReservedTerms | OnDemandTerms | SpotTerms | None:
        """Price terms of one cloud purchase kind, or ``None`` where the zone does not sell it.

        Reserved: the cheapest quote per GPU-hour (the first of equals); owned hardware has no
        price per GPU-hour of its own (:attr:`owned`) and gives ``None`` here.
        """
        if kind is PurchaseKind.reserved:
            quotes = self.reserved_quotes
            return min(quotes, key=lambda q: q.price_per_gpu_hour) if quotes else None
        return {
            PurchaseKind.on_demand: self.on_demand,
            PurchaseKind.spot: self.spot,
            PurchaseKind.owned: None,
        }[kind]


class Zone(OmitDefaults):
    """An availability zone: the failure domain that ``zone_loss`` survives."""

    omit_when_default = ("name",)
    id: Name
    region: Name
    offers: Annotated[tuple[Offer, ...], LimitedList] = ()
    name: Name | None = None
    """The account's own name for the zone where it differs from the id (AWS ``us-east-1a`` for
    ``use1-az6``), from the scenario's ``zone_names`` mapping; shown beside the id."""

    @model_validator(mode="after")
    def _one_offer_per_gpu(self) -> Zone:
        seen: set[str] = set()
        for offer in self.offers:
            if offer.gpu in seen:
                raise ValueError(f"zone {self.id} has two offers for GPU {offer.gpu}")
            seen.add(offer.gpu)
        return self
