"""A plan over periods as the harness runs it, with its chosen orders nudged (issue 16: does a
120-s plan gain from more of its largest order, as the blocks planned deeper do?).

``bench_quarterly.py``'s plan run (:func:`~benchmarks.bench_quarterly.run_child`: the case built
and timed, then ``plan_horizon`` at ``--time-limit``), in this one process, except that every
order choice the plan makes (:func:`~solver.solve.order_choice.choose_orders`) is followed by
``--nudge`` nodes more (fewer, negative) of the order key that holds the most nodes, in every
scenario that orders it (:func:`benchmarks.horizon_optimum.nudged`). ``--nudge 0``: the
planner's own orders, the same run as the harness's. Each run a fresh process, interleaved::

    nice -n 0 .venv/bin/python benchmarks/nudged_plan.py --case medium:25 --time-limit 120 \\
        --nudge 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import run_child  # noqa: E402
from benchmarks.horizon_optimum import nudged  # noqa: E402
from solver.solve import horizon  # noqa: E402
from solver.solve.order_nudge import largest_order  # noqa: E402


def nudging(nodes: int) -> Any:
    """A stand-in for ``choose_orders``: its choice with ``nodes`` more of its largest order."""
    choose = horizon.choose_orders

    def chosen(*args: Any, **kwargs: Any) -> Any:
        orders, timed = choose(*args, **kwargs)
        if orders:
            key = largest_order(orders)
            print(f"chosen: {sum(orders.values())} nodes; largest {key.option.pool.zone} "
                  f"{key.option.pool.gpu} {key.option.pool.purchase.value} arrival "
                  f"{key.arrival}: " + ", ".join(f"{s} {n}" for (s, k), n in orders.items()
                                                  if k == key) + f"; nudged {nodes:+d}",
                  flush=True)
            orders = nudged(orders, nodes)
        return orders, timed
    return chosen


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:25")
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--nudge", type=int, default=0)
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    horizon.choose_orders = nudging(args.nudge)  # type: ignore[assignment]
    print(f"nudge {args.nudge:+d}; {time.strftime('%H:%M:%S', time.gmtime())} UTC, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    r = run_child(size, scale, 0, args.time_limit, 0.01)
    gap = "—" if r.gap is None else f"{100 * r.gap:.2f} %"
    print(f"nudge {args.nudge:+d}: {r.status}, expected cost {r.expected_cost or 0:,.0f}, "
          f"bound {r.bound or 0:,.0f}, gap {gap}; build {r.build_s:.1f} s, wall {r.wall_s:.1f} s,"
          f" CPU {r.cpu_s:.1f} s; {time.strftime('%H:%M:%S', time.gmtime())} UTC, load "
          f"{os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
