"""Order options whose lead time keeps them out of the first periods of a horizon, or out of
all of them.

An order serves from a period only if it can be placed on or after the plan date, the
period's start less its lead time: P3 of the program over periods, whose date rule
(:func:`~solver.program.orders.first_period`) is read here too. A quote whose lead time
reaches past the start of the horizon's last period serves no period: the plan cannot use it,
and where nothing else is sold it is infeasible with "each period can be met on its own, but
not with orders placed in time". ``validate`` warns of such quotes; an infeasible ``plan`` names
them under that diagnosis. (In the CLI: outputs may not import the program.)
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.common import PurchaseKind, SolveStatus
from models.horizon import Horizon
from models.scenario import Scenario
from solver.outputs.summary import ScenarioSummary
from solver.program.orders import (
    OrderOption,
    arrives,
    first_period,
    order_by,
    order_from_text,
    order_options,
    plan_date_of,
)

if TYPE_CHECKING:  # validate reads the lead times without importing the plan's models
    from models.plan import Plan


@dataclass(frozen=True)
class Reach:
    """An order option and the first period it can serve (``None``: none)."""

    option: OrderOption
    first_period: int | None
    arrives: dt.date
    """When an order placed on the plan date arrives."""


def _what(option: OrderOption) -> str:
    kind = ("owned hardware" if option.pool.purchase is PurchaseKind.owned
            else f"reserved quote ({option.term_months} months)")
    return (f"`lead_time_weeks: {option.lead_time_weeks:g}` of {option.pool.gpu}'s {kind} in "
            f"{option.pool.zone}")


def late_orders(scenario: Scenario) -> list[Reach]:
    """The order options of a scenario over periods that cannot serve its first period, in
    the order of :func:`~solver.program.orders.order_options` (empty without a horizon)."""
    h = scenario.horizon
    if h is None:
        return []
    today = plan_date_of(scenario)
    starts = [h.period_start(q) for q in range(h.count)]
    out = []
    for option in order_options(scenario):
        first = first_period(starts, option.lead_time_weeks, today)
        if first != 0:
            out.append(Reach(option, first, arrives(today, option.lead_time_weeks)))
    return out


def lead_time_text(scenario: Scenario, reach: Reach) -> str:
    """One late option in words, with the fix where it serves no period."""
    h = scenario.horizon
    assert h is not None
    placed = f"{_what(reach.option)}: ordered on the plan date, {order_from_text(scenario)}, "
    if reach.first_period is None:
        last = h.period_start(h.count - 1)
        return (f"{placed}it arrives on "
                f"{reach.arrives}, after the last period starts ({last}), so it serves no "
                f"period — shorten its lead time, lengthen the horizon (horizon.count)"
                f"{_meanwhile(scenario, reach.option)}")
    start = h.period_start(reach.first_period)
    return (f"{placed}it arrives on {reach.arrives}, so it serves from period "
            f"{reach.first_period} ({start}) on, not before")


def _meanwhile(scenario: Scenario, option: OrderOption) -> str:
    """The end of a late quote's fix: what can add capacity without a lead time. It said "or
    sell on-demand capacity there", read as advice to sell (and said of on-premise sites that
    rent nothing): it meant "add an on-demand offer"."""
    pool = option.pool
    offer = scenario.offer(pool.zone, pool.gpu)
    if offer is not None and offer.on_demand is not None:
        return (f"; until then only {pool.zone}'s on-demand {pool.gpu} (rented by the hour, no "
                "lead time) adds capacity there")
    return (f", or add an `on_demand` offer of {pool.gpu} (rented by the hour, no lead time) "
            f"to {pool.zone} if it rents any, else to a zone that does")


#: Days after a period's start within which an order's arrival is said to miss that period
#: narrowly: a new user planning on 2026-12-05 had every 4-week quote arrive on 2027-01-02,
#: a day after the first quarter starts, so the quarter ran on on-demand (a period counts only
#: nodes in service on each of its days), and validate said only "from period 1"
#: (fresh-s24 F4). A week: a shortfall a quote's lead time may be negotiated down by.
NEAR_MISS_DAYS = 7


def _near_miss(h: Horizon, q: int, group: list[Reach]) -> str:
    """`` (the first arrives on D, N days after period q−1 starts …)`` where the soonest of
    ``group`` arrives within :data:`NEAR_MISS_DAYS` after the previous period's start, else
    empty."""
    if q == 0:
        return ""
    soonest = min(r.arrives for r in group)
    late_days = (soonest - h.period_start(q - 1)).days
    if not 0 < late_days <= NEAR_MISS_DAYS:
        return ""
    return (f" (the soonest arrives on {soonest}, {late_days} day{'' if late_days == 1 else 's'}"
            f" after period {q - 1} starts: a period counts only nodes in service on each of "
            f"its days, so a lead time {late_days} day{'' if late_days == 1 else 's'} shorter "
            f"would serve period {q - 1})")


def first_period_line(scenario: Scenario, late: list[Reach]) -> str | None:
    """One line for the options that serve, but not from the first period: by the first
    period they serve, their lead times and how many (named where one or two)."""
    h = scenario.horizon
    serving = [r for r in late if r.first_period is not None]
    if h is None or not serving:
        return None
    parts = []
    for q in sorted({r.first_period for r in serving if r.first_period is not None}):
        group = [r for r in serving if r.first_period == q]
        weeks = ", ".join(f"{w:g}" for w in sorted({r.option.lead_time_weeks for r in group}))
        named = ("; ".join(_what(r.option).split(" of ", 1)[1] for r in group)
                 if len(group) <= 2 else f"{len(group)} quotes")
        parts.append(f"from period {q} ({h.period_start(q)}): {named}, lead time"
                     f"{'s' if ',' in weeks else ''} {weeks} weeks{_near_miss(h, q, group)}")
    return (f"new orders (placed from {order_from_text(scenario)}) serve at the earliest "
            + "; ".join(parts))


def with_lead_time_causes(plan: Plan, scenario: Scenario) -> Plan:
    """``plan`` (infeasible over periods, diagnosed as orders that cannot arrive in time)
    with a shortfall per order option its lead time keeps out of the first periods; other
    plans unchanged."""
    if plan.status is not SolveStatus.infeasible or not any(
            d.requirement == "orders" for d in plan.diagnosis):
        return plan
    # here, not at the top: validate imports this module at start-up and never builds a plan
    from models.plan import Shortfall

    late = [Shortfall(requirement="orders", amount=0.0, unit="",
                      message=lead_time_text(scenario, r)) for r in late_orders(scenario)]
    return plan.model_copy(update={"diagnosis": (*plan.diagnosis, *late)}) if late else plan


TODAY_ENV = "FLEETPLAN_TODAY"
"""Environment variable that stands for today's date (YYYY-MM-DD) in :func:`today_date`: the
test suite pins it (tests/conftest.py), so the examples' 2027 horizons do not start "before
today" when the tests run later."""


def today_date() -> dt.date:
    """Today, or the date ``FLEETPLAN_TODAY`` gives where it is set."""
    pinned = os.environ.get(TODAY_ENV)
    return dt.date.fromisoformat(pinned) if pinned else dt.date.today()


def past_start_warning(scenario: Scenario, today: dt.date | None = None) -> str | None:
    """A warning for a horizon that starts before ``today`` (default: :func:`today_date`) where
    no ``policy.as_of`` says the plan is made on another day: the plan date is then the
    horizon's start, so orders due between it and today (which can no longer be placed) are
    planned as if they could be, and periods under way as if still to come. ``None`` where
    the start is today or later, or ``as_of`` is set (a plan re-run as it was made)."""
    h = scenario.horizon
    today = today or today_date()
    if h is None or scenario.policy.as_of is not None or h.start >= today:
        return None
    begun = [q for q in range(h.count) if h.period_start(q) < today]
    ahead = next((h.period_start(q) for q in range(h.count) if h.period_start(q) >= today),
                 None)
    # without as_of the plan date is the start (plan_date_of): a start moved ahead is the
    # day orders are placed, so an order with a lead time serves a later period than that
    move = (f"move horizon.start to the first period still to come ({ahead}), where orders "
            "are placed on that day and those with lead times serve later periods"
            if ahead is not None else
            "move horizon.start to a day from today on (every period has begun)")
    return (f"horizon.start {h.start} is before today ({today}) and policy.as_of is not set: "
            f"the plan is made as of {h.start}, so orders due between then and today, which "
            f"can no longer be placed, are planned as if they could be, and period"
            f"{'s' if len(begun) > 1 else ''} {', '.join(map(str, begun))} (begun by today) "
            f"as if still to come — set `policy.as_of: {today}` to plan orders from today, or "
            f"{move}")


def stale_as_of_warning(scenario: Scenario, today: dt.date | None = None) -> str | None:
    """A warning for a ``policy.as_of`` before ``today`` (default: :func:`today_date`) in a
    scenario that plans orders (a horizon, or an inventory: :attr:`Scenario.multi_period`)
    where some order could be due between it and today: orders are planned from ``as_of``
    (:func:`~solver.program.orders.plan_date_of`), so a plan can tell a buyer to "order by"
    a day already past — a price-quote date left in the scenario dates orders months back.
    ``None`` otherwise: ``as_of`` today or later, a single-period plan from nothing (``as_of``
    only ages its measured rows: twenty_rps.yaml pins it so), or no order due before today.

    A warning, not an error: ``as_of`` is how a plan is re-run as it was made (same input,
    same plan), and a clock-dependent refusal would fail on one day an input that planned the
    day before; ``plan`` names the orders it dated before today after it plans
    (:func:`past_order_lines`)."""
    as_of_text = scenario.policy.as_of
    today = today or today_date()
    if as_of_text is None or not scenario.multi_period:
        return None
    as_of = dt.date.fromisoformat(as_of_text)
    if as_of >= today:
        return None
    h = scenario.horizon
    fix = (f"set `policy.as_of: {today}` to plan orders from today (or remove it: orders are "
           "then planned from the horizon's start), or keep it only to re-run the plan as it "
           f"was made on {as_of}")
    options = order_options(scenario)
    head = f"policy.as_of {as_of} is before today ({today}): orders are planned from it, so "
    if h is None:
        return (head + f"every order is placed on {as_of}, a day already past, and the "
                f"month planned is {as_of} on, not from today — {fix}")
    due = sorted(((order_by(h.period_start(q), o.lead_time_weeks), q, i)
                  for i, o in enumerate(options) for q in range(h.count)
                  if as_of <= order_by(h.period_start(q), o.lead_time_weeks) < today))
    if not due:
        return None
    first, q, i = due[0]
    option = options[i]
    return (head + f"an order can be dated before today: {_what(option).split(' of ', 1)[1]} "
            f"serving period {q} ({h.period_start(q)}) would be ordered by {first} — a day "
            "already past, an order that can no longer be placed (its nodes would arrive "
            f"later than planned); {len(due)} such order-by date{'s' if len(due) > 1 else ''} "
            f"of options and periods fall between {as_of} and today — {fix}")


def past_order_lines(plan: Plan, scenario: Scenario, today: dt.date | None = None
                     ) -> list[str]:
    """``plan``'s orders due before ``today`` (default: :func:`today_date`), which a stale
    ``policy.as_of`` (:func:`stale_as_of_warning`) lets the program date in the past: one
    warning naming each (empty where none)."""
    warning = past_order_warning(plan, scenario, today)
    return [] if warning is None else [f"warning: {warning}"]


def past_order_warning(plan: Plan, scenario: Scenario, today: dt.date | None = None
                       ) -> str | None:
    """The warning of :func:`past_order_lines`, without its ``warning:``; ``None`` where no
    order of ``plan`` is due before ``today``."""
    today = today or today_date()
    late = [o for o in plan.orders if o.order_by < today]
    if not late:
        return None
    named = "; ".join(f"{o.gpus} {o.gpu} in {o.zone} by {o.order_by}"
                      + ("" if o.scenario is None else f" (if `{o.scenario}`)")
                      for o in sorted(late, key=lambda o: o.order_by))
    return (f"{len(late)} order{'s' if len(late) > 1 else ''} of this plan "
            f"{'are' if len(late) > 1 else 'is'} due before today ({today}), from "
            f"{order_from_text(scenario)}: {named} — a day already past: the nodes cannot "
            f"arrive as planned; re-plan with `policy.as_of: {today}` before ordering")


def with_date_warnings(plan: Plan, scenario: Scenario, today: dt.date | None = None) -> Plan:
    """``plan`` carrying in ``warnings`` what a stale ``policy.as_of`` makes ``plan`` warn of on
    stderr, in the same words: the stale date (:func:`stale_as_of_warning`) and the orders
    dated before ``today`` (:func:`past_order_warning`). A new user's plan said it only on
    stderr: report.md and plan.json, what a buyer reads later, said nothing of it."""
    found = (stale_as_of_warning(scenario, today), past_order_warning(plan, scenario, today))
    warnings = tuple(w for w in found if w is not None)
    return plan.model_copy(update={"warnings": warnings}) if warnings else plan


def early_order_line(scenario: Scenario, today: dt.date | None = None) -> str | None:
    """A line of validate's summary (after when new orders serve) for a horizon that starts
    after ``today`` (default: :func:`today_date`) without ``policy.as_of``, where an order
    placed today would serve an earlier period than one placed on the start, the plan date:
    the options so affected, and the fix (``as_of``: a date of the input, so the plan stays
    the same whenever it is run). ``None`` otherwise."""
    h = scenario.horizon
    today = today or today_date()
    if h is None or scenario.policy.as_of is not None or h.start <= today:
        return None
    starts = [h.period_start(q) for q in range(h.count)]
    moved: dict[tuple[int, int | None], list[OrderOption]] = {}
    for option in order_options(scenario):
        now = first_period(starts, option.lead_time_weeks, today)
        later = first_period(starts, option.lead_time_weeks, h.start)
        if now is not None and now != later:
            moved.setdefault((now, later), []).append(option)
    if not moved:
        return None
    parts = []
    for (now, later), group in sorted(moved.items(), key=lambda kv: kv[0][0]):
        weeks = ", ".join(f"{w:g}" for w in sorted({o.lead_time_weeks for o in group}))
        named = ("; ".join(_what(o).split(" of ", 1)[1] for o in group) if len(group) <= 2
                 else f"{len(group)} quotes")
        parts.append(f"{named} (lead time{'s' if ',' in weeks else ''} {weeks} weeks) would serve "
                     f"from period {now} ({starts[now]}), not "
                     f"{'none' if later is None else f'{later} ({starts[later]})'}")
    return (f"orders are planned from horizon.start {h.start} (policy.as_of is not set), but "
            f"can be placed from today ({today}); placed today, " + "; ".join(parts)
            + f" — set `policy.as_of: {today}` to plan orders from today")


def with_lead_times(summary: ScenarioSummary, scenario: Scenario,
                    today: dt.date | None = None) -> ScenarioSummary:
    """``validate``'s summary with a warning per quote that serves no period, a warning for a
    horizon that starts before ``today`` (:func:`past_start_warning`) or a ``policy.as_of``
    before it (:func:`stale_as_of_warning`) and, among its lines
    over time, from which period new orders serve at the earliest and, without ``as_of``, which
    would serve sooner if placed today (after the horizon and inventory lines; a line, not a
    warning: the plan from the start is what the input says)."""
    late = late_orders(scenario)
    past = past_start_warning(scenario, today)
    stale = stale_as_of_warning(scenario, today)
    warnings = (*(() if past is None else (past,)), *(() if stale is None else (stale,)),
                *(lead_time_text(scenario, r) for r in late if r.first_period is None))
    first = first_period_line(scenario, late)
    early = early_order_line(scenario, today)
    lines = list(summary.over_time)
    at = next((i for i, line in enumerate(lines)
               if not line.startswith(("horizon:", "inventory:"))), len(lines))
    lines[at:at] = [line for line in (first, early) if line is not None]
    return summary.model_copy(update={
        "over_time": tuple(lines),
        "inventory_warnings": (*summary.inventory_warnings, *warnings)})
