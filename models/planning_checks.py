"""Consistency tier of planning over time: the horizon, demand scenarios and the fleet held.

Run by the loader after the scenario's own references resolve. Every problem is located and
comes with a fix; inventory lines named by instance type are resolved here to their GPU type
and node size (from the scenario's offers, else the built-in price table), so the solver reads
``gpu`` and ``gpus_per_node`` on every line.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING

from inputs import catalog_dir
from models.errors import ADD_GPU, InputError, Problem, did_you_mean, or_add
from models.horizon import HeldNodes, InventoryKind, probabilities_sum_to_one
from models.names import instance_shape, resolve_gpu
from models.runtime import unknown_runtime_problem
from models.scenario import Scenario
from models.workload import Workload

if TYPE_CHECKING:  # a type only: the loader runs these checks on every scenario it reads
    from models.inventory import InventoryFile

#: The built-in price table, whose instance types name GPU types and node sizes.
BUILTIN_PRICE_TABLE = "aws_gpu_prices.csv"


@cache
def builtin_instance_types() -> Mapping[str, tuple[str, int]]:
    """Instance type → (GPU type, GPUs per instance) of the built-in price table."""
    # here, not at the top: only inventory named by instance type reads the price table, and
    # the loader runs these checks on every scenario it reads
    from models.price_catalogs import SKYPILOT_ACCELERATORS as ACCELERATOR_NAMES

    out: dict[str, tuple[str, int]] = {}
    with (catalog_dir() / "prices" / BUILTIN_PRICE_TABLE).open(newline="") as fh:
        for row in csv.DictReader(fh):
            gpu = ACCELERATOR_NAMES.get(row["accelerator"])
            if gpu is not None:
                out.setdefault(row["instance_type"], (gpu, int(row["accelerator_count"])))
    return out


def instance_type_gpus(scenario: Scenario, instance_type: str) -> tuple[str, int] | None:
    """(GPU type, GPUs per node) of an instance type: the scenario's offers first (an offer
    names its instance type), else the published instance sizes (models/names.py), else the
    built-in price table; ``None`` when unknown."""
    for zone in scenario.zones:
        for offer in zone.offers:
            if offer.instance_type == instance_type:
                return offer.gpu, offer.gpus_per_node or scenario.gpu(offer.gpu).gpus_per_node
    shape = instance_shape(instance_type)
    if shape is not None:
        return shape.gpu, shape.gpus_per_node
    return builtin_instance_types().get(instance_type)


def known_instance_types(scenario: Scenario) -> list[str]:
    """Instance types :func:`instance_type_gpus` resolves (for "did you mean")."""
    own = {o.instance_type for z in scenario.zones for o in z.offers if o.instance_type}
    return sorted(own | set(builtin_instance_types()))


def resolve_fleet_instance_types(inventory: InventoryFile, scenario: Scenario, file: str
                                 ) -> InventoryFile:
    """An inventory file (``check --fleet``) in catalog names: node lines named by instance
    type resolved to their GPU type and node size; GPUs named as a scenario takes them (``H100``,
    ``p5.48xlarge`` — which also gives the node size) rewritten to the catalog name, on node and
    layout lines. An unknown instance type is an InputError; an unknown GPU is left as typed for
    the reference check to refuse with the closest names."""
    gpus = [g.name for g in scenario.gpus]
    lines, problems = [], []
    for i, n in enumerate(inventory.nodes):
        if n.gpu:
            gpu, per_node, _ = resolve_gpu(n.gpu, gpus)
            if gpu is not None:
                n = n.model_copy(update={"gpu": gpu,
                                         "gpus_per_node": n.gpus_per_node or per_node})
        if n.instance_type is None:
            lines.append(n)
            continue
        found = instance_type_gpus(scenario, n.instance_type)
        if found is None or (n.gpu and n.gpu != found[0]):
            fix = (did_you_mean(n.instance_type, known_instance_types(scenario))
                   if found is None else f"it holds {found[0]}: name one of them")
            problems.append(Problem(file, f"nodes[{i}].instance_type",
                                    f"unknown instance type `{n.instance_type}`" if found is None
                                    else f"{n.instance_type} does not hold {n.gpu}", fix))
            continue
        lines.append(n.model_copy(update={"gpu": found[0],
                                          "gpus_per_node": n.gpus_per_node or found[1]}))
    if problems:
        raise InputError(problems)
    layout = None if inventory.layout is None else tuple(
        line.model_copy(update={"gpu": resolve_gpu(line.gpu, gpus)[0] or line.gpu})
        for line in inventory.layout)
    return inventory.model_copy(update={"nodes": tuple(lines), "layout": layout})


def resolve_inventory(scenario: Scenario, file: str) -> tuple[tuple[HeldNodes, ...],
                                                                list[Problem]]:
    """Inventory lines with ``gpu`` and ``gpus_per_node`` filled in, and the problems found."""
    zones = {z.id: z for z in scenario.zones}
    gpus = [g.name for g in scenario.gpus]
    out: list[HeldNodes] = []
    problems: list[Problem] = []
    for i, line in enumerate(scenario.inventory):
        where = f"inventory[{i}]"
        gpu, node = line.gpu, line.gpus_per_node
        if line.instance_type is not None:
            found = instance_type_gpus(scenario, line.instance_type)
            if found is None:
                problems.append(Problem(file, f"{where}.instance_type",
                                        f"unknown instance type `{line.instance_type}`",
                                        did_you_mean(line.instance_type,
                                                     known_instance_types(scenario))
                                        + " (or name the `gpu` and `gpus_per_node`)"))
                continue
            if gpu is not None and (resolve_gpu(gpu, gpus)[0] or gpu) != found[0]:
                problems.append(Problem(file, f"{where}.gpu", f"{line.instance_type} holds "
                                        f"{found[0]}, not {gpu}", "name one of them, or fix it"))
                continue
            gpu, node = found[0], node or found[1]
        assert gpu is not None
        found_gpu, per_node, why = resolve_gpu(gpu, gpus)
        if found_gpu is None:
            problems.append(Problem(file, f"{where}.gpu", f"unknown GPU `{gpu}`",
                                    or_add(why, ADD_GPU)))
            continue
        gpu, node = found_gpu, node or per_node
        if line.zone not in zones:
            problems.append(Problem(file, f"{where}.zone", f"unknown zone `{line.zone}`",
                                    did_you_mean(line.zone, zones)))
            continue
        offer = next((o for o in zones[line.zone].offers if o.gpu == gpu), None)
        if node is None:
            node = (offer.gpus_per_node if offer is not None and offer.gpus_per_node
                    else scenario.gpu(gpu).gpus_per_node)
        if line.purchase is InventoryKind.reserved and line.price_per_gpu_hour is None and (
                offer is None or not offer.reserved_quotes):
            problems.append(Problem(file, f"{where}.price_per_gpu_hour",
                                    f"no price for the reserved {gpu} nodes in {line.zone}: the "
                                    "zone has no reserved quote for that GPU",
                                    "give the reservation's price_per_gpu_hour"))
        if line.purchase is InventoryKind.owned and line.running_cost_per_node_month is None and (
                offer is None or offer.owned is None):
            problems.append(Problem(file, f"{where}.running_cost_per_node_month",
                                    f"no running cost for the owned {gpu} nodes in {line.zone}: "
                                    "the zone has no `owned` terms for that GPU",
                                    "give running_cost_per_node_month (power and hosting), "
                                    "or `owned` terms in the zone's offer"))
        out.append(line.model_copy(update={"gpu": gpu, "gpus_per_node": node}))
    return tuple(out), problems


def _path_problems(path: tuple[float, ...], count: int, file: str, where: str) -> list[Problem]:
    if path and len(path) != count:
        return [Problem(file, where, f"{len(path)} growth values for {count} periods",
                        "give one multiplier per period of the horizon")]
    return []


#: Where each offer of a resolved scenario is written in the user's file, by (zone id, GPU):
#: ``zones[i].offers[j]`` with the file's own indices, or the price table it came from. The
#: resolved scenario's offers are the price tables' and the file's merged, so their indices
#: are not the file's (:func:`models.loader.resolve`).
OfferPaths = Mapping[tuple[str, str], str]


def offer_where(scenario: Scenario, zi: int, oi: int, paths: OfferPaths | None) -> str:
    """The location of ``scenario.zones[zi].offers[oi]`` in the user's file (``paths``), else
    its index in the scenario itself (a resolved record, written as it was planned)."""
    zone = scenario.zones[zi]
    key = (zone.id, zone.offers[oi].gpu)
    if paths is not None and key in paths:
        return paths[key]
    return f"zones[{zi}].offers[{oi}]"


def _before_launch(w: Workload, file: str, where: str) -> list[Problem]:
    """Events and migrations of a workload that launches later (``from_period``) dated before
    its launch: they would change demand or a model it does not run yet."""
    out = []
    for j, e in enumerate(w.events):
        if e.from_period < w.from_period:
            out.append(Problem(file, f"{where}.events[{j}].from_period",
                               f"period {e.from_period} is before the workload's launch "
                               f"(from_period {w.from_period}): it has no demand then",
                               f"give a period from {w.from_period} on, or add the demand to "
                               "its own peak_rps / daily_requests"))
    for j, m in enumerate(w.migrations):
        if m.from_period <= w.from_period:
            out.append(Problem(file, f"{where}.migrations[{j}].from_period",
                               f"period {m.from_period} is not after the workload's launch "
                               f"(from_period {w.from_period})",
                               "give the model, precision and runtime it launches with as its "
                               "own, or a later period"))
    return out


def _plan_date_problems(scenario: Scenario, file: str) -> list[Problem]:
    """A ``policy.as_of`` on or after the horizon's end: every period has ended before the
    plan is made, so nothing can be ordered for any of them (a new user's 2028 for 2026 planned
    to "infeasible" under a warning per quote's lead time). A plan date inside the horizon (a
    period under way) is planned as docs/program.md says."""
    horizon = scenario.horizon
    if horizon is None or scenario.policy.as_of is None:
        return []
    as_of = scenario.policy.as_of_date()
    if as_of < horizon.end:
        return []
    last = horizon.end - dt.timedelta(days=1)
    return [Problem(file, "policy.as_of", f"the plan date {as_of} is on or after the horizon's "
                    f"end ({horizon.start} to {last}): every period has ended before the plan "
                    "is made, so no order can serve any of them",
                    "give the day the plan is made (`policy.as_of`), or move `horizon.start` "
                    "to the periods still to come")]


def horizon_problems(scenario: Scenario, file: str,
                     offer_paths: OfferPaths | None = None) -> list[Problem]:
    """Growth, events, migrations and demand scenarios fit the horizon; quotes fit a period
    (located in the user's file by ``offer_paths``, :func:`offer_where`)."""
    horizon = scenario.horizon
    problems: list[Problem] = []
    uses = [f"workloads[{i}].{key}" for i, w in enumerate(scenario.workloads)
            for key in ("growth", "events", "migrations", "from_period") if getattr(w, key)]
    uses += ["demand_scenarios"] if scenario.demand_scenarios else []
    if horizon is None:
        return [Problem(file, where, "needs a planning horizon",
                        "add `horizon: {start: YYYY-MM-DD, period_months: 3, count: N}`")
                for where in uses]
    count = horizon.count
    problems += _plan_date_problems(scenario, file)
    models = [m.name for m in scenario.models]
    for i, w in enumerate(scenario.workloads):
        problems += _path_problems(w.growth, count, file, f"workloads[{i}].growth")
        starts = [(f"events[{j}]", e.from_period) for j, e in enumerate(w.events)]
        starts += [(f"migrations[{j}]", m.from_period) for j, m in enumerate(w.migrations)]
        for where, period in [*starts, ("", w.from_period)]:
            if period >= count:
                field = ".".join(p for p in (f"workloads[{i}]", where, "from_period") if p)
                problems.append(Problem(file, field, f"period {period} is past the horizon's "
                                        f"last ({count - 1})", f"give a period from 0 to "
                                        f"{count - 1}"))
        problems += _before_launch(w, file, f"workloads[{i}]")
        for j, m in enumerate(w.migrations):
            # a migration's runtime as a workload's: an unknown one planned its periods on the
            # GPU's bare factors, with no runtime's costs and nothing said (`runtime: sglang`)
            unknown = None if m.runtime is None else unknown_runtime_problem(
                m.runtime, scenario.runtimes, file, f"workloads[{i}].migrations[{j}].runtime")
            problems += [] if unknown is None else [unknown]
            if m.model is None:
                continue
            if m.model not in models:
                problems.append(Problem(file, f"workloads[{i}].migrations[{j}].model",
                                        f"unknown model `{m.model}`", did_you_mean(m.model,
                                                                                   models)))
                continue
            longest = w.input_tokens.p99 + w.output_tokens.p99
            if longest > scenario.model(m.model).max_context_tokens:
                problems.append(Problem(
                    file, f"workloads[{i}].migrations[{j}].model",
                    f"P99 context {longest} tokens exceeds {m.model}'s maximum "
                    f"{scenario.model(m.model).max_context_tokens}",
                    "migrate to a longer-context model; fleetplan never truncates context"))
    first = min((w.from_period for w in scenario.workloads), default=0)
    if first > 0:
        problems.append(Problem(
            file, "workloads", f"no workload runs before period {first} (every `from_period` "
            f"is {first} or later): periods 0 to {first - 1} plan nothing",
            f"start the horizon {first} period{'s' if first > 1 else ''} later "
            f"(horizon.start: {horizon.period_start(first)}) and lower each `from_period`, "
            "growth list and event by as much"))
    names = [s.name for s in scenario.demand_scenarios]
    workloads = [w.name for w in scenario.workloads]
    for i, s in enumerate(scenario.demand_scenarios):
        where = f"demand_scenarios[{i}]"
        if s.name in names[:i]:
            problems.append(Problem(file, f"{where}.name", f"duplicate name `{s.name}`",
                                    "give each demand scenario its own name"))
        if isinstance(s.growth, dict):
            for name, path in s.growth.items():
                if name not in workloads:
                    problems.append(Problem(file, f"{where}.growth.{name}",
                                            f"unknown workload `{name}`",
                                            did_you_mean(name, workloads)))
                problems += _path_problems(path, count, file, f"{where}.growth.{name}")
        else:
            problems += _path_problems(s.growth, count, file, f"{where}.growth")
    if scenario.demand_scenarios and not probabilities_sum_to_one(scenario.demand_scenarios):
        total = sum(s.probability for s in scenario.demand_scenarios)
        problems.append(Problem(file, "demand_scenarios", f"probabilities sum to {total:g}",
                                "make the probabilities of the demand scenarios add up to 1"))
    for zi, zone in enumerate(scenario.zones):
        for oi, offer in enumerate(zone.offers):
            for qi, quote in enumerate(offer.reserved_quotes):
                if quote.term_months < horizon.period_months:
                    where = f"{offer_where(scenario, zi, oi, offer_paths)}.reserved"
                    if isinstance(offer.reserved, tuple):
                        where += f"[{qi}]"
                    problems.append(Problem(file, f"{where}.term_months",
                                            f"a {quote.term_months}-month term is shorter than "
                                            f"a {horizon.period_months}-month period: it holds "
                                            "no whole period", "plan shorter periods, or drop "
                                            "the quote"))
    return problems
