"""Whether a block planned with the orders held can be taken from the joint program's arrays
instead of being built again: the check for issue 16's proposed next step at medium × 1.

``plan_horizon`` (``_start_from_relaxations``) builds each priced block's program for its LP,
chooses orders, then builds each block again with the nodes those orders hold
(:func:`solver.solve.order_choice.held_block`) for :func:`~solver.solve.block_plans.
lp_support_block`. The joint program already holds every block, so a held block could be the
joint model (:func:`~solver.solve.highs.model_of`, copied once) with every column but the
block's held — the orders at the chosen values, the other blocks at zero — as
:func:`~solver.solve.highs.held_model` restricts it, without the tie rows (``tie_``), and
again with the block's node-loss big-Ms capped by the nodes held (:func:`_tightened`). For
each block this script prints the CPU seconds of the build and copy against each
restriction's, and the LP relaxation of each (a restriction's divided by the block's weight in
the joint objective, probability × months), one after the other in one process, on the
harness's case (``bench_quarterly.quarterly``, shared nodes)::

    .venv/bin/python benchmarks/held_restriction.py [--case medium:1]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from models.capacity import CapacityTable  # noqa: E402
from models.common import COMMITTED_KINDS  # noqa: E402
from models.scenario import Scenario  # noqa: E402
from solver.capacity.table import cached_tables  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.keys import PoolKey  # noqa: E402
from solver.program.periods import (  # noqa: E402
    Block,
    HorizonData,
    HorizonProgram,
    OrderKey,
    build_horizon_data,
    build_horizon_program,
)
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve.block_plans import BLOCK_FAMILIES, lp_relaxation  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.highs import Model, held_model, model_of, run  # noqa: E402
from solver.solve.horizon import _priced_block  # noqa: E402
from solver.solve.order_choice import choose_orders, held_block  # noqa: E402

#: Seconds each LP relaxation may take [s].
LP_S = 20.0


def _without_ties(model: Model) -> Model:
    """``model`` without its tie rows (``tie_``; arrays only, its HiGHS copy left as it is):
    left in with infinite bounds, they link a block's continuous columns to the other blocks'
    of its group, whose rows :func:`held_model` then keeps with their replicas held at zero."""
    kept = np.array([not name.startswith("tie_") for name in model.row_names])
    counts = np.diff(model.starts)[kept]
    entries = np.repeat(kept, np.diff(model.starts))
    starts = np.zeros(len(counts) + 1, dtype=np.int32)
    starts[1:] = np.cumsum(counts)
    return dataclasses.replace(
        model, row_lower=model.row_lower[kept], row_upper=model.row_upper[kept],
        row_names=[n for n, k in zip(model.row_names, kept, strict=True) if k], starts=starts,
        columns=model.columns[entries], values=model.values[entries])


def _held_nodes(data: HorizonData, block: Block, pool: PoolKey,
                orders: Mapping[tuple[str, OrderKey], int]) -> int:
    """Nodes of a committed pool inventory and ``orders`` hold in ``block``'s period (as
    :func:`held_block` stocks the pool)."""
    return data.held.get((pool, block.period), 0) + sum(
        n for (s, k), n in orders.items() if s == block.scenario and k.option.pool == pool
        and block.period in data.held_periods(k))


def _tightened(model: Model, hp: HorizonProgram, i: int,
               orders: Mapping[tuple[str, OrderKey], int]) -> Model:
    """``model`` with block ``i``'s node-loss big-Ms (the binary's coefficient in each
    ``lossx`` row, :func:`~solver.program.families.node_loss`) of its committed pools capped by
    the nodes ``orders`` hold, as :func:`held_block`'s stock caps
    :func:`~solver.program.families.pool_capacity_bound` (none where that leaves at most one
    node: the held block then has no binary and its loss is the pool's capacity)."""
    block = hp.data.blocks[i]
    program = hp.blocks[(block.scenario, block.period)]
    capped_by_ell = np.full(model.columns_count, np.nan)  # the binary's new coefficient
    binaries = np.zeros(model.columns_count, dtype=bool)
    for (_, z, g, kind, _), ell in program.v.loss.items():
        aux = next(a for a in program.v.aux if a.var is ell)
        if kind not in COMMITTED_KINDS or aux.full is None:
            continue
        held = _held_nodes(hp.data, block, PoolKey(z, g, kind), orders)
        bound_rps = min(aux.bound_rps, aux.node_rps * held)
        capped_by_ell[model.index[ell.name]] = max(bound_rps - aux.node_rps, 0.0)
        binaries[model.index[aux.full.name]] = True
    rows_of = np.repeat(np.arange(len(model.row_lower)), np.diff(model.starts))
    # a lossx row: its loss column at +1 and its binary at +(bound - node); lossm's at −node
    row_coef = np.full(len(model.row_lower), np.nan)
    at_ell = (model.values == 1.0) & ~np.isnan(capped_by_ell[model.columns])
    row_coef[rows_of[at_ell]] = capped_by_ell[model.columns[at_ell]]
    lossx = binaries[model.columns] & (model.values > 0) & ~np.isnan(row_coef[rows_of])
    values = model.values.copy()
    values[lossx] = row_coef[rows_of[lossx]]
    return dataclasses.replace(model, values=values)


@dataclasses.dataclass(frozen=True)
class Compared:
    """One block: the LP relaxation of the held block built, of the joint model restricted
    (ties dropped) and of that restriction with its big-Ms capped, per month (``None``: not
    solved), and the CPU seconds of each build or restriction."""

    block: Block
    built_lp: float | None
    restricted_lp: float | None
    capped_lp: float | None
    built_s: float
    restricted_s: float
    capped_s: float
    built_size: tuple[int, int]
    restricted_size: tuple[int, int]


def compare(scenario: Scenario,
            table_for: Callable[[Scenario], CapacityTable] | None = None,
            on_joint: Callable[[float, Model], None] | None = None) -> list[Compared]:
    """Every block of ``scenario`` compared as the module docstring says, one after the other;
    ``on_joint``: told the joint program's CPU seconds (build and copy) and its model."""
    tables = table_for or cached_tables(scenario.gpus_sold_or_held())
    data = build_horizon_data(scenario, tables)
    cpu = time.process_time()
    hp = build_horizon_program(data)
    as_program = Program(hp.prob, Variables(names=NameBook(), cost=hp.prob.objective),
                         data.blocks[0].data)
    joint = model_of(as_program)
    if on_joint is not None:
        on_joint(time.process_time() - cpu, joint)
    priced = [_priced_block(data, b)[0] for b in data.blocks]
    relaxed: dict[int, tuple[float, dict[PoolKey, float]] | None] = {}
    running: dict[tuple[str, int, PoolKey], float] = {}
    for i, (block, program) in enumerate(zip(data.blocks, priced, strict=True)):
        same = next(j for j in range(i + 1) if priced[j] == program)
        if same not in relaxed:
            relaxed[same] = lp_relaxation(program, "highs", LP_S)
        found = relaxed[same]
        assert found is not None, "a priced block's LP was not solved"
        for pool, nodes in found[1].items():
            running[(block.scenario, block.period, pool)] = nodes
    chosen, _ = choose_orders(data, running, "highs")
    assert chosen is not None, "no orders chosen"
    x = np.zeros(joint.columns_count)
    for (s, key), var in hp.orders.items():
        x[joint.index[var.name]] = chosen.get((s, key), 0)
    untied = _without_ties(joint)
    months = {p.index: p.months for p in data.periods}
    probability = {s.name: s.probability for s in data.scenarios}
    out = []
    for i, block in enumerate(data.blocks):
        cpu = time.process_time()
        own = model_of(build_program(held_block(data, block, chosen), families=BLOCK_FAMILIES,
                                     symmetry=False))
        built_s = time.process_time() - cpu
        own_lp = run(own, Deadline(LP_S), LP_S, 0.0, relaxation=True)
        cpu = time.process_time()
        free = np.array([j for j, v in enumerate(joint.variables)
                         if v.name.startswith(f"b{i}_")], dtype=np.int32)
        held = held_model(untied, free, x)
        held_s = time.process_time() - cpu
        cpu = time.process_time()
        tight = held_model(_tightened(untied, hp, i, chosen), free, x)
        tight_s = time.process_time() - cpu
        weight = probability[block.scenario] * months[block.period]
        lps: list[float | None] = []
        for restricted in (held, tight):
            restricted.model.lp.offset_ = 0.0  # the block's own cost, not the orders'
            lp = run(restricted.model, Deadline(LP_S), LP_S, 0.0, relaxation=True)
            lps.append(None if lp.objective is None else lp.objective / weight)
        out.append(Compared(block, own_lp.objective, lps[0], lps[1], built_s, held_s, tight_s,
                            (own.columns_count, len(own.row_lower)),
                            (held.model.columns_count, len(held.model.row_lower))))
    return out


def _money(x: float | None) -> str:
    return "none" if x is None else f"{x:,.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", default="medium:1", help="size:scale (one case)")
    args = parser.parse_args(argv)
    size, scale = parse_cases("", "", args.case)[0]

    def joint_line(seconds: float, joint: Model) -> None:
        print(f"joint program and its copy {seconds:.2f} CPU-s ({joint.columns_count} columns, "
              f"{len(joint.row_lower)} rows)", flush=True)

    for c in compare(_scenario(size, scale, 0, True), on_joint=joint_line):
        print(f"block {c.block.scenario}, period {c.block.period}: built {c.built_s:.2f} CPU-s "
              f"({c.built_size[0]} columns, {c.built_size[1]} rows), LP {_money(c.built_lp)}; "
              f"restricted {c.restricted_s:.2f} CPU-s ({c.restricted_size[0]} columns, "
              f"{c.restricted_size[1]} rows), LP {_money(c.restricted_lp)}; big-Ms capped "
              f"{c.capped_s:.2f} CPU-s, LP {_money(c.capped_lp)}", flush=True)


if __name__ == "__main__":
    main()
