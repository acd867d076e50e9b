"""Figures a plan rests on that nobody gave: derived or defaulted, so labelled *assumed*.

A provider's catalog publishes on-demand and spot prices, not reserved prices, stock or
interruption rates; a scenario that leaves a workload's target utilization or burstiness out
gets a default. Each such figure is listed here once (:func:`assumed_figures`), first in the
workbook's Assumptions sheet and the report's Assumptions section, and marked *assumed* next to
the figure wherever it is shown (docs/outputs.md, "Assumed figures").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from models.common import CLOUD_KINDS, PurchaseKind, Upfront
from models.horizon import HeldNodes, InventoryKind
from models.offers import AssumedFigure, Offer, OnDemandTerms, ReservedTerms, SpotTerms
from models.plan import Allocation, Plan
from models.scenario import Scenario
from models.workload import DEFAULT_TARGET_UTILIZATION, Workload
from solver.capacity.queueing import arrivals_label
from solver.outputs.labels import label, plural

__all__ = [
    "ASSUMED",
    "AssumedHeldPrice",
    "Assumption",
    "BorrowedCosts",
    "OfferTerms",
    "arrivals_assumed",
    "assumed_figures",
    "assumed_held_prices",
    "borrowed_assumption",
    "borrowed_costs_in_plan",
    "borrowed_sentence",
    "measured_bursts",
    "offer_assumes",
    "offers_bought",
    "plan_assumptions",
    "price_source",
    "utilization_assumed",
    "window_sizing",
]

#: Purchase kinds in the order a price table lists them.
PURCHASE_KINDS = CLOUD_KINDS

#: The word shown next to an assumed figure.
ASSUMED = "assumed"


@dataclass(frozen=True)
class Assumption:
    """One kind of assumed figure: what it is, its value, where it applies and why."""

    figure: str
    value: str
    applies_to: str
    why: str


def offer_assumes(offer: Offer, figure: AssumedFigure, kind: PurchaseKind | None = None) -> bool:
    """Whether ``figure`` of ``offer`` is assumed (for a reserved price: its quote says so)."""
    if kind not in (None, PurchaseKind.reserved) and figure in (AssumedFigure.reserved_price,
                                                                 AssumedFigure.reserved_term):
        return False
    if figure is AssumedFigure.reserved_price and any(q.assumed for q in offer.reserved_quotes):
        return True
    return figure in offer.assumed


def utilization_assumed(workload: Workload) -> bool:
    """The workload states no target utilization: its class default is in force."""
    return workload.target_utilization is None


def arrivals_assumed(workload: Workload) -> bool:
    """Interactive arrivals are taken as a Poisson stream when the scenario gives no
    burstiness (``arrival.burst``) and the workload is not sized on its trace's replayed
    window (:func:`window_sizing`: there only its decode batch is)."""
    return (workload.arrival is not None and workload.arrival.burst is None
            and window_sizing(workload) is None)


def measured_bursts(scenario: Scenario) -> list[str]:
    """A note for each workload whose ``arrival.burst`` was measured from its linked trace
    (``burst.measured_from``), as ``fleetplan profile`` prints the block: by the planner where
    the scenario states none, or stated so and equal to what the trace gives (a plan's
    ``scenario.resolved.yaml`` planned again); and for each block that names ``measured_from``
    but is taken as stated, edited (docs/replay.md, "Replay in the plan")."""
    out = []
    for w in scenario.workloads:
        burst = w.arrival.burst if w.arrival is not None else None
        if burst is None:
            continue
        if burst.edited_from is not None:
            out.append(f"`{w.name}`: arrival.burst names measured_from, but {burst.edited_from}: "
                       f"taken as stated in the scenario (edited), not as measured")
            continue
        if burst.measured_from is None:
            continue
        said = f"`{w.name}`: arrival.burst measured from its trace ({burst.measured_from}; " \
               f"inter-arrival SCV {burst.interarrival_scv:.3g}), as `fleetplan profile` prints it"
        if window_sizing(w) is not None:  # the block sizes nothing: both P95s are the window's
            how = ("the scenario states none" if burst.planner_measured else
                   "as the scenario states it (with measured_from), equal to what profiling "
                   "that trace gives")
            out.append(f"{said} — {how}; reported only: its TTFT and per-token P95 are sized "
                       f"on the trace's replayed window, not on this block")
            continue
        out.append(f"{said} — the scenario states none; state arrival.burst to plan on another"
                   if burst.planner_measured else
                   f"{said} — as the scenario states it (with measured_from), equal to what "
                   f"profiling that trace gives; edit a figure to plan on another (it is then "
                   f"taken as stated)")
    return out


def window_sizing(workload: Workload) -> str | None:
    """What the capacity model sizes the workload on, in words, where it is its trace's
    replayed window (both P95s: docs/capacity-model.md, "The model's per-token P95 on a traced
    window"; its ``arrival.burst`` then sizes nothing); ``None``: the queueing model
    (``solver.capacity.replica.trace_window_sizing``)."""
    from solver.capacity import replica  # the default read when asked (a test may turn it off)

    return replica.trace_window_sizing(workload)


def arrivals_text(workload: Workload) -> str:
    """What the capacity model sizes a workload's arrivals on, as the report's and workbook's
    Arrivals columns say it: its trace's replayed window, else the burst it states, else Poisson
    (marked assumed), or a batch window."""
    if workload.arrival is None:
        return "batch window"
    if (window := window_sizing(workload)) is not None:
        return window
    burst = workload.arrival.burst
    if burst is not None:
        return arrivals_label(burst.interarrival_scv, burst.followers is not None,
                              burst.measured_from)
    return f"Poisson ({ASSUMED})" if arrivals_assumed(workload) else "Poisson"


def _offers_with(scenario: Scenario, figure: AssumedFigure) -> list[tuple[str, Offer]]:
    return [(z.id, o) for z in scenario.zones for o in z.offers if offer_assumes(o, figure)]


def _values(values: list[str]) -> str:
    """``a`` when every value is the same, else ``a, b or c`` (most frequent first)."""
    common = [v for v, _ in Counter(values).most_common()]
    return common[0] if len(common) == 1 else ", ".join(common[:-1]) + " or " + common[-1]


def _where(offers: list[tuple[str, Offer]]) -> str:
    zones = sorted({z for z, _ in offers})
    return f"{plural(len(offers), 'offer')} in {plural(len(zones), 'zone')}"


def _reserved(offers: list[tuple[str, Offer]], terms: bool) -> list[str]:
    out = []
    for _, o in offers:
        for q in o.reserved_quotes:
            if isinstance(q, ReservedTerms) and q.price_per_gpu_hour > 0:
                if terms:
                    out.append(f"{q.commitment_months} months, lead time "
                               f"{q.lead_time_weeks:g} weeks")
                elif o.on_demand is not None:
                    off = 1 - q.price_per_gpu_hour / o.on_demand.price_per_gpu_hour
                    out.append(f"on-demand × (1 − {off:.0%})")
    return out


#: Each assumed figure of an offer: its name, and why nobody gave it.
OFFER_FIGURES = (
    (AssumedFigure.reserved_price, "Reserved price",
     "catalogs publish none: give reserved quotes to replace it"),
    (AssumedFigure.reserved_term, "Reserved commitment and lead time",
     "the price table's, for derived reserved offers"),
    (AssumedFigure.stock, "Stock", "catalogs publish none: it caps what may be bought"),
    (AssumedFigure.spot_interruption_rate, "Spot interruption rate",
     "no provider publishes it: spot counts at (1 − rate)"),
    (AssumedFigure.on_demand_startup, "On-demand start-up time",
     "provisioning and loading weights, not measured"),
)


def _value(figure: AssumedFigure, offers: list[tuple[str, Offer]]) -> str:
    """The assumed values of ``figure`` over ``offers``, in words."""
    if figure in (AssumedFigure.reserved_price, AssumedFigure.reserved_term):
        return _values(_reserved(offers, terms=figure is AssumedFigure.reserved_term)) or "derived"
    if figure is AssumedFigure.stock:
        per_kind = {k: _values([f"{t.stock_gpus:,}" for _, o in offers
                                if (t := o.terms(k)) is not None]) for k in PurchaseKind
                    if any(o.terms(k) is not None for _, o in offers)}
        return ", ".join(f"{label(k).lower()} {v}" for k, v in per_kind.items()) + (
            " GPUs per offer")
    if figure is AssumedFigure.spot_interruption_rate:
        return _values([f"{o.spot.interruption_rate_per_hour:g} per hour"
                        for _, o in offers if o.spot])
    return _values([f"{o.on_demand.startup_minutes:g} min" for _, o in offers if o.on_demand])


@dataclass(frozen=True)
class AssumedHeldPrice:
    """A reservation already held whose inventory line states no price: the planner prices it
    at the zone's cheapest reserved quote for its GPU (``Scenario.held_reservation_quote``, which
    :meth:`~models.scenario.Scenario.held_cost_per_month` reads too), a figure nobody gave
    for that reservation."""

    index: int
    """Its line in the scenario's ``inventory``."""
    line: HeldNodes
    price_per_gpu_hour: float
    """The quote it is priced at [currency/(GPU·h)]."""
    quote_assumed: bool
    """The quote is itself assumed (a price table's discount on on-demand)."""
    discount: float | None
    """That discount, where the quote is assumed and the offer has an on-demand price [1]."""

    @property
    def rule(self) -> str:
        """The rule that gave the price, in words."""
        quote = f"the zone's cheapest reserved quote for {self.line.gpu}"
        if self.quote_assumed:
            how = (f"on-demand × (1 − {self.discount:.0%})" if self.discount is not None
                   else "a discount on on-demand")
            quote += f", itself assumed ({how}, the price table's)"
        return f"its inventory line states no price: {quote}"

    def cost_per_month(self, hours_per_month: float) -> float:
        """What the held nodes cost a month at that price [currency/month]."""
        return self.line.reserved_cost_per_month(self.price_per_gpu_hour, hours_per_month)

    def where(self) -> str:
        """``inventory[2] (1 reserved L40S node in use1-az2)``."""
        return (f"inventory[{self.index}] ("
                f"{plural(self.line.nodes, f'reserved {self.line.gpu} node')} in "
                f"{self.line.zone})")


def assumed_held_prices(scenario: Scenario) -> tuple[AssumedHeldPrice, ...]:
    """The scenario's held reservations priced by the planner's rule, not by their own line."""
    out = []
    for i, line in enumerate(scenario.inventory):
        if line.purchase is not InventoryKind.reserved or line.price_per_gpu_hour is not None:
            continue
        quoted = scenario.held_reservation_quote(line)
        if quoted is None:
            continue  # refused by the loader (no price at all)
        offer, quote = quoted
        on_demand = offer.on_demand.price_per_gpu_hour if offer.on_demand is not None else None
        out.append(AssumedHeldPrice(
            index=i, line=line, price_per_gpu_hour=quote.price_per_gpu_hour,
            quote_assumed=quote.assumed,
            discount=(1 - quote.price_per_gpu_hour / on_demand
                      if quote.assumed and on_demand else None)))
    return tuple(out)


def _held_price_assumption(scenario: Scenario) -> Assumption | None:
    found = assumed_held_prices(scenario)
    if not found:
        return None
    cur = scenario.policy.currency
    return Assumption(
        "Held reservation price",
        _values([f"{a.price_per_gpu_hour:.3f} {cur}/GPU-hour" for a in found]),
        "; ".join(a.where() for a in found),
        "; ".join(dict.fromkeys(a.rule for a in found))
        + ": give the reservation's price_per_gpu_hour on its inventory line")


def assumed_figures(scenario: Scenario) -> tuple[Assumption, ...]:
    """Every kind of assumed figure in the scenario, in the order a reviewer should check them."""
    out: list[Assumption] = []
    for figure, name, why in OFFER_FIGURES:
        offers = _offers_with(scenario, figure)
        if offers:
            out.append(Assumption(name, _value(figure, offers), _where(offers), why))
    defaulted = [w for w in scenario.workloads if utilization_assumed(w)]
    if defaulted:
        classes = sorted({w.workload_class for w in defaulted})
        value = "; ".join(f"{label(c).lower()} {DEFAULT_TARGET_UTILIZATION[c]:.0%}"
                          for c in classes)
        out.append(Assumption(
            "Target utilization", value, ", ".join(w.name for w in defaulted),
            "the workload states none: its class default"))
    poisson = [w for w in scenario.workloads if arrivals_assumed(w)]
    if poisson:
        out.append(Assumption(
            "Arrivals", "Poisson at the planned rate", ", ".join(w.name for w in poisson),
            "no burstiness given: real traffic may be burstier"))
    windowed = [w for w in scenario.workloads if window_sizing(w) is not None]
    if windowed:
        out.append(Assumption(
            "Decode batch and KV cache", "Poisson at the planned rate",
            ", ".join(w.name for w in windowed),
            "TTFT and per-token P95 are sized on the trace's replayed window; the decode "
            "batch (Little's law, Poisson P95) that sets the decode step and the KV check is "
            "not taken from the trace"))
    lead = _lead_time_assumption(scenario)
    held = _held_price_assumption(scenario)
    return (*out, *([lead] if lead is not None else []), *([held] if held is not None else []))


def _lead_time_assumption(scenario: Scenario) -> Assumption | None:
    """Reserved quotes and owned hardware that give no lead time: 0 weeks, nobody's figure
    (over periods an order then serves from the period it is placed in)."""
    quotes = [z.id for z in scenario.zones for o in z.offers for q in o.reserved_quotes
              if q.lead_time_assumed]
    owned = [z.id for z in scenario.zones for o in z.offers
             if o.owned is not None and o.owned.lead_time_assumed]
    if not quotes and not owned:
        return None
    what = " and ".join(x for x in (
        plural(len(quotes), "reserved quote") if quotes else "",
        plural(len(owned), "owned offer") if owned else "") if x)
    return Assumption(
        "Lead time", "0 weeks", f"{what} in {plural(len({*quotes, *owned}), 'zone')}",
        "the scenario gives none: an order serves from the day it is placed (over periods, "
        "from the period it is ordered in) — give lead_time_weeks")


@dataclass(frozen=True)
class BorrowedCosts:
    """The plan's analytic rates on one GPU type that rest on a runtime's fixed costs fitted on
    another GPU (``Allocation.costs_fitted_on``)."""

    gpu: str
    fitted_on: str
    runtimes: tuple[str, ...]
    workloads: tuple[str, ...]
    cost_share: float | None
    """Σ ``cost_per_month`` of those allocations ÷ the plan's monthly cost [1]."""


#: Where the fitting of runtime costs, and what a borrowed fit is off by, is written down.
BORROWED_DOC = "docs/calibration.md"


def borrowed_costs_in_plan(plan: Plan, scenario: Scenario) -> tuple[BorrowedCosts, ...]:
    """Per GPU type (and the GPU its costs came from), the plan's allocations whose analytic
    rate rests on runtime costs fitted on another GPU, largest share of the cost first; read
    from ``plan.allocations`` (``costs_fitted_on``), so a plan.json says it by itself."""
    runtime = {w.name: w.runtime for w in scenario.workloads}
    groups: dict[tuple[str, str], list[Allocation]] = {}
    for a in plan.allocations:
        if a.costs_fitted_on is not None and a.replicas > 0:
            groups.setdefault((a.gpu, a.costs_fitted_on), []).append(a)
    total = plan.cost.per_month
    out = [BorrowedCosts(
        gpu=gpu, fitted_on=fitted_on,
        runtimes=tuple(dict.fromkeys(runtime.get(a.workload, "?") for a in mine)),
        workloads=tuple(dict.fromkeys(a.workload for a in mine)),
        cost_share=sum(a.cost_per_month for a in mine) / total if total > 0 else None,
    ) for (gpu, fitted_on), mine in groups.items()]
    return tuple(sorted(out, key=lambda b: (-(b.cost_share or 0.0), b.gpu, b.fitted_on)))


def _share_text(b: BorrowedCosts) -> str:
    return "" if b.cost_share is None else f" ({b.cost_share:.1%} of the cost)"


def borrowed_sentence(plan: Plan, scenario: Scenario) -> str:
    """One sentence naming every GPU type of the plan whose predicted rates rest on runtime
    costs fitted on another GPU, and the share of the cost on it ("" when none)."""
    found = borrowed_costs_in_plan(plan, scenario)
    if not found:
        return ""
    runtimes = "/".join(dict.fromkeys(r for b in found for r in b.runtimes))
    return ("runtime costs borrowed: "
            + "; ".join(f"{b.gpu}{_share_text(b)} from {b.fitted_on}" for b in found)
            + f" — their predicted rates use {runtimes}'s per-step costs fitted on that GPU, "
            f"not measured on their own ({BORROWED_DOC}); a measured row of yours overrides "
            "them")


def borrowed_assumption(plan: Plan, scenario: Scenario) -> Assumption | None:
    """The borrowed runtime costs of the plan as one assumed figure (``None`` when none)."""
    found = borrowed_costs_in_plan(plan, scenario)
    if not found:
        return None
    return Assumption(
        "Runtime fixed costs",
        "; ".join(f"{b.gpu}: {'/'.join(b.runtimes)}'s fitted on {b.fitted_on}" for b in found),
        "; ".join(f"{b.gpu} rows of {', '.join(b.workloads)}{_share_text(b)}" for b in found),
        "no measurement of the runtime on that GPU: its predicted rates use another GPU's "
        f"per-step costs ({BORROWED_DOC}); a measured row overrides them")


def plan_assumptions(plan: Plan, scenario: Scenario) -> tuple[Assumption, ...]:
    """:func:`assumed_figures` of the scenario, then those of the plan's own fleet (runtime
    costs borrowed by the GPUs it runs on)."""
    borrowed = borrowed_assumption(plan, scenario)
    return assumed_figures(scenario) + (() if borrowed is None else (borrowed,))


def price_source(offer: Offer, kind: PurchaseKind) -> str | None:
    """Where a price comes from, in words: a derived reserved price says it is assumed and how
    it was derived before naming the table its on-demand price came from."""
    source = offer.price_source
    if kind is not PurchaseKind.reserved or not offer_assumes(offer, AssumedFigure.reserved_price):
        return source
    quotes = _reserved([("", offer)], terms=False)
    how = f"{ASSUMED}: {quotes[0]}" if quotes else ASSUMED
    return f"{how}, on-demand from {source}" if source else how


@dataclass(frozen=True)
class OfferTerms:
    """One purchase kind of one offer: the terms a price table row shows."""

    zone: str
    offer: Offer
    kind: PurchaseKind
    terms: ReservedTerms | OnDemandTerms | SpotTerms

    @property
    def kind_label(self) -> str:
        """``Reserved``; ``Reserved 36 months, upfront all`` for one of several quotes of an
        offer, or one paid up front (its price is the effective one, the commitment spread over
        the term's hours)."""
        t, text = self.terms, label(self.kind)
        if not isinstance(t, ReservedTerms):
            return text
        if len(self.offer.reserved_quotes) > 1:
            text += f" {t.commitment_months} months"
        if t.upfront is not Upfront.none:
            text += f", upfront {t.upfront.value}"
        return text


def offers_bought(plan: Plan, scenario: Scenario) -> tuple[list[OfferTerms], str]:
    """Every purchase kind of the offers of the (zone, GPU type) pairs the plan buys, in
    scenario order; and one line counting the offers it does not use ("" when none). Over
    periods the plan buys what any period's fleet runs and what it orders: the first
    period's fleet alone left out an order's offer (its price and source) and called it
    "not used by the plan"."""
    used = ({(n.zone, n.gpu) for n in plan.nodes}
            | {(n.zone, n.gpu) for p in plan.periods for n in p.nodes}
            | {(o.zone, o.gpu) for o in plan.orders})
    rows: list[OfferTerms] = []
    unused: list[tuple[str, str]] = []
    for z in scenario.zones:
        for o in z.offers:
            if (z.id, o.gpu) not in used:
                unused.append((z.id, o.gpu))
                continue
            for kind in PURCHASE_KINDS:
                # every reserved quote: the cheapest alone hid the 12-month quote a plan
                # ordered behind its 36-month one
                quotes = (o.reserved_quotes if kind is PurchaseKind.reserved
                          else (t,) if (t := o.terms(kind)) is not None else ())
                rows += [OfferTerms(z.id, o, kind, q) for q in quotes]
    if not unused:
        return rows, ""
    gpus = sorted({g for _, g in unused})
    zones = sorted({z for z, _ in unused})
    return rows, (f"{plural(len(unused), 'other offer')} ({', '.join(gpus)} in "
                  f"{plural(len(zones), 'zone')}) not used by the plan: their prices are in "
                  "scenario.resolved.yaml.")
