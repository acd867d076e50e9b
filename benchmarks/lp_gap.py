"""Where the LP relaxation of a benchmark program loses against its integer fleets.

For one case (a size of benchmarks/generate.py at a demand scale, shared nodes, seed 0), each
measurement one after the other in this process, HiGHS on one thread:

1. ``families``: the LP relaxation with each survivability family left out (how much of the
   LP's cost those rows carry);
2. ``integer``: the program with integrality kept on one set of columns only — the reserved
   node counts, every node count (replicas continuous), the all-day columns (reserved nodes,
   replicas and node-loss binaries), the hourly columns (every integer column but the all-day
   ones), every integer column — solved for ``--limit`` seconds: where rounding costs
   (``--sets`` picks some; ``--as-planned`` builds the program as the joint solve does; with the
   all-day set, the fleet found caps any master over reserved nodes' packings with continuous
   hourly columns: :func:`integer`);
3. ``counts``: node-count cuts — per slice, the nodes running are at least the least number
   the LP relaxation can run that slice with, rounded up; per slice and zone, the same for
   non-spot nodes outside the zone (what survives its loss) — and the LP with them (whether
   rounding the count of nodes binds);
4. ``fixed``: the plan's own fleet (``solve_shared`` for ``--limit`` seconds) against the LP
   relaxation with the fleet's integer all-day columns (reserved nodes, replicas, loss
   binaries) held: what the reserved fleet's choice costs, and what rounding the hourly
   (on-demand, spot) columns given that fleet costs, slice by slice;
5. ``lagrangian``: the Lagrangian bound by slice at the LP relaxation's duals — every slice a
   program of its own with a copy of the all-day columns (and the rows on them alone), the
   copies priced at what the slice's rows pay for the all-day columns in the LP, the rows
   spanning slices (daily volumes) at their duals; each slice's integer program solved for
   up to ``--slice-limit`` seconds (its proven bound counted). Any prices give a valid bound;
   at the LP's duals it is at least the LP relaxation (its LP version equals it: printed as a
   check).

Run (from the repository root; a few minutes at large ×25)::

    .venv/bin/python benchmarks/lp_gap.py --case large:25 --limit 60
    .venv/bin/python benchmarks/lp_gap.py --case medium:25 --limit 60 --only fixed,lagrangian
    .venv/bin/python benchmarks/lp_gap.py --case large:25 --only integer --sets all-day --as-planned
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
           objective: np.ndarray | None = None, cuts: Iterable[Cut] = (),
           bounds: tuple[np.ndarray, np.ndarray] | None = None) -> object:
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
    if bounds is not None:  # columns held at values
        h.changeColsBounds(len(bounds[0]), bounds[0], bounds[1], bounds[1])
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


def integer(size: str, scale: int, limit_s: float, only: Iterable[str] = (),
            as_planned: bool = False) -> None:
    """Integrality kept on one set of columns at a time (all five, or those named in
    ``only``: ``reserved``, ``nodes``, ``all-day``, ``hourly``, ``all``). ``as_planned`` builds
    the program as the plan's joint solve does (with the shared two-nodes cut).

    With integrality on the all-day columns only, the optimum is an upper bound on the value of
    any master whose columns are reserved nodes' packings (which replicas a reserved node holds)
    shared by every slice and whose hourly columns are continuous: each fleet of that program
    splits into whole-node packings (C6 packs whole replicas into whole nodes exactly), so it
    is a point of that master at the same cost, and the master's optimum is at most its cost.
    The fleet found (not the bound) is what caps the master."""
    program = build_program(_data(size, scale), shared_two_nodes=as_planned)
    model = model_of(program)
    sets = {
        "reserved node counts": _cols(model, (y for k, y in program.v.nodes.items()
                                              if k.slice is None)),
        "every node count": _cols(model, program.v.nodes.values()),
        "all-day columns": _all_day(program, model),
        "hourly columns (all-day continuous)": (set(np.flatnonzero(model.integer).tolist())
                                                - _all_day(program, model)),
        "every integer column": set(np.flatnonzero(model.integer).tolist()),
    }
    keys = dict(zip(("reserved", "nodes", "all-day", "hourly", "all"), sets, strict=True))
    chosen = [keys[k] for k in only] if only else list(sets)
    for name in chosen:
        cols = sets[name]
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


def fixed(size: str, scale: int, limit_s: float) -> None:
    from solver.solve.strategy import solve_shared

    data = _data(size, scale)
    program, outcome = solve_shared(data, time_limit_s=limit_s)
    model = model_of(program)
    x = np.array([float(var.varValue or 0.0) for var in model.variables])
    base, x_lp = _lp(model)
    held = np.flatnonzero(_all_day_mask(program, model) & model.integer).astype(np.int32)
    h = _highs(model, 600.0, True, bounds=(held, x[held]))
    x_held = np.array(h.getSolution().col_value)  # type: ignore[attr-defined]
    all_day = _all_day_mask(program, model)

    def split(y: np.ndarray) -> str:
        return (f"{model.cost[all_day] @ y[all_day]:,.0f} | "
                f"{model.cost[~all_day] @ y[~all_day]:,.0f}")

    print(f"plan ({limit_s:.0f} s): {model.cost_of(x):,.0f}, bound {outcome.report.bound:,.0f}")
    print("| | total | all-day columns | hourly columns |\n|---|---:|---:|---:|")
    print(f"| the plan's fleet | {model.cost_of(x):,.0f} | {split(x)} |")
    print(f"| LP relaxation | {base:,.0f} | {split(x_lp)} |")
    print(f"| LP, the plan's all-day integers held | {model.cost_of(x_held):,.0f} | "
          f"{split(x_held)} |")
    column_slice = _column_slices(program, model)
    print("| slice | the plan's hourly | LP, all-day held |\n|---|---:|---:|")
    for i, sl in enumerate(data.slices):
        own = column_slice == i
        print(f"| {sl.name} | {model.cost[own] @ x[own]:,.0f} | "
              f"{model.cost[own] @ x_held[own]:,.0f} |")


def lagrangian(size: str, scale: int, slice_limit_s: float) -> None:
    """The Lagrangian bound by slice at the LP relaxation's duals (module docstring, 5)."""
    program = build_program(_data(size, scale))
    model = model_of(program)
    started = time.perf_counter()
    base, _ = _lp(model)
    h = _highs(model, 600.0, True)
    duals = np.array(h.getSolution().row_dual)  # type: ignore[attr-defined]
    column_slice = _column_slices(program, model)
    rows = np.repeat(np.arange(len(model.row_lower)), np.diff(model.starts))
    row_slices = [set(column_slice[model.columns[model.starts[i]:model.starts[i + 1]]].tolist())
                  - {-1} for i in range(len(model.row_lower))]
    row_slice = np.array([-1 if not s else (min(s) if len(s) == 1 else -2) for s in row_slices])
    # a dual of the wrong sign (a solver's rounding) is no price of that row: zero
    duals[np.isinf(model.row_lower) & (duals > 0)] = 0.0
    duals[np.isinf(model.row_upper) & (duals < 0)] = 0.0
    spanning = np.flatnonzero(row_slice == -2)
    alone = np.flatnonzero(row_slice == -1)  # rows on all-day columns alone
    all_day = np.flatnonzero(column_slice == -1)
    offset = sum(duals[i] * (model.row_lower[i] if duals[i] > 0 else model.row_upper[i])
                 for i in spanning if duals[i] != 0)

    def paid(row_mask: np.ndarray) -> np.ndarray:
        """What the rows in the mask pay each column at the duals (Aᵀy over them)."""
        y = np.where(row_mask, duals, 0.0)
        return np.bincount(model.columns, weights=model.values * y[rows],
                           minlength=model.columns_count)

    priced = model.cost - paid(row_slice == -2)
    copies_paid = np.zeros(model.columns_count)
    totals = {"LP": offset, "integer": offset}
    slowest = 0.0
    for i in range(len(program.data.slices)):
        copy_cost = paid(row_slice == i)
        copies_paid += copy_cost
        cols = np.concatenate([np.flatnonzero(column_slice == i), all_day])
        cost = np.where(column_slice[cols] == -1, copy_cost[cols], priced[cols])
        part = _sub(model, cols, np.concatenate([np.flatnonzero(row_slice == i), alone]), cost)
        for name, relax in (("LP", True), ("integer", False)):
            t = time.perf_counter()
            sub = _solve(part, relax, slice_limit_s)
            info = sub.getInfo()
            totals[name] += info.objective_function_value if relax else info.mip_dual_bound
            if not relax:
                slowest = max(slowest, time.perf_counter() - t)
    rest = _sub(model, all_day, alone, (priced - copies_paid)[all_day])
    rest_value = _solve(rest, True, 600.0).getInfo().objective_function_value
    for name in totals:
        totals[name] += rest_value
    print(f"| LP relaxation | {base:,.0f} |\n| Lagrangian by slice at its duals, slices as LPs "
          f"(check) | {totals['LP']:,.0f} |\n| the same, slices integer (proven bounds, "
          f"≤ {slice_limit_s:g} s each, slowest {slowest:.1f} s) | {totals['integer']:,.0f} |")
    print(f"({time.perf_counter() - started:.0f} s in all)")


def _sub(model: Model, cols: np.ndarray, row_ids: np.ndarray, cost: np.ndarray) -> object:
    """The HiGHS model of ``cols`` and the rows ``row_ids`` (which hold no other column)."""
    import highspy

    new = np.full(model.columns_count, -1)
    new[cols] = np.arange(len(cols))
    starts, index, values = [0], [], []
    for i in row_ids:
        a, b = model.starts[i], model.starts[i + 1]
        index += new[model.columns[a:b]].tolist()
        values += model.values[a:b].tolist()
        starts.append(len(index))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cols), len(row_ids)
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, model.lower[cols], model.upper[cols]
    lp.row_lower_, lp.row_upper_ = model.row_lower[row_ids], model.row_upper[row_ids]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(cols), len(row_ids)
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(values, dtype=np.float64)
    lp.integrality_ = [highspy.HighsVarType.kInteger if model.integer[j]
                       else highspy.HighsVarType.kContinuous for j in cols]
    return lp


def _solve(lp: object, relax: bool, limit_s: float) -> object:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    for option, value in (("threads", 1), ("time_limit", float(limit_s)),
                          ("mip_rel_gap", 1e-4), ("solve_relaxation", relax)):
        h.setOptionValue(option, value)
    h.run()
    return h


def _column_slices(program: Program, model: Model) -> np.ndarray:
    """Each column's slice index, -1 for the all-day columns every slice shares."""
    v = program.v
    index = {sl.name: i for i, sl in enumerate(program.data.slices)}
    out = np.full(model.columns_count, -3)
    owned: list[tuple[object, str | None]] = [
        *((x, k.slice) for k, x in v.replicas.items()), *((y, k.slice) for k, y in v.nodes.items()),
        *((b, k[4]) for k, b in v.full.items()), *((ell, k[4]) for k, ell in v.loss.items()),
        *((f, k[1]) for k, f in v.firm.items()), *((c, k[2]) for k, c in v.zone_cap.items())]
    for var, s in owned:
        out[model.index[var.name]] = -1 if s is None else index[s]  # type: ignore[attr-defined]
    assert (out != -3).all(), "a column of no slice and not all-day"
    return out


def _all_day_mask(program: Program, model: Model) -> np.ndarray:
    mask = np.zeros(model.columns_count, dtype=bool)
    mask[sorted(_all_day(program, model))] = True
    return mask


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
    p.add_argument("--slice-limit", type=float, default=5.0,
                   help="seconds per slice's integer program (lagrangian)")
    p.add_argument("--only", default="families,integer,counts",
                   help="of families,integer,counts,fixed,lagrangian")
    p.add_argument("--sets", default="",
                   help="integer: of reserved,nodes,all-day,hourly,all (default all five)")
    p.add_argument("--as-planned", action="store_true",
                   help="integer: the program as the joint solve has it (shared two-nodes cut)")
    args = p.parse_args()
    size, scale = args.case.split(":")
    print(f"{args.case}, load {Path('/proc/loadavg').read_text().split()[0]}")
    if "families" in args.only:
        families(size, int(scale))
    if "integer" in args.only:
        print("| integrality kept on | fleet | bound | B&B nodes | s |")
        integer(size, int(scale), args.limit,
                [k.strip() for k in args.sets.split(",") if k.strip()], args.as_planned)
    if "counts" in args.only:
        counts(size, int(scale))
    if "fixed" in args.only:
        fixed(size, int(scale), args.limit)
    if "lagrangian" in args.only:
        lagrangian(size, int(scale), args.slice_limit)


if __name__ == "__main__":
    main()
