"""Time aggregation: plan groups of slices as one slice at the group's busiest demand.

A program whose slices are grouped, each group's demand the largest of its members' (per
workload), each group's hours the sum of its members', is a *restriction* of the program: its
elastic capacity is the same in every member slice, so a fleet it finds, copied into each member
slice, meets every member's demand, survives the same failures (rows of the form "capacity after
a failure ≥ demand" only get easier at a member's lower demand), buys the same nodes (stock per
slice holds) and costs the same (elastic capacity is paid per hour either way). A volume
workload's window hours add up, so its work done per day is the same sum.

Few groups make a small program that proves its optimum in seconds where the full program (24
hourly slices) does not find as good a fleet in a minute; that fleet then starts the full
program, which may still move elastic capacity slice by slice. It never changes the bound: the
full program's own bound is the one reported (docs/program.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from solver.program.build import build_program
from solver.program.data import ProgramData, SliceGroup
from solver.program.keys import ReplicaKey
from solver.program.values import objective_of, start_from_replicas
from solver.program.variables import Program
from solver.solve.backends import integer_value, solve


def demand_groups(data: ProgramData, count: int) -> tuple[tuple[str, ...], ...]:
    """``count`` groups of slices (names, in slice order) of similar load, deterministically.

    Load is each workload's demand as a share of its own peak (a volume workload's window hours
    as a share of its longest), summed over workloads; slices sorted by load (ties: slice order)
    are cut into runs of equal length, so busy hours share a group and quiet hours another.
    """
    names = [s.name for s in data.slices]
    if count >= len(names):
        return tuple((n,) for n in names)
    position = {n: i for i, n in enumerate(names)}
    peak: dict[str, float] = {}
    for (w, _), amount in [*data.demand_rps.items(), *data.hours_in_window.items()]:
        peak[w] = max(peak.get(w, 0.0), float(amount))
    load = {
        s: sum((data.demand_rps.get((w, s), 0.0) + data.hours_in_window.get((w, s), 0)) / p
               for w, p in peak.items() if p > 0)
        for s in names
    }
    order = sorted(names, key=lambda s: (load[s], position[s]))
    runs = [order[i * len(order) // count:(i + 1) * len(order) // count] for i in range(count)]
    return tuple(tuple(sorted(run, key=position.__getitem__)) for run in runs if run)


def restrict_to_groups(data: ProgramData, groups: Sequence[Sequence[str]]) -> ProgramData:
    """The program data with each group planned as one slice named after its first member."""
    by_name = {s.name: s for s in data.slices}
    slices: list[SliceGroup] = []
    demand: dict[tuple[str, str], float] = {}
    window: dict[tuple[str, str], int] = {}
    workloads = [w.name for w in data.workloads]
    for group in groups:
        members = [by_name[s] for s in group]
        name = members[0].name
        slices.append(SliceGroup(name, tuple(b for m in members for b in m.blocks),
                                 sum(m.hours_per_day for m in members)))
        for w in workloads:
            peak = max(data.demand_rps.get((w, s), 0.0) for s in group)
            if peak > 0:
                demand[(w, name)] = peak
            hours = sum(data.hours_in_window.get((w, s), 0) for s in group)
            if hours:
                window[(w, name)] = hours
    order = {s.name: i for i, s in enumerate(data.slices)}
    slices.sort(key=lambda s: order[s.name])
    return dataclasses.replace(data, slices=tuple(slices), demand_rps=demand,
                               hours_in_window=window)


def expand_fleet(
    target: Program, target_groups: Sequence[Sequence[str]],
    source_groups: Sequence[Sequence[str]], replicas: dict[ReplicaKey, int],
) -> dict[ReplicaKey, int]:
    r"""A grouped program's fleet as slots of ``target``, whose groups refine the source's.

    Groups are tuples of the full program's slice names; a grouped slice is named after its
    first member (the full program: each slice its own group). Each source group's elastic
    replicas run in every target slice inside it where the workload has demand.

    A quiet slice may so hold more of an N+1 workload in a pool than its :math:`\bar X`
    (:func:`~solver.program.families.pool_capacity_bound`); its node-loss row then over-states the
    loss
    (:math:`\ell = X - \bar X + M`), yet still holds: what is left, :math:`\bar X - M` plus
    the other pools, exceeds the demand by construction of :math:`\bar X`.
    """
    inside = {
        g[0]: [t[0] for t in target_groups if set(t) <= set(g)] for g in source_groups
    }
    present = {w.name: set(target.data.demand_slices(w.name)) for w in target.data.workloads}
    out: dict[ReplicaKey, int] = {}
    for k, n in replicas.items():
        if n <= 0:
            continue
        if k.slice is None:
            out[k] = n
            continue
        for member in inside[k.slice]:
            if member in present[k.workload]:
                out[k._replace(slice=member)] = n
    return out


#: Programs with more slices than this start from time-aggregated fleets (hourly slices make
#: the full program slow to find good fleets), found within this share of the time limit [1].
AGGREGATE_ABOVE_SLICES = 4
AGGREGATE_SHARE = 0.6

#: Groups of each stage of :func:`aggregated_start` and the share of its time each may use:
#: one group (the static fleet at the day's peak) proves its optimum in seconds; each later
#: stage splits every group of the one before in two (its fleet is the next stage's start).
STAGES: tuple[tuple[int, float], ...] = ((1, 0.25), (2, 0.35), (4, 0.40))
#: The one-group stage alone: the static fleet at the day's peak, the start a program of a few
#: slices takes when it is cheaper than the dedicated-pool fleet (``solver.solve.strategy``).
STATIC_STAGE: tuple[tuple[int, float], ...] = ((1, 0.25),)


def aggregated_start(
    program: Program, solver: str, time_limit_s: float, gap: float,
    stages: tuple[tuple[int, float], ...] = STAGES,
) -> dict[str, float] | None:
    """Values for every variable of the full ``program``: the best fleet of grouped programs.

    ``None`` for a program of one slice (nothing to group). Otherwise the stages get
    :data:`AGGREGATE_SHARE` of ``time_limit_s``: those of ``stages`` (:data:`STAGES` unless
    given) with fewer groups than the program has slices run in order, each
    started from the fleet of the one before (kept where a stage ends dearer), within its share;
    the last fleet kept is copied into the full program's slices. ``None``
    if no stage finds a fleet (or, never expected, the copy breaks a row of the full program).
    """
    data = program.data
    time_limit_s *= AGGREGATE_SHARE
    best: tuple[tuple[tuple[str, ...], ...], dict[ReplicaKey, int]] | None = None
    for count, share in stages:
        if count >= len(data.slices):
            break
        groups = demand_groups(data, count)
        grouped = build_program(restrict_to_groups(data, groups))
        start = None
        if best is not None:
            start = start_from_replicas(grouped, expand_fleet(grouped, groups, *best))
        outcome = solve(grouped.prob, solver, max(time_limit_s * share, 0.5), gap, start=start)
        found = outcome.report.objective if outcome.has_solution else None
        if found is not None and (start is None or found <= objective_of(grouped, start)):
            best = (groups, {k: integer_value(x) for k, x in grouped.v.replicas.items()})
        # else keep the last stage's fleet: CBC takes no start and may end dearer
    if best is None:
        return None
    full_groups = tuple((s.name,) for s in data.slices)
    values = start_from_replicas(program, expand_fleet(program, full_groups, *best))
    return values


