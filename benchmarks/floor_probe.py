"""Per-workload cost floors as rows of the program: their lift of its LP and root (issue 15).

With GPUs priced one by one — a replica slot :math:`r` costs :math:`\\kappa_r = \\pi_r t_r H_r`
a month, its GPUs at the offer's price for the hours it runs (:math:`H` for reserved, the
slice's paid hours for elastic) — the program without its node rows (C6), stock rows (C5),
budget and the cut rows on node counts falls apart into one program per workload: its replicas
and its own demand, N+1 and zone-loss rows with their auxiliaries. Any fleet pays at least
:math:`\\sum_r \\kappa_r x_r` (C6's first row: a node group's replicas use at most its
:math:`n y` GPUs), and its replicas of ``w`` are a point of ``w``'s program, so

.. math:: \\sum_{r \\in w} \\kappa_r x_r \\;\\ge\\; B_w

with :math:`B_w` any proven lower bound of ``w``'s integer program is valid for every fleet
(workloads may share nodes: the GPUs are what is priced, and no GPU serves two replicas). The
``slice`` variant asks the same of ``w``'s replicas running in one slice, reserved ones priced
for that slice's hours only (:math:`\\kappa_r h_s / 24`), against the cheapest integer way to
meet ``w``'s rows of that slice: valid by the same argument, one row per (workload, slice)
with fixed demand.

Measured (the rows added to the program as the plan's joint solve builds it, shared two-nodes
cut included):

- ``lp``: the LP relaxation without and with the rows;
- ``root``: HiGHS on one thread from no start, the bound read at every ``--every`` CPU seconds
  of this process up to ``--cpu`` (as :mod:`benchmarks.root_probe`), for ``planned`` (no rows)
  and ``floor`` (with them), in the order of ``--programs``.

Run (from the repository root)::

    .venv/bin/python benchmarks/floor_probe.py --case large:25 --only lp
    .venv/bin/python benchmarks/floor_probe.py --case large:1 --only root --programs floor,planned
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.lp_gap import _data, _lp, _sub  # noqa: E402
from benchmarks.root_probe import Row, probe  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.variables import Program  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402


def gpu_prices(program: Program, model: Model) -> tuple[npt.NDArray[np.object_],
                                                         npt.NDArray[np.float64],
                                                         npt.NDArray[np.object_]]:
    """Each column's workload (``""``: a node count), its GPUs' price :math:`\\kappa` a month
    (replica slots; 0 elsewhere) and its slice (``None``: all-day or a node count)."""
    data, v = program.data, program.v
    owner = np.full(model.columns_count, "", dtype=object)
    price = np.zeros(model.columns_count)
    slice_of = np.full(model.columns_count, None, dtype=object)
    for k, x in v.replicas.items():
        j = model.index[x.name]
        hours = data.hours_per_month if k.slice is None else data.paid_hours_per_month(k.slice)
        owner[j], slice_of[j] = k.workload, k.slice
        price[j] = v.offer[k.pool].price_per_gpu_hour * k.tp * hours  # [currency/(GPU·h)]·GPUs·h
    # the auxiliaries of a workload's failure rows: keys start with the workload
    for by_key, at in ((v.full, 4), (v.loss, 4), (v.firm, 1), (v.zone_cap, 2)):
        for key, var in by_key.items():
            j = model.index[var.name]
            owner[j], slice_of[j] = key[0], key[at]
    return owner, price, slice_of


def floors(program: Program, model: Model, limit_s: float, per_slice: bool = False,
           survivability: set[str] | None = None) -> list[Row]:
    """One floor row per workload (``per_slice``: per workload and slice with fixed demand),
    its bound the proven dual bound of the part's integer program after at most ``limit_s``
    seconds; ``survivability`` keeps only workloads asking for one of those (``none``,
    ``n_plus_1``, ``zone_loss``)."""
    data = program.data
    owner, price, slice_of = gpu_prices(program, model)
    row_cols = [model.columns[model.starts[i]:model.starts[i + 1]]
                for i in range(len(model.row_lower))]
    rows: list[Row] = []
    for w in data.workloads:
        if survivability is not None and w.survivability.value not in survivability:
            continue
        mine = np.flatnonzero(owner == w.name)
        parts: list[tuple[str | None, npt.NDArray[np.int64], npt.NDArray[np.float64]]] = []
        if not per_slice:
            parts.append((None, mine, price[mine]))
        elif w.name not in data.volume_requests:
            for sl in data.slices:
                if (w.name, sl.name) not in data.demand_rps:
                    continue
                cols = mine[np.isin(slice_of[mine], [None, sl.name])]
                share = np.where(slice_of[cols] == None, sl.hours_per_day / 24, 1.0)  # noqa: E711
                parts.append((sl.name, cols, price[cols] * share))
        for s, cols, cost in parts:
            inside = set(cols.tolist())
            rids = np.array([i for i, rc in enumerate(row_cols)
                             if len(rc) and set(rc.tolist()) <= inside
                             and (s is None or any(slice_of[j] == s for j in rc))],
                            dtype=np.int64)
            bound = _bound(_sub(model, cols, rids, cost), limit_s)
            paid = cost > 0
            rows.append((cols[paid].astype(np.int32), cost[paid], bound))
    return rows


def _bound(lp: object, limit_s: float) -> float:
    """The proven dual bound of a part's integer program after at most ``limit_s`` seconds, on
    one thread. HiGHS keeps one thread pool per process and refuses a run asking for another
    count, so the pool is reset before and after: any count may run next."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    for option, value in (("threads", 1), ("time_limit", float(limit_s)), ("mip_rel_gap", 1e-4)):
        h.setOptionValue(option, value)
    highspy.Highs.resetGlobalScheduler(True)
    h.run()
    highspy.Highs.resetGlobalScheduler(True)
    return float(h.getInfo().mip_dual_bound)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="large:25", help="size:scale")
    p.add_argument("--only", default="lp,root", help="of lp,root")
    p.add_argument("--per-slice", action="store_true", help="one row per workload and slice")
    p.add_argument("--survivability", default="",
                   help="floors only for workloads asking for these (none,n_plus_1,zone_loss)")
    p.add_argument("--limit", type=float, default=10.0, help="seconds per part's program")
    p.add_argument("--cpu", type=float, default=30.0, help="root: CPU seconds per program")
    p.add_argument("--every", type=float, default=5.0, help="root: CPU seconds between readings")
    p.add_argument("--programs", default="floor,planned", help="root: of floor,planned, in order")
    args = p.parse_args()
    size, scale = args.case.split(":")
    program = build_program(_data(size, int(scale)), shared_two_nodes=True)
    model = model_of(program)
    chosen = {x.strip() for x in args.survivability.split(",") if x.strip()} or None
    started = time.process_time()
    rows = floors(program, model, args.limit, args.per_slice, chosen)
    print(f"{args.case}: {len(rows)} floor rows, bounds summing to "
          f"{sum(r[2] for r in rows):,.0f}, in {time.process_time() - started:.1f} CPU-s "
          f"(load {Path('/proc/loadavg').read_text().split()[0]})", flush=True)
    if "lp" in args.only:
        base, _ = _lp(model)
        cuts = [(c.tolist(), v.tolist(), b) for c, v, b in rows]
        after, _ = _lp(model, cuts=cuts)
        print(f"| LP relaxation | {base:,.0f} |\n| with the floor rows | {after:,.0f} "
              f"(+{(after / base - 1) * 100:.2f} %) |")
    if "root" in args.only:
        marks = np.arange(args.every, args.cpu + 1e-9, args.every)
        print("| program | load | " + " | ".join(f"{m:g}" for m in marks) + " | end |")
        for name in (x.strip() for x in args.programs.split(",") if x.strip()):
            load = Path("/proc/loadavg").read_text().split()[0]
            seen, end = probe(model, rows if name == "floor" else [], args.cpu, args.every)
            print(f"| {name} | {load} | " + " | ".join(f"{b:,.0f}" for b in seen)
                  + f" | {end:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
