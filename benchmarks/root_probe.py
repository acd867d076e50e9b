"""The joint solve's root bound per CPU second, for variants of the program (issue 15).

HiGHS on one thread from no start, its bound read in its MIP interrupt callback at every
``--every`` CPU seconds of this process (``time.process_time``: a loaded machine's wall clock
says little), stopped at ``--cpu``. The programs, one after the other in the order given:

- ``planned``: the program as the plan's joint solve builds it (with the shared two-nodes cut);
- ``nocuts``: without the cut rows (node cover, two-replicas, two-nodes, zone symmetry's
  rows stay);
- ``agg``: ``planned`` with one aggregated node cover row per slice. For weights
  :math:`\\lambda_w \\ge 0`, C1 summed over the workloads of slice ``s`` and C6's TP-1 row
  (the GPUs of a node hold its replicas) give a row of node counts alone,

  .. math:: \\sum_p e_p\\, n_p\\, y_p \\;\\ge\\; \\sum_w \\lambda_w d_{ws},
     \\qquad e_p = \\max_{r \\in p} \\lambda_{w_r} u_{w_r} a_{k_r} \\rho_{c_r} / t_{c_r},

  valid because every GPU serves at most one replica of one workload, and implied by the LP
  relaxation (so it moves the LP by nothing); the weights are the LP's duals of the demand rows.
  Volume workloads are left out (their rows span slices).
- ``aggzone``: ``planned`` with the same rows from C4 instead, one per slice and zone: the
  zone-loss workloads' non-spot capacity outside the zone, at φ, over the non-spot node
  groups outside it; weights each demand's inverse.

Run (from the repository root)::

    .venv/bin/python benchmarks/root_probe.py --case medium:25 --programs planned,nocuts,agg
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.lp_gap import _data  # noqa: E402
from models.common import Survivability  # noqa: E402
from solver.program.build import build_program  # noqa: E402
from solver.program.data import ProgramData  # noqa: E402
from solver.program.keys import NodeKey  # noqa: E402
from solver.program.variables import NameBook, Program, node_key  # noqa: E402
from solver.solve.backends import THREADS  # noqa: E402
from solver.solve.highs import Model, model_of  # noqa: E402

#: A row of node counts: model columns, coefficients, lower bound.
Row = tuple[npt.NDArray[np.int32], npt.NDArray[np.float64], float]


def _highs(model: Model, relax: bool, threads: int | None = None) -> Any:
    """A HiGHS instance of ``model``; ``threads``: the planner's (``THREADS``) by default. HiGHS
    keeps one thread pool per process and refuses a run asking for another count (status
    error, no solution: in the test suite, after the planner's 2-thread solves), so a count of
    its own first resets that pool."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(model.lp)
    if threads is not None and threads != THREADS.get():
        highspy.Highs.resetGlobalScheduler(True)
    h.setOptionValue("threads", THREADS.get() if threads is None else threads)
    if relax:
        h.setOptionValue("solve_relaxation", True)
    return h


def demand_duals(program: Program, model: Model) -> dict[tuple[str, str], float]:
    """The LP relaxation's duals of the demand rows (C1) with fixed demand, by (workload,
    slice), as magnitudes."""
    data: ProgramData = program.data
    h = _highs(model, True)
    h.run()
    duals = np.abs(np.array(h.getSolution().row_dual))
    row_of = {n: i for i, n in enumerate(model.row_names)}
    out: dict[tuple[str, str], float] = {}
    for w in data.workloads:
        if w.name in data.volume_requests:
            continue
        for s in data.demand_slices(w.name):
            # the name the builder generated first for this row (a fresh book: no suffix),
            # checked against the row's demand
            i = row_of[NameBook().name("demand", w.name, s)]
            if abs(model.row_lower[i] - data.demand_rps[(w.name, s)]) > 1e-6:
                raise RuntimeError(f"row {model.row_names[i]} is not {w.name}'s demand in {s}")
            out[(w.name, s)] = float(duals[i])
    return out


def aggregated_covers(program: Program, model: Model,
                      weights: dict[tuple[str, str], float] | None = None,
                      lost_zones: bool = False) -> list[Row]:
    """One aggregated node cover row per slice (module docstring), each scaled to a lower
    bound of 1; ``weights`` the λ by (workload, slice), ≥ 0 (default: :func:`demand_duals`).
    A slice whose weighted demand is zero gets no row.

    ``lost_zones``: one row per slice and zone from C4 instead — the zone-loss workloads'
    non-spot capacity outside the zone, at φ, meets their demand — over the non-spot node
    groups outside it (default weights: each demand's inverse)."""
    data: ProgramData = program.data
    if weights is None:
        weights = ({k: 1.0 / d for k, d in data.demand_rps.items() if d > 0} if lost_zones
                   else demand_duals(program, model))
    workloads = [w for w in data.workloads if w.name not in data.volume_requests
                 and (not lost_zones or w.survivability is Survivability.zone_loss)]
    rows: list[Row] = []
    for s in (sl.name for sl in data.slices):
        lam = {w.name: weights.get((w.name, s), 0.0) for w in workloads
               if data.demand_rps.get((w.name, s), 0.0) > 0}
        share = {w.name: data.failure_utilization if lost_zones else w.utilization
                 for w in workloads}
        for lost in (data.zones if lost_zones else (None,)):
            row = _cover(program, model, s, lam, share, lost)
            if row is not None:
                rows.append(row)
    return rows


def _cover(program: Program, model: Model, s: str, lam: dict[str, float],
           share: dict[str, float], lost: str | None) -> Row | None:
    """Σ_p e_p n_p y_p ≥ Σ_w λ_w d_ws over the node groups of slice ``s`` (``lost``: the
    non-spot ones outside that zone), scaled to 1; ``None`` where the right side is zero."""
    data: ProgramData = program.data
    v = program.v
    per_node: dict[NodeKey, float] = defaultdict(float)
    for name, weight in lam.items():
        for k in v.by_slice.get((name, s), []):
            if lost is not None and (k.spot or k.zone == lost):
                continue
            p = node_key(data, k)
            offer = v.offer[p.pool]
            gpu_rate = weight * share[name] * offer.available_share * v.rate[k] / k.tp
            per_node[p] = max(per_node[p], gpu_rate * offer.gpus_per_node)
    need = sum(weight * data.demand_rps[(name, s)] for name, weight in lam.items())
    if need <= 0:
        return None
    keys = sorted(per_node, key=NodeKey.sort_key)
    return (np.array([model.index[v.nodes[p].name] for p in keys], dtype=np.int32),
            np.array([per_node[p] / need for p in keys]), 1.0)


def probe(model: Model, rows: list[Row], cpu_s: float, every_s: float) -> tuple[list[float], float]:
    """The root's bound at each ``every_s`` CPU seconds up to ``cpu_s``, and at the end."""
    import highspy

    h = _highs(model, False, threads=1)  # the root's bound per CPU second of one thread
    for cols, coefs, lower in rows:
        h.addRow(lower, highspy.kHighsInf, len(cols), cols, coefs)
    h.setOptionValue("time_limit", 3600.0)
    h.setOptionValue("mip_rel_gap", 0.01)
    marks = list(np.arange(every_s, cpu_s + 1e-9, every_s))
    seen: list[float] = []
    started = time.process_time()

    def interrupt(event: Any) -> None:
        spent = time.process_time() - started
        while len(seen) < len(marks) and spent >= marks[len(seen)]:
            seen.append(float(event.data_out.mip_dual_bound))
        if spent >= cpu_s:
            event.interrupt()

    h.cbMipInterrupt.subscribe(interrupt)
    h.run()
    return seen, float(h.getInfo().mip_dual_bound)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="medium:25", help="size:scale")
    p.add_argument("--cpu", type=float, default=30.0, help="CPU seconds per program")
    p.add_argument("--every", type=float, default=5.0, help="CPU seconds between readings")
    p.add_argument("--programs", default="planned,nocuts,agg",
                   help="of planned,nocuts,agg,aggzone, in order (repeat one to run it again)")
    args = p.parse_args()
    size, scale = args.case.split(":")
    data = _data(size, int(scale))
    planned = build_program(data, shared_two_nodes=True)
    models = {"planned": model_of(planned), "agg": model_of(planned),
              "aggzone": model_of(planned)}
    if "nocuts" in args.programs:
        models["nocuts"] = model_of(build_program(data, cuts=False))
    extra = {}
    if "agg" in args.programs.split(","):
        extra["agg"] = aggregated_covers(planned, models["agg"])
    if "aggzone" in args.programs:
        extra["aggzone"] = aggregated_covers(planned, models["aggzone"], lost_zones=True)
    marks = np.arange(args.every, args.cpu + 1e-9, args.every)
    print(f"{args.case}; bound at each {args.every:g} CPU-s")
    print("| program | load | " + " | ".join(f"{m:g}" for m in marks) + " | end |")
    print("|---|---:|" + "---:|" * (len(marks) + 1))
    for name in (x.strip() for x in args.programs.split(",") if x.strip()):
        load = Path("/proc/loadavg").read_text().split()[0]
        seen, end = probe(models[name], extra.get(name, []), args.cpu, args.every)
        print(f"| {name} | {load} | " + " | ".join(f"{b:,.0f}" for b in seen)
              + f" | {end:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
