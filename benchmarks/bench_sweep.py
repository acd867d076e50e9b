"""Sweep scaling: one plan's time, then one sweep on 1 and 2 local workers and on Ray, in one run.

Command (from the repository root)::

    .venv/bin/python benchmarks/bench_sweep.py [--variants 24|48] [--configs w1,w2,ray]
        [--dedicated] [--time-limit 600] [--json out.json]

What is measured, each in a fresh process, one after the other:

1. *one plan*: the base scenario planned as ``fleetplan plan`` plans it (2 solver threads),
   then with 1 thread: wall and CPU seconds of the capacity table and the solve (imports not
   counted), and whether the two plans are the same (threads must not change a plan);
2. the sweep (``fleetplan sweep --quiet --json``, wall time of the whole command: start-up,
   workers, Ray's start where used, outputs; CPU time of it and the processes it waited for,
   which leaves out Ray's workers) for each executor asked for;
3. whether every executor's records are the same apart from their seconds.

The sweep varies the demo's prices and peaks: H100-SXM spot price ×0.8…×1.2 (4 levels) × H200
reserved price ×0.9, ×1.1 × chat peak ×0.9, ×1, ×1.1 = 24 variants; ``--variants 48`` adds
code-completion's peak ×0.9, ×1.1. ``--dedicated`` plans dedicated node pools
(``policy.share_nodes=false`` in the base: a faster program). The target of issue 21: the
24-variant sweep on 2 local workers within 24 × (one plan) ÷ 2 × 1.1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solver.studies.sweep_store import without_timings  # noqa: E402

VARY_24 = ["zones.*.offers.H100-SXM.spot.price_per_gpu_hour=×0.8,×0.9,×1.1,×1.2",
           "zones.*.offers.H200.reserved.price_per_gpu_hour=×0.9,×1.1",
           "workloads.chat.arrival.peak_rps=×0.9,×1,×1.1"]
VARY_48 = [*VARY_24, "workloads.code-completion.arrival.peak_rps=×0.9,×1.1"]

ONE_PLAN = """
import json, sys, time, hashlib
from solver.cli.common import load
from solver.studies.executors import SolveOptions, Task, plan_task
from solver.studies.sweep import build_sweep, Design
from solver.studies.sweep_spec import parse_vary
base = load(None)
varies = [parse_vary(v) for v in json.loads(sys.argv[3])]
variant = build_sweep(base, varies, Design(), SolveOptions())[0]
options = SolveOptions(time_limit_s=float(sys.argv[2]), threads=int(sys.argv[1]))
cpu, wall = time.process_time(), time.perf_counter()
planned = plan_task(Task(variant.key, variant.label, variant.scenario, options))
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
plan = planned.plan.model_dump(mode="json")
plan["solver"].pop("seconds")
digest = hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()[:16]
print(json.dumps({"threads": options.threads, "wall_s": wall, "cpu_s": cpu,
                  "status": planned.plan.status.value, "cost": planned.plan.cost.per_month,
                  "gap": planned.plan.solver.gap, "plan": digest}))
"""


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def one_plan(threads: int, time_limit: float, base: list[str]) -> dict[str, Any]:
    """The base scenario planned once in a fresh process with ``threads`` solver threads."""
    out = subprocess.run([sys.executable, "-c", ONE_PLAN, str(threads), str(time_limit),
                          json.dumps(base)], capture_output=True, text=True, check=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def sweep(config: str, varies: list[str], base: list[str], time_limit: float,
          out: Path) -> dict[str, Any]:
    """One sweep as a user runs it; wall time of the whole command."""
    executor = ["--ray", "local"] if config == "ray" else ["--workers", config.removeprefix("w")]
    args = [str(Path(sys.executable).with_name("fleetplan")), "sweep", "--quiet", "--json",
            "--out", str(out), "--time-limit", str(time_limit), *executor]
    for v in [*base, *varies]:
        args += ["--vary", v]
    load_before = load_average()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{config}: exit {done.returncode}\n{done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    rows = data["rows"]
    return {"config": config, "wall_s": wall, "cpu_s": cpu, "variants": len(rows),
            "plan_seconds_sum": sum(r["plan_seconds"] for r in rows),
            "statuses": sorted({r["status"] for r in rows}),
            "load_before": load_before, "load_after": load_average(), "out": str(out)}


def records(out: Path) -> dict[str, Any]:
    return {p.name: without_timings(json.loads(p.read_text()))
            for p in sorted((out / "variants").glob("*.json"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", type=int, choices=(24, 48), default=24)
    parser.add_argument("--configs", default="w1,w2,ray")
    parser.add_argument("--dedicated", action="store_true")
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--skip-one-plan", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    varies = VARY_24 if args.variants == 24 else VARY_48
    base = ["policy.share_nodes=false"] if args.dedicated else []
    report: dict[str, Any] = {"variants": args.variants, "dedicated": args.dedicated,
                              "time_limit_s": args.time_limit, "cores": os.cpu_count()}
    if not args.skip_one_plan:
        report["one_plan"] = [one_plan(t, args.time_limit, base or ["policy.share_nodes=true"])
                              for t in (2, 1)]
        print(json.dumps(report["one_plan"]), flush=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for config in args.configs.split(","):
            runs.append(sweep(config, varies, base, args.time_limit, Path(tmp) / config))
            print(json.dumps(runs[-1]), flush=True)
        first = records(Path(runs[0]["out"]))
        report["identical"] = all(records(Path(r["out"])) == first for r in runs[1:])
    report["runs"] = runs
    if "one_plan" in report:
        reference = report["one_plan"][0]["wall_s"]
        report["target_s"] = args.variants * reference / 2 * 1.1
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
