"""Fleets to check: make a :class:`~models.inventory.Fleet` from a ``plan.json`` or an inventory.

The verifier, the survivability checker and the replay simulator all read a Fleet. This module
makes one (:func:`load_fleet`): from a plan, the replicas and nodes it buys
(:func:`fleet_from_plan`), less any replica no node can hold (:func:`fit_to_nodes`); from an
inventory of owned nodes, validated, with its replicas laid out as the file gives them or by
:func:`greedy_layout`. The failure arithmetic on a fleet is in :mod:`solver.survivability.failures`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from models.capacity import CapacityRow, CapacityTable
from models.common import PurchaseKind, WorkloadClass
from models.errors import InputError, Problem, did_you_mean
from models.inventory import (
    Fleet,
    FleetNodes,
    FleetReplicaGroup,
    InventoryFile,
    InventoryReplicas,
)
from models.loader import non_finite_problems, read_document, validate_as
from models.names import resolve_gpu
from models.plan import Plan
from models.planning_checks import resolve_fleet_instance_types
from models.scenario import Scenario
from models.workload import Workload
from solver.survivability.failures import offer_gpus_per_node, peak_demand_rps, runs_in

#: Order in which purchase kinds are filled when fleetplan lays replicas out: owned nodes first
#: (already paid for), then reserved, on-demand and — batch only — spot.
FILL_ORDER = (PurchaseKind.owned, PurchaseKind.reserved, PurchaseKind.on_demand,
              PurchaseKind.spot)


def fleet_from_plan(plan: Plan, scenario: Scenario, source: str = "plan.json") -> Fleet:
    """The fleet a plan buys, with its own replica capacities (checked by the verifier)."""
    precision = {w.name: w.precision for w in scenario.workloads}
    groups = tuple(
        FleetReplicaGroup(
            workload=a.workload,
            zone=a.zone,
            gpu=a.gpu,
            tp=a.tp,
            precision=precision.get(a.workload, scenario.workloads[0].precision),
            purchase=a.purchase,
            slice=a.slice,
            replicas=a.replicas,
            slo_rps=a.replica_capacity_rps,
            capacity_source=a.capacity_source,
        )
        for a in plan.allocations
        if a.replicas > 0
    )
    nodes = tuple(
        FleetNodes(
            zone=n.zone, gpu=n.gpu, purchase=n.purchase, slice=n.slice, nodes=n.nodes, gpus=n.gpus
        )
        for n in plan.nodes
        if n.nodes > 0
    )
    return Fleet(name=plan.scenario, source=source, replicas=groups, nodes=nodes)


def place_whole(free: dict[int, int], tp: int, want: int) -> int:
    """Put up to ``want`` replicas of ``tp`` GPUs on nodes, one by one, each on the fullest node
    it still fits; returns how many found a place [replicas].

    ``free`` maps free GPUs to the number of nodes with that many free, and is updated. Placed
    largest TP first, whole replicas on whole nodes fail only where no placement exists: TP
    degrees are powers of two, so when one is placed every node's used GPUs are a multiple of it.
    """
    placed = 0
    for room in sorted(f for f in free if f >= tp):  # fullest nodes first
        fit = room // tp  # replicas a node with ``room`` free GPUs takes
        full = min(free[room], (want - placed) // fit)  # nodes that take all they can
        part = 1 if full < free[room] and want - placed > full * fit else 0
        rest = want - placed - full * fit if part else 0  # the last node takes the rest
        free[room] -= full + part
        free[room - fit * tp] = free.get(room - fit * tp, 0) + full
        free[room - rest * tp] = free.get(room - rest * tp, 0) + part
        placed += full * fit + rest
        if placed == want:
            break
    for f in [f for f, n in free.items() if n == 0]:
        del free[f]
    return placed


def fit_to_nodes(fleet: Fleet, scenario: Scenario) -> Fleet:
    """Drop replicas no node can hold (a plan edited by hand), noting each drop.

    Per pool (zone, GPU, purchase) and slice, whole replicas go on whole nodes running then
    (:func:`place_whole`): all-day groups first (as many as fit in every slice), then each
    slice's own groups, larger TP first, else in the fleet's order; the rest are dropped.
    """
    names = [b.name for b in scenario.policy.time_blocks]
    free: dict[tuple[str, str, PurchaseKind, str], dict[int, int]] = defaultdict(dict)
    for n in fleet.nodes:
        for s in names:
            if runs_in(n.slice, s) and n.nodes > 0:
                room = free[(n.zone, n.gpu, n.purchase, s)]
                room[n.gpus // n.nodes] = room.get(n.gpus // n.nodes, 0) + n.nodes
    kept: dict[int, int] = {}
    order = sorted(range(len(fleet.replicas)),
                   key=lambda i: (fleet.replicas[i].slice is not None, -fleet.replicas[i].tp))
    for i in order:
        g = fleet.replicas[i]
        pools = [free[(g.zone, g.gpu, g.purchase, s)] for s in names if runs_in(g.slice, s)]
        keep = min((place_whole(dict(room), g.tp, g.replicas) for room in pools), default=0)
        for room in pools:
            place_whole(room, g.tp, keep)
        kept[i] = keep
    notes = [
        f"{g.workload} {g.gpu} tp{g.tp} {g.purchase} in {g.zone}"
        f"{'' if g.slice is None else ' (' + g.slice + ')'}: {g.replicas - kept[i]} of "
        f"{g.replicas} replicas dropped, no node holds them"
        for i, g in enumerate(fleet.replicas)
        if kept[i] < g.replicas
    ]
    if not notes:
        return fleet
    groups = tuple(
        g.model_copy(update={"replicas": kept[i]})
        for i, g in enumerate(fleet.replicas)
        if kept[i] > 0
    )
    return fleet.model_copy(update={"replicas": groups, "notes": (*fleet.notes, *notes)})


def load_fleet(path: Path, scenario: Scenario, table: CapacityTable | None = None) -> Fleet:
    """Read a fleet: a ``plan.json`` (has ``allocations``) or an inventory YAML/JSON.

    An inventory's replica capacities come from ``table`` (built from the scenario when not
    given). Without a ``layout`` the replicas are laid out by :func:`greedy_layout`. Bad files
    raise :class:`~models.errors.InputError` naming the file, the place and the fix.
    """
    file = str(path)
    doc = read_document(path)
    if not isinstance(doc, Mapping):
        raise InputError(
            [
                Problem(
                    file,
                    "",
                    "expected a mapping at the top level",
                    "give a plan.json or an inventory with `nodes:`",
                )
            ]
        )
    other = other_document(doc, file)
    if other is not None:
        raise InputError([other])
    if is_plan_document(doc):
        plan = plan_document(doc, file)
        problems = _plan_problems(plan, scenario, file)
        if problems:
            raise InputError(problems)
        fleet = fit_to_nodes(fleet_from_plan(plan, scenario, source=file), scenario)
        if plan.status.value in ("infeasible", "error"):
            status = f"the plan's status is {plan.status.value}: it is not a complete fleet"
            fleet = fleet.model_copy(update={"notes": (status, *fleet.notes)})
        return fleet
    inventory = validate_as(InventoryFile, doc, file)
    inventory = resolve_fleet_instance_types(inventory, scenario, file)
    problems = _inventory_problems(inventory, scenario, file)
    if problems:
        raise InputError(problems)
    if table is None:
        from solver.capacity.table import build_capacity_table

        table = build_capacity_table(scenario, _table_gpus(scenario, inventory.nodes))
    nodes = _inventory_nodes(inventory, scenario)
    if inventory.layout is None:
        groups = greedy_layout(nodes, scenario, table)
    else:
        groups = _explicit_layout(inventory.layout, nodes, scenario, table, file)
    return Fleet(
        name=inventory.name,
        source=file,
        replicas=groups,
        nodes=nodes,
        laid_out_by_fleetplan=inventory.layout is None,
        notes=(*default_purchase_notes(doc, file), *_idle_notes(nodes, groups)),
    )


def default_purchase_notes(doc: Mapping[str, Any], file: str) -> tuple[str, ...]:
    """A warning naming the inventory's ``nodes`` lines that give no ``purchase`` (nor
    ``kind``): read as reserved here, while a scenario's ``inventory`` reads the same line as
    owned (docs/survivability.md) — a line copied between them changed kind without a word
    (fresh-s22 F7). Reserved is kept as this file's default: fleets written for check since
    before a scenario could hold an inventory, and their layouts' ``purchase: reserved``, read
    as they were."""
    lines = doc.get("nodes")
    if not isinstance(lines, list):
        return ()
    missing = [f"nodes[{i}]" for i, line in enumerate(lines)
               if isinstance(line, Mapping) and "purchase" not in line and "kind" not in line]
    if not missing:
        return ()
    return (f"warning: {file} {', '.join(missing)}: no `purchase`, so read as "
            f"`purchase: {PurchaseKind.reserved.value}` (the default of a check or simulate "
            "inventory; a scenario's `inventory` reads the same line as `owned`) — write "
            f"`purchase: {PurchaseKind.owned.value}` or "
            f"`purchase: {PurchaseKind.reserved.value}` on {'it' if len(missing) == 1 else 'each'}"
            ,)


def _idle_notes(
    nodes: Sequence[FleetNodes], groups: Sequence[FleetReplicaGroup]
) -> tuple[str, ...]:
    """Owned GPUs that carry no replica, per pool (no configuration fits, or none was laid)."""
    used: dict[tuple[str, str, PurchaseKind], int] = defaultdict(int)
    for g in groups:
        used[(g.zone, g.gpu, g.purchase)] += g.replicas * g.tp
    return tuple(
        f"{n.gpus - used[(n.zone, n.gpu, n.purchase)]} of {n.gpus} {n.gpu} {n.purchase} GPUs "
        f"in {n.zone} carry no replica"
        for n in nodes
        if n.gpus > used[(n.zone, n.gpu, n.purchase)]
    )


def _table_gpus(scenario: Scenario, nodes: Iterable[Any]) -> tuple[str, ...]:
    """The GPUs the scenario sells or holds and those of ``nodes``, in catalog order."""
    names = {*scenario.gpus_sold_or_held(), *(n.gpu for n in nodes)}
    return tuple(g.name for g in scenario.gpus if g.name in names)


def fleet_file_gpus(path: Path, scenario: Scenario) -> tuple[str, ...]:
    """The GPU types whose capacity rows a check of the fleet in ``path`` reads: those the
    scenario sells or holds and the fleet's own (an inventory may hold GPUs no zone sells), in
    catalog order. A file that does not read as a fleet adds none (:func:`load_fleet` says
    what is wrong with it)."""
    try:
        doc = read_document(path)
        if not isinstance(doc, Mapping):
            return scenario.gpus_sold_or_held()
        if is_plan_document(doc):
            plan = plan_document(doc, str(path))
            return _table_gpus(scenario, (*plan.nodes, *plan.allocations))
        inventory = resolve_fleet_instance_types(validate_as(InventoryFile, doc, str(path)),
                                                 scenario, str(path))
        return _table_gpus(scenario, inventory.nodes)
    except InputError:
        return scenario.gpus_sold_or_held()


#: Keys only a scenario (or its ``scenario.resolved.yaml``) has at its top level.
SCENARIO_KEYS = ("workloads", "zones", "price_tables", "policy", "catalog")
#: Keys of a ``contract.yaml`` (solver/outputs/contract.py) at its top level.
CONTRACT_KEYS = ("plan_fingerprint", "rows")


def other_document(doc: Mapping[str, Any], file: str) -> Problem | None:
    """A file given as a fleet that is another of fleetplan's inputs — a scenario or a
    contract — as one problem saying what it is and where it goes (else ``None``): checked as
    a fleet it gave one unknown-key error per scenario section and never said so."""
    if is_plan_document(doc) or "nodes" in doc:
        return None
    found = [k for k in SCENARIO_KEYS if k in doc]
    if found:
        return Problem(
            file, "",
            f"this is a scenario (it has {', '.join(f'`{k}:`' for k in found)}), not a "
            "plan.json or an inventory of nodes",
            f"pass it as SCENARIO, the first argument (`fleetplan check {file} --fleet "
            "out/plan.json`), and give --fleet a plan.json `fleetplan plan` wrote or an "
            "inventory with `nodes:`")
    if all(k in doc for k in CONTRACT_KEYS):
        return Problem(
            file, "", "this is a capacity contract (contract.yaml), not a plan.json or an "
            "inventory of nodes",
            f"pass it with --contract: `fleetplan check SCENARIO --contract {file}`")
    return None


def plan_document(doc: Mapping[str, Any], file: str) -> Plan:
    """A plan.json read as a :class:`Plan`; a non-finite number in it (JSON's ``NaN`` or
    ``Infinity``, which ``plan`` never writes) is a located problem: a replica capacity of
    ``Infinity`` traced back in the capacity model. So is one written as text (``"1e999"``,
    ``"inf"``), which pydantic reads as a number: it is looked for in the plan as read, whose
    dump has the document's keys."""
    infinite = non_finite_problems(doc, file)
    if infinite:
        raise InputError(infinite)
    plan = validate_as(Plan, doc, file)
    as_text = non_finite_problems(plan.model_dump(), file)
    if as_text:
        raise InputError(as_text)
    return plan


def is_plan_document(doc: Mapping[str, Any]) -> bool:
    """A plan.json carries ``allocations`` or ``status``; an inventory carries ``nodes``."""
    return "allocations" in doc or "status" in doc


def read_plan(path: Path) -> Plan | None:
    """The plan in a fleet file, or ``None`` when the file is an inventory."""
    doc = read_document(path)
    if isinstance(doc, Mapping) and is_plan_document(doc):
        return plan_document(doc, str(path))
    return None


def _unknown(
    file: str,
    where: str,
    refs: Iterable[tuple[str, str, str, Collection[str]]],
    context: str = "",
    hint: str = "",
) -> list[Problem]:
    """A problem for each reference ``(field, noun, name, known)`` whose name is not known,
    located at ``where.field``, with the closest known name as the fix."""
    return [
        Problem(
            file,
            f"{where}.{field}",
            f"unknown {noun} `{name}`{context}",
            did_you_mean(name, known) + hint,
        )
        for field, noun, name, known in refs
        if name not in known
    ]


def _plan_problems(plan: Plan, scenario: Scenario, file: str) -> list[Problem]:
    workloads = [w.name for w in scenario.workloads]
    zones = [z.id for z in scenario.zones]
    gpus = [g.name for g in scenario.gpus]
    out: list[Problem] = []
    for i, a in enumerate(plan.allocations):
        out += _unknown(
            file,
            f"allocations[{i}]",
            (
                ("workload", "workload", a.workload, workloads),
                ("zone", "zone", a.zone, zones),
                ("gpu", "gpu", a.gpu, gpus),
            ),
            context=f" in scenario {scenario.name}",
            hint=" (is this the plan of another scenario?)",
        )
    blocks = [b.name for b in scenario.policy.time_blocks]
    slices = [(f"allocations[{i}]", a.slice) for i, a in enumerate(plan.allocations)]
    slices += [(f"nodes[{i}]", n.slice) for i, n in enumerate(plan.nodes)]
    for where, name in slices:
        if name is not None:
            out += _unknown(file, where, (("slice", "time block", name, blocks),),
                            context=f" in scenario {scenario.name}")
    for i, n in enumerate(plan.nodes):
        out += _unknown(
            file, f"nodes[{i}]", (("zone", "zone", n.zone, zones), ("gpu", "gpu", n.gpu, gpus))
        )
    return out


def _inventory_problems(inv: InventoryFile, scenario: Scenario, file: str) -> list[Problem]:
    """Consistency tier of an inventory: names resolve, pools appear once, layouts are legal."""
    workloads = {w.name: w for w in scenario.workloads}
    zones = [z.id for z in scenario.zones]
    gpus = [g.name for g in scenario.gpus]
    out: list[Problem] = []
    seen: set[tuple[str, str, PurchaseKind]] = set()
    for i, n in enumerate(inv.nodes):
        out += _unknown(file, f"nodes[{i}]", (("zone", "zone", n.zone, zones),))
        if n.gpu not in gpus:  # the closest GPU types, or instance types (`p5.48xl`)
            out.append(Problem(file, f"nodes[{i}].gpu", f"unknown GPU `{n.gpu}`",
                               resolve_gpu(n.gpu, gpus)[2]))
        key = (n.zone, n.gpu, n.purchase)
        if key in seen:
            out.append(
                Problem(
                    file,
                    f"nodes[{i}]",
                    f"{n.gpu} {n.purchase} nodes in {n.zone} listed twice",
                    "give one line per zone, GPU and purchase kind",
                )
            )
        seen.add(key)
    for i, line in enumerate(inv.layout or ()):
        where = f"layout[{i}]"
        wl = workloads.get(line.workload)
        out += _unknown(
            file,
            where,
            (
                ("workload", "workload", line.workload, workloads),
                ("zone", "zone", line.zone, zones),
                ("gpu", "GPU", line.gpu, gpus),
            ),
        )
        if line.gpu in gpus and not any((line.zone, line.gpu) == (k[0], k[1]) for k in seen):
            out.append(
                Problem(
                    file,
                    where,
                    f"no {line.gpu} nodes in {line.zone}",
                    "add them under `nodes:` or move the replicas",
                )
            )
        if (
            wl is not None
            and wl.workload_class is WorkloadClass.interactive
            and line.purchase is PurchaseKind.spot
        ):
            out.append(
                Problem(
                    file,
                    f"{where}.purchase",
                    f"interactive workload `{wl.name}` on spot",
                    "interactive pools never run on spot: use reserved or on_demand",
                )
            )
    return out


def _inventory_nodes(inv: InventoryFile, scenario: Scenario) -> tuple[FleetNodes, ...]:
    out = []
    for n in inv.nodes:
        gpn = n.gpus_per_node or offer_gpus_per_node(scenario, n.zone, n.gpu)
        out.append(
            FleetNodes(
                zone=n.zone,
                gpu=n.gpu,
                purchase=n.purchase,
                slice=None,
                nodes=n.nodes,
                gpus=n.nodes * gpn,
            )
        )
    return tuple(out)


class _Pools:
    """Free GPUs per node of each (zone, GPU, purchase) pool; replicas placed first-fit."""

    def __init__(self, nodes: Iterable[FleetNodes]) -> None:
        self.free: dict[tuple[str, str, PurchaseKind], list[int]] = {}
        self.total: dict[tuple[str, str, PurchaseKind], int] = {}
        """Free GPUs of each pool, kept with ``free`` (summing the nodes per call was
        quadratic: minutes for an inventory of 10^5 nodes)."""
        self.first: dict[tuple[str, str, PurchaseKind, int], int] = {}
        """Per pool and TP, a node index before which no node has TP free GPUs; free GPUs only
        fall, so first-fit resumes there instead of scanning from the first node."""
        for n in nodes:
            if n.nodes > 0:
                self.free[(n.zone, n.gpu, n.purchase)] = [n.gpus // n.nodes] * n.nodes
                self.total[(n.zone, n.gpu, n.purchase)] = n.nodes * (n.gpus // n.nodes)

    def kinds(self, workload: Workload, purchase: PurchaseKind | None) -> tuple[PurchaseKind, ...]:
        """Purchase kinds a replica may use, in fill order (never spot for interactive)."""
        if purchase is not None:
            return (purchase,)
        if workload.workload_class is WorkloadClass.interactive:
            return tuple(k for k in FILL_ORDER if k is not PurchaseKind.spot)
        return FILL_ORDER

    def free_gpus(self, zone: str, gpu: str, kinds: Iterable[PurchaseKind]) -> int:
        return sum(self.total.get((zone, gpu, k), 0) for k in kinds)

    def place(
        self, zone: str, gpu: str, tp: int, kinds: Iterable[PurchaseKind]
    ) -> PurchaseKind | None:
        """Put one replica on the first node with ``tp`` free GPUs; the purchase kind used."""
        for kind in kinds:
            nodes = self.free.get((zone, gpu, kind), [])
            j = self.first.get((zone, gpu, kind, tp), 0)
            while j < len(nodes) and nodes[j] < tp:
                j += 1
            self.first[(zone, gpu, kind, tp)] = j
            if j < len(nodes):
                nodes[j] -= tp
                self.total[(zone, gpu, kind)] -= tp
                return kind
        return None

    def zones_with(self, gpu: str) -> list[str]:
        return sorted({z for (z, g, _) in self.free if g == gpu})


def _candidates(workload: Workload, table: CapacityTable) -> list[CapacityRow]:
    """A workload's configurations, cheapest first (then fewest GPUs per rps, name, tp)."""
    rows = [
        r
        for r in table.for_workload(workload.name)
        if workload.allowed_gpus is None or r.gpu in workload.allowed_gpus
    ]
    same = [r for r in rows if r.precision == workload.precision]

    def cost(r: CapacityRow) -> tuple[float, float, str, int]:
        per_mtok = min(r.cost_per_million_tokens.values(), default=math.inf)
        return (per_mtok, r.tp / r.slo_rps, r.gpu, r.tp)

    return sorted(same or rows, key=cost)


_Key = tuple[str, str, str, int, PurchaseKind]


def _place_spread(
    pools: _Pools,
    workload: Workload,
    row: CapacityRow,
    count: int,
    placed: dict[_Key, int],
    weight: Mapping[str, int],
) -> int:
    """Place up to ``count`` replicas of one configuration, spreading them across zones in
    proportion to ``weight`` (the zone's free GPUs of that type): each replica goes to the zone
    with the smallest (replicas there + 1) / weight. Returns the number placed."""
    kinds = pools.kinds(workload, None)
    per_zone: dict[str, int] = defaultdict(int)
    for (w, z, g, tp, _), n in placed.items():
        if (w, g, tp) == (workload.name, row.gpu, row.tp):
            per_zone[z] += n
    done = 0
    while done < count:
        order = sorted(
            (z for z in weight if weight[z] > 0),
            key=lambda z: ((per_zone[z] + 1) / weight[z], z),
        )
        for zone in order:
            kind = pools.place(zone, row.gpu, row.tp, kinds)
            if kind is not None:
                key = (workload.name, zone, row.gpu, row.tp, kind)
                placed[key] = placed.get(key, 0) + 1
                per_zone[zone] += 1
                done += 1
                break
        else:
            return done
    return done


def greedy_layout(
    nodes: Sequence[FleetNodes], scenario: Scenario, table: CapacityTable
) -> tuple[FleetReplicaGroup, ...]:
    """Lay replicas out on an inventory's nodes, deterministically.

    Interactive workloads first, then batch, each in scenario order. (1) Each workload gets the
    replicas its peak demand needs (⌈peak / (slo_rps × target utilization)⌉) of its cheapest
    configuration that still fits, spread across zones in proportion to their free GPUs of that
    type, falling back to the next configuration when the GPUs run out. (2) GPUs left over are
    owned anyway: they are handed out one replica per workload per round (workloads that must
    survive failures first), each to the zone where that configuration is thinnest, until no
    replica fits — spare replicas are what failover capacity is made of.
    """
    pools = _Pools(nodes)
    order = sorted(
        scenario.workloads, key=lambda w: w.workload_class is not WorkloadClass.interactive
    )
    placed: dict[_Key, int] = {}
    candidates = {w.name: _candidates(w, table) for w in order}

    def weight(w: Workload, gpu: str) -> dict[str, int]:
        kinds = pools.kinds(w, None)
        return {z: pools.free_gpus(z, gpu, kinds) for z in pools.zones_with(gpu)}

    for wl in order:
        need_rps = peak_demand_rps(wl) / wl.utilization  # SLO-holding rps to provide [1/s]
        for row in candidates[wl.name]:
            if need_rps <= 1e-12:
                break
            count = math.ceil(need_rps / row.slo_rps - 1e-9)
            done = _place_spread(pools, wl, row, count, placed, weight(wl, row.gpu))
            need_rps -= done * row.slo_rps
    spare_order = sorted(order, key=lambda w: w.survivability.value == "none")
    progress = True
    while progress:
        progress = False
        for wl in spare_order:
            for row in candidates[wl.name]:
                w = weight(wl, row.gpu)
                if _place_spread(pools, wl, row, 1, placed, w):
                    progress = True
                    break
    rows = {(r.workload, r.gpu, r.tp): r for wl in order for r in reversed(candidates[wl.name])}
    return _groups(placed, rows)


def _groups(
    placed: Mapping[_Key, int], rows: Mapping[tuple[str, str, int], CapacityRow]
) -> tuple[FleetReplicaGroup, ...]:
    out = []
    for (wl, zone, gpu, tp, kind), n in sorted(placed.items()):
        row = rows[(wl, gpu, tp)]
        out.append(
            FleetReplicaGroup(
                workload=wl,
                zone=zone,
                gpu=gpu,
                tp=tp,
                precision=row.precision,
                purchase=kind,
                slice=None,
                replicas=n,
                slo_rps=row.slo_rps,
                capacity_source=row.source,
            )
        )
    return tuple(out)


def _explicit_layout(
    layout: Sequence[InventoryReplicas],
    nodes: Sequence[FleetNodes],
    scenario: Scenario,
    table: CapacityTable,
    file: str,
) -> tuple[FleetReplicaGroup, ...]:
    """Replica groups from an inventory's layout lines, each checked against the table and
    placed on the nodes (purchase kinds filled in order where a line names none)."""
    pools = _Pools(nodes)
    placed: dict[_Key, int] = {}
    rows: dict[tuple[str, str, int], CapacityRow] = {}
    problems: list[Problem] = []
    for i, line in enumerate(layout):
        wl = scenario.workload(line.workload)
        precision = line.precision or wl.precision
        row = next(
            (
                r
                for r in table.for_workload(wl.name)
                if (r.gpu, r.tp, r.precision) == (line.gpu, line.tp, precision)
            ),
            None,
        )
        if row is None:
            reason = next(
                (
                    r.reason
                    for r in table.rejected
                    if (r.workload, r.gpu, r.tp, r.precision)
                    == (wl.name, line.gpu, line.tp, precision)
                ),
                None,
            )
            configs = (
                ", ".join(f"{r.gpu} tp{r.tp} {r.precision}" for r in table.for_workload(wl.name))
                or "none"
            )
            problems.append(
                Problem(
                    file,
                    f"layout[{i}]",
                    f"{wl.name} on {line.gpu} tp{line.tp} {precision} is not a feasible "
                    f"configuration" + (f" ({reason})" if reason else ""),
                    f"use one of: {configs}",
                )
            )
            continue
        rows[(wl.name, row.gpu, row.tp)] = row
        kinds = pools.kinds(wl, line.purchase)
        for n_done in range(line.replicas):
            kind = pools.place(line.zone, line.gpu, line.tp, kinds)
            if kind is None:
                free = pools.free_gpus(line.zone, line.gpu, kinds)
                problems.append(
                    Problem(
                        file,
                        f"layout[{i}].replicas",
                        f"only {n_done} of {line.replicas} tp{line.tp} replicas fit the "
                        f"{line.gpu} nodes in {line.zone} ({free} GPUs left, whole nodes only)",
                        "add nodes under `nodes:` or lower the replicas",
                    )
                )
                break
            key = (wl.name, line.zone, line.gpu, line.tp, kind)
            placed[key] = placed.get(key, 0) + 1
    if problems:
        raise InputError(problems)
    return _groups(placed, rows)
