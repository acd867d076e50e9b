"""What a validated scenario contains, in figures a planner can check at a glance.

Feeds ``fleetplan validate``: per workload its peak request rate and the token demand that rate
brings (input and output tokens/s), zones grouped by region with the GPU types each offers, the
GPU types on offer and the measured capacity rows, with why any will not be used. Pure functions
of a resolved :class:`~models.scenario.Scenario`; no I/O.
"""

from __future__ import annotations

from models.common import (
    Frozen,
    OmitDefaults,
    Precision,
    PurchaseKind,
    Survivability,
    WorkloadClass,
)
from models.horizon import DemandScenario, HeldNodes, Horizon, InventoryKind
from models.offers import Offer
from models.prices import held_node_price_warnings, node_price_warnings
from models.scenario import Scenario
from models.units import amount_text
from models.workload import DemandEvent, Workload
from solver.capacity.measured import (
    implausible_measurements,
    stale_measurements,
    unknown_lengths,
    unused_because,
)
from solver.outputs.assumptions import ASSUMED, assumed_held_prices, measured_bursts
from solver.outputs.labels import PARTLY_HELD_RULE, TO_EXCLUSIVE, day_after, label, plural
from solver.outputs.slo_cause import fit_miss, slo_misses


class WorkloadSummary(Frozen):
    """One pool and its peak demand."""

    name: str
    model: str
    precision: Precision
    workload_class: WorkloadClass
    tenant: str
    survivability: Survivability
    peak_rps: float
    """Highest hourly arrival rate of the peak day [1/s]."""
    peak_input_tokens_per_s: float
    """Input tokens/s at the peak rate: peak rate × typical input length [tokens/s]."""
    peak_output_tokens_per_s: float
    """Output tokens/s at the peak rate: peak rate × typical output length [tokens/s]."""
    peak_tokens_per_s: float
    """Input plus output tokens/s at the peak rate [tokens/s]."""
    target_utilization: float
    allowed_gpus: tuple[str, ...] | None
    """``None`` means every GPU type in the catalog."""


class OfferSummary(Frozen):
    """What one zone sells of one GPU type."""

    kinds: tuple[PurchaseKind, ...]
    """Purchase kinds sold: stated with some stock."""
    no_stock: tuple[PurchaseKind, ...] = ()
    """Purchase kinds stated with ``stock_gpus: 0``: not offered, nothing can be bought."""
    gpus_per_node: int
    """Purchase unit: the offer's node size, else the GPU type's [GPUs]."""


class ZoneSummary(Frozen):
    """One zone: the GPU types it sells and how."""

    id: str
    region: str
    offers: dict[str, OfferSummary]
    """GPU type → what the zone sells of it."""
    name: str | None = None
    """The account's name for the zone (AWS ``us-east-1a``), where the scenario maps one."""


class GpuSummary(Frozen):
    """One GPU type on offer somewhere in the scenario."""

    name: str
    memory_gib: float
    gpus_per_node: tuple[int, ...]
    """Node sizes the scenario sells or holds, smallest first (:meth:`Scenario.node_sizes`: an
    offer's ``gpus_per_node``, else the catalog's) [GPUs]."""
    precisions: tuple[Precision, ...]
    zones: int
    """Zones offering it [count]."""
    cheapest_on_demand_per_gpu_hour: float | None
    """Lowest on-demand price over zones [currency/GPU-hour]; ``None`` where none is sold."""


class MeasuredSummary(Frozen):
    """One measured capacity row."""

    workload: str
    model: str
    gpu: str
    precision: Precision
    tp: int
    max_stable_sequences: int
    tested_peak_rps: float
    measured_on: str
    used: bool = True
    """False: stale, or no candidate matches it (``measured_warnings`` says why)."""


class ScenarioSummary(OmitDefaults):
    """Everything ``fleetplan validate`` prints for a good scenario."""

    omit_when_default = ("over_time", "inventory_warnings", "growth_warnings", "slo_warnings",
                         "fit_warnings", "stock_warnings", "trace_warnings",
                         "price_warnings", "trace_notes")

    name: str
    description: str
    currency: str
    workloads: tuple[WorkloadSummary, ...]
    regions: dict[str, tuple[ZoneSummary, ...]]
    """Region → its zones, in scenario order."""
    gpus: tuple[GpuSummary, ...]
    catalog_gpu_count: int
    catalog_model_count: int
    measured: tuple[MeasuredSummary, ...]
    measured_warnings: tuple[str, ...]
    """Measured rows that will not be used, each with why (stale, or no matching candidate),
    and used rows whose rate is above what the GPU's datasheet allows."""
    peak_tokens_per_s: float
    """Sum of every workload's peak tokens/s (an upper bound: peaks need not coincide)."""
    sources: tuple[str, ...]
    over_time: tuple[str, ...] = ()
    """Planning over time, a line each: the horizon, the inventory held (when), the demand
    scenarios, and each workload's growth, events and migrations."""
    inventory_warnings: tuple[str, ...] = ()
    """Inventory lines held through no whole period of the horizon, and (added by ``validate``:
    solver/cli/lead_times.py) order quotes whose lead time lets them serve no period: they
    count for nothing."""
    growth_warnings: tuple[str, ...] = ()
    """Each growth list with a multiplier of :data:`PERCENT_LIKE_GROWTH` or more: written as
    percentages, most likely, when every entry is (``[100, 120, 140]`` planned 100 times the
    peak); else a steep growth to check (``[2.23, …, 11.8]``, not percentages)."""
    slo_warnings: tuple[str, ...] = ()
    """Each SLO that no allowed configuration a zone sells meets even at no load, with the
    fastest figure and the fix, as an infeasible ``plan`` names it."""
    fit_warnings: tuple[str, ...] = ()
    """Each workload, and each period a migration starts, whose model no allowed GPU a zone
    sells holds at any TP, with each GPU's reason (solver.outputs.slo_cause.fit_miss)."""
    stock_warnings: tuple[str, ...] = ()
    """Each zone whose every offer has no stock of any kind (:func:`stock_warnings`)."""
    trace_warnings: tuple[str, ...] = ()
    """Each workload that names a trace but gives no burstiness, and whose trace gives none
    (too short): sized as Poisson, corrected only by the plan's replay; and each whose linked
    trace records its arrivals in batches (set by the CLI:
    solver.replay.trace_burst.trace_burst_warnings, batched_trace_warnings)."""
    trace_notes: tuple[str, ...] = ()
    """Each workload whose burstiness the planner measured from its trace (it states none):
    solver.outputs.assumptions.measured_bursts."""
    price_warnings: tuple[str, ...] = ()
    """Each offer price per GPU-hour that reads as a node's price (models.prices,
    ``node_price_warnings``)."""


def peak_rps(workload: Workload) -> float:
    """Highest hourly arrival rate of the peak day [1/s].

    An arrival's peak is ``peak_rps`` (its shape peaks at 1.0); a batch volume is spread evenly over
    its window: daily requests ÷ (window hours × 3600 s/h).
    """
    return max(workload.hourly_demand_rps())


def peak_tokens_per_s(workload: Workload) -> tuple[float, float]:
    """Input and output tokens/s at the peak rate [tokens/s].

    Rate [1/s] × typical length [tokens/request] (the mean where given, else the median), so the
    figures are token volumes, not the P95 sizes the capacity model plans memory with.
    """
    rate = peak_rps(workload)
    return (
        rate * workload.input_tokens.typical,  # [1/s] × [tokens]
        rate * workload.output_tokens.typical,  # [1/s] × [tokens]
    )


def summarize_workload(workload: Workload) -> WorkloadSummary:
    """Peak demand of one workload, with what identifies it."""
    tokens_in, tokens_out = peak_tokens_per_s(workload)
    return WorkloadSummary(
        name=workload.name,
        model=workload.model,
        precision=workload.precision,
        workload_class=workload.workload_class,
        tenant=workload.tenant,
        survivability=workload.survivability,
        peak_rps=peak_rps(workload),
        peak_input_tokens_per_s=tokens_in,
        peak_output_tokens_per_s=tokens_out,
        peak_tokens_per_s=tokens_in + tokens_out,
        target_utilization=workload.utilization,
        allowed_gpus=workload.allowed_gpus,
    )


def _gpu_summaries(scenario: Scenario) -> tuple[GpuSummary, ...]:
    offered = {o.gpu for z in scenario.zones for o in z.offers}
    out = []
    for gpu in scenario.gpus:
        if gpu.name not in offered:
            continue
        offers = [o for z in scenario.zones for o in z.offers if o.gpu == gpu.name]
        prices = [o.on_demand.price_per_gpu_hour for o in offers if o.on_demand is not None]
        out.append(GpuSummary(
            name=gpu.name,
            memory_gib=gpu.memory_gib,
            gpus_per_node=scenario.node_sizes(gpu.name),
            precisions=gpu.precisions,
            zones=len(offers),
            cheapest_on_demand_per_gpu_hour=min(prices) if prices else None,
        ))
    return tuple(out)


def _held_text(line: HeldNodes, currency: str) -> str:
    """``2 reserved H100-SXM nodes (p5.48xlarge, 8 GPUs each) in use1-az1 to 2027-07-01 at
    4.50 USD/GPU-hour``."""
    named = f"{line.instance_type}, " if line.instance_type else ""
    text = (f"{line.nodes} {line.purchase.value} {line.gpu} node{'s' if line.nodes != 1 else ''}"
            f" ({named}{line.gpus_per_node} GPUs each) in {line.zone}")
    if line.available_from is not None:
        text += f" from {line.available_from}"
    if line.ends is not None:
        text += f" to {day_after(line.ends)}"
    if line.price_per_gpu_hour is not None:
        text += f" at {line.price_per_gpu_hour:,.2f} {currency}/GPU-hour"
    if line.running_cost_per_node_month is not None:
        text += f", {line.running_cost_per_node_month:,.0f} {currency} a node-month to run"
    return text


def _demand_growth_text(demand: DemandScenario, scenario: Scenario) -> str:
    """``×1, ×1.3, ×1.6, ×2 on each workload's own growth, period by period``: what a demand
    scenario multiplies (:meth:`DemandScenario.multiplier`)."""
    def path(growth: tuple[float, ...]) -> str:
        return ", ".join(f"×{g:g}" for g in growth)

    if not demand.growth:
        return "each workload's own growth"
    if not isinstance(demand.growth, dict):
        return f"{path(demand.growth)} on each workload's own growth, period by period"
    named = "; ".join(f"{w} {path(g)}" for w, g in demand.growth.items())
    rest = [w.name for w in scenario.workloads if w.name not in demand.growth]
    return (f"{named} on those workloads' own growth, period by period"
            + (f"; {', '.join(rest)}: own growth" if rest else ""))


def held_periods(line: HeldNodes, horizon: Horizon) -> list[int]:
    """The periods a line of inventory is held through whole (those it counts in)."""
    return [q for q in range(horizon.count)
            if line.held_through(horizon.period_start(q), horizon.period_start(q + 1))]


def _paid_inside(line: HeldNodes, h: Horizon) -> bool:
    """A held reservation paid for some of the horizon (its ``ends`` inside it)."""
    return (line.purchase is InventoryKind.reserved and line.ends is not None
            and line.ends >= h.start
            and (line.available_from is None or line.available_from < h.end))


#: A growth multiplier from which a list reads as percentages (×10 in one period is rarer than
#: a user writing 100 for ×1) [1].
PERCENT_LIKE_GROWTH = 10.0


def growth_warnings(scenario: Scenario) -> tuple[str, ...]:
    """Growth lists (a workload's, a demand scenario's) with a multiplier of
    :data:`PERCENT_LIKE_GROWTH` or more: validated as written, ``growth: [100, 120, 140, 170]``
    planned each quarter at 100 to 170 times the workload's peak, so a list whose every entry
    is that large is given back as multipliers; one with an entry under it cannot be
    percentages of the peak (a fall of over 90 %) and is named as a steep growth, with no
    rewrite (a new user's `forecast` growth ``[2.23, 3.865, 6.7, 11.811]`` was told to write
    ``[0.0223, …]``, 2 % of the peak)."""
    paths: list[tuple[str, tuple[float, ...]]] = [
        (f"workloads[{i}].growth ({w.name})", w.growth) for i, w in enumerate(scenario.workloads)]
    for j, d in enumerate(scenario.demand_scenarios):
        where = f"demand_scenarios[{j}].growth"
        if isinstance(d.growth, dict):
            paths += [(f"{where}.{name} ({d.name})", g) for name, g in d.growth.items()]
        else:
            paths.append((f"{where} ({d.name})", d.growth))
    out = []
    for where, growth in paths:
        if not growth or max(growth) < PERCENT_LIKE_GROWTH:
            continue
        q = growth.index(max(growth))
        said = (f"{where}: ×{max(growth):g} in period {q} — growth multiplies the peak "
                "(1.2 is +20 %)")
        if min(growth) < PERCENT_LIKE_GROWTH:
            # A list read as percentages of the peak has no entry under 10 (that would be a
            # fall of over 90 %): [2.23, 3.865, 6.7, 11.811], as `forecast` writes a fast
            # history's growth, is multipliers, and ÷ 100 would plan 2 % of the peak.
            out.append(f"{said}: the peak ×{max(growth):g} by period {q}, "
                       f"from ×{growth[0]:g} in period 0 — check that it is meant")
            continue
        meant = ", ".join(f"{g / 100:g}" for g in growth)
        out.append(f"{said}, it is not a percentage: if these are percentages, write "
                   f"[{meant}]")
    return tuple(out)


def _lead_times_left_out(offer: Offer) -> list[str]:
    """The offer's reserved quotes and owned terms that give no lead time, in words."""
    quotes = offer.reserved_quotes
    out = [(f"{q.term_months}-month reserved quote" if len(quotes) > 1 else "reserved quote")
           for q in quotes if q.lead_time_assumed]
    if offer.owned is not None and offer.owned.lead_time_assumed:
        out.append("`owned` hardware")
    return out


def _dates_said(line: HeldNodes) -> str:
    """How a warning's dates read: a warning stands alone (`plan` prints it on stderr without
    validate's horizon line, which says :data:`TO_EXCLUSIVE` once), and a line written
    ``ends: 2026-06-15`` read "to 2026-06-16" there with no word why."""
    last = "" if line.ends is None else f"; its `ends: {line.ends}` is the last day held"
    return f" ({TO_EXCLUSIVE}{last})"


def over_time(scenario: Scenario) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What ``validate`` says of planning over time (:attr:`ScenarioSummary.over_time`), and
    the inventory lines and owned terms that count for nothing (a reservation that ended before
    the horizon, an `owned` offer in a one-day scenario: both passed silently)."""
    lines: list[str] = []
    warnings: list[str] = []
    h, cur = scenario.horizon, scenario.policy.currency
    if h is not None:
        # "to" names the day after the last, as the plan's horizon, periods and orders do
        lines.append(f"horizon: {h.count} period{'s' if h.count != 1 else ''} of "
                     f"{plural(h.period_months, 'month')}, {h.start} to {h.end} "
                     f"({TO_EXCLUSIVE}, here and below)")
    assumed = {a.index: a for a in assumed_held_prices(scenario)}
    for i, line in enumerate(scenario.inventory):
        text = _held_text(line, cur)
        if i in assumed:
            a = assumed[i]
            text += f" at {a.price_per_gpu_hour:,.3f} {cur}/GPU-hour ({ASSUMED})"
            warnings.append(f"inventory[{i}]: the reserved {line.gpu} nodes in {line.zone} are "
                            f"priced at {a.price_per_gpu_hour:,.3f} {cur}/GPU-hour, {ASSUMED}: "
                            f"{a.rule} — give the reservation's price_per_gpu_hour")
        if h is not None:
            periods = held_periods(line, h)
            if not periods and _paid_inside(line, h):
                # a reservation ending inside the first period is real and paid: its dates
                # are right, and the plan's spend counts them (schedule.cost_lines)
                warnings.append(f"inventory[{i}]: {text} is held through no whole period of "
                                f"the horizon ({h.start} to {h.end}): it carries no load in "
                                "the plan (a period counts only nodes held through the whole "
                                "of it), and its payments inside the horizon are counted in "
                                "what it spends — if it is renewed, give the renewal's `ends`"
                                + _dates_said(line))
            elif not periods:
                warnings.append(f"inventory[{i}]: {text} is held through no whole period of "
                                f"the horizon ({h.start} to {h.end}): it counts for nothing — "
                                "correct its dates or remove the line" + _dates_said(line))
            elif len(periods) < h.count:
                text += (f"; counts in period{'s' if len(periods) > 1 else ''} "
                         f"{', '.join(map(str, periods))}")
            ending = [q for q in range(h.count) if line.months_held_in_part(
                h.period_start(q), h.period_start(q + 1), h.period_months) > 0]
            if ending and line.purchase is InventoryKind.reserved:
                q = ending[-1]
                text += (f"; ends inside period {q} ({h.period_start(q)} to "
                         f"{h.period_start(q + 1)}): paid to its end, no load counted there "
                         f"({PARTLY_HELD_RULE})")
        if not any(w.allowed_gpus is None or line.gpu in w.allowed_gpus
                   for w in scenario.workloads):
            # a new user's p4de.24xlarge (A100-80GB) typed for p5en.48xlarge (H200): accepted,
            # paid, and idle in every period, said only by the plan's idle lines
            warnings.append(f"inventory[{i}]: {_held_text(line, cur)}: no workload may run on "
                            f"{line.gpu} (every workload's allowed_gpus leaves it out), so "
                            "these nodes are held and run idle — check the line's gpu or "
                            f"instance_type, or add {line.gpu} to allowed_gpus where it serves")
        lines.append(f"inventory: {text}")
    if not scenario.multi_period:
        # the single-period program sells no committed orders: an `owned` section was accepted
        # and bought nothing, and an infeasible plan said only "short of its demand"
        warnings += [f"{zone.id}: {offer.gpu}'s `owned` hardware is bought only in a plan "
                     "over periods (a `horizon`, an `inventory` or "
                     "`demand_scenarios`): a single-period plan uses none of it — add "
                     "`horizon: {start, period_months, count}` (README, \"Quarterly "
                     "procurement\"), or sell the GPU there as reserved or on-demand"
                     for zone in scenario.zones for offer in zone.offers
                     if offer.owned is not None]
    if h is not None:
        # over periods a lead time decides the period an order first serves: a quote that
        # gives none served at once, shown as "0" weeks and listed nowhere as assumed
        warnings += [f"{zone.id}: {offer.gpu}'s {what} gives no lead_time_weeks: 0 weeks "
                     f"{ASSUMED}, so an order serves from the period it is placed in — give "
                     "the provider's lead time"
                     for zone in scenario.zones for offer in zone.offers
                     for what in _lead_times_left_out(offer)]
    if scenario.demand_scenarios:
        lines.append("demand scenarios: " + ", ".join(
            f"{d.name} (probability {d.probability:g})" for d in scenario.demand_scenarios))
        lines += [f"  {d.name}: {_demand_growth_text(d, scenario)}"
                  for d in scenario.demand_scenarios]
    for w in scenario.workloads:
        parts = []
        if w.from_period and scenario.horizon is not None:
            parts.append(f"launches in period {w.from_period} "
                         f"({scenario.horizon.period_start(w.from_period)}): no demand and no "
                         "replicas before")
        if w.growth:
            parts.append("growth " + ", ".join(f"×{g:g}" for g in w.growth))
        parts += [_event_text(e, w) for e in w.events]
        for m in w.migrations:
            to = ", ".join(str(v) for v in (m.model, m.precision and m.precision.value,
                                            m.runtime) if v)
            parts.append(f"migrates to {to} from period {m.from_period}")
        if parts:
            lines.append(f"{w.name}: " + "; ".join(parts))
    return tuple(lines), tuple(warnings)


def _event_text(event: DemandEvent, workload: Workload) -> str:
    """What an event adds and from when (``eu-launch`` "adds 1 req/s from period 2"), and,
    where the workload grows after it starts, that the growth leaves it as stated
    (:meth:`~models.workload.Workload.in_period`). A new user's launch with ``growth: [1, 1,
    1.5, 2]`` read as growing, while its 40 req/s stayed 40 in every period."""
    added = (f"{amount_text(event.add_peak_rps)} req/s" if event.add_peak_rps is not None
             else f"{amount_text(event.add_daily_requests or 0.0)} requests/day")
    grows = any(g != 1.0 for g in workload.growth[event.from_period:])
    return (f"`{event.name}` adds {added} from period {event.from_period}"
            + (" (growth does not scale it)" if grows else ""))


def fit_warnings(scenario: Scenario) -> tuple[str, ...]:
    """:func:`~solver.outputs.slo_cause.fit_miss` of each workload as stated and as each of its
    migrations has it from the period it starts (located there: the plan's diagnosis names
    neither)."""
    out: list[str] = []
    for i, w in enumerate(scenario.workloads):
        miss = fit_miss(scenario, w)
        if miss is not None:
            out.append(f"workloads[{i}]: {miss}")
        for j, m in enumerate(w.migrations):
            miss = fit_miss(scenario, w.in_period(m.from_period))
            if miss is not None:
                out.append(f"workloads[{i}].migrations[{j}]: from period {m.from_period} {miss}")
    return tuple(out)


def stock_warnings(scenario: Scenario) -> tuple[str, ...]:
    """Each zone whose offers all hold ``stock_gpus: 0`` in every purchase kind they sell: the
    program can buy nothing there (the summary lists the kinds as not offered). A new user's
    third zone with its stock typed 0 was planned with no word of it: every workload that
    survives a zone's loss was spread over the other zones alone. A zone where the inventory
    holds nodes is not warned of so: those run there. Any other zone with some offer's kind
    at stock 0 (a quote CSV's blank read as 0, or a way to switch spot off) is warned of with
    the kinds named: the plan buys none of them."""
    out: list[str] = []
    for zone in scenario.zones:
        stocks = [t.stock_gpus for o in zone.offers
                  for t in (*o.reserved_quotes, o.on_demand, o.spot, o.owned) if t is not None]
        held = any(line.zone == zone.id for line in scenario.inventory)
        if zone.offers and not any(stocks) and not held:
            gpus = ", ".join(o.gpu for o in zone.offers)
            out.append(f"zone {zone.id}: every offer ({gpus}) has stock_gpus 0 in every "
                       "purchase kind, so no GPU can be bought there: the plan leaves the zone "
                       "empty, and a workload that survives a zone's loss is spread over the "
                       "other zones only — give the stock the provider can supply")
        elif unstocked := [f"{o.gpu} {label(k).lower()}" for o in zone.offers
                           for k in PurchaseKind if o.stock_of(k) == 0]:
            out.append(f"zone {zone.id}: {', '.join(unstocked)} "
                       f"{'has' if len(unstocked) == 1 else 'have'} stock_gpus 0, so "
                       f"{'it is' if len(unstocked) == 1 else 'they are'} not offered: the "
                       "plan buys none there — give the stock the provider can supply, or "
                       "leave the kind out to say the zone does not sell it")
    return tuple(out)


def summarize(scenario: Scenario) -> ScenarioSummary:
    """The one-screen summary of a resolved scenario."""
    regions: dict[str, list[ZoneSummary]] = {}
    for zone in scenario.zones:
        offers = {
            o.gpu: OfferSummary(
                kinds=tuple(k for k in PurchaseKind if o.stock_of(k)),
                no_stock=tuple(k for k in PurchaseKind if o.stock_of(k) == 0),
                gpus_per_node=o.gpus_per_node or scenario.gpu(o.gpu).gpus_per_node,
            )
            for o in zone.offers
        }
        regions.setdefault(zone.region, []).append(
            ZoneSummary(id=zone.id, region=zone.region, offers=offers, name=zone.name))
    measured = tuple(
        MeasuredSummary(workload=m.workload, model=m.model, gpu=m.gpu, precision=m.precision,
                        tp=m.tp, max_stable_sequences=m.max_stable_sequences,
                        tested_peak_rps=m.tested_peak_rps, measured_on=m.measured_on.isoformat(),
                        used=unused_because(scenario, m) is None)
        for m in scenario.measured
    )
    workloads = tuple(summarize_workload(w) for w in scenario.workloads)
    planning, held_warnings = over_time(scenario)
    return ScenarioSummary(
        name=scenario.name,
        description=scenario.description,
        currency=scenario.policy.currency,
        workloads=workloads,
        regions={r: tuple(z) for r, z in regions.items()},
        gpus=_gpu_summaries(scenario),
        catalog_gpu_count=len(scenario.gpus),
        catalog_model_count=len(scenario.models),
        measured=measured,
        measured_warnings=(*stale_measurements(scenario), *implausible_measurements(scenario),
                           *unknown_lengths(scenario)),
        peak_tokens_per_s=sum(w.peak_tokens_per_s for w in workloads),
        sources=scenario.sources,
        over_time=planning,
        inventory_warnings=held_warnings,
        growth_warnings=growth_warnings(scenario),
        slo_warnings=tuple(m.message for w in scenario.workloads
                           for m in slo_misses(scenario, w)),
        fit_warnings=fit_warnings(scenario),
        stock_warnings=stock_warnings(scenario),
        trace_notes=tuple(measured_bursts(scenario)),
        price_warnings=(*node_price_warnings(scenario.zones, {g.name: g for g in scenario.gpus}),
                        *held_node_price_warnings(scenario.inventory)),
    )
