"""Blocks planned with the orders held, taken from the joint program's arrays instead of being
built again (issue 16).

:func:`~solver.solve.horizon._start_from_relaxations` chooses orders, then plans every block with
the nodes those orders hold (:func:`~solver.solve.order_choice.held_block`). Building each such
block (PuLP, then its copy into HiGHS) took about 2 of the ~10.6 CPU-s a medium-size plan over
periods spends before any block's MIP runs (benchmarks/results/over-periods.md, "Over periods":
"The held blocks from the joint program's arrays"). The joint program already holds every block:
its arrays (:func:`~solver.solve.highs.model_of`, copied once, and the same copy the joint solve
uses) with every column but block ``i``'s held — the orders at the chosen values, every other block
at zero (:func:`~solver.solve.highs.held_model`) — are the held block, exactly, once

- the tie rows (``tie_…``, interchangeable blocks running one fleet) are left out: with them the
  restriction takes in the tied blocks' rows with their replicas held at zero, and a tied
  first-quarter block had no LP (:func:`without_ties`);
- each committed pool's node-loss big-M (the binary's coefficient in its ``lossx`` row) is capped
  by the nodes held, as the held block's stock caps
  :func:`~solver.program.families.pool_capacity_bound`: the joint program's blocks carry the
  pool's whole stock, and medium × 1's restricted LPs were 5.5–23.9 % below the held blocks'
  (:func:`tightened`).

The restriction's columns keep the joint program's names (``b{i}_…``), and so do the fleets planned
on it; :class:`HeldBlock` carries the block's program inside the joint one (the same names), which
reads them (:func:`~solver.solve.block_plans.replicas_of` and the like).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from models.common import COMMITTED_KINDS
from solver.program.keys import PoolKey
from solver.program.periods import Block, HorizonData, HorizonProgram, OrderKey
from solver.program.variables import Program
from solver.solve.highs import Held, Model, held_model


def without_ties(model: Model) -> Model:
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


def held_nodes(data: HorizonData, block: Block, pool: PoolKey,
               orders: Mapping[tuple[str, OrderKey], int]) -> int:
    """Nodes of a committed pool inventory and ``orders`` hold in ``block``'s period (as
    :func:`~solver.solve.order_choice.held_block` stocks the pool)."""
    return data.held.get((pool, block.period), 0) + sum(
        n for (s, k), n in orders.items() if s == block.scenario and k.option.pool == pool
        and block.period in data.held_periods(k))


def tightened(model: Model, hp: HorizonProgram, i: int,
              orders: Mapping[tuple[str, OrderKey], int]) -> Model:
    """``model`` with block ``i``'s node-loss big-Ms (the binary's coefficient in each
    ``lossx`` row, :func:`~solver.program.families.node_loss`) of its committed pools capped by
    the nodes ``orders`` hold, as :func:`~solver.solve.order_choice.held_block`'s stock caps
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
        held = held_nodes(hp.data, block, PoolKey(z, g, kind), orders)
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


@dataclass
class HeldBlock:
    """Block ``index`` of the joint program with the orders held, as a model of its own."""

    index: int
    program: Program
    """The block's program inside the joint one: its variables carry the joint names
    (``b{index}_…``), as the model's columns do."""
    held: Held
    """The restriction (:func:`held_model`); its cost is the block's per month times
    ``weight``, and its objective's offset is zero (a gap is one of the block's cost)."""
    weight: float
    """The block's weight in the joint objective: its demand scenario's probability × its
    period's months [month]."""

    @property
    def prefix(self) -> str:
        """The joint program's prefix of the block's names."""
        return f"b{self.index}_"


class HeldBlocks:
    """Every block of the joint program with ``orders`` held, each restricted when first asked
    for (:meth:`block`): the joint program's arrays without their tie rows, made once."""

    def __init__(self, hp: HorizonProgram, joint: Model,
                 orders: Mapping[tuple[str, OrderKey], int]) -> None:
        if hp.worst is not None:
            raise ValueError("held blocks from the joint arrays need the expected-cost "
                             "objective (with --robust the blocks' columns cost nothing)")
        self.hp = hp
        self.orders = dict(orders)
        self.untied = without_ties(joint)
        self.x = np.zeros(joint.columns_count)
        for (s, key), var in hp.orders.items():
            self.x[joint.index[var.name]] = self.orders.get((s, key), 0)
        names = [v.name for v in joint.variables]
        self._columns = {i: np.array([j for j, n in enumerate(names) if n.startswith(f"b{i}_")],
                                     dtype=np.int32) for i in range(len(hp.data.blocks))}
        self._made: dict[int, HeldBlock] = {}

    def program(self, i: int) -> Program:
        """Block ``i``'s program inside the joint one (joint names)."""
        block = self.hp.data.blocks[i]
        return self.hp.blocks[(block.scenario, block.period)]

    def block(self, i: int) -> HeldBlock:
        """Block ``i`` restricted (made once)."""
        if i not in self._made:
            held = held_model(tightened(self.untied, self.hp, i, self.orders), self._columns[i],
                              self.x)
            held.model.lp.offset_ = 0.0  # the block's own cost, not the orders'
            data = self.hp.data
            block = data.blocks[i]
            probability = next(s.probability for s in data.scenarios if s.name == block.scenario)
            self._made[i] = HeldBlock(i, self.program(i), held,
                                      probability * data.periods[block.period].months)
        return self._made[i]
