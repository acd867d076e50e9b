"""A plan over periods with the orders of another fleet held, against the planner's own order
choice (issue 16: does the plan's gap sit in its orders or in its blocks' fleets?).

``plan_horizon`` as ``fleetplan plan`` plans it, at ``--limit``, except that where the planner
chooses its orders (:func:`~solver.solve.order_choice.choose_orders`, after the priced blocks'
LPs) it takes those of ``--orders`` (a JSON of the joint program's values by column name, as
``benchmarks/horizon_long.py --save`` writes: the ``u_…`` columns are the orders); the blocks
are then planned with what those hold, in the same budget. Without ``--orders``: the planner's
own choice. Each run is meant to be a fresh process, interleaved with the other::

    nice -n 19 .venv/bin/python benchmarks/held_orders.py --case medium:25 --limit 120 \\
        [--orders fleet.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402
from benchmarks.horizon_gap import split  # noqa: E402
from benchmarks.horizon_long import plan_and_program  # noqa: E402
from solver.program.periods import HorizonData, OrderKey, build_horizon_program  # noqa: E402
from solver.solve import horizon  # noqa: E402


def orders_of(data: HorizonData, values: dict[str, float]) -> dict[tuple[str, OrderKey], int]:
    """The orders among ``values`` (the joint program's values by column name), keyed as
    ``choose_orders`` keys them; the joint program is built again from ``data`` to name them."""
    hp = build_horizon_program(data)
    return {(s, key): round(values[var.name]) for (s, key), var in hp.orders.items()
            if round(values.get(var.name, 0.0)) > 0}


def holding(values: dict[str, float]) -> Any:
    """A stand-in for ``choose_orders`` that returns the orders of ``values``."""
    def chosen(data: HorizonData, *_: Any, **__: Any
               ) -> tuple[dict[tuple[str, OrderKey], int], bool]:
        return orders_of(data, values), False
    return chosen


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--limit", type=float, default=120.0)
    p.add_argument("--orders", type=Path)
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    sc = _scenario(size, scale, 0, True)
    if args.orders is not None:
        horizon.choose_orders = holding(json.loads(args.orders.read_text()))  # type: ignore
    print(f"{'held' if args.orders else 'own'} orders; "
          f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.1f}",
          flush=True)
    hp, values, _, _ = plan_and_program(sc, args.limit)
    parts = split(hp, values)
    print(" ".join(f"{k} {v:,.0f};" for k, v in parts.items()))


if __name__ == "__main__":
    main()
