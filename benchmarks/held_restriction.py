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
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from models.capacity import CapacityTable  # noqa: E402
from models.scenario import Scenario  # noqa: E402
from solver.capacity.table import cached_tables  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.keys import PoolKey  # noqa: E402
from solver.program.periods import (  # noqa: E402
    Block,
    build_horizon_data,
    build_horizon_program,
)
from solver.program.variables import NameBook, Program, Variables  # noqa: E402
from solver.solve.block_plans import BLOCK_FAMILIES, lp_relaxation  # noqa: E402
from solver.solve.clock import Deadline  # noqa: E402
from solver.solve.held_blocks import tightened, without_ties  # noqa: E402
from solver.solve.highs import Model, held_model, model_of, run  # noqa: E402
from solver.solve.horizon import _priced_block  # noqa: E402
from solver.solve.order_choice import choose_orders, held_block  # noqa: E402

#: Seconds each LP relaxation may take [s].
LP_S = 20.0


#: The restriction's two steps, as the planner takes them (:mod:`solver.solve.held_blocks`).
_without_ties = without_ties
_tightened = tightened


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
