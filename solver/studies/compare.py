"""Compare purchase scenarios: variants of a scenario, planned side by side.

A variation is ``KEY=VALUE`` applied to a resolved :class:`~models.scenario.Scenario` with
``model_copy(update=...)`` (never re-reading a file):

- ``growth=G`` — every arrival ``peak_rps`` and batch ``daily_requests`` × G;
- ``survivability=none|n_plus_1|zone_loss`` — every workload must survive that failure;
- ``spot=true|false`` — ``false`` removes every spot offer (``true`` keeps the scenario's);
- ``drop_gpu=NAME`` — removes a GPU type from every zone and allowed list (``none`` drops none;
  a GPU no zone sells is refused).

Several ``--vary`` options combine as a product. Variants are planned in worker processes
(:mod:`.executors`, as many as the cores hold), each a plain call of the planner; ``fleetplan
sweep`` (:mod:`.sweep`) is the general case: any field by path, samples, Ray, resume.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from models.capacity import CapacityTable
from models.common import Survivability
from models.errors import InputError, Problem, did_you_mean
from models.loader import SOLVER_INFINITY
from models.offers import Zone
from models.plan import Plan
from models.scenario import Scenario
from solver.outputs.figures import (
    committed_share,
    gpus_by,
    reserved_share,
    survivability_margins,
)
from solver.solve.backends import SOLVER_THREADS
from solver.studies.executors import (
    Finished,
    LocalExecutor,
    SolveOptions,
    Task,
    default_workers,
    plan_task,
    run_tasks,
)

__all__ = ["SolveOptions"]  # re-exported: defined with the executors that run the plans

#: Keys ``--vary`` understands.
VARY_KEYS = ("growth", "survivability", "spot", "drop_gpu")
#: Solver threads per compared plan: those of ``fleetplan plan``, so each plan compared is the
#: plan ``plan`` makes of that scenario (HiGHS's search depends on its thread count).
COMPARE_THREADS = SOLVER_THREADS


@dataclass(frozen=True)
class Variant:
    """One scenario to plan, and the variations that made it from its base."""

    label: str
    """``demo`` or ``demo growth=1.5 spot=false``."""
    scenario: Scenario


@dataclass(frozen=True)
class Compared:
    """A planned variant."""

    variant: Variant
    plan: Plan
    table: CapacityTable
    seconds: float = 0.0
    """Wall time of planning it, capacity table included [s] (the plan's solver time is a
    part of it)."""


def parse_vary(spec: str) -> tuple[str, tuple[str, ...]]:
    """``growth=1,1.5,3`` → (``growth``, (``1``, ``1.5``, ``3``)); a bad spec is an InputError."""
    key, sep, values = spec.partition("=")
    key = key.strip()
    items = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not items:
        raise InputError([Problem("--vary", spec, "expected KEY=V1,V2,…",
                                  "e.g. --vary growth=1,1.5,3")])
    if key not in VARY_KEYS:
        raise InputError([Problem("--vary", spec, f"unknown key `{key}`",
                                  did_you_mean(key, VARY_KEYS))])
    return key, items


def _growth(scenario: Scenario, value: str) -> Scenario:
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if not 0 < factor < math.inf:  # nan fails both; inf made every demand infinite
        raise InputError([Problem("--vary", f"growth={value}", "growth must be a positive number",
                                  "e.g. growth=1,1.5,3")])
    workloads = []
    largest = 0.0  # the largest grown demand [req/s or requests/day]
    for w in scenario.workloads:
        update: dict[str, object] = {}
        if w.arrival is not None:
            update["arrival"] = w.arrival.model_copy(
                update={"peak_rps": w.arrival.peak_rps * factor})
            largest = max(largest, w.arrival.peak_rps * factor)
        if w.batch is not None:
            update["batch"] = w.batch.model_copy(
                update={"daily_requests": w.batch.daily_requests * factor})
            largest = max(largest, w.batch.daily_requests * factor)
        workloads.append(w.model_copy(update=update))
    if largest >= SOLVER_INFINITY:
        raise InputError([Problem("--vary", f"growth={value}", f"grows a demand to "
                                  f"{largest:.3g}, which the solver reads as infinite",
                                  "give a growth that keeps every demand below 10^20")])
    return scenario.model_copy(update={"workloads": tuple(workloads)})


def _survivability(scenario: Scenario, value: str) -> Scenario:
    if value not in Survivability.__members__:
        raise InputError([Problem("--vary", f"survivability={value}", "unknown survivability",
                                  did_you_mean(value, Survivability.__members__))])
    level = Survivability(value)
    return scenario.model_copy(update={"workloads": tuple(
        w.model_copy(update={"survivability": level}) for w in scenario.workloads)})


def _map_zones(scenario: Scenario, keep: Callable[[Zone], Zone]) -> Scenario:
    return scenario.model_copy(update={"zones": tuple(keep(z) for z in scenario.zones)})


def _spot(scenario: Scenario, value: str) -> Scenario:
    if value.lower() not in ("true", "false"):
        raise InputError([Problem("--vary", f"spot={value}", "spot is true or false",
                                  "e.g. spot=true,false")])
    if value.lower() == "true":
        return scenario

    def no_spot(zone: Zone) -> Zone:
        # An offer that sold spot alone goes; an owned-and-spot one keeps its owned terms.
        offers = tuple(kept for o in zone.offers if (kept := o.without("spot")) is not None)
        return zone.model_copy(update={"offers": offers})

    return _map_zones(scenario, no_spot)


def _drop_gpu(scenario: Scenario, value: str) -> Scenario:
    if value == "none":
        return scenario
    names = [g.name for g in scenario.gpus]
    if value not in names:
        raise InputError([Problem("--vary", f"drop_gpu={value}", f"unknown GPU `{value}`",
                                  did_you_mean(value, names))])
    sold = sorted({o.gpu for z in scenario.zones for o in z.offers})
    if value not in sold:  # dropping it would plan the base scenario under another label
        raise InputError([Problem("--vary", f"drop_gpu={value}",
                                  f"no zone of scenario `{scenario.name}` sells GPU `{value}`",
                                  f"it sells {', '.join(sold)}")])
    scenario = _map_zones(scenario, lambda z: z.model_copy(update={
        "offers": tuple(o for o in z.offers if o.gpu != value)}))
    return scenario.model_copy(update={"workloads": tuple(
        w if w.allowed_gpus is None else w.model_copy(
            update={"allowed_gpus": tuple(g for g in w.allowed_gpus if g != value)})
        for w in scenario.workloads)})


VARIATIONS: dict[str, Callable[[Scenario, str], Scenario]] = {
    "growth": _growth, "survivability": _survivability, "spot": _spot, "drop_gpu": _drop_gpu,
}


def apply_variation(scenario: Scenario, key: str, value: str) -> Scenario:
    """The scenario with one variation applied (its name unchanged)."""
    return VARIATIONS[key](scenario, value)


def build_variants(scenarios: Sequence[Scenario],
                   varies: Sequence[tuple[str, tuple[str, ...]]]) -> list[Variant]:
    """Every scenario × every combination of the variations, in the order given."""
    out = []
    for scenario in scenarios:
        for combo in itertools.product(*[[(k, v) for v in values] for k, values in varies]):
            varied = scenario
            for key, value in combo:
                varied = apply_variation(varied, key, value)
            label = " ".join([scenario.name, *(f"{k}={v}" for k, v in combo)])
            out.append(Variant(label=label, scenario=varied))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        raise InputError([Problem("compare", "", "two scenarios carry the same name",
                                  "give each scenario file its own `name`")])
    return out


def plan_variant(variant: Variant, options: SolveOptions) -> Compared:
    """Plan one variant here, in this process."""
    planned = plan_task(Task(variant.label, variant.label, variant.scenario, options))
    return Compared(variant, planned.plan, planned.table, planned.seconds)


def plan_all(variants: Sequence[Variant], options: SolveOptions,
             progress: Callable[[int, Compared], None] | None = None,
             workers: int | None = None) -> list[Compared]:
    """Plan every variant in worker processes (as many as the cores hold at ``options.threads``
    each); results in the variants' order.

    ``progress(i, result)`` is called as each variant finishes (in completion order). A variant
    that fails twice raises :class:`StudyError`.
    """
    n = workers if workers is not None else default_workers(options.threads)
    tasks = [Task(str(i), v.label, v.scenario, options) for i, v in enumerate(variants)]
    results: list[Compared | None] = [None] * len(variants)
    executor = LocalExecutor(max(1, min(n, len(variants))))
    try:
        for event in run_tasks(tasks, executor):
            if not isinstance(event, Finished):
                continue
            i = int(event.task.key)
            if event.planned is None:
                raise StudyError(f"{event.task.label}: {event.error}")
            result = Compared(variants[i], event.planned.plan, event.planned.table,
                              event.planned.seconds)
            results[i] = result
            if progress is not None:
                progress(i, result)
    finally:
        executor.close()
    return [r for r in results if r is not None]


class StudyError(RuntimeError):
    """A variant could not be planned (after a retry): a bug or a lost worker, not bad input."""


@dataclass(frozen=True)
class ComparisonRow:
    """The side-by-side figures of one planned variant."""

    label: str
    status: str
    cost_per_month: float | None
    per_million_tokens: float | None
    gpus_by_type: dict[str, int]
    reserved_share: float | None
    """Share of the cost on reserved capacity alone [1]."""
    committed_share: float | None
    """Share of the cost on committed capacity, reserved and owned [1]: the figure shown."""
    survivability: str
    """``holds`` or ``FAILS`` with the failing (failure, workload) pairs counted."""
    gap: float | None
    survivability_margin: float | None = None
    """Smallest (capacity − demand) ÷ demand over every failure (not normal running) and
    workload the plan must survive, at the worst slice [1]; negative where a failure is not
    survived, ``None`` where no workload must survive one."""
    objective: float | None = None
    """The cost the solver minimised, of the fleet found: a month of one peak day's fleet
    [currency/month], or over periods the horizon's objective [currency]; ``None`` without a
    fleet."""
    bound: float | None = None
    """The solver's proven lower bound on that cost (no plan of this variant costs less), in
    its units; ``None`` where nothing was proven."""
    over_periods: bool = False
    """Planned over periods (``objective`` and ``bound`` are then the horizon's)."""


def survivability_verdict(plan: Plan) -> str:
    """``holds`` when every row holds, else how many (failure, workload) pairs fail."""
    failing = [m for m in survivability_margins(plan) if not m.holds]
    if not plan.survivability:
        return "n/a"
    return "holds" if not failing else f"FAILS {len(failing)}"


def comparison_row(result: Compared) -> ComparisonRow:
    """Figures of one planned variant; no cost where the plan has no fleet."""
    return plan_row(result.variant.label, result.plan)


def plan_row(label: str, plan: Plan) -> ComparisonRow:
    """The side-by-side figures of a plan; no cost where the plan has no fleet."""
    has_fleet = bool(plan.nodes)
    margins = [m.margin for m in survivability_margins(plan)
               if m.margin is not None and m.failure != "none"]
    return ComparisonRow(
        label=label,
        status=plan.status.value,
        cost_per_month=plan.cost.per_month if has_fleet else None,
        per_million_tokens=plan.cost.per_million_tokens if has_fleet else None,
        gpus_by_type=gpus_by(plan, "gpu"),
        reserved_share=reserved_share(plan),
        committed_share=committed_share(plan),
        survivability=survivability_verdict(plan),
        gap=plan.solver.gap,
        survivability_margin=min(margins) if margins else None,
        objective=plan.solver.objective if has_fleet else None,
        bound=plan.solver.bound if has_fleet else None,
        over_periods=plan.horizon is not None,
    )


def gpu_types(rows: Sequence[ComparisonRow]) -> list[str]:
    """GPU types bought in any variant, sorted."""
    return sorted({g for r in rows for g in r.gpus_by_type})


@dataclass(frozen=True)
class WithinGap:
    """Two variants whose cost difference the solver did not prove: the dearer one's proven
    bound is at or below the cheaper one's cost, so its cheapest plan may cost no more — the
    difference may be how far each solve got, not the purchase options."""

    cheaper: int
    """Index of the cheaper variant (0-based, as ``S1`` is 0)."""
    dearer: int


#: Pairs named under a comparison (every pair is found; the rest are counted).
SHOWN_WITHIN_GAP = 10


def within_gap(rows: Sequence[ComparisonRow]) -> list[WithinGap]:
    """Every pair of variants with a fleet, planned alike (both over periods, or both one peak
    day: their objectives share units), whose costs differ but whose difference lies within
    the dearer one's proven gap: its bound ≤ the cheaper one's cost. Variants solved to
    different gaps then compare how far each solve got (a variant stopped at a 60 % gap beside
    one proven optimal), not what they buy. A variant without a bound is not paired."""
    out = []
    for i, j in itertools.combinations(range(len(rows)), 2):
        a, b = rows[i], rows[j]
        if (a.objective is None or b.objective is None or a.over_periods != b.over_periods
                or math.isclose(a.objective, b.objective, rel_tol=1e-9)):
            continue
        cheaper, dearer = (i, j) if a.objective < b.objective else (j, i)
        bound, cost = rows[dearer].bound, rows[cheaper].objective
        if bound is not None and cost is not None and bound <= cost * (1 + 1e-9):
            out.append(WithinGap(cheaper, dearer))
    return out


def within_gap_lines(rows: Sequence[ComparisonRow], currency: str) -> list[str]:
    """What the table and the workbook say under the comparison about :func:`within_gap`'s
    pairs (nothing where every difference is proven)."""
    pairs = within_gap(rows)
    if not pairs:
        return []
    lines = ["cost differences within the solver's gap (not real differences; a longer "
             "--time-limit narrows the gaps):"]
    for p in pairs[:SHOWN_WITHIN_GAP]:
        low, high = rows[p.cheaper], rows[p.dearer]
        assert low.objective is not None and high.objective is not None
        assert high.bound is not None
        unit = f"{currency} over the horizon" if high.over_periods else f"{currency}/month"
        gap = "" if high.gap is None else f", gap {high.gap:.2%}"
        lines.append(
            f"  - S{p.dearer + 1} {high.label} costs {high.objective - low.objective:,.0f} "
            f"{unit} more than S{p.cheaper + 1} {low.label}, but its cheapest plan is proven "
            f"only to cost at least {high.bound:,.0f}{gap}, no more than S{p.cheaper + 1}'s "
            f"{low.objective:,.0f}")
    if len(pairs) > SHOWN_WITHIN_GAP:
        lines.append(f"  … and {len(pairs) - SHOWN_WITHIN_GAP} more pairs")
    return lines
