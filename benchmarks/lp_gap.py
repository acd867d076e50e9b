"""Where the LP relaxation of a benchmark program loses against its integer fleets.

For one case (a size of benchmarks/generate.py at a demand scale, shared nodes, seed 0), each
measurement one after the other in this process, HiGHS on one thread:

1. ``families``: the LP relaxation with each survivability family left out (how much of the
   LP's cost those rows carry);
2. ``integer``: the program with integrality kept on one set of columns only — the reserved
   node counts, every node count (replicas continuous), the all-day columns (reserved nodes,
   replicas and node-loss binaries) — solved for ``--limit`` seconds: where rounding costs;
3. ``counts``: node-count cuts — per slice, the nodes running are at least the least number
   the LP relaxation can run that slice with, rounded up; per slice and zone, the same for
   non-spot nodes outside the zone (what survives its loss) — and the LP with them (whether
   rounding the count of nodes binds).

Run (from the repository root; a few minutes at large ×25)::

    .venv/bin/python benchmarks/lp_gap.py --case large:25 --limit 60
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import generate_scenario  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import ProgramData, build_program_data  # noqa: E402
from solver.program.families import FAMILIES  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

#: A cut row: columns, coefficients, lower bound.
Cut = tuple[list[int], list[float], float]


def _highs(model: Model, limit_s: float, relax: bool, integer: set[int] | None = None,
           objective: np.ndarray | None = None, cuts: Iterable[Cut] = ()) -> object:
    """A HiGHS run on ``model`` (integrality on ``integer`` only, when given)."""
    import highspy

    lp = model.lp
    if integer is not None:
        lp.integrality_ = [highspy.HighsVarType.kInteger if model.integer[j] and j in integer
                           else highspy.HighsVarType.kContinuous
                           for j in range(model.columns_count)]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    for option, value in (("threads", 1), ("time_limit", float(limit_s)),
                          ("mip_rel_gap", 1e-3), ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    if objective is not None:
        h.changeColsCost(model.columns_count, np.arange(model.columns_count, dtype=np.int32),
                         objective)
    for cols, coefs, lower in cuts:
        h.addRow(lower, highspy.kHighsInf, len(cols), np.array(cols, dtype=np.int32),
                 np.array(coefs, dtype=np.float64))
    h.run()
    if integer is not None:  # the model's own integrality back for the next run
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.integer]
    return h


def _lp(model: Model, **kwargs: object) -> tuple[float, np.ndarray]:
    h = _highs(model, 600.0, True, **kwargs)  # type: ignore[arg-type]
    return h.getInfo().objective_function_value, np.array(h.getSolution().col_value)  # type: ignore[attr-defined]


def families(size: str, scale: int) -> None:
    data = _data(size, scale)
    for left_out in ((), ("n_plus_1",), ("zone_loss",), ("n_plus_1", "zone_loss")):
        program = build_program(data, families=[f for f in FAMILIES if f not in left_out])
        value, _ = _lp(model_of(program))
        print(f"| LP without {', '.join(left_out) or '—'} | {value:,.0f} |")


def integer(size: str, scale: int, limit_s: float) -> None:
    program = build_program(_data(size, scale))
    model = model_of(program)
    sets = {
        "reserved node counts": _cols(model, (y for k, y in program.v.nodes.items()
                                              if k.slice is None)),
        "every node count": _cols(model, program.v.nodes.values()),
        "all-day columns": _all_day(program, model),
        "every integer column": set(np.flatnonzero(model.integer).tolist()),
    }
    for name, cols in sets.items():
        started = time.perf_counter()
        h = _highs(model, limit_s, False, integer=cols)
        info = h.getInfo()  # type: ignore[attr-defined]
        print(f"| integer on {name} ({len(cols & set(np.flatnonzero(model.integer)))}) | "
              f"{info.objective_function_value:,.0f} | {info.mip_dual_bound:,.0f} | "
              f"{info.mip_node_count} | {time.perf_counter() - started:.1f} |")


def counts(size: str, scale: int) -> None:
    program = build_program(_data(size, scale))
    model = model_of(program)
    base, x = _lp(model)
    zones = sorted({k.zone for k in program.v.nodes})
    cuts: list[Cut] = []
    binding = 0
    for s in (sl.name for sl in program.data.slices):
        for z in (None, *zones):
            cols = sorted(_cols(model, (y for k, y in program.v.nodes.items()
                                        if k.slice in (None, s)
                                        and (z is None or (not k.spot and k.zone != z)))))
            objective = np.zeros(model.columns_count)
            objective[cols] = 1.0
            least, _ = _lp(model, objective=objective)
            need = math.ceil(least - 1e-6)
            binding += need > x[cols].sum() + 1e-6
            cuts.append((cols, [1.0] * len(cols), float(need)))
    after, _ = _lp(model, cuts=cuts)
    print(f"| LP | {base:,.0f} |\n| LP with {len(cuts)} node-count cuts ({binding} cut off "
          f"the LP's point) | {after:,.0f} (+{(after / base - 1) * 100:.3f} %) |")


def _data(size: str, scale: int) -> ProgramData:
    sc = generate_scenario(size, seed=0, scale=scale)
    return build_program_data(sc, build_capacity_table(sc))


def _cols(model: Model, variables: Iterable[object]) -> set[int]:
    return {model.index[v.name] for v in variables}  # type: ignore[attr-defined]


def _all_day(program: Program, model: Model) -> set[int]:
    """Columns every slice's rows share: reserved nodes and replicas, their loss binaries."""
    v = program.v
    return (_cols(model, (x for k, x in v.replicas.items() if k.slice is None))
            | _cols(model, (y for k, y in v.nodes.items() if k.slice is None))
            | _cols(model, (b for k, b in v.full.items() if k[4] is None)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="large:25", help="size:scale")
    p.add_argument("--limit", type=float, default=60.0, help="seconds per integer run")
    p.add_argument("--only", default="families,integer,counts")
    args = p.parse_args()
    size, scale = args.case.split(":")
    print(f"{args.case}, load {Path('/proc/loadavg').read_text().split()[0]}")
    if "families" in args.only:
        families(size, int(scale))
    if "integer" in args.only:
        print("| integrality kept on | fleet | bound | B&B nodes | s |")
        integer(size, int(scale), args.limit)
    if "counts" in args.only:
        counts(size, int(scale))


if __name__ == "__main__":
    main()
