"""`fleetplan plan SCENARIO --time-limit T --no-replay --quiet --json --out OUT`, with each pass
of ``plan_blocks`` logged (its budget, when each block began, how many it planned): one JSON
line on stdout per run, for the code on ``PYTHONPATH`` (main's export or the branch's).
The second-pass measurements of benchmarks/results/over-periods.md ("Over periods", the second
pass cut at its budget) came from it.

Usage: ``python benchmarks/horizon_passes.py SCENARIO T OUT LABEL``"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from typing import Any

import solver.cli as cli
import solver.solve.horizon as horizon
from solver.cli import main

REAL = horizon.plan_blocks


def _logged(passes: list[dict[str, Any]], t0: float) -> Any:
    """``plan_blocks`` as the plan calls it, each pass appended to ``passes``."""

    def logged(data: Any, programs: Any, solver: str, budget_s: float, gap: float,
               within: bool = False, deadline: Any = None, on_block: Any = None,
               **kw: Any) -> Any:
        began = time.perf_counter()
        cpu = time.process_time()
        starts: list[float] = []

        def told(what: str) -> None:
            starts.append(round(time.perf_counter() - began, 3))
            if on_block is not None:
                on_block(what)

        plans = REAL(data, programs, solver, budget_s, gap, within=within, deadline=deadline,
                     on_block=told, **kw)
        passes.append({"within": within, "at_s": round(began - t0, 2),
                       "budget_s": round(budget_s, 2),
                       "took_s": round(time.perf_counter() - began, 2),
                       "cpu_s": round(time.process_time() - cpu, 2),
                       "block_starts_s": starts,
                       "planned": sum(o.has_solution for o in plans.outcomes),
                       "blocks": len(plans.outcomes), "complete": plans.complete})
        return plans

    return logged


def run(path: str, limit: str, out: str, label: str) -> dict[str, Any]:
    """One plan, its cost, gap, status, wall time, stages and passes."""
    t0 = time.perf_counter()
    passes: list[dict[str, Any]] = []
    horizon.plan_blocks = _logged(passes, t0)  # type: ignore[assignment]
    sys.argv = ["fleetplan", "plan", path, "--time-limit", limit, "--no-replay", "--quiet",
                "--json", "--out", out]
    # the CLI ends its own process with os._exit after a plan (cli.quick_exit): this line
    # would never be printed; the SystemExit it re-raises instead is suppressed below
    cli.quick_exit = lambda code: None  # type: ignore[assignment]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        main()
    wall = time.perf_counter() - t0
    plan = json.loads(buf.getvalue())
    s = plan.get("solver", {})  # none where no plan was written (the error's JSON)
    return {"label": label, "cost": s.get("objective"), "gap": s.get("gap"),
            "status": plan.get("status", "no plan"), "wall_s": round(wall, 1),
            "stages": {x["name"]: round(x["seconds"], 2) for x in s.get("stages", [])},
            "passes": passes}


if __name__ == "__main__":
    print(json.dumps(run(*sys.argv[1:5])))
