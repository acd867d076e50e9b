"""Where the optimum over periods lies given a set of orders: every held block solved as far as
it goes, its best fleet and best bound over CPU seconds, summed as the joint objective weighs
them (issue 16: is there a fleet at ≤ 1 % of the bound, and can a block's proof reach 1 %?).

The harness's multi-period case is held at the orders the planner chooses
(:func:`~benchmarks.held_widened.held_blocks`: the priced blocks' LPs, then
:func:`~solver.solve.order_choice.choose_orders`), or at those orders with ``--nudge`` nodes
more (or fewer, negative) of the order that holds the most nodes. With the orders fixed the
joint program falls apart into its blocks (interchangeable blocks, the same program holding
the same nodes, are solved once). For each distinct held block, one after the other:

- ``pipeline``: the single-period planner (:func:`~solver.solve.strategy.solve_shared`: its
  stages, then HiGHS's tree from their fleet) on the block as
  :func:`~solver.solve.order_choice.held_block` makes it, for ``--pipeline-s``, gap 0.01 %;
  every improvement of its fleet or bound recorded at the process's CPU seconds;
- ``block step``: the planner's own step for a held block
  (:func:`~solver.solve.block_plans.plan_block` on the block taken from the joint program's
  arrays, :class:`~solver.solve.held_blocks.HeldBlocks`) for ``--block-s`` (0: none), its
  hour-by-hour pass given ``--block-s`` more and each hour :data:`BLOCK_PER_SLICE` times the
  plan's seconds, to that share of its gap: a deeper run of what the plan does;
- ``tree``: HiGHS's branch and bound on the block taken from the joint arrays, from the
  cheaper of the fleets above, for ``--tree-s`` (0: none), recorded the same way.

Both are programs of the same held block, so each one's bound bounds the block and each
one's fleet is a fleet of it (each is checked against every row of the held block taken from
the joint arrays). Summed over the blocks, each at its weight (demand scenario's
probability × months), plus what the orders cost over their whole terms: (a) the cheapest
fleet of the joint program *given these orders*, (b) a bound of the joint program *given
these orders* — not a bound of the joint program, whose orders are free (its bound is the
least of (b) over every order set, which the joint root bounds from below). Both at each CPU
budget of ``--at`` a block (CPU seconds of the process since the block's pipeline began),
and the gap between them::

    nice -n 5 .venv/bin/python benchmarks/horizon_optimum.py --case medium:25 \\
        --pipeline-s 120 --block-s 0 --tree-s 60 --at 5,10,20,40,60,120,180 [--nudge 0,1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.held_widened import held_blocks  # noqa: E402
from solver.program.data import ProgramData  # noqa: E402
from solver.program.periods import OrderKey  # noqa: E402
from solver.program.values import start_from_replicas  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.block_plans import plan_block, replicas_of  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import HeldBlock, HeldBlocks  # noqa: E402
from solver.solve.highs import Progress, model_of, run  # noqa: E402
from solver.solve.horizon import joint_program  # noqa: E402
from solver.solve.order_choice import held_block  # noqa: E402
from solver.solve.order_nudge import largest_order  # noqa: E402
from solver.solve.strategy import solve_shared  # noqa: E402

#: Relative gap at which a solve here stops (the block proven for this purpose) [1].
PROOF_GAP = 1e-4

#: The planner's block step as a deeper search than the plan's: its gap, and each hour of its
#: hour-by-hour pass given this many times the planner's seconds, to that share of its gap
#: (:func:`~solver.solve.block_plans.plan_block`'s ``per_slice``) [1].
BLOCK_GAP = 0.02
BLOCK_PER_SLICE = 4

Vector = npt.NDArray[np.float64]

#: Seconds for a held block's LP relaxation [s].
LP_S = 60.0

Orders = Mapping[tuple[str, OrderKey], int]


@dataclass
class Track:
    """A block's best fleet and best bound a month over the CPU seconds spent on it."""

    weight: float
    """The block's weight in the joint objective (probability × months) [month]."""
    points: list[tuple[float, float | None, float | None]] = field(default_factory=list)
    """(CPU s since the block began, fleet a month, bound a month), in time order."""
    fleet: dict[str, float] | None = None
    """The cheapest fleet found, by the joint program's names of the block's columns."""

    def add(self, cpu_s: float, fleet: float | None, bound: float | None) -> None:
        """Record a fleet and/or a bound a month found ``cpu_s`` into the block."""
        self.points.append((cpu_s, fleet, bound))

    def at(self, cpu_s: float) -> tuple[float | None, float | None]:
        """The cheapest fleet and the highest bound a month known within ``cpu_s``."""
        fleets = [f for t, f, _ in self.points if t <= cpu_s and f is not None]
        bounds = [b for t, _, b in self.points if t <= cpu_s and b is not None]
        return (min(fleets) if fleets else None), (max(bounds) if bounds else None)


def nudged(orders: Orders, nodes: int) -> dict[tuple[str, OrderKey], int]:
    """``orders`` with ``nodes`` more (fewer, negative) of the order key that holds the most
    nodes in any scenario, in every scenario that orders it (never below zero)."""
    out = dict(orders)
    if nodes == 0 or not out:
        return out
    largest = largest_order(orders)
    for (s, key), n in orders.items():
        if key == largest:
            out[(s, key)] = max(n + nodes, 0)
    return out


def given_orders(weights: Sequence[float], classes: Sequence[int],
                 tracks: Mapping[int, Track], orders_cost: float, cpu_s: float
                 ) -> tuple[float | None, float | None]:
    """The joint objective's cheapest fleet and bound given the orders, each distinct block
    (``classes[j]``: the distinct block block ``j`` is) at what ``cpu_s`` gave it: the orders'
    cost plus Σ weight × block's fleet (bound) a month; ``None`` where a block has none."""
    fleet: float | None = orders_cost
    bound: float | None = orders_cost
    for weight, c in zip(weights, classes, strict=True):
        f, b = tracks[c].at(cpu_s)
        if f is None or fleet is None:
            fleet = None
        else:
            fleet += weight * f
        if b is None or bound is None:
            bound = None
        else:
            bound += weight * b
    return fleet, bound


def _cpu() -> float:
    return time.process_time()


@dataclass
class Budgets:
    """Seconds (wall, each solve's own limit) of each step on a block; 0: the step is not run."""

    pipeline_s: float
    block_s: float
    tree_s: float


def _in_joint_names(hb: HeldBlock, program: Program, values: dict[str, float]
                    ) -> Vector | None:
    """A fleet of a program of held block ``hb`` (its values by ``program``'s names) as a
    vector of the block taken from the joint arrays; ``None`` if it breaks a row there."""
    replicas = replicas_of(program, values)
    full = start_from_replicas(hb.program, replicas, checked=False)
    if full is None:
        return None
    x = hb.held.model.vector(full)
    broken = hb.held.model.broken_rows(x)
    if broken:
        print(f"  a fleet breaks {len(broken)} rows of the held block: {', '.join(broken[:3])}",
              flush=True)
        return None
    return x


def solve_block(blocks: HeldBlocks, i: int, data: ProgramData, budgets: Budgets) -> Track:
    """Held block ``i`` (``data``: the same block as a single-period program) solved by the
    single-period pipeline and the planner's own block step, then by HiGHS's tree from the
    cheaper of their fleets (module docstring)."""
    hb = blocks.block(i)
    weight = hb.weight
    model = hb.held.model
    track = Track(weight)
    began = _cpu()
    fleets: list[Vector] = []

    def heard(p: Progress, _stage: str = "") -> None:
        track.add(_cpu() - began, p.cost, p.bound)

    def fleet_of(name: str, program: Program, values: dict[str, float] | None,
                 bound: float | None, status: str) -> None:
        x = None if values is None else _in_joint_names(hb, program, values)
        cost = None if x is None else model.cost_of(x) / weight
        if x is not None:
            fleets.append(x)
        track.add(_cpu() - began, cost, bound)
        print(f"  {name}: fleet {_a_month(cost)}, bound {_a_month(bound)}, {status}; ends at "
              f"{_cpu() - began:.1f} CPU-s; load {os.getloadavg()[0]:.1f}", flush=True)

    if budgets.pipeline_s > 0:
        program, outcome = solve_shared(data, "highs", budgets.pipeline_s, PROOF_GAP,
                                        on_progress=heard)
        fleet_of("pipeline", program, {v.name: float(v.varValue or 0.0)
                                       for v in program.prob.variables()}
                 if outcome.has_solution else None, outcome.report.bound, outcome.status.value)
    if budgets.block_s > 0:
        program, values, outcome = plan_block(data, "highs", budgets.block_s, BLOCK_GAP,
                                              spare_s=budgets.block_s, per_slice=BLOCK_PER_SLICE,
                                              held=hb)
        fleet_of("block step", program, values, None, outcome.status.value)
    start = min(fleets, key=model.cost_of) if fleets else None
    track.fleet = None if start is None else model.named(start)
    if budgets.tree_s <= 0:
        return track

    def tree_heard(p: Progress) -> None:
        track.add(_cpu() - began, None if p.cost is None else p.cost / weight,
                  None if p.bound is None else p.bound / weight)

    whole = run(model, Deadline(budgets.tree_s), budgets.tree_s, PROOF_GAP, start=start,
                on_progress=tree_heard)
    fleet = None if whole.objective is None else whole.objective / weight
    bound = None if whole.bound is None else whole.bound / weight
    track.add(_cpu() - began, fleet, bound)
    if whole.x is not None and (start is None or model.cost_of(whole.x) < model.cost_of(start)):
        track.fleet = model.named(np.where(model.integer, np.round(whole.x), whole.x))
    print(f"  tree: fleet {_a_month(fleet)}, bound {_a_month(bound)}, {whole.status.value}, "
          f"{whole.nodes} nodes; ends at {_cpu() - began:.1f} CPU-s; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    return track


def _a_month(value: float | None) -> str:
    return "none" if value is None else f"{value:,.0f}"


def held_lp(blocks: HeldBlocks, i: int) -> float:
    """Held block ``i``'s LP relaxation a month (taken from the joint arrays)."""
    hb = blocks.block(i)
    relaxed = run(hb.held.model, Deadline(LP_S), LP_S, 0.0, relaxation=True)
    assert relaxed.objective is not None, f"held block {i}: no LP"
    return relaxed.objective / hb.weight


def orders_cost(blocks: HeldBlocks) -> float:
    """What the held orders cost in the joint objective (whole terms, expected over the
    demand scenarios), with the objective's constant."""
    return blocks.untied.cost_of(blocks.x) + float(blocks.hp.prob.objective.constant)


def study(blocks: HeldBlocks, budgets: Budgets, marks: Sequence[float],
          done: list[tuple[ProgramData, Track]]
          ) -> tuple[float | None, tuple[list[str], float] | None]:
    """Every distinct held block of ``blocks`` solved (those in ``done``, the same program
    holding the same nodes, taken from there) and the sums given its orders at each mark;
    the cheapest fleet given the orders found, and the :func:`joint_check` of it."""
    data = blocks.hp.data
    programs = [held_block(data, b, blocks.orders) for b in data.blocks]
    classes = [next(k for k in range(j + 1) if programs[k] == programs[j])
               for j in range(len(programs))]
    weights = [blocks.block(j).weight for j in range(len(programs))]
    paid = orders_cost(blocks)
    lps = {i: held_lp(blocks, i) for i in set(classes)}
    print(f"orders: {sum(blocks.orders.values())} nodes over {len(blocks.orders)} "
          f"(scenario, order) keys, {paid:,.0f} over their terms; the held blocks' LPs given "
          f"them {paid + sum(w * lps[c] for w, c in zip(weights, classes, strict=True)):,.0f}",
          flush=True)
    tracks: dict[int, Track] = {}
    for i in sorted(set(classes)):
        block = data.blocks[i]
        same = sum(c == i for c in classes)
        earlier = next((t for d, t in done if d == programs[i]), None)
        if earlier is not None:
            print(f"block {i} ({block.scenario}, period {block.period}; ×{same}): as before",
                  flush=True)
            tracks[i] = earlier
            continue
        print(f"block {i} ({block.scenario}, period {block.period}; ×{same}): weight "
              f"{weights[i]:.2f} months; load {os.getloadavg()[0]:.1f}", flush=True)
        tracks[i] = solve_block(blocks, i, programs[i], budgets)
        done.append((programs[i], tracks[i]))
    print("| CPU s a block | " + " | ".join(
        f"{data.blocks[i].scenario}:{data.blocks[i].period} fleet / bound" for i in tracks)
        + " | fleet given orders | bound given orders | gap |")
    for mark in marks:
        cells = []
        for track in tracks.values():
            f, b = track.at(mark)
            cells.append(f"{_a_month(f)} / {_a_month(b)}"
                         + ("" if f is None or b is None else f" ({(f - b) / f:.2%})"))
        fleet, bound = given_orders(weights, classes, tracks, paid, mark)
        gap = "—" if fleet is None or bound is None else f"{(fleet - bound) / fleet:.2%}"
        print(f"| {mark:.0f} | " + " | ".join(cells)
              + f" | {_a_month(fleet)} | {_a_month(bound)} | {gap} |", flush=True)
    return (given_orders(weights, classes, tracks, paid, float("inf"))[0],
            joint_check(blocks, classes, tracks))


def joint_check(blocks: HeldBlocks, classes: Sequence[int], tracks: Mapping[int, Track]
                ) -> tuple[list[str], float] | None:
    """The joint fleet these orders and each block's cheapest fleet make (a block of the same
    program as an earlier one takes its fleet, renamed), checked against every row of the
    joint program (its tie rows too) and costed there: the rows it breaks and its cost
    (``None``: a block has no fleet)."""
    if any(t.fleet is None for t in tracks.values()):
        print("joint check: a block has no fleet", flush=True)
        return None
    joint = model_of(joint_program(blocks.hp))
    values = {v.name: float(blocks.x[j]) for j, v in enumerate(blocks.untied.variables)
              if blocks.x[j]}
    for j, c in enumerate(classes):
        fleet = tracks[c].fleet
        assert fleet is not None
        values.update({f"b{j}_" + name.removeprefix(f"b{c}_"): v for name, v in fleet.items()
                       if name.startswith(f"b{c}_")})
    x = joint.vector(values)
    broken = joint.broken_rows(x)
    cost = joint.cost_of(x) + float(blocks.hp.prob.objective.constant)
    print(f"joint check: {len(values)} columns set; {len(broken)} rows broken"
          f"{': ' + ', '.join(broken[:5]) if broken else ''}; cost {cost:,.0f}", flush=True)
    return broken, cost


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--pipeline-s", type=float, default=120.0)
    p.add_argument("--block-s", type=float, default=0.0)
    p.add_argument("--tree-s", type=float, default=60.0)
    p.add_argument("--at", default="5,10,20,40,60,120,180")
    p.add_argument("--nudge", default="0",
                   help="comma-separated node changes of the largest order, each a study "
                        "of its own in this order (0: the planner's orders)")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    marks = [float(m) for m in args.at.split(",") if m]
    began = time.perf_counter()
    blocks, _ = held_blocks(size, scale)
    print(f"case {args.case}: held blocks built in {time.perf_counter() - began:.1f} s; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    done: list[tuple[ProgramData, Track]] = []
    for nodes in [int(n) for n in args.nudge.split(",") if n]:
        print(f"\n## orders {'as the planner chooses' if nodes == 0 else f'nudged {nodes:+d}'}",
              flush=True)
        held = blocks if nodes == 0 else HeldBlocks(blocks.hp, blocks.untied,
                                                     nudged(blocks.orders, nodes))
        if nodes != 0:
            print(f"the largest order: {largest_order(blocks.orders)}", flush=True)
        study(held, Budgets(args.pipeline_s, args.block_s, args.tree_s), marks, done)


if __name__ == "__main__":
    main()
