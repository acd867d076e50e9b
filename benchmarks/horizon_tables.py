"""What a plan over periods spends building its capacity tables: the block scenarios of
``build_horizon_data`` (every demand scenario × period), their tables built as ``plan`` builds
them (:func:`solver.capacity.table.cached_tables` of the GPUs sold or held), with the wall
and CPU seconds of the whole build and of each workload's configurations::

    nice -n 19 .venv/bin/python benchmarks/horizon_tables.py SCENARIO.yaml [--save FILE]

``--save FILE`` writes every block's table (JSON, in block order) to compare two trees' tables
bit for bit (``cmp``). To time an older tree, run this file with that tree first on
``PYTHONPATH`` (the first line printed names the ``solver`` imported).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # benchmarks/ is not an installed package

import solver  # noqa: E402
import solver.capacity.table as table_module  # noqa: E402
from models.capacity import CapacityRow, RejectedConfig  # noqa: E402
from models.catalog import GpuType  # noqa: E402
from models.horizon import DemandScenario  # noqa: E402
from models.scenario import Scenario  # noqa: E402
from models.workload import Workload  # noqa: E402
from solver.cli.common import load  # noqa: E402
from solver.program.orders import plan_date_of  # noqa: E402
from solver.program.periods import _periods, block_scenario  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--save", type=Path, default=None)
    args = parser.parse_args()
    print(f"solver from {Path(solver.__file__).parent}")
    sc = load(args.scenario)  # as `plan` loads it: bursts and windows from linked traces
    per_workload: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    row = table_module.configuration_row

    def timed_row(scenario: Scenario, workload: Workload, gpu: GpuType, tp: int
                  ) -> CapacityRow | RejectedConfig:
        began = time.perf_counter()
        out = row(scenario, workload, gpu, tp)
        per_workload[workload.name] += time.perf_counter() - began
        calls[workload.name] += 1
        return out

    table_module.configuration_row = timed_row
    demands = sc.demand_scenarios or (DemandScenario(name="base", probability=1.0),)
    periods = _periods(sc, plan_date_of(sc))
    began, cpu = time.perf_counter(), time.process_time()
    table_for = table_module.cached_tables(sc.gpus_sold_or_held())
    tables = [table_for(block_scenario(sc, d, p, dated=sc.horizon is not None))
              for d in demands for p in periods]
    built_s, cpu_s = time.perf_counter() - began, time.process_time() - cpu
    print(f"{len(tables)} blocks, {len({id(t) for t in tables})} distinct tables, "
          f"built in {built_s:.2f} s wall, {cpu_s:.2f} s CPU")
    for name in per_workload:
        print(f"  {name}: {calls[name]} configurations, {per_workload[name]:.2f} s")
    if args.save is not None:
        args.save.write_text(json.dumps([t.model_dump(mode="json") for t in tables]))
        print(f"wrote {args.save}")


if __name__ == "__main__":
    main()
