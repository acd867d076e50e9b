"""What writing a plan's files costs: CPU and wall seconds of importing the writers' libraries
(matplotlib, openpyxl, the output modules) and of ``write_plan_outputs`` after them, for a
scenario and a ``plan.json`` an earlier ``fleetplan plan`` wrote for it (the constants of
``solver/outputs/plan_dir.py``: ``WRITE_CPU_S``, ``WRITE_CPU_PER_WORKLOAD_S``).

    .venv/bin/python benchmarks/write_cost.py SCENARIO|demo PLAN.json [...pairs]

One fresh process per pair, so every pair pays the imports; CPU seconds from
``time.process_time`` (the main thread alone works), beside the wall seconds and the load.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys, tempfile, time
from pathlib import Path
from models.plan import Plan
from solver.cli.common import load
from solver.capacity.table import build_capacity_table
sc = load(None if sys.argv[1] == "demo" else Path(sys.argv[1]))
plan = Plan.model_validate_json(Path(sys.argv[2]).read_text())
table = build_capacity_table(sc, sc.gpus_sold_or_held())
c0, w0 = time.process_time(), time.perf_counter()
import matplotlib.figure, matplotlib.backends.backend_agg, openpyxl
from solver.outputs import charts, contract, plan_dir, report, workbook
ci, wi = time.process_time() - c0, time.perf_counter() - w0
c0, w0 = time.process_time(), time.perf_counter()
plan_dir.write_plan_outputs(plan, sc, Path(tempfile.mkdtemp()), sc, table)
cw, ww = time.process_time() - c0, time.perf_counter() - w0
print(f"| {sc.name} | {len(sc.workloads)} | {len(plan.allocations)} | {ci:.2f} | {wi:.2f} | "
      f"{cw:.2f} | {ww:.2f} |")
"""


def main() -> None:
    args = sys.argv[1:]
    if not args or len(args) % 2:
        raise SystemExit(__doc__)
    print("| scenario | workloads | allocations | import CPU s | import wall s | write CPU s | "
          "write wall s | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for scenario, plan in zip(args[::2], args[1::2], strict=True):
        load = os.getloadavg()[0]
        done = subprocess.run([sys.executable, "-c", CHILD, scenario, plan], check=True,
                              capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[1])
        print(done.stdout.strip() + f" {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
