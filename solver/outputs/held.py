"""The nodes of a committed row a plan already holds (the scenario's ``inventory``), and where
each row's price comes from.

A plan over periods shows its first period's fleet, in which the inventory's reservations and
owned nodes are rows like any other. Shown with the zone's quote, a held reservation read as a
new 36-month commitment with an 8-week lead time, and an owned node at its power and hosting
price had no source beside the order line's price with capital (qa4 4). Every figure here is
read off the scenario's inventory lines and offers (docs/outputs.md, "Purchase plan").
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from models.common import PurchaseKind
from models.horizon import HeldNodes, InventoryKind
from models.offers import Offer
from models.plan import NodeCount, Plan
from models.scenario import Scenario
from solver.outputs.assumptions import ASSUMED, AssumedHeldPrice, assumed_held_prices, price_source
from solver.outputs.labels import day_after, plural


@dataclass(frozen=True)
class Held:
    """Inventory nodes in one row of the plan's (first period's) fleet."""

    nodes: int
    """Held nodes counted in the row (at most its nodes) [nodes]."""
    of_nodes: int
    """The row's nodes [nodes]."""
    text: str
    """``2 nodes held (inventory): reservation to 2027-07-01``."""
    price_source: str
    """Where the held nodes' price comes from."""
    price_assumed: bool = False
    """A held reservation's price is the planner's rule, its inventory line stating none."""
    to: dt.date | None = None
    """The end the text shows after "to": the day after the last day held (a reservation's
    ``ends``, an owned node's retirement); ``None`` when the text shows no date. Outputs that
    say what "to" means beside the text read this, not the text."""

    @property
    def all_held(self) -> bool:
        """Every node of the row is held: no new purchase, so no quote's terms apply."""
        return self.nodes >= self.of_nodes


def _first_period(plan: Plan) -> tuple[dt.date, dt.date] | None:
    """First day and the day after the last of the period the plan's fleet is (None: one day)."""
    firsts = [p for p in plan.periods if p.period == 0]
    return (firsts[0].start, firsts[0].end) if firsts else None


def held_lines(plan: Plan, scenario: Scenario, n: NodeCount) -> list[HeldNodes]:
    """The inventory lines of a committed row's pool held through the plan's first period."""
    if n.purchase not in (PurchaseKind.reserved, PurchaseKind.owned) or n.slice is not None:
        return []
    window = _first_period(plan)
    return [line for line in scenario.inventory
            if (line.zone, line.gpu, line.purchase.pool_kind) == (n.zone, n.gpu, n.purchase)
            and (window is None or line.held_through(*window))]


def _assumed(found: tuple[AssumedHeldPrice, ...], line: HeldNodes) -> AssumedHeldPrice | None:
    """The rule's price of a held reservation whose line states none (``None``: it states one),
    among the scenario's ``assumed_held_prices`` (found once per row, not once per line)."""
    return next((a for a in found if a.line == line), None)


def assumed_price_text(a: AssumedHeldPrice, currency: str) -> str:
    """``1.574 USD/GPU-h, assumed: its inventory line states no price: …``."""
    return f"{a.price_per_gpu_hour:,.3f} {currency}/GPU-h, {ASSUMED}: {a.rule}"


def kept_from(plan: Plan, line: HeldNodes) -> str | None:
    """The earlier plan.json a re-plan's held line is an order of (``plan --existing`` adds
    each kept order to the inventory: keep_orders), ``None`` for a line of the scenario's."""
    r = plan.replanned_from
    if r is None:
        return None
    match = any((o.zone, o.gpu, o.purchase, o.nodes, o.usable_from) == (
        line.zone, line.gpu, line.purchase.pool_kind, line.nodes, line.available_from)
        for o in r.kept)
    return r.file if match else None


def _line_source(found: tuple[AssumedHeldPrice, ...], line: HeldNodes, offer: Offer | None,
                 currency: str, kept: str | None = None, running: float = 0.0) -> str:
    """Where a held line's price comes from; ``running``: an owned line's power and hosting
    per node-month (:meth:`Scenario.held_running_cost`)."""
    if kept is not None:  # not "as its inventory line states": no line of the user's says it
        if line.purchase is InventoryKind.reserved:
            return (f"held reservation: {line.price_per_gpu_hour:,.3f} {currency}/GPU-h as "
                    f"ordered by the earlier plan ({kept})")
        return (f"owned, held: {line.running_cost_per_node_month:,.0f} {currency}/node-month of "
                f"power and hosting as ordered by the earlier plan ({kept}); the capital is "
                "already spent")
    if line.purchase is InventoryKind.reserved:
        if line.price_per_gpu_hour is not None:
            return (f"held reservation: {line.price_per_gpu_hour:,.3f} {currency}/GPU-h as its "
                    "inventory line states")
        a = _assumed(found, line)
        return ("held reservation: " + (assumed_price_text(a, currency) if a is not None else
                                         "the zone's cheapest reserved quote (its inventory "
                                         "line states no price)"))
    if line.running_cost_per_node_month is not None:
        return (f"owned, held: {line.running_cost_per_node_month:,.0f} {currency}/node-month of "
                "power and hosting as its inventory line states; the capital is already spent")
    terms = "" if offer is None or offer.owned is None else (
        f" ({running:,.0f} {currency}/node-month: {offer.owned.gpu_tdp_w:g} W per GPU + "
        f"{offer.owned.node_overhead_w:g} W per node × "
        f"{offer.owned.average_utilization:.0%} × {offer.owned.price_per_kwh:g} {currency}/kWh "
        f"× PUE {offer.owned.pue:g} + hosting {offer.owned.hosting_per_node_month:,.0f} "
        f"{currency}/node-month)")
    return ("owned, held: power and hosting only, from the zone's owned terms" + terms
            + "; the capital is already spent")


def held_in_row(plan: Plan, scenario: Scenario, n: NodeCount, offer: Offer | None,
                currency: str) -> Held | None:
    """What of a row is inventory, in words; ``None`` when nothing is."""
    lines = held_lines(plan, scenario, n)
    count = min(sum(line.nodes for line in lines), n.nodes)
    if count == 0:
        return None
    share = plural(count, "node") if count >= n.nodes else f"{count} of {n.nodes} nodes"
    found = assumed_held_prices(scenario)
    assumed = [a for line in lines if (a := _assumed(found, line)) is not None]
    if n.purchase is PurchaseKind.reserved:
        to: dt.date | None = day_after(min(line.ends for line in lines if line.ends is not None))
        text = f"{share} held (inventory): reservation to {to}"
        text += "".join(f"; price {assumed_price_text(a, currency)}" for a in assumed)
    else:
        retired = [line.ends for line in lines if line.ends is not None]
        to = day_after(min(retired)) if retired else None
        text = f"{share} owned (inventory): capital spent" + (f", held to {to}" if to else "")
        # their running cost, which no cell of the Held tables gave (F12)
        running = sorted({scenario.held_running_cost(line) for line in lines})
        text += "; power and hosting " + " or ".join(
            f"{r:,.0f}" for r in running) + f" {currency}/node-month"
    source = "; ".join(dict.fromkeys(_line_source(
        found, line, offer, currency, kept_from(plan, line),
        scenario.held_running_cost(line) if line.purchase is InventoryKind.owned else 0.0)
        for line in lines))
    return Held(count, n.nodes, text, source, price_assumed=bool(assumed), to=to)


def owned_source(offer: Offer, currency: str) -> str:
    """Where a new owned node's price comes from: capital over its life, power and hosting."""
    o = offer.owned
    assert o is not None
    return (f"owned: capital {o.capex_per_node:,.0f} {currency} ÷ {o.life_months} months + power "
            f"({o.gpu_tdp_w:g} W per GPU + {o.node_overhead_w:g} W per node × "
            f"{o.average_utilization:.0%} × {o.price_per_kwh:g} {currency}/kWh × PUE {o.pue:g}) "
            f"+ hosting {o.hosting_per_node_month:,.0f} {currency}/node-month, from the zone's "
            "owned terms")


def row_price_source(n: NodeCount, offer: Offer | None, held: Held | None,
                     currency: str) -> str | None:
    """The source of a row's price: the held nodes' (inventory), the new nodes' (the offer's),
    or both when the row mixes them (its price is then their average)."""
    new = None
    if offer is not None:
        new = (owned_source(offer, currency) if n.purchase is PurchaseKind.owned
               and offer.owned is not None else price_source(offer, n.purchase))
    if held is None:
        return new
    if held.all_held:
        return held.price_source
    return (f"{held.price_source}; the {plural(held.of_nodes - held.nodes, 'new node')}: "
            f"{new or 'the offer'}; the price is the average over the row's nodes")


def assumed_spend_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """Under "spent inside the horizon": what of it is held reservations priced by the rule,
    their inventory lines stating no price (the same in every demand scenario; none: [])."""
    if plan.horizon is None:
        return []
    cur = plan.cost.currency
    periods = sorted({(p.start, p.end) for p in plan.periods})
    out = []
    m = plan.horizon.period_months
    for a in assumed_held_prices(scenario):
        months = sum(m * a.line.held_through(start, end)
                     + a.line.months_held_in_part(start, end, m) for start, end in periods)
        if months == 0:
            continue
        cost = a.cost_per_month(scenario.policy.hours_per_month) * months
        out.append(f"  of which {cost:,.0f} {cur} in every scenario is {a.where()} at "
                   f"{assumed_price_text(a, cur)} — give its price_per_gpu_hour")
    return out


@dataclass(frozen=True)
class PartlyHeld:
    """A held reservation that ends inside a period: paid to its end there, no load."""

    index: int
    """Its place in the scenario's ``inventory``."""
    what: str
    """``1 reserved H100-SXM node in use1-az1``."""
    paid_to: dt.date
    """The day after its last (the outputs' "to")."""
    months: float
    """Months paid of periods it is not held through [months]."""
    cost: float
    """Paid for those months [currency]."""
    price_given: bool


def partly_held(plan: Plan, scenario: Scenario) -> list[PartlyHeld]:
    """Held reservations that end inside a period of the plan, paid up to their end there
    though the plan counts them in no such period (:data:`PARTLY_HELD_RULE`); none: []."""
    if plan.horizon is None:
        return []
    m = plan.horizon.period_months
    periods = sorted({(p.start, p.end) for p in plan.periods})
    out = []
    for i, line in enumerate(scenario.inventory):
        if line.purchase is not InventoryKind.reserved or line.ends is None:
            continue
        months = sum(line.months_held_in_part(start, end, m) for start, end in periods)
        if months == 0:
            continue
        cost = line.reserved_cost_per_month(scenario.held_reservation_price(line),
                                            scenario.policy.hours_per_month) * months
        out.append(PartlyHeld(i, f"{plural(line.nodes, f'reserved {line.gpu} node')} in "
                                 f"{line.zone}", day_after(line.ends), months, cost,
                              line.price_per_gpu_hour is not None))
    return out


def partly_held_spend_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """Under "spent inside the horizon": held reservations that end inside a period, paid up
    to their end there though the plan counts them in no such period (a period counts only
    nodes held through the whole of it); none: []."""
    cur = plan.cost.currency
    return [f"  of which {p.cost:,.0f} {cur} in every scenario is inventory[{p.index}] "
            f"({p.what}) paid to {p.paid_to} for {p.months:.2g} months of a period it is not "
            f"held through: it carries no load in the plan there"
            + ("" if p.price_given else " (part of its assumed-price figure above)")
            for p in partly_held(plan, scenario)]
