"""Where the demo's LP relaxation loses against its optimum, and what the cuts do to it.

The demo (``inputs/scenarios/demo.yaml``, shared nodes, three slices) is a program of ~700
columns whose LP relaxation is far below its optimum; ``fleetplan plan`` spends most of its
solve in the branch and bound that closes that gap. For a scenario (the demo unless given),
each measurement one after the other in this process, HiGHS on ``--threads`` threads:

1. ``integrality``: the optimum (solved to 0.1 %), then the program with integrality dropped
   on one family of integer columns (reserved replicas, elastic replicas, reserved nodes,
   elastic nodes, node-loss binaries) and, apart, kept on that family alone: which integrality
   carries the gap;
2. ``cuts``: the LP relaxation and the root bound (HiGHS after its root cut rounds, one
   branch-and-bound node) of the program as built, and with each family of valid cuts of
   :mod:`solver.program.cuts` left out (zone symmetry, node cover rows, two-replicas cut), and
   with the two-nodes cut (:func:`~solver.program.cuts.add_two_nodes_cut`; on shared nodes
   only where ``build_program(shared_two_nodes=True)`` asks, as the joint solve does) added on
   shared nodes — valid there too (docs/program.md); ``build_program`` here is called without
   that option, so "as built" is the grouped stages' kind of program;
3. ``search``: the node count and CPU seconds of HiGHS proving ``--gap`` on the one-group
   program (the pipeline's ``grouped-1`` stage, no start) and on the whole program from its
   optimum (the joint solve, whose start is near it), over ``--seeds``, as built and with the
   two-nodes cut on shared nodes: a cut that raises the bound can still lengthen the search.

Run (from the repository root; a few minutes)::

    .venv/bin/python benchmarks/demo_gap.py
    .venv/bin/python benchmarks/demo_gap.py --only search --seeds 0,1,2,3
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

import solver.program.build as build_module  # noqa: E402
import solver.program.cuts as cuts_module  # noqa: E402
from models.loader import load_scenario  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import ProgramData, build_program_data  # noqa: E402
from solver.solve.aggregate import demand_groups, restrict_to_groups  # noqa: E402
from solver.solve.highs import Model, Vector, model_of  # noqa: E402

DEMO = ROOT / "inputs" / "scenarios" / "demo.yaml"


def _highs(model: Model, threads: int, seed: int = 0, limit_s: float = 300.0, gap: float = 1e-3,
           relax: bool = False, integer: set[int] | None = None, start: Vector | None = None,
           nodes: int | None = None) -> Any:
    """One HiGHS run of ``model`` (integrality on ``integer`` only, when given)."""
    import highspy

    lp = model.lp
    if integer is not None:
        lp.integrality_ = [highspy.HighsVarType.kInteger if model.integer[j] and j in integer
                           else highspy.HighsVarType.kContinuous
                           for j in range(model.columns_count)]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    # one thread count per process: HiGHS keeps one scheduler and a run asking for another
    # ends 'Not Set'
    for option, value in (("threads", threads), ("time_limit", float(limit_s)),
                          ("mip_rel_gap", gap), ("random_seed", seed),
                          ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    if nodes is not None:
        h.setOptionValue("mip_max_nodes", nodes)
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = list(map(float, start))
        solution.value_valid = True
        h.setSolution(solution)
    h.run()
    if integer is not None:
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.integer]
    return h


def _cols(model: Model, variables: Any) -> set[int]:
    return {model.index[v.name] for v in variables}


def integrality(data: ProgramData, threads: int, limit_s: float) -> None:
    program = build_program(data)
    model = model_of(program)
    v = program.v
    lp = _highs(model, threads, relax=True).getInfo().objective_function_value
    started = time.process_time()
    info = _highs(model, threads, limit_s=limit_s).getInfo()
    print("| program | cost | bound | search |\n|---|---:|---:|---|")
    print(f"| LP relaxation | {lp:,.0f} | | |\n| optimum (0.1 %) | "
          f"{info.objective_function_value:,.0f} | {info.mip_dual_bound:,.0f} | "
          f"{info.mip_node_count} nodes, {time.process_time() - started:.1f} CPU s |")
    every = set(np.flatnonzero(model.integer).tolist())
    families = {
        "reserved replicas": _cols(model, (x for k, x in v.replicas.items() if k.slice is None)),
        "elastic replicas": _cols(model, (x for k, x in v.replicas.items()
                                          if k.slice is not None)),
        "reserved nodes": _cols(model, (y for k, y in v.nodes.items() if k.slice is None)),
        "elastic nodes": _cols(model, (y for k, y in v.nodes.items() if k.slice is not None)),
        "node-loss binaries": _cols(model, v.full.values()),
    }
    print("| integer columns | count | continuous on it, the rest integer | integer on it "
          "alone |\n|---|---:|---:|---:|")
    for name, cols in families.items():
        dropped = _highs(model, threads, limit_s=limit_s, integer=every - cols).getInfo()
        alone = _highs(model, threads, limit_s=limit_s, integer=cols).getInfo()
        print(f"| {name} | {len(cols)} | {dropped.mip_dual_bound:,.0f} | "
              f"{alone.mip_dual_bound:,.0f} |", flush=True)


def _with_two_nodes(prob: Any, data: ProgramData, v: Any, w: str, s: str, *args: Any) -> None:
    """The two-replicas cut and, with shared nodes too, the two-nodes cut (the joint solve's
    program has it: ``build_program(shared_two_nodes=True)``)."""
    ORIGINAL["add_two_replicas_cut"](prob, data, v, w, s, *args)
    cuts_module.add_two_nodes_cut(prob, data, v, w, s, *args)


ORIGINAL: dict[str, Callable[..., None]] = {
    "add_two_replicas_cut": cuts_module.add_two_replicas_cut,
}

#: Changes of the program's cuts: (module, function name, replacement).
CHANGED: dict[str, tuple[Any, str, Callable[..., None]]] = {
    "without zone symmetry": (build_module, "add_zone_symmetry", lambda *args: None),
    "without node cover rows (and the cuts they call)": (
        build_module, "add_node_cover_cuts", lambda *args, **kwargs: None),
    "without two-replicas cut": (cuts_module, "add_two_replicas_cut", lambda *args: None),
    "with the two-nodes cut on shared nodes": (cuts_module, "add_two_replicas_cut",
                                               _with_two_nodes),
}
TWO_NODES = "with the two-nodes cut on shared nodes"


@contextmanager
def _changed(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    module, attribute, replacement = CHANGED[name]
    kept = getattr(module, attribute)
    setattr(module, attribute, replacement)
    try:
        yield
    finally:
        setattr(module, attribute, kept)


def cuts(data: ProgramData, threads: int) -> None:
    print("| program | rows | LP relaxation | root bound |\n|---|---:|---:|---:|")
    for name in (None, *CHANGED):
        with _changed(name):
            model = model_of(build_program(data))
        lp = _highs(model, threads, relax=True).getInfo().objective_function_value
        root = _highs(model, threads, nodes=1).getInfo().mip_dual_bound
        print(f"| {name or 'as built'} | "
              f"{len(model.row_lower)} | {lp:,.0f} | {root:,.0f} |", flush=True)


def search(data: ProgramData, threads: int, seeds: list[int], gap: float) -> None:
    optimum = None
    print("| program | two-nodes cut (shared) | nodes by seed | CPU s by seed | CPU s in all |\n"
          "|---|---|---|---|---:|")
    for name in (None, TWO_NODES):
        with _changed(name):
            grouped = model_of(build_program(restrict_to_groups(data, demand_groups(data, 1))))
            whole = model_of(build_program(data))
        if optimum is None:
            h = _highs(whole, threads, gap=1e-4)
            optimum = whole.named(np.array(h.getSolution().col_value))
        start = whole.vector(optimum)
        for label, model, first in (("one group, no start", grouped, None),
                                    ("whole, from the optimum", whole, start)):
            counts, seconds = [], []
            for seed in seeds:
                began = time.process_time()
                info = _highs(model, threads, seed=seed, gap=gap, start=first).getInfo()
                seconds.append(time.process_time() - began)
                counts.append(info.mip_node_count)
            print(f"| {label} | {'with' if name else 'without'} | "
                  f"{', '.join(map(str, counts))} | {', '.join(f'{s:.1f}' for s in seconds)} | "
                  f"{sum(seconds):.1f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", type=Path, default=DEMO)
    p.add_argument("--only", default="integrality,cuts,search",
                   help="of integrality,cuts,search")
    p.add_argument("--threads", type=int, default=2, help="HiGHS threads (the planner's: 2)")
    p.add_argument("--limit", type=float, default=300.0, help="seconds per integer run")
    p.add_argument("--seeds", default="0,1,2,3", help="HiGHS random seeds (search)")
    p.add_argument("--gap", type=float, default=0.01, help="gap proved in search")
    args = p.parse_args()
    sc = load_scenario(args.scenario)
    data = build_program_data(sc, build_capacity_table(sc))
    print(f"{args.scenario.name}, load {Path('/proc/loadavg').read_text().split()[0]}, "
          f"{args.threads} HiGHS threads")
    if "integrality" in args.only:
        integrality(data, args.threads, args.limit)
    if "cuts" in args.only:
        cuts(data, args.threads)
    if "search" in args.only:
        search(data, args.threads, [int(s) for s in args.seeds.split(",")], args.gap)


if __name__ == "__main__":
    main()
