"""What a scenario can order, and from which day: its reserved quotes and owned offers as order
options, and the plan date (docs/program.md, "Planning periods").

Pure data, apart from the program over periods (:mod:`.periods`) that turns each option into
order variables: ``validate`` reads these (solver/cli/lead_times.py) without importing PuLP.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from models.common import PurchaseKind, Upfront
from models.plan import HorizonStart
from models.scenario import Scenario
from solver.program.keys import PoolKey

#: Weeks to days.
DAYS_PER_WEEK = 7


@dataclass(frozen=True)
class OrderOption:
    """One way to add nodes to a committed pool: a reserved quote or owned hardware."""

    pool: PoolKey
    quote: int
    """Index of the reserved quote in the offer (0 for owned hardware)."""
    gpus_per_node: int
    term_months: int
    """Reserved: the term; owned: the life the capital is amortised over [months]."""
    lead_time_weeks: float
    stock_gpus: int
    price_per_gpu_hour: float
    """Reserved: the effective price; owned: the monthly cost per node spread over its GPUs'
    hours [currency/(GPU·h)]."""
    cost_per_node_month: float
    """[currency/(node·month)]."""
    upfront: Upfront = Upfront.none
    upfront_share: float = 0.0
    """Share of the commitment paid at the start of the term (owned: all the capital) [1]."""
    capex_per_node: float = 0.0
    assumed: bool = False
    instance_type: str | None = None

    @property
    def label(self) -> str:
        """``reserved 12 months, upfront none`` or ``owned``."""
        if self.pool.purchase is PurchaseKind.owned:
            return "owned"
        return f"reserved {self.term_months} months, upfront {self.upfront.value}"


def plan_date_of(scenario: Scenario) -> dt.date:
    """The day orders are planned from: ``policy.as_of`` where given, before the horizon's
    start too (a buyer planning in December for a January horizon orders from December, and a
    lead time counts from then), else the horizon's start (without a horizon: today). A date
    of the input, never the clock, where there is a horizon: same input, same plan."""
    as_of = dt.date.fromisoformat(scenario.policy.as_of) if scenario.policy.as_of else None
    if scenario.horizon is None:
        return as_of or dt.date.today()
    return as_of or scenario.horizon.start


def order_from_text(scenario: Scenario) -> str:
    """Where the plan date comes from, in words: ``2026-12-04 (policy.as_of)`` or
    ``2027-01-01 (the horizon's start)``."""
    if scenario.policy.as_of:
        where = "policy.as_of"
    else:
        where = "the horizon's start" if scenario.horizon is not None else "today"
    return f"{plan_date_of(scenario)} ({where})"


def replan_from(scenario: Scenario) -> dt.date:
    """The day the next re-plan's interval counts from: the plan date, or the horizon's start
    where the plan is made before it (orders placed early for the first period are still
    decided now; the re-plan is a period on, as without ``as_of``)."""
    plan_date = plan_date_of(scenario)
    h = scenario.horizon
    return max(plan_date, h.start) if h is not None else plan_date


def horizon_start_from(scenario: Scenario) -> HorizonStart:
    """Where a plan's horizon start comes from: the scenario's ``horizon``, else ``policy.as_of``,
    else the day it is planned (:func:`plan_date_of`)."""
    if scenario.horizon is not None:
        return HorizonStart.horizon
    return HorizonStart.as_of if scenario.policy.as_of else HorizonStart.today


def lead_days(lead_time_weeks: float) -> int:
    """A lead time in whole days, a part of a day dropped (plans are made by the day) [days]."""
    return dt.timedelta(days=lead_time_weeks * DAYS_PER_WEEK).days


def order_by(period_start: dt.date, lead_time_weeks: float) -> dt.date:
    """The last day to place an order that is in service from a period starting on
    ``period_start``: the start less the lead time (P3 refuses orders due before the plan
    date)."""
    return period_start - dt.timedelta(days=lead_days(lead_time_weeks))


def arrives(placed: dt.date, lead_time_weeks: float) -> dt.date:
    """The first day an order placed on ``placed`` is in service: it serves a period exactly
    when the period starts on or after this day (``order_by(start) >= placed``)."""
    return placed + dt.timedelta(days=lead_days(lead_time_weeks))


def first_period(period_starts: Sequence[dt.date], lead_time_weeks: float,
                 plan_date: dt.date) -> int | None:
    """The first of the periods (by their starts, in order) that an order placed on or after
    ``plan_date`` can serve: the first whose :func:`order_by` is not before the plan date
    (``None``: none)."""
    return next((q for q, start in enumerate(period_starts)
                 if order_by(start, lead_time_weeks) >= plan_date), None)


def order_options(scenario: Scenario) -> tuple[OrderOption, ...]:
    """Every reserved quote and owned offer of every zone, sorted."""
    out = []
    hours = scenario.policy.hours_per_month
    for zone in sorted(scenario.zones, key=lambda z: z.id):
        for offer in sorted(zone.offers, key=lambda o: o.gpu):
            node = offer.gpus_per_node or scenario.gpu(offer.gpu).gpus_per_node
            for j, quote in enumerate(offer.reserved_quotes):
                out.append(OrderOption(
                    PoolKey(zone.id, offer.gpu, PurchaseKind.reserved), j, node,
                    quote.term_months, quote.lead_time_weeks, quote.stock_gpus,
                    quote.price_per_gpu_hour, quote.price_per_gpu_hour * node * hours,
                    quote.upfront, quote.paid_upfront_share, 0.0, quote.assumed,
                    offer.instance_type))
            if offer.owned is not None:
                owned = offer.owned
                monthly = owned.cost_per_node_month(node, hours)
                out.append(OrderOption(
                    PoolKey(zone.id, offer.gpu, PurchaseKind.owned), 0, node, owned.life_months,
                    owned.lead_time_weeks, owned.stock_gpus, monthly / (node * hours), monthly,
                    Upfront.all, 1.0, owned.capex_per_node, False, offer.instance_type))
    return tuple(out)
