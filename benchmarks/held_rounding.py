"""A held block's LP relaxation rounded hour by hour, against the widened restriction the planner
runs where the LP support holds no fleet (issue 16: a fleet without the MIP root?).

The blocks are those of :mod:`benchmarks.held_widened` (the harness's multi-period case held at
the orders the planner chooses). For each distinct block whose LP support holds no fleet (all
distinct blocks with ``--all``), one after the other so that all see the same load:

- ``widened``: the planner's widened restriction (every column of the configurations the
  relaxation runs) for ``--seconds``;
- ``floor``: the committed (all-day) replicas of the LP rounded down — they then fit in the
  nodes the orders hold — their nodes and node-loss binaries set from them, and each hour's
  columns solved as a MIP with every other column held at its current value
  (:func:`~solver.solve.highs.held_model`), ``--hour-s`` and ``--hour-gap`` an hour, in turn:
  every step keeps every row met, so the last gives a fleet of the block;
- ``partial``: the block with only its committed columns integer (the hours' columns
  continuous) solved to 0.2 % in ``--seconds`` — its optimum is a lower bound of the block,
  above its LP — then the hours rounded as in ``floor`` from its values.

Each line: the fleet a month and its ratio to the block's LP, wall and CPU seconds::

    nice -n 19 .venv/bin/python benchmarks/held_rounding.py --case medium:25 --seconds 6 \\
        --hour-s 0.5 --hour-gap 0.002
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.held_widened import block_support, held_blocks  # noqa: E402
from solver.capacity.node_fit import nodes_needed  # noqa: E402
from solver.program.variables import Program, node_key  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import Model, Restriction, held_model, run, slice_columns  # noqa: E402

Vector = npt.NDArray[np.float64]


def committed_floor(program: Program, model: Model, x: Vector) -> Vector:
    """``x`` with the block's all-day replicas rounded down, its all-day nodes the fewest that
    hold them and its all-day node-loss binaries 1 where the pool holds more than a node's
    worth (as :func:`~solver.program.values.set_auxiliaries` sets them)."""
    v, out = program.v, x.copy()
    held: dict[object, dict[int, int]] = {}
    for k, var in v.replicas.items():
        if k.slice is None:
            j = model.index[var.name]
            out[j] = np.floor(out[j] + 1e-6)
            by_tp = held.setdefault(node_key(program.data, k), {})
            by_tp[k.tp] = by_tp.get(k.tp, 0) + int(out[j])
    for nk, y in v.nodes.items():
        if nk.slice is None:
            out[model.index[y.name]] = nodes_needed(held.get(nk, {}),
                                                    v.offer[nk.pool].gpus_per_node)
    all_day = {b.name for bk, b in v.full.items() if bk[4] is None}
    for aux in v.aux:
        if aux.full is not None and aux.full.name in all_day:
            capacity = sum(c * out[model.index[var.name]] for var, c in aux.capacity.items())
            out[model.index[aux.full.name]] = 1.0 if capacity > aux.node_rps + 1e-9 else 0.0
    return out


def hours_rounded(program: Program, model: Model, x: Vector, hour_s: float, gap: float
                  ) -> Vector | None:
    """Each hour's columns of ``x`` (its all-day columns integer) solved as a MIP with the rest
    held, in turn (``None``: an hour with no fleet in its time)."""
    own = slice_columns(program, model)
    for s in sorted(own):
        part = held_model(model, own[s], x)
        found = run(part.model, Deadline(hour_s), hour_s, gap)
        if found.x is None or found.status.value == "infeasible":
            return None
        x = part.expand(np.where(part.model.integer, np.round(found.x), found.x))
    return x


def partial(model: Model, integer: npt.NDArray[np.bool_], seconds: float
            ) -> tuple[Vector | None, float | None]:
    """``model`` with only ``integer`` columns integer, to 0.2 %: its values and bound."""
    import highspy

    old = list(model.lp.integrality_)
    model.lp.integrality_ = [highspy.HighsVarType.kInteger if i else
                             highspy.HighsVarType.kContinuous for i in integer]
    try:
        found = run(model, Deadline(seconds), seconds, 0.002)
    finally:
        model.lp.integrality_ = old
    return found.x, found.bound


def _say(name: str, model: Model, weight: float, lp: float, x: Vector | None, began: float,
         cpu: float, more: str = "") -> None:
    """One line: a fleet a month (``x``, ``None``: none), its ratio to the LP, the seconds."""
    cost = "no fleet"
    if x is not None:
        month = float(model.cost @ x) / weight
        cost = f"{month:,.0f} ({month / lp:.3f} × LP, holds: {not model.broken_rows(x)})"
    print(f"  {name}: {cost}{more}; {time.perf_counter() - began:.1f} s, "
          f"{time.process_time() - cpu:.1f} CPU-s", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--hour-s", type=float, default=0.5)
    p.add_argument("--hour-gap", type=float, default=0.002)
    p.add_argument("--all", action="store_true", help="every distinct block, not only widened")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    blocks, distinct = held_blocks(size, scale)
    for i in distinct:
        model, program, weight, relaxed, keys, columns, runs, support = block_support(
            blocks, i, args.seconds, 0.02)
        assert relaxed.x is not None and relaxed.objective is not None
        lp = relaxed.objective / weight
        block = blocks.hp.data.blocks[i]
        print(f"block {i} ({block.scenario}, period {block.period}): LP {lp:,.0f} a month; "
              f"support {support.status.value}", flush=True)
        if support.x is not None and not args.all:
            continue

        used = {(k.workload, k.gpu, k.tp) for k, on in zip(keys, runs, strict=True) if on}
        wide = np.array([(k.workload, k.gpu, k.tp) in used for k in keys], dtype=bool)
        began, cpu = time.perf_counter(), time.process_time()
        empty = columns[~wide]
        found = run(model, Deadline(args.seconds), args.seconds, 0.02,
                    restriction=Restriction(empty, np.zeros(len(empty)), np.zeros(len(empty))))
        _say("widened", model, weight, lp, None if found.x is None else
             np.where(model.integer, np.round(found.x), found.x), began, cpu)
        began, cpu = time.perf_counter(), time.process_time()
        _say("floor", model, weight, lp, hours_rounded(
            program, model, committed_floor(program, model, relaxed.x), args.hour_s,
            args.hour_gap), began, cpu)
        began, cpu = time.perf_counter(), time.process_time()
        own = slice_columns(program, model)
        hourly = np.zeros(model.columns_count, dtype=bool)
        for cols in own.values():
            hourly[cols] = True
        x, bound = partial(model, model.integer & ~hourly, args.seconds)
        more = "" if bound is None else (f", bound {bound / weight:,.0f} "
                                         f"({bound / weight / lp:.4f} × LP)")
        rounded = None
        if x is not None:
            x = np.where(model.integer & ~hourly, np.round(x), x)
            rounded = hours_rounded(program, model, x, args.hour_s, args.hour_gap)
        _say("partial", model, weight, lp, rounded, began, cpu, more)


if __name__ == "__main__":
    main()
