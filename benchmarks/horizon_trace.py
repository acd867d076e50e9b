"""What each stage of a plan over periods did: ``plan_horizon`` on the harness's multi-period
case (``bench_quarterly.quarterly`` on a generated size, shared nodes unless ``--dedicated``)
with its stages traced — each block's LP relaxation, the orders chosen, each block's fleet as
planned (cost a month, bound), the start, the joint solve — with wall seconds from the start.

``--save-table FILE`` writes the case's capacity table (one for every block: the case has no
migration nor measured rows) and stops; ``--table FILE`` plans with a table so saved instead of
building one. Planning one code's table with another code separates what a change to the
capacity model does to a plan from what a change to the solve does
(benchmarks/results/over-periods.md, "Over periods")::

    .venv/bin/python benchmarks/horizon_trace.py --case medium:1 --limit 60 [--table t.json]

``--steps`` also traces the steps inside each block planned in a share of the time: every
restricted HiGHS solve of its LP support (the support itself, then the widened restriction where
the support holds no fleet) and the hour-by-hour pass, each with its wall and CPU seconds, its
status, cost and bound as HiGHS reports them (in the joint objective's units for a held block:
the block's cost a month × its weight, probability × months).

To trace an older tree, copy this file into it and run it there (its ``solver`` is then the
one imported; the first line printed names it).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.bench_plan import parse_cases  # noqa: E402
from benchmarks.bench_quarterly import _scenario  # noqa: E402

_STARTED = [time.perf_counter()]


def _log(text: str) -> None:
    print(f"[{time.perf_counter() - _STARTED[0]:6.1f} s] {text}", flush=True)


def _trace(module: Any, name: str, show: Callable[[Any], str]) -> None:
    """Replace ``module.name`` (where it exists) with a call that logs its seconds and
    ``show(result)``."""
    f = getattr(module, name, None)
    if f is None:
        return

    @functools.wraps(f)
    def traced(*args: Any, **kw: Any) -> Any:
        began = time.perf_counter()
        out = f(*args, **kw)
        _log(f"{name} {time.perf_counter() - began:.1f} s: {show(out)}")
        return out

    setattr(module, name, traced)


def _fleet(out: Any) -> str:
    program, values, outcome = out
    cost = None if values is None or program is None else sum(
        c * values.get(v.name, 0.0) for v, c in program.v.cost.items())
    return (f"{outcome.status.value}, fleet {'none' if cost is None else f'{cost:,.0f}'} a "
            f"month, bound {outcome.report.bound}")


def _money(x: Any) -> str:
    return "none" if x is None else f"{x:,.0f}"


def install() -> None:
    """Trace the stages of the plan over periods of the ``solver`` imported."""
    import solver.solve.block_plans as bp
    import solver.solve.horizon as h

    for name in ("plan_block", "lp_support_block", "direct_block"):
        _trace(bp, name, _fleet)
    _trace(h, "_timed_lp", lambda o: "none" if o is None else _money(
        o if isinstance(o, float) else o[0]))
    _trace(h, "choose_orders", lambda o: f"{'none' if o[0] is None else len(o[0])} orders")
    for name in ("horizon_start", "_start_from_relaxations"):
        _trace(h, name, lambda o: f"start {'none' if o[0] is None else 'found'}, bound "
               f"{_money(o[1])}")
    for name in ("joint_solve", "fallback_outcome", "cold_joint_solve"):
        _trace(h, name, lambda o: f"{getattr(o, 'outcome', o).report.objective}, bound "
               f"{_money(getattr(o, 'outcome', o).report.bound)}")
    try:  # the joint root beside the blocks, where the solver has one: its bound as collected
        import solver.solve.root_beside as rb
    except ImportError:
        return
    _trace(rb.RootBeside, "bound", lambda o: f"joint root beside the blocks: bound {_money(o)}")


def install_steps() -> None:
    """Trace the restricted solves and the hour-by-hour pass inside each block's plan."""
    import solver.solve.block_plans as bp

    def timed(name: str, show: Callable[[tuple[Any, ...], Any], str]) -> None:
        f = getattr(bp, name, None)
        if f is None:
            return

        @functools.wraps(f)
        def traced(*args: Any, **kw: Any) -> Any:
            began, cpu = time.perf_counter(), time.process_time()
            out = f(*args, **kw)
            _log(f"  {name} {time.perf_counter() - began:.1f} s, "
                 f"{time.process_time() - cpu:.1f} CPU-s: {show(args, out)}")
            return out

        setattr(bp, name, traced)

    timed("_restricted", lambda a, r: f"{r.status.value}, cost {_money(r.objective)}, bound "
          f"{_money(r.bound)}, {len(a[4])} columns fixed to zero, limit {a[2]:.1f} s")
    timed("polish_slices", lambda a, x: f"{float(a[1].cost @ a[2]):,.0f} -> "
          f"{float(a[1].cost @ x):,.0f} in a clock of {a[4].limit_s:.1f} s")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--case", default="medium:1")
    p.add_argument("--limit", type=float, default=60.0)
    p.add_argument("--dedicated", dest="share_nodes", action="store_false")
    p.add_argument("--table", type=Path, default=None)
    p.add_argument("--save-table", type=Path, default=None)
    p.add_argument("--steps", action="store_true",
                   help="also trace each block's restricted solves and hour-by-hour pass")
    args = p.parse_args(argv)
    (size, scale), = parse_cases("", "", args.case)
    import solver.solve.horizon as h
    from models.capacity import CapacityTable

    sc = _scenario(size, scale, 0, args.share_nodes)
    print(f"{h.__file__}; {time.strftime('%H:%M', time.gmtime())} UTC, load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.save_table is not None:
        from solver.capacity.table import build_capacity_table
        from solver.program.periods import build_horizon_data

        sold = getattr(sc, "gpus_sold_or_held", None)  # older trees build every GPU's rows
        data = build_horizon_data(sc, lambda s: build_capacity_table(s, sold()) if sold
                                  else build_capacity_table(s))
        tables = {b.table.model_dump_json() for b in data.blocks}
        assert len(tables) == 1, "one table for every block"
        args.save_table.write_text(tables.pop())
        return
    kw: dict[str, Any] = {}
    if args.table is not None:
        table = CapacityTable.model_validate_json(args.table.read_text())
        kw["table_for"] = lambda _: table
        print(f"capacity table from {args.table}", flush=True)
    install()
    if args.steps:
        install_steps()
    _STARTED[0] = time.perf_counter()
    cpu = time.process_time()
    plan = h.plan_horizon(sc, time_limit_s=args.limit, **kw)
    _log(f"done, CPU {time.process_time() - cpu:.1f} s, load {os.getloadavg()[0]:.1f}")
    r = plan.solver
    print(f"{plan.status.value}: expected cost {_money(r.objective)}, bound {_money(r.bound)}, "
          f"gap {'none' if r.gap is None else f'{r.gap:.2%}'}")


if __name__ == "__main__":
    main()
