"""What a plan over periods says to order, when, and what each demand scenario would add.

:func:`schedule_lines` is the text the terminal and ``report.md`` print: order-by dates, what to
order now, what the ``high`` scenario needs on top, idle capacity held, the horizon's cost (the
workbook's *Schedule* sheet: :mod:`.schedule_sheet`). Every figure is read off the plan
(``orders``, ``periods``, ``horizon``): docs/outputs.md, "Schedule".
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from models.common import PurchaseKind
from models.horizon import CommitmentCost, InventoryKind
from models.plan import Allocation, Order, PeriodGpus, PeriodPlan, Plan, SolveStatus
from models.scenario import Scenario
from solver.outputs.held import assumed_spend_lines, partly_held_spend_lines
from solver.outputs.labels import (
    TO_EXCLUSIVE,
    WORK_LIMIT_SHORT,
    day_after,
    plural,
    status_label,
)

#: Name of the demand scenario orders are compared with ("if demand follows `high`").
BASE = "base"

#: Purchase kinds bought per slice, beside which a committed node can sit idle.
ELASTIC = (PurchaseKind.on_demand, PurchaseKind.spot)

#: A gap above which the orders due now carry a warning: the plan is not proven, and on a
#: year's commitments 5 % is more than the minutes a longer solve costs.
LARGE_GAP = 0.05


def _quote(o: Order, currency: str) -> str:
    """``reserved 12 months, upfront none, 2.600 USD/GPU-h (assumed)`` or ``owned``."""
    if o.purchase is PurchaseKind.owned:
        return (f"owned, {o.price_per_gpu_hour:.3f} {currency}/GPU-h with capital, power and "
                "hosting")
    assumed = " (assumed: a discount on on-demand)" if o.price_assumed else ""
    return (f"reserved {o.term_months} months, upfront {o.upfront.value}, "
            f"{o.price_per_gpu_hour:.3f} {currency}/GPU-h{assumed}")


def order_line(o: Order, currency: str) -> str:
    """One order as a sentence: what, where, by when, for how long, at what commitment. An
    owned order commits its capital, and pays power and hosting on top: "1,000,000 committed
    (1,048,545 paid inside the horizon)" read as paying more than the whole commitment."""
    paid = f"{o.cost_in_horizon:,.0f} paid inside the horizon"
    commitment = (f"{o.committed_total:,.0f} {currency} capital ({paid}, power and hosting "
                  "included)" if o.purchase is PurchaseKind.owned else
                  f"{o.committed_total:,.0f} {currency} committed ({paid})")
    line = (f"order {o.gpus} {o.gpu} ({plural(o.nodes, 'node')}) in {o.zone} by {o.order_by}: "
            f"{_quote(o, currency)}; serving {o.usable_from} to {o.expires}; {commitment}")
    if o.arrives_from is None:
        return line
    # one month without a horizon: its lead time is not applied; say when it really serves
    return (f"{line}; its lead time is not applied in a plan of one month: placed on "
            f"{o.order_by} it serves from {o.arrives_from}, and the month's fleet counts it "
            "from the start (give the scenario a horizon to plan around the lead time)")


def extra_order_line(o: Order, nodes: int, currency: str) -> str:
    """``nodes`` of order ``o`` beyond base's, as a sentence that says what to buy: the kind and
    terms, the days it serves and what those nodes commit. A new user's "if demand follows
    `high`, order 8 more H100-SXM in dc-east-1 by 2027-07-09" did not say whether to reserve
    or buy them, for how long, or at what cost — what procurement asks first."""
    share = nodes / o.nodes
    committed = o.committed_total * share
    what = (f"{committed:,.0f} {currency} capital" if o.purchase is PurchaseKind.owned
            else f"{committed:,.0f} {currency} committed")
    return (f"order {nodes * (o.gpus // o.nodes)} more {o.gpu} in {o.zone} by {o.order_by} "
            f"({plural(nodes, 'node')}: {_quote(o, currency)}; serving {o.usable_from} to "
            f"{o.expires}; {what})")


def kept_lines(plan: Plan) -> list[str]:
    """A re-plan's orders kept from the earlier plan, as placed (none: [])."""
    r = plan.replanned_from
    if r is None:
        return []
    cur = plan.cost.currency
    head = f"kept from {r.file} of {r.plan_date} (scenario `{r.scenario}`), placed and held:"
    if not r.kept:
        return [f"{head} nothing (no order of it shared by every demand scenario was due "
                "before this plan's date)", *_not_yet_due_lines(r.not_yet_due, cur)]
    return [head, *(f"  {o.gpus} {o.gpu} ({plural(o.nodes, 'node')}) in {o.zone}, due "
                    f"{o.order_by}: {_quote(o, cur)}; serving {o.usable_from} to {o.expires}"
                    for o in r.kept), KEPT_STOCK, *_not_yet_due_lines(r.not_yet_due, cur)]


def _not_yet_due_lines(orders: tuple[Order, ...], currency: str) -> list[str]:
    """The earlier plan's "order now" orders not yet due, so not kept (none: [])."""
    if not orders:
        return []
    return [
        "not kept, not yet due on this plan's date (the earlier plan's \"order now\"; decided "
        "again below — any you have placed, add to the scenario's inventory with "
        "available_from, its serving date, or this plan orders it again):",
        *(f"  {o.gpus} {o.gpu} ({plural(o.nodes, 'node')}) in {o.zone}, due {o.order_by}: "
          f"{_quote(o, currency)}; serving {o.usable_from}" for o in orders)]


#: Under the kept orders: they are held like inventory, and an offer's ``stock_gpus`` limits
#: only what a plan adds, so the same stock is sold again on top of them (a new user's
#: re-plan ordered 5 + 2 more of an 8-node owned stock the first quarter had taken 7 of).
KEPT_STOCK = ("  these are held on top of each offer's stock_gpus, which limits only what this "
              "plan adds: lower an offer's stock by what its seller has already delivered or "
              "committed of it")


def _extra(plan: Plan, scenario: str) -> list[tuple[Order, int]]:
    """Orders of ``scenario`` beyond the base scenario's: (order, extra nodes)."""
    def key(o: Order) -> tuple[str, str, PurchaseKind, int, int]:
        return (o.zone, o.gpu, o.purchase, o.usable_period, o.term_months)

    base: dict[tuple[str, str, PurchaseKind, int, int], int] = defaultdict(int)
    for o in plan.orders:
        if o.scenario == BASE:
            base[key(o)] += o.nodes
    out = []
    for o in plan.orders:
        if o.scenario == scenario and o.nodes > base[key(o)]:
            out.append((o, o.nodes - base[key(o)]))
    return out


def _no_more_demand(plan: Plan, scenario: str, period: int) -> bool:
    """Every workload's demand in ``scenario``'s period is at most ``base``'s."""
    def demand(name: str) -> dict[str, float]:
        p: PeriodPlan | None = next((p for p in plan.periods
                                     if p.scenario == name and p.period == period), None)
        return {} if p is None else {w.workload: w.demand_rps for w in p.workloads}
    base, other = demand(BASE), demand(scenario)
    return bool(other) and all(rps <= base.get(w, 0.0) * (1 + 1e-9) for w, rps in other.items())


def _committed_gpus(plan: Plan, scenario: str, period: int) -> int:
    """Reserved and owned GPUs held in one scenario's period."""
    return sum(g.gpus for p in plan.periods if p.scenario == scenario and p.period == period
               for g in p.gpus if g.purchase in (PurchaseKind.reserved, PurchaseKind.owned))


def work_limited(plan: Plan) -> bool:
    """A plan over periods whose stages stopped at their work limits short of the gap asked
    (``feasible``): more seconds give the same plan."""
    return plan.status is SolveStatus.feasible and plan.horizon is not None


def _more_search(plan: Plan) -> str:
    """What a search that went further would be, in a clause after "and": more time, unless
    the search stopped at its fixed work limit."""
    return "a search that goes further" if work_limited(plan) else "a longer --time-limit"


@dataclass(frozen=True)
class WhyMore:
    """Why a scenario whose demand is no higher than base's runs more elastic GPUs: the
    ``reason``, and how it follows the clause saying the demand is no higher (``joiner``)."""

    reason: str
    joiner: str = ": "

    def clause(self) -> str:
        """The reason after one line's GPUs: ``; its demand there is no higher than `base`'s:
        …``."""
        return f"; its demand there is no higher than `{BASE}`'s{self.joiner}{self.reason}"


def _why_more(plan: Plan, name: str, period: int) -> WhyMore | None:
    """Why a scenario whose demand is no higher than base's runs more elastic GPUs of a type:
    it holds fewer committed GPUs then, or the plan is not proven optimal, or (proven) the same
    demand is carried by another mix of GPUs. ``None`` when its demand is higher somewhere."""
    if not _no_more_demand(plan, name, period):
        return None
    fewer = _committed_gpus(plan, BASE, period) - _committed_gpus(plan, name, period)
    if fewer > 0:
        return WhyMore(f"it holds {fewer} fewer reserved or owned GPUs then: these stand in "
                       "for them", joiner=", and ")
    if plan.status is not SolveStatus.optimal:
        how = _how(plan)
        return WhyMore(f"the plan is not proven optimal ({how}), and {_more_search(plan)} "
                       "may do without them")
    return WhyMore("it carries the same demand with another mix of GPUs")


def order_at_no_more_demand(plan: Plan, name: str, order: Order) -> str:
    """Why scenario ``name`` orders more than base where its demand is no higher than base's in
    every period ``order`` serves, as the clause :meth:`WhyMore.clause` ends a line with: a
    plan not proven optimal may do without the order (the search's, not the demand's), a
    proven one carries that demand with another mix. Empty where its demand is higher in some
    period the order serves. A 12-quarter plan at a 3.05 % gap said "if demand follows `low`,
    order 8 more H100-SXM …" (demand −20 % on base's) with no caveat, where the same line for
    on-demand GPUs carries it (fresh-s22 F7)."""
    served = sorted({p.period for p in plan.periods if p.scenario == name
                     and order.usable_from <= p.start < order.expires})
    if not served or not all(_no_more_demand(plan, name, q) for q in served):
        return ""
    if plan.status is not SolveStatus.optimal:
        return WhyMore(f"the plan is not proven optimal ({_how(plan)}), and "
                       f"{_more_search(plan)} may do without it").clause()
    return WhyMore("it carries the same demand with another mix of GPUs").clause()


def _period(plan: Plan, scenario: str, period: int) -> PeriodPlan | None:
    return next((p for p in plan.periods if p.scenario == scenario and p.period == period), None)


def _what_it_serves(plan: Plan, name: str, period: int, gpu: str) -> str:
    """What the GPUs a scenario adds beyond base's carry, read off the plan: each workload on
    that GPU type in the period, its demand against base's and its capacity (on all its GPUs)
    against its demand: a capacity well above demand is slack, not need. A qa1 fresh clone
    read "72 more L40S if high" at a 21.6 % gap as what high needs. Workloads whose demand
    there is base's are left out (a new user's lines of ~600 characters listed every workload
    on the GPU type with "demand +0%"); where all are, the line says so."""
    mine, base = _period(plan, name, period), _period(plan, BASE, period)
    if mine is None or base is None:
        return ""
    served = {a.workload for a in mine.allocations if a.gpu == gpu}
    theirs = {w.workload: w for w in base.workloads}
    parts = []
    same = []  # demand equal to base's: not why the scenario needs more (F12: "+0%" clauses)
    for w in sorted((w for w in mine.workloads if w.workload in served),
                    key=lambda w: w.workload):
        was = theirs.get(w.workload)
        if was is not None and abs(w.demand_rps - was.demand_rps) <= 1e-9 * max(
                w.demand_rps, was.demand_rps, 1.0):
            same.append(w.workload)
            continue
        change = 0.0 if was is None or was.demand_rps <= 0 else w.demand_rps / was.demand_rps - 1
        more = ("" if was is None or was.demand_rps <= 0
                else f"demand {change:+.{1 if abs(change) < 0.01 else 0}%} on `{BASE}`'s, ")
        slack = ("" if w.demand_rps <= 0 else
                 f"capacity on all its GPUs {w.capacity_rps / w.demand_rps - 1:.0%} above "
                 "its demand")
        parts.append(f"{w.workload} ({more}{slack})")
    if not parts:
        return (f"; the workloads on it there ({', '.join(same)}) have `{BASE}`'s demand"
                if same else "")
    return f"; it serves {', '.join(parts)}"


def _how(plan: Plan, no_gap: str = "") -> str:
    """The plan's status as the lines about an unproven plan say it: its label in lower case
    and its gap where the label does not give one (``no_gap`` where there is none)."""
    how = status_label(plan.status, plan.solver).lower()
    if "%" in how:  # "proven within 0.92% of the cheapest"
        return how
    return how + (no_gap if plan.solver.gap is None else f", gap {plan.solver.gap:.1%}")


def slack_lines(plan: Plan, lines: list[str]) -> list[str]:
    """Under the lines comparing a scenario with base, in a plan not proven near the
    cheapest: its capacity above demand may be the search's slack (one line, not one a
    comparison)."""
    gap = plan.solver.gap
    if (not any("; it serves " in line for line in lines) or plan.status is SolveStatus.optimal
            or (gap is not None and gap <= LARGE_GAP)):
        return []
    how = _how(plan)
    return [f"these differences from `{BASE}` are from a plan not proven optimal ({how}): "
            f"capacity above demand may be slack that {_more_search(plan)} removes, not what "
            "the demand needs"]


def _elastic_lines(plan: Plan, scenarios: list[str]) -> tuple[list[str], list[str]]:
    """Per scenario other than base: the most on-demand and spot GPUs of each type it runs
    beyond base's in any period, over all zones, with both counts; where the scenario's demand
    is no higher than base's, why (:func:`_why_more`): "if demand follows `low`, run up to 4
    more L4 spot" read as low demand needing more GPUs. Returns the lines of higher demand,
    then those of no higher demand, one a scenario and reason (its GPU types folded)."""
    if BASE not in scenarios:
        return [], []
    running: dict[tuple[str, int, str, PurchaseKind], int] = defaultdict(int)
    starts = {p.period: p.start for p in plan.periods}
    for p in plan.periods:
        for g in p.gpus:
            if g.purchase in (PurchaseKind.on_demand, PurchaseKind.spot):
                running[(p.scenario, p.period, g.gpu, g.purchase)] += g.gpus
    out = []
    # (scenario, why) → the GPUs it runs beyond base's where its demand is no higher: folded
    # into one line a scenario, after the lines of demand that is higher (a new user's plan at
    # a 21 % gap gave four "if `low` … may do without them" lines before what `high` needs)
    folded: dict[tuple[str, WhyMore], list[tuple[str, dt.date, int, int]]] = defaultdict(list)
    for name in scenarios:
        if name == BASE:
            continue
        kinds = sorted({(g, k) for (s, _, g, k) in running if s == name},
                       key=lambda gk: (gk[0], gk[1].value))
        for gpu, kind in kinds:
            extra, q = max((running[(name, q, gpu, kind)] - running[(BASE, q, gpu, kind)], q)
                           for q in starts)
            if extra <= 0:
                continue
            ran, base = running[(name, q, gpu, kind)], running[(BASE, q, gpu, kind)]
            what = f"{extra} {gpu} {kind.value.replace('_', '-')} GPUs"
            why = _why_more(plan, name, q)
            if why is not None:
                folded[(name, why)].append((what, starts[q], ran, base))
                continue
            out.append(f"if demand follows `{name}`, it runs up to {what} more than `{BASE}` "
                       f"(the period from {starts[q]}: {ran} against {base})"
                       f"{_what_it_serves(plan, name, q, gpu)}")
    lines = []
    for (name, why), items in folded.items():
        if len(items) == 1:
            (what, start, ran, base), = items
            lines.append(f"if demand follows `{name}`, it runs up to {what} more than `{BASE}` "
                         f"(the period from {start}: {ran} against {base}){why.clause()}")
            continue
        listed = ", ".join(f"{what} in the period from {start} ({ran} against {base})"
                           for what, start, ran, base in items)
        lines.append(f"if demand follows `{name}`, it runs more on-demand or spot GPUs than "
                     f"`{BASE}` where its demand is no higher than `{BASE}`'s: up to {listed}; "
                     f"{why.reason}")
    return out, lines


def idle_reason(period: PeriodPlan, g: PeriodGpus, scenario: Scenario | None = None
                ) -> str | None:
    """Why committed nodes of ``g`` carry no replica in ``period``, where the plan (and the
    scenario's ``allowed_gpus``) tells it:

    - nothing on-demand or spot runs then: the rest of the fleet carries the demand, and a
      replica here would spare nothing bought;
    - what runs on demand or spot serves only workloads that may not run on the node's GPU
      (their ``allowed_gpus``: quarterly.yaml's owned H100-SXM node idle beside spot L40S
      serving `nightly-summaries`, which allows L4, L40S and A10G);
    - what runs on demand then (of the other workloads) sits outside the node's zone and
      serves only workloads that must keep their SLO with that zone lost (``zone_loss``, the
      period's ``zone:<zone>`` survivability rows; spot counts for no zone loss, C4): capacity
      in the zone counts for nothing toward that loss, so the capacity outside it must carry
      them whatever the node runs (a new user's owned node idle beside on-demand capacity,
      with no word why); other workloads on demand there are named when they ride in the
      spare GPUs of nodes the bound workloads need whole (:func:`_in_spare_gpus`).

    ``None`` otherwise (spot for a workload that may run on the GPU, or on-demand serving a
    workload the node's zone loss does not bind, or running in the node's zone): the plan
    alone does not say why.
    """
    elastic = [a for a in period.allocations if a.purchase in ELASTIC and a.replicas > 0]
    if not elastic:
        return "nothing on-demand or spot runs then: the rest of the fleet carries the demand"
    allowed = {} if scenario is None else {w.name: w.allowed_gpus for w in scenario.workloads}
    barred = sorted({a.workload for a in elastic
                     if allowed.get(a.workload) and g.gpu not in (allowed[a.workload] or ())})
    others = [a for a in elastic if a.workload not in barred]
    said = ([] if not barred else [
        f"{_named(barred)} {'runs' if len(barred) == 1 else 'run'} on demand or spot then and "
        f"may not run on {g.gpu} (allowed_gpus)"])
    if not others:
        return said[0]
    lose_zone = f"zone:{g.zone}"
    bound = {r.workload for r in period.survivability if r.failure == lose_zone}
    if any(a.purchase is PurchaseKind.spot or a.zone == g.zone for a in others):
        return None
    served = sorted({a.workload for a in others if a.workload in bound})
    riders = sorted({a.workload for a in others if a.workload not in bound})
    if not served or (riders and not _in_spare_gpus(period, others, bound)):
        return None
    where = ", ".join(f"{e.gpus} {e.gpu} in {e.zone}" for e in sorted(
        period.gpus, key=lambda e: (e.gpu, e.zone)) if e.purchase is PurchaseKind.on_demand
        and e.gpus)
    ride = ([] if not riders else [
        f"{_named(riders)} {'runs' if len(riders) == 1 else 'run'} in the spare GPUs of those "
        "on-demand nodes, which the zone loss needs whole"])
    return "; ".join([
        f"zone loss of {g.zone}: {_named(served)} must hold with {g.zone} lost, this node "
        f"with it, so the capacity outside {g.zone}, with the on-demand GPUs running there "
        f"({where}, the most in any slice), carries {'its' if len(served) == 1 else 'their'} "
        "demand whatever runs here", *ride, *said])


def _in_spare_gpus(period: PeriodPlan, on_demand: list[Allocation], bound: set[str]) -> bool:
    """Every on-demand replica of a workload not in ``bound`` sits on a node pool (zone, GPU,
    slice) whose nodes the ``bound`` workloads' replicas there need anyway, whole nodes
    counted: it rides in their spare GPUs, and moving it to an idle node would buy nothing
    less (a new user's owned nodes idle beside on-demand H200 nodes bought for chat's zone
    loss, `agent` in their spare GPUs, got no reason)."""
    for a in on_demand:
        if a.workload in bound:
            continue
        pool = (a.zone, a.gpu, a.purchase, a.slice)
        node = next((n for n in period.nodes
                     if (n.zone, n.gpu, n.purchase, n.slice) == pool and n.nodes), None)
        needed = sum(b.gpus for b in on_demand
                     if (b.zone, b.gpu, b.purchase, b.slice) == pool and b.workload in bound)
        if node is None or needed == 0:
            return False
        size = node.gpus // node.nodes
        if -(-needed // size) < node.nodes:  # ceil: the bound replicas' whole nodes
            return False
    return True


def _named(workloads: list[str]) -> str:
    """```chat`, `agent``` (the report shows each as code)."""
    return ", ".join(f"`{w}`" for w in workloads)


def _idle_lines(plan: Plan, scenarios: list[str], scenario: Scenario | None = None
                ) -> list[str]:
    """Committed nodes that carry no replica, one line per run of consecutive periods with the
    same idle nodes and the same reason (a node idle all year was a line per quarter), with
    the reason where the plan tells it (:func:`idle_reason`)."""
    runs: list[tuple[str, PeriodGpus, dt.date, dt.date, str | None]] = []
    for p in sorted(plan.periods, key=lambda p: (scenarios.index(p.scenario)
                                                if p.scenario in scenarios else len(scenarios),
                                                p.scenario, p.start)):
        for g in p.gpus:
            if not g.idle_nodes:
                continue
            why = idle_reason(p, g, scenario)
            same = next((i for i, (s, h, _, end, was) in enumerate(runs)
                         if s == p.scenario and end == p.start and h.idle_nodes == g.idle_nodes
                         and (h.zone, h.gpu, h.purchase) == (g.zone, g.gpu, g.purchase)
                         and was == why), None)
            if same is None:
                runs.append((p.scenario, g, p.start, p.end, why))
            else:
                s, h, start, _, was = runs[same]
                runs[same] = (s, h, start, p.end, was)
    out = []
    for demand, g, start, end, why in runs:
        where = f" (`{demand}`)" if len(scenarios) > 1 else ""
        held = plural(g.idle_nodes, f"{g.purchase.value.replace('_', '-')} {g.gpu} node")
        out.append(f"idle from {start} to {end}{where}: {held} in {g.zone} "
                   f"{'carries' if g.idle_nodes == 1 else 'carry'} no replica"
                   + (f" — {why}" if why else ""))
    return out


def _order_stock_gpus(o: Order, scenario: Scenario) -> int | None:
    """The stock of the quote (or owned terms) an order is placed under [GPUs]; ``None``
    where the scenario has no such offer."""
    offer = next((f for z in scenario.zones if z.id == o.zone for f in z.offers
                  if f.gpu == o.gpu), None)
    if offer is None:
        return None
    if o.purchase is PurchaseKind.owned:
        return None if offer.owned is None else offer.owned.stock_gpus
    return next((q.stock_gpus for q in offer.reserved_quotes
                 if (q.term_months, q.upfront) == (o.term_months, o.upfront)), None)


def at_stock_lines(now: list[Order], scenario: Scenario | None) -> list[str]:
    """Under the orders due now (shared by every demand scenario): those that take their
    offer's whole stock. Their size is the stock's, not the demand's, so any objective that
    wants them orders the same: ``--robust`` on quarterly.yaml ordered the expected plan's 4
    owned H100 nodes, the 32 GPUs the on-premise offer can deliver, and nothing said why."""
    if scenario is None:
        return []
    taken: dict[tuple[str, str, PurchaseKind, int, str], int] = defaultdict(int)
    for o in now:
        taken[(o.zone, o.gpu, o.purchase, o.term_months, o.upfront.value)] += o.gpus
    out = []
    for o in now:
        key = (o.zone, o.gpu, o.purchase, o.term_months, o.upfront.value)
        stock = _order_stock_gpus(o, scenario)
        if key not in taken or stock is None or taken.pop(key) < stock:
            continue
        kind = ("owned" if o.purchase is PurchaseKind.owned
                else f"reserved {o.term_months} months, upfront {o.upfront.value}")
        out.append(f"  the {o.gpu} ({kind}) in {o.zone} ordered now are the offer's whole "
                   f"stock ({plural(stock, 'GPU')}): no demand scenario can order more of it, "
                   "so the worst case (--robust) and the expected cost, wanting this much or "
                   "more, order the same; more needs more stock (stock_gpus)")
    return out


def unproven_lines(plan: Plan) -> list[str]:
    """A warning under the orders due now when the plan is not proven near the cheapest: a
    planner acts on those lines, and a cheaper plan may order otherwise."""
    gap = plan.solver.gap
    if plan.status is SolveStatus.optimal or (gap is not None and gap <= LARGE_GAP):
        return []
    how = _how(plan, no_gap=", no bound")
    if work_limited(plan):
        return [f"these orders are from a plan not proven optimal ({how}: the cheapest plan may "
                "cost up to that much less, and order otherwise); it stopped at its search "
                f"limit, which is fixed, not on the clock: {WORK_LIMIT_SHORT}; before placing "
                "them, weigh them against its bound"]
    return [f"these orders are from a plan not proven optimal ({how}: the cheapest plan may "
            "cost up to that much less, and order otherwise); before placing them, re-plan "
            "with a longer --time-limit (docs/program.md, \"Where the gap comes from\")"]


#: The heading of a fallback fleet's orders due now. No stage of the search found a fleet in
#: its time, so the fleet was built without a solver (solver/solve/horizon.py
#: ``fallback_fleet``): whole offers' stocks and every term bought where a greedy block ran
#: committed nodes. A buyer acting on it committed 19.2 M USD where the same input planned for
#: 300 s ordered nothing (fresh-s22 F8, load 14): it is shown as the fallback's, not as orders.
FALLBACK_NOW = ("no orders to place: the search found no fleet in its time, and the fleet of "
                "this plan is the fallback built without a solver, far from the cheapest; "
                "re-plan with a longer --time-limit (or on a quieter machine) before ordering "
                "anything. The fallback would order, for reference only:")


def _now_heading(plan: Plan, several: bool) -> str:
    """What heads the orders due now: a fallback fleet's are not a recommendation."""
    if plan.solver.fallback:
        return FALLBACK_NOW
    return "order now (the same whatever the demand scenario):" if several else "orders:"


def schedule_lines(plan: Plan, scenario: Scenario | None = None) -> list[str]:
    """The schedule in words (empty for a plan of one peak day); with the ``scenario`` (its
    inventory), the spend inside the horizon says what of it rests on an assumed price."""
    h = plan.horizon
    if h is None:
        return []
    cur = plan.cost.currency
    scenarios = [s.scenario for s in h.scenarios]
    now = [o for o in plan.orders if o.scenario is None]
    months = f"{h.period_months:g} month{'' if h.period_months == 1 else 's'}"
    count = len({p.period for p in plan.periods})
    out = [f"horizon {h.start} to {h.end} ({count} period{'' if count == 1 else 's'} of "
           f"{months}; {TO_EXCLUSIVE}), planned on {h.plan_date}, re-planned by "
           f"{h.replan_date}"]
    out += kept_lines(plan)
    out.append(_now_heading(plan, several=len(scenarios) > 1))
    out += [f"  {order_line(o, cur)}" for o in now] or ["  nothing"]
    out += at_stock_lines(now, scenario) if len(scenarios) > 1 else []
    out += unproven_lines(plan) if now and not plan.solver.fallback else []
    for name in scenarios:
        later = [o for o in plan.orders if o.scenario == name]
        if later and (name == BASE or BASE not in scenarios):
            out.append(f"later, if demand follows `{name}`:")
            out += [f"  {order_line(o, cur)}" for o in later]
    for name in scenarios:
        if name == BASE or BASE not in scenarios:
            continue
        for o, nodes in _extra(plan, name):
            out.append(f"if demand follows `{name}`, {extra_order_line(o, nodes, cur)}"
                       f"{_what_it_serves(plan, name, o.usable_period, o.gpu)}"
                       f"{order_at_no_more_demand(plan, name, o)}")
    higher, not_higher = _elastic_lines(plan, scenarios)
    out += higher
    out += slack_lines(plan, out)
    out += not_higher
    out += _idle_lines(plan, scenarios, scenario)
    out += _expiring_lines(plan, scenario)
    out += _horizon_end_lines(plan, scenario)
    return [*out, *cost_lines(plan, scenario)]


def _expiring_lines(plan: Plan, scenario: Scenario | None) -> list[str]:
    """Each held reservation that ends inside the horizon, and the reserved orders of its zone
    and GPU serving from its end on, or that none does: whether to renew an expiring
    reservation is a buyer's first question, and only the workbook's Held table ("Held to")
    told it (a new user's 8 reserved H200 nodes ending mid-2027: nothing on the terminal said
    the plan lets them go)."""
    h = plan.horizon
    if h is None or scenario is None:
        return []
    out = []
    for line in scenario.inventory:
        gpu = line.gpu
        if line.purchase is not InventoryKind.reserved or line.ends is None or gpu is None:
            continue
        end = day_after(line.ends)
        if not h.start < end < h.end:
            continue
        held = (f"reservation ending inside the horizon: "
                f"{plural(line.nodes, f'reserved {gpu} node')} held in {line.zone} to {end}")
        renewals = [o for o in plan.orders if o.zone == line.zone and o.gpu == gpu
                    and o.purchase is PurchaseKind.reserved and o.expires > end]
        if not renewals:
            out.append(f"{held}: not renewed — no reserved {gpu} order in {line.zone} "
                       "follows them in any demand scenario; the rest of the fleet carries "
                       "their load from then")
            continue
        said = "; ".join(
            f"{plural(o.nodes, 'node')} from {o.usable_from}"
            + (f" if demand follows `{o.scenario}`" if o.scenario is not None else "")
            for o in renewals)
        out.append(f"{held}: reserved {gpu} orders in {line.zone} above serve after them: "
                   f"{said}")
    return out


def _horizon_end_lines(plan: Plan, scenario: Scenario | None) -> list[str]:
    """On-demand GPUs running all day (in every slice) in the last period (of ``base``, else
    the first scenario) where the zone sells the GPU reserved for less per GPU-hour: with
    reservations counted for their whole term, one ordered for the last period is paid mostly
    after the horizon, so the plan orders none — the horizon's end, not a finding that on
    demand is cheaper (a new user's plan ran H200 on demand all day in its last quarter and
    ordered no reservation: report.md only said "reservations counted for their whole term").
    GPUs on demand in some slices only are left out: a reservation runs all day."""
    h = plan.horizon
    names = [s.name for s in plan.slices]
    if (h is None or scenario is None or h.commitments != CommitmentCost.whole_term
            or not plan.periods or not names):
        return []
    shown = [s.scenario for s in h.scenarios]
    name = BASE if BASE in shown else shown[0]
    last = max((p for p in plan.periods if p.scenario == name), key=lambda p: p.period)
    running: dict[tuple[str, str, str], int] = defaultdict(int)
    for n in last.nodes:
        if n.purchase is PurchaseKind.on_demand and n.slice is not None:
            running[(n.zone, n.gpu, n.slice)] += n.gpus
    offers = {(z.id, o.gpu): o for z in scenario.zones for o in z.offers}
    cheaper: dict[str, int] = defaultdict(int)
    terms: set[int] = set()
    for zone, gpu in sorted({(z, g) for z, g, _ in running}):
        all_day = min(running[(zone, gpu, s)] for s in names)
        offer = offers.get((zone, gpu))
        if all_day == 0 or offer is None or offer.on_demand is None:
            continue
        od = offer.on_demand.price_per_gpu_hour
        # cheaper by the hour, dearer over its whole term than the period's months on demand
        below = [q for q in offer.reserved_quotes if q.price_per_gpu_hour < od
                 and q.price_per_gpu_hour * q.commitment_months > od * h.period_months]
        if below:
            cheaper[gpu] += all_day
            terms.add(min(q.commitment_months for q in below))
    if not cheaper:
        return []
    total = sum(cheaper.values())
    parts = ", ".join(f"{n} {gpu}" for gpu, n in sorted(cheaper.items()))
    return [f"in the last period (from {last.start}, `{name}`) {total} GPUs run on demand all "
            f"day ({parts}) where the zone's reserved price is lower: a reservation for them "
            f"would serve at most {h.period_months:g} months inside the horizon and is counted "
            f"for its whole term ({min(terms)} months or more), more than those months cost "
            "on demand; a later re-plan, with periods after these, decides whether to reserve "
            "them "
            "(`horizon.commitments: inside_horizon` counts only the months inside; "
            "docs/program.md)"]


#: What ``horizon.scenarios[].cost_in_horizon`` counts, in words (docs/outputs.md).
SPENT_COUNTS = ("held inventory, on-demand and spot, and new orders as paid inside the horizon "
                "with an owned order's whole capital")


def cost_lines(plan: Plan, scenario: Scenario | None = None) -> list[str]:
    """The horizon's cost twice, each saying what it counts: what is spent inside it per demand
    scenario (plan.json ``cost_in_horizon``), then the objective the plan minimised, which
    leaves out what is already held (it costs the same whatever the plan). One line "cost over
    the horizon" with the objective read as the year's spend: 906,778 where plan.json says
    2,145,683 is paid."""
    h = plan.horizon
    if h is None:
        return []
    cur = plan.cost.currency
    spent = ", ".join(f"{s.scenario} {s.cost_in_horizon:,.0f}" for s in h.scenarios)
    costs = ", ".join(f"{s.scenario} {s.cost:,.0f}" for s in h.scenarios)
    return [f"spent inside the horizon ({SPENT_COUNTS}): {spent} {cur}",
            *(assumed_spend_lines(plan, scenario) if scenario is not None else []),
            *(partly_held_spend_lines(plan, scenario) if scenario is not None else []),
            f"objective ({h.objective.replace('_', ' ')} minimised: new orders as the program "
            "charges them, on-demand and spot; held inventory left out, it costs the same "
            f"whatever the plan): expected {h.expected_cost:,.0f} "
            f"{cur}, worst {h.worst_cost:,.0f} ({costs}); {counted(h.commitments)}",
            *_dearer_lines(plan)]


def _dearer_lines(plan: Plan) -> list[str]:
    """A demand scenario that costs more than base in the objective though its demand is no
    higher in any period: base's own fleet and orders would serve it, so the plan is not the
    cheapest for it — the gap bounds the objective (expected or worst), not each scenario's
    cost. A new user's re-plan, proven within 0.92 %, spent more under `low` than under
    `base`, with no word why."""
    h = plan.horizon
    if h is None:
        return []
    base = next((s for s in h.scenarios if s.scenario == BASE), None)
    if base is None:
        return []
    periods = sorted({p.period for p in plan.periods})
    cur = plan.cost.currency
    how = _how(plan)
    bounded = h.objective.replace("_", " ")
    return [f"`{s.scenario}` costs {s.cost - base.cost:,.0f} {cur} more than `{BASE}` in the "
            f"objective ({s.cost:,.0f} against {base.cost:,.0f}) though its demand is no higher "
            f"in any period: `{BASE}`'s fleet would serve it, so this plan is not the "
            f"cheapest for `{s.scenario}` ({how}: the gap bounds the {bounded} cost, not each "
            "scenario's)"
            for s in h.scenarios
            if s.scenario != BASE and s.cost > base.cost * (1 + 1e-9) + 0.5
            and all(_no_more_demand(plan, s.scenario, q) for q in periods)]


def counted(commitments: str) -> str:
    """How the objective counts what is ordered, by ``horizon.commitments``: a reservation its
    whole term (or its months inside the horizon), owned hardware always its amortised cost
    for its months inside (docs/program.md, "Planning periods", says why)."""
    if commitments == CommitmentCost.whole_term:
        # said where it is read: against a reservation, owned hardware is favoured by this
        # (a new user's plan ordered 1,000,000 USD of owned nodes and the report never said so)
        return ("reservations counted for their whole term; owned hardware at its amortised "
                "cost inside the horizon (its capital past the horizon's end is not charged, a "
                "reservation's months past it are: owned compares cheaper by that; "
                "horizon.commitments set to inside_horizon counts both inside the horizon)")
    return ("reservations counted for their months inside the horizon; owned hardware at its "
            "amortised cost inside the horizon")
