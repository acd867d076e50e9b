"""How fast HiGHS proves the demo's optimum within the gap, by HiGHS option and seed.

The demo's stages find its optimum (138,209.94 USD/month) in a few seconds; the rest of the
plan's solve is the joint solve's tree lifting the bound to within the gap of it
(benchmarks/results/demo-proof.md, "The demo's 1 % proof: cuts at the root alone"). This script
builds the joint program as the pipeline does (``build_program(data, shared_two_nodes=True)``),
solves it to ``--optimum-gap`` for the optimum, then, from that optimum as start, proves ``--gap``
once per option set and seed, printing the branch-and-bound nodes, the CPU seconds of the process
(HiGHS's threads included: the figure the machine's load moves least), the wall seconds and, with
``--curve``, the bound reached by 1, 2, 3, 4, 6, 8, 10, 12 and 15 CPU-s.

Run (from the repository root; minutes)::

    .venv/bin/python benchmarks/demo_proof.py --options default,root-cuts --seeds 0,1,2,3,4,5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from models.loader import load_scenario  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402
from solver.solve.highs import Model, Vector, model_of  # noqa: E402

DEMO = ROOT / "inputs" / "scenarios" / "demo.yaml"
#: HiGHS option sets tried, by name.
OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "root-cuts": {"mip_allow_cut_separation_at_nodes": False},
    "pscost-1": {"mip_pscost_minreliable": 1},
    "root-cuts+pscost-1": {"mip_allow_cut_separation_at_nodes": False,
                           "mip_pscost_minreliable": 1},
    "no-heuristics": {"mip_heuristic_effort": 0.0},
    "no-symmetry": {"mip_detect_symmetry": False},
    "no-restart": {"mip_allow_restart": False},
}
#: CPU seconds at which ``--curve`` reports the bound [s].
MARKS_S = (1, 2, 3, 4, 6, 8, 10, 12, 15)


def joint_model(path: Path) -> Model:
    """The joint program of a scenario as the HiGHS chain builds it."""
    scenario = load_scenario(path)
    data = build_program_data(scenario, build_capacity_table(scenario,
                                                             scenario.gpus_sold_or_held()))
    return model_of(build_program(data, shared_two_nodes=True))


def solve(model: Model, gap: float, seed: int, options: dict[str, Any], threads: int,
          start: Vector | None = None, curve: bool = False) -> dict[str, Any]:
    """One HiGHS run; its status, cost, bound, nodes, CPU and wall seconds (and bound by CPU)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    for name, value in (("threads", threads), ("time_limit", 600.0), ("mip_rel_gap", gap),
                        ("random_seed", seed), *options.items()):
        h.setOptionValue(name, value)
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = list(map(float, start))
        solution.value_valid = True
        h.setSolution(solution)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    seen: dict[int, float] = {}

    def watch(event: Any) -> None:
        cpu = time.process_time() - cpu0
        for mark in MARKS_S:
            if cpu <= mark:
                seen[mark] = float(event.data_out.mip_dual_bound)

    if curve:
        h.cbMipInterrupt.subscribe(watch)
    h.run()
    info = h.getInfo()
    cpu = time.process_time() - cpu0
    return {"status": str(h.getModelStatus()).rsplit(".", 1)[-1],
            "cost": info.objective_function_value, "bound": info.mip_dual_bound,
            "nodes": info.mip_node_count, "cpu_s": cpu, "wall_s": time.perf_counter() - wall0,
            "curve": {m: b for m, b in seen.items() if m < cpu + 1},
            "x": np.array(h.getSolution().col_value)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", type=Path, default=DEMO)
    parser.add_argument("--options", default="default,root-cuts",
                        help=f"comma-separated, of {', '.join(OPTIONS)}")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--gap", type=float, default=0.01)
    parser.add_argument("--optimum-gap", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)  # one count per process (HiGHS)
    parser.add_argument("--curve", action="store_true")
    args = parser.parse_args()
    model = joint_model(args.scenario)
    print(f"joint program: {model.columns_count} columns, {len(model.row_lower)} rows")
    optimum = solve(model, args.optimum_gap, 0, {}, args.threads)
    print(f"optimum: {optimum['cost']:,.2f} bound {optimum['bound']:,.2f} "
          f"({optimum['nodes']} nodes, {optimum['cpu_s']:.1f} CPU-s)", flush=True)
    for name in args.options.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            r = solve(model, args.gap, seed, OPTIONS[name], args.threads, optimum["x"],
                      args.curve)
            curve = " ".join(f"{m}s:{b:,.0f}" for m, b in r["curve"].items())
            print(f"{name} seed {seed}: {r['status']} {r['cost']:,.2f} bound {r['bound']:,.0f} "
                  f"{r['nodes']} nodes {r['cpu_s']:.2f} CPU-s {r['wall_s']:.2f} s {curve}",
                  flush=True)


if __name__ == "__main__":
    main()
