"""Where the multi-period size's gap comes from: one of its blocks, alone.

``bench_quarterly.py``'s case is twelve blocks (4 quarters × 3 demand scenarios), each the
single-period program of its quarter and scenario, planned one after another for a first
fleet and a bound. Its first quarter is the same block in every scenario, and no order arrives
in it (the quotes' lead times are 4 and 8 weeks from the plan date), so it is a plain
single-period program: the medium size at ×25 demand, on-demand and spot only. This script
solves that one block five ways, one after another in one run:

- ``lp``: its LP relaxation, the bound ``plan_horizon`` takes for a block that proves none;
- ``block``: :func:`solver.solve.block_plans.plan_block`, as ``plan_horizon`` plans a block
  for its first fleet, given ``--block-s`` (about a block's share of a 120-s limit);
- ``slices N s``: :func:`plan_by_slices` (an experiment kept here, not in the planner): with
  no committed capacity only a batch window joins slices, so the block is solved one group of
  slices at a time — exact, the groups' bounds summing to a bound — started from ``block``'s
  fleet, given each of ``--slices-s``;
- ``shared``: the single-period strategy for shared nodes
  (:func:`solver.solve.strategy.solve_shared`) given the whole ``--time-limit``;
- ``cold``: HiGHS alone on the block, no start, the whole ``--time-limit``.

It prints each run's fleet cost a month, proven bound and seconds, each fleet over the best
bound of the run, and the best fleet's gap to that bound: what one block of the twelve reaches
given as long as the twelve share::

    .venv/bin/python benchmarks/quarterly_blocks.py [--cases medium:25] [--time-limit 120]
        [--block-s 5] [--slices-s 10,30] [--dedicated]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import _money, _pct, code_version, machine, parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402

if TYPE_CHECKING:
    from solver.program.data import ProgramData, SliceGroup
    from solver.program.keys import ReplicaKey
    from solver.program.variables import Program

#: Least time a group of slices is given [s].
MIN_GROUP_S = 0.2


def slice_groups(data: ProgramData) -> list[tuple[SliceGroup, ...]]:
    """The slices in groups no row joins: a volume workload's window joins the slices it
    spans (its daily volume may go to any of them); every other row is of one slice in a
    program without committed capacity."""
    group = {s.name: i for i, s in enumerate(data.slices)}
    for w in sorted(data.volume_requests):
        window = [s.name for s in data.slices if data.hours_in_window.get((w, s.name), 0) > 0]
        joined = {group[s] for s in window}
        for name, g in group.items():
            if g in joined:
                group[name] = min(joined)
    out: dict[int, list[SliceGroup]] = {}
    for s in data.slices:
        out.setdefault(group[s.name], []).append(s)
    return [tuple(g) for _, g in sorted(out.items())]


def has_committed(data: ProgramData) -> bool:
    """Committed capacity (reserved or owned, present in every slice) may run: it joins every
    slice."""
    from models.common import COMMITTED_KINDS

    return any(o.purchase in COMMITTED_KINDS and o.stock_gpus > 0 for o in data.offers)


def group_data(data: ProgramData, slices: tuple[SliceGroup, ...]) -> ProgramData:
    """The program of a group of slices alone: their demand and windows, no committed offer."""
    from models.common import COMMITTED_KINDS

    names = {s.name for s in slices}
    volumes = {w: v for w, v in data.volume_requests.items()
               if any(data.hours_in_window.get((w, s), 0) > 0 for s in names)}
    return dataclasses.replace(
        data, slices=slices, volume_requests=volumes,
        demand_rps={k: d for k, d in data.demand_rps.items() if k[1] in names},
        hours_in_window={k: h for k, h in data.hours_in_window.items()
                         if k[1] in names and k[0] in volumes},
        offers=tuple(o for o in data.offers if o.purchase not in COMMITTED_KINDS))


def plan_by_slices(data: ProgramData, time_limit_s: float, gap: float,
                   start: Mapping[ReplicaKey, int] | None = None,
                   ) -> tuple[Program, dict[str, float] | None, float | None]:
    """A block without committed capacity solved one group of slices at a time: the groups
    share no variable or row, so their fleets together are a fleet of the block and the sum of
    their bounds bounds it. Each group gets an equal share of what is left of
    ``time_limit_s`` and starts from ``start`` restricted to its slices, keeping the cheaper.
    Returns the block's program (as ``plan_block`` builds it), the fleet's values (``None``:
    a group found none) and the bound (``None``: a group proved none)."""
    from solver.program.build import build_program
    from solver.program.values import objective_of, start_from_replicas
    from solver.solve.backends import integer_value, solve
    from solver.solve.block_plans import BLOCK_FAMILIES

    assert not has_committed(data) and data.monthly_budget is None
    started = time.perf_counter()
    program = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    demanded = {s for w in data.workloads for s in data.demand_slices(w.name)}
    groups = [g for g in slice_groups(data) if demanded & {s.name for s in g}]
    fleet: dict[ReplicaKey, int] = {}
    bound: float | None = 0.0
    for i, group in enumerate(groups):
        sub = build_program(group_data(data, group), families=BLOCK_FAMILIES, symmetry=False)
        names = {s.name for s in group}
        own = None if start is None else start_from_replicas(
            sub, {k: n for k, n in start.items() if k.slice in names and k in sub.v.replicas})
        share = max((time_limit_s - (time.perf_counter() - started)) / (len(groups) - i),
                    MIN_GROUP_S)
        outcome = solve(sub.prob, "highs", share, gap, start=own)
        found = None
        if outcome.has_solution:
            found = start_from_replicas(sub, {k: n for k, x in sub.v.replicas.items()
                                              if (n := integer_value(x)) > 0})
        if found is None or (own is not None
                             and objective_of(sub, own) <= objective_of(sub, found)):
            found = own
        if found is None:
            return program, None, None
        fleet.update({k: n for k, x in sub.v.replicas.items() if (n := round(found[x.name])) > 0})
        own_bound = outcome.report.bound
        bound = None if bound is None or own_bound is None else bound + own_bound
    return program, start_from_replicas(program, fleet), bound


def first_block(size: str, scale: int, seed: int, share_nodes: bool) -> ProgramData:
    """The first quarter's block of the case, priced as ``plan_horizon`` prices it."""
    from solver.capacity.table import cached_tables
    from solver.program.periods import build_horizon_data
    from solver.solve.horizon import _priced_block

    sc = _scenario(size, scale, seed, share_nodes)
    data = build_horizon_data(sc, cached_tables(sc.gpus_sold_or_held()))
    first = _priced_block(data, data.blocks[0])[0]
    assert all(_priced_block(data, b)[0] == first for b in data.blocks if b.period == 0), (
        "the first quarter differs between demand scenarios")
    assert not has_committed(first), "committed capacity runs in the first quarter"
    return first


Run = tuple[str, float | None, float | None, float]


def runs(data: ProgramData, time_limit_s: float, block_s: float, slices_s: list[float],
         gap: float) -> list[Run]:
    """(run, fleet cost a month, bound, seconds) of each way of solving the block."""
    from solver.program.build import build_program
    from solver.program.values import objective_of
    from solver.solve.backends import solve
    from solver.solve.block_plans import BLOCK_FAMILIES, lp_bound, plan_block
    from solver.solve.strategy import solve_shared

    out: list[Run] = []
    start = time.perf_counter()
    out.append(("lp", None, lp_bound(data, "highs", time_limit_s), time.perf_counter() - start))
    start = time.perf_counter()
    program, values, outcome = plan_block(data, "highs", block_s, gap)
    out.append(("block", None if values is None else objective_of(program, values),
                outcome.report.bound, time.perf_counter() - start))
    fleet = None if values is None else {
        k: n for k, x in program.v.replicas.items() if (n := round(values[x.name])) > 0}
    for seconds in slices_s:
        start = time.perf_counter()
        whole, found, bound = plan_by_slices(data, seconds, gap, fleet)
        out.append((f"slices {seconds:g} s", None if found is None else objective_of(
            whole, found), bound, time.perf_counter() - start))
    if data.share_nodes:
        start = time.perf_counter()
        _, outcome = solve_shared(data, "highs", time_limit_s, gap)
        out.append(("shared", outcome.report.objective if outcome.has_solution else None,
                    outcome.report.bound, time.perf_counter() - start))
    start = time.perf_counter()
    cold = build_program(data, families=BLOCK_FAMILIES, symmetry=False)
    outcome = solve(cold.prob, "highs", time_limit_s, gap)
    out.append(("cold", outcome.report.objective if outcome.has_solution else None,
                outcome.report.bound, time.perf_counter() - start))
    return out


def markdown(case: str, nodes: str, found: list[Run]) -> list[str]:
    """Each run as a row, then the best fleet's gap to the best bound of the run."""
    best = max((b for _, _, b, _ in found if b is not None), default=None)
    lines = []
    for run, cost, bound, seconds in found:
        ratio = "—" if cost is None or not best else f"{cost / best:.3f}"
        lines.append(f"| {case} | {nodes} | {run} | {seconds:.1f} | {_money(cost)} | "
                     f"{_money(bound)} | {ratio} |")
    fleets = [c for _, c, _, _ in found if c is not None]
    if fleets and best:
        lines.append(f"| {case} | {nodes} | best fleet, best bound | | {_money(min(fleets))} | "
                     f"{_money(best)} | gap {_pct((min(fleets) - best) / min(fleets))} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--cases", default="medium:25", help="size:scale, comma-separated")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--block-s", type=float, default=5.0)
    p.add_argument("--slices-s", default="10,30", help="seconds of each by-slice run")
    p.add_argument("--gap", type=float, default=0.01)
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    args = p.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = machine()
    lines = ["| case | nodes | run | seconds | fleet $/month | bound $/month | "
             "fleet ÷ best bound |", "|---|---|---|---:|---:|---:|---:|"]
    nodes = "shared" if args.share_nodes else "dedicated"
    for size, scale in parse_cases("", "", args.cases):
        found = runs(first_block(size, scale, args.seed, args.share_nodes), args.time_limit,
                     args.block_s, [float(s) for s in args.slices_s.split(",") if s], args.gap)
        lines += markdown(f"{size} ×{scale}, first quarter", nodes, found)
    print(f"Measured {started} on {header}; {code_version()}; time limit {args.time_limit:g} s, "
          f"block {args.block_s:g} s, gap {args.gap:g}, seed {args.seed}.\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
