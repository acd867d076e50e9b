"""The held blocks whose LP support holds no fleet: the widened restriction the planner runs on
them, against the same seconds split between it and the hour-by-hour pass.

The harness's multi-period case (``bench_quarterly.quarterly`` on a generated size, shared
nodes) is taken as the planner takes it with the time split into shares: the priced blocks' LP
relaxations, the orders :func:`~solver.solve.order_choice.choose_orders` picks from them, and
every block of the joint program restricted to those orders
(:class:`~solver.solve.held_blocks.HeldBlocks`). For each distinct block the script solves its
LP relaxation and the restriction to its LP support (what
:func:`~solver.solve.block_plans.lp_support_held` does first); where that support holds no
fleet, it runs, one after the other so that both see the same load:

- ``widened``: the restriction to every column of the configurations (workload, GPU, TP) the
  relaxation runs, for ``--seconds`` (the planner's path: a block's share is about 10 s at
  × 25 in 120 s);
- ``split F``: the same restriction for F × ``--seconds``, then the hour-by-hour pass
  (:func:`~solver.solve.block_plans.polish_slices`) from its fleet in what is left.

Each line: the fleet a month, HiGHS's bound of the restriction (not of the block) and the CPU
seconds; where the fleet improved, when (seconds into the solve)::

    nice -n 19 .venv/bin/python benchmarks/held_widened.py --case medium:25 --seconds 10 \\
        --split 0.6
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from solver.capacity.table import cached_tables  # noqa: E402
from solver.program.keys import PoolKey, ReplicaKey  # noqa: E402
from solver.program.periods import build_horizon_data, build_horizon_program  # noqa: E402
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve.block_plans import (  # noqa: E402
    LP_EMPTY,
    lp_relaxation,
    polish_slices,
)
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import HeldBlocks  # noqa: E402
from solver.solve.highs import Model, Progress, Restriction, RunResult, model_of, run  # noqa: E402
from solver.solve.horizon import _priced_block  # noqa: E402
from solver.solve.order_choice import choose_orders, held_block  # noqa: E402

#: Seconds for each LP relaxation [s].
LP_S = 30.0


def held_blocks(size: str, scale: int) -> tuple[HeldBlocks, list[int]]:
    """The case's blocks held at the orders the planner chooses, and the index of the first of
    each group of equal held blocks (the planner plans each group once)."""
    scenario = _scenario(size, scale, 0, True)
    data = build_horizon_data(scenario, cached_tables(scenario.gpus_sold_or_held()))
    hp = build_horizon_program(data)
    priced = [_priced_block(data, b)[0] for b in data.blocks]
    running: dict[tuple[str, int, PoolKey], float] = {}
    for block, program in zip(data.blocks, priced, strict=True):
        relaxed = lp_relaxation(program, "highs", LP_S)
        assert relaxed is not None, "a priced block's LP was not solved"
        for pool, nodes in relaxed[1].items():
            running[(block.scenario, block.period, pool)] = nodes
    chosen, _ = choose_orders(data, running, "highs")
    assert chosen is not None, "no orders chosen"
    joint = model_of(Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                             data.blocks[0].data))
    held = [held_block(data, b, chosen) for b in data.blocks]
    distinct = [i for i, p in enumerate(held) if all(p != held[j] for j in range(i))]
    return HeldBlocks(hp, joint, chosen), distinct


def _improvements(seen: list[Progress], weight: float) -> str:
    out, last = [], None
    for p in seen:
        if p.cost is not None and p.cost != last:
            out.append(f"{p.seconds:.1f} s: {p.cost / weight:,.0f}")
            last = p.cost
    return "; ".join(out)


class BlockSupport(NamedTuple):
    """A held block, its LP, and the planner's first try at it: the MIP on the LP's support."""

    model: Model
    program: Program
    weight: float
    relaxed: RunResult
    keys: list[ReplicaKey]
    columns: npt.NDArray[np.int32]
    """The replica columns of ``keys``, in the model."""
    runs: npt.NDArray[np.bool_]
    """Which of them the LP runs."""
    support: RunResult


def block_support(blocks: HeldBlocks, i: int, seconds: float, gap: float) -> BlockSupport:
    """Held block ``i``'s LP (:data:`LP_S`) and its MIP restricted to the LP's support
    (``seconds``, ``gap``), as the planner tries it first."""
    hb = blocks.block(i)
    model, program = hb.held.model, hb.program
    relaxed = run(model, Deadline(LP_S), LP_S, 0.0, relaxation=True)
    assert relaxed.x is not None and relaxed.objective is not None
    keys = list(program.v.replicas)
    columns = model.columns_named([program.v.replicas[k].name for k in keys])
    runs = relaxed.x[columns] >= LP_EMPTY
    zeros = np.zeros(int((~runs).sum()))
    support = run(model, Deadline(seconds), seconds, gap,
                  restriction=Restriction(columns[~runs], zeros, zeros))
    return BlockSupport(model, program, hb.weight, relaxed, keys, columns, runs, support)


def widened_restriction(bs: BlockSupport) -> Restriction:
    """The planner's widened restriction of a held block: every replica column of the
    configurations (workload, GPU, TP) its LP runs free, the others at zero."""
    used = {(k.workload, k.gpu, k.tp) for k, on in zip(bs.keys, bs.runs, strict=True) if on}
    wide = np.array([(k.workload, k.gpu, k.tp) in used for k in bs.keys], dtype=bool)
    empty = bs.columns[~wide]
    zeros = np.zeros(len(empty))
    return Restriction(empty, zeros, zeros)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--split", default="0.6", help="comma-separated shares of --seconds")
    p.add_argument("--gap", type=float, default=0.02)
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    splits = [float(f) for f in args.split.split(",") if f]
    blocks, distinct = held_blocks(size, scale)
    for i in distinct:
        bs = block_support(blocks, i, args.seconds, args.gap)
        model, program, weight, relaxed, keys, _, runs, support = bs
        assert relaxed.x is not None and relaxed.objective is not None
        print(f"block {i} ({blocks.hp.data.blocks[i].scenario}, period "
              f"{blocks.hp.data.blocks[i].period}): LP {relaxed.objective / weight:,.0f} "
              f"a month; support {int(runs.sum())} of {len(keys)} replica columns, "
              f"{support.status.value}", flush=True)
        if support.x is not None:
            continue  # the planner keeps the support's fleet here
        for share in [1.0, *splits]:
            seen: list[Progress] = []
            began, cpu = time.perf_counter(), time.process_time()
            found = run(model, Deadline(share * args.seconds), share * args.seconds, args.gap,
                        restriction=widened_restriction(bs), on_progress=seen.append)
            if found.x is None or found.objective is None:
                print(f"  {'widened' if share == 1.0 else f'split {share}'}: no fleet")
                continue
            x = np.where(model.integer, np.round(found.x), found.x)
            widened = float(model.cost @ x) / weight
            left_s = args.seconds - (time.perf_counter() - began)
            polished = widened
            if share < 1.0 and left_s > 0:
                y = polish_slices(program, model, x, relaxed.x, Deadline(left_s))
                polished = float(model.cost @ y) / weight
            bound = "none" if found.bound is None else f"{found.bound / weight:,.0f}"
            print(f"  {'widened' if share == 1.0 else f'split {share}'}: "
                  f"{widened:,.0f} (restriction's bound {bound})"
                  f"{'' if share == 1.0 else f', after the pass {polished:,.0f}'}; "
                  f"{time.perf_counter() - began:.1f} s, {time.process_time() - cpu:.1f} CPU-s; "
                  f"fleets at {_improvements(seen, weight)}", flush=True)


if __name__ == "__main__":
    main()
