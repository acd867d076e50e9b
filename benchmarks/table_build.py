"""CPU and wall seconds of one capacity table's build, and the table as JSON to compare trees.

    PYTHONPATH=<tree> nice -n 19 .venv/bin/python benchmarks/table_build.py SCENARIO OUT LABEL
    PYTHONPATH=<tree> nice -n 19 .venv/bin/python benchmarks/table_build.py SCENARIO OUT LABEL all

Reads SCENARIO as ``fleetplan plan`` does (``solver.cli.common.load``: a linked trace's burst
block and replayed window included), builds ``build_capacity_table(scenario,
scenario.gpus_sold_or_held())`` (the GPUs a plan places; with ``all``, every GPU of the
catalog, as ``fleetplan capacity`` does), writes the table as JSON to OUT and prints ``LABEL
cpu … s wall … s rows …``; run it with main's tree and a branch's on ``PYTHONPATH`` in turn
and ``cmp`` the two JSON files: the same table byte for byte (benchmarks/results/trust.md,
"Session 23", "Session 24").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from solver.capacity.table import build_capacity_table
from solver.cli.common import load


def main() -> None:
    """Build, time and write the table of ``sys.argv[1]`` to ``sys.argv[2]``."""
    scenario, out, label = sys.argv[1], sys.argv[2], sys.argv[3]
    every_gpu = sys.argv[4:] == ["all"]
    sc = load(Path(scenario))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    table = build_capacity_table(sc, None if every_gpu else sc.gpus_sold_or_held())
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(table.model_dump(mode="json"), sort_keys=True))
    print(f"{label} cpu {cpu:.2f} s wall {wall:.2f} s rows {len(table.rows)}")


if __name__ == "__main__":
    main()
