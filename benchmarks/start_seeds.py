"""The joint solve of one harness case from different starts and HiGHS seeds: whether a start
proves the gap, in how many CPU seconds (issue 15, benchmarks/results/scale.md "Run I").

The case's program is built as the harness builds it (seed 0 of benchmarks/generate.py, shared
nodes), the plan's stages before the joint solve run as at ×25 (``greedy``, ``lp``,
``lp-support``, ``hours``), and then HiGHS solves the whole program (the plan's options: two
threads, the gap) once per (start, HiGHS ``random_seed``), stopped after ``--cpu`` seconds of
the process's CPU time (not wall time: the machine is shared). Starts:

- ``none``: no start (the harness's cold solve, from the arrays rather than MPS);
- ``greedy-early``: the greedy fleet, given before the root (the plan where ``many_replicas``
  is false);
- ``hours-late``: the ``hours`` stage's fleet after the root's first cut rounds (the plan at
  ×25, :class:`solver.solve.highs._LateStart`);
- ``greedy-late``, ``hours-early``, ``support-late``: the other combinations.

Run (from the repository root)::

    PYTHONPATH=. .venv/bin/python benchmarks/start_seeds.py --case small:25 \
        --starts hours-late,greedy-early --seeds 0,1,2 --cpu 60
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

#: CPU seconds at which the bound and the best cost are noted [s].
MARKS_CPU_S = (5, 10, 20, 30, 45, 60, 80)


def main(argv: list[str] | None = None) -> None:
    import highspy

    from benchmarks.generate import generate_scenario
    from solver.capacity.table import build_capacity_table
    from solver.program.build import build_program
    from solver.program.data import build_program_data
    from solver.solve.clock import Deadline
    from solver.solve.highs import hand_start, model_of
    from solver.solve.incumbent import Incumbent
    from solver.solve.stages import Context, Stage, hours, lp, lp_support, run_stages
    from solver.solve.strategy import GREEDY, HOURS_SHARE

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="small:25", help="size:scale")
    p.add_argument("--starts", default="hours-late,greedy-early")
    p.add_argument("--seeds", default="0", help="HiGHS random_seed values, comma-separated")
    p.add_argument("--cpu", type=float, default=60.0, help="CPU seconds per solve")
    p.add_argument("--gap", type=float, default=0.01)
    args = p.parse_args(argv)
    size, scale = args.case.split(":")
    scenario = generate_scenario(size, seed=0, scale=int(scale))
    data = build_program_data(scenario, build_capacity_table(scenario,
                                                             scenario.gpus_sold_or_held()))
    program = build_program(data)
    model = model_of(program)
    deadline = Deadline(60.0)
    incumbent = Incumbent(model, deadline, args.gap)
    ctx = Context(program, model, incumbent, deadline, args.gap)
    fleets: dict[str, Any] = {"none": None}
    for stage, name in ((GREEDY, "greedy"), (Stage("lp", 0.5, lp), None),
                        (Stage("lp-support", 0.25, lp_support), "support"),
                        (Stage("hours", HOURS_SHARE, hours), "hours")):
        run_stages(ctx, (stage,))
        if name is not None:
            fleets[name] = incumbent.fleet()[0]
            print(f"{args.case} {name}: {incumbent.fleet()[1]:,.0f}", flush=True)
    for seed in (int(s) for s in args.seeds.split(",")):
        for start in args.starts.split(","):
            which, when = start.split("-") if "-" in start else (start, "early")
            x = fleets[which]
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.passModel(model.lp)
            for option, value in (("threads", 2), ("time_limit", 10 * args.cpu),
                                  ("mip_rel_gap", args.gap), ("random_seed", seed)):
                h.setOptionValue(option, value)
            if x is not None:
                hand_start(h, x, after_cuts=when == "late")
            cpu0 = time.process_time()
            marks: dict[int, tuple[int, int | None]] = {}

            def watch(event: Any, cpu0: float = cpu0,
                      marks: dict[int, tuple[int, int | None]] = marks) -> None:
                cpu_s = time.process_time() - cpu0
                bound, best = event.data_out.mip_dual_bound, event.data_out.mip_primal_bound
                if abs(bound) < 1e300:
                    for t in MARKS_CPU_S:
                        if cpu_s >= t and t not in marks:
                            marks[t] = (round(bound), round(best) if abs(best) < 1e300 else None)
                if cpu_s > args.cpu:
                    event.interrupt()

            h.cbMipInterrupt.subscribe(watch)
            h.run()
            info = h.getInfo()
            proven = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
            load = Path("/proc/loadavg").read_text().split()[0]
            print(f"{start:13s} seed {seed} load {load} "
                  f"{'proven' if proven else 'stopped'} {time.process_time() - cpu0:.1f} CPU-s "
                  f"cost {info.objective_function_value:,.0f} bound {info.mip_dual_bound:,.0f} "
                  f"gap {100 * info.mip_gap:.2f}% nodes {info.mip_node_count} "
                  f"(bound, cost) by CPU-s {marks}", flush=True)


if __name__ == "__main__":
    main()
