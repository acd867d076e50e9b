"""Benchmark the fleet planner against the rule of thumb on generated scenarios of three sizes.

For each size (benchmarks/generate.py) and each solver, one subprocess — so runs share neither
their peak memory nor warm caches — measures:

- capacity-table build time (:func:`solver.capacity.table.build_capacity_table`);
- program build time (:func:`solver.program.data.build_program_data` +
  :func:`solver.program.build.build_program`), with the program's variable and row counts;
- the plan (:func:`solver.solve.strategy.plan_scenario` at ``--time-limit`` and ``--gap``): solve
  time,
  status, MIP gap and bound from the plan's solver report, monthly cost, and whether the
  independent verifier (:func:`solver.survivability.verify.verify_plan`) accepts the plan;
- peak memory: ``ru_maxrss`` of the subprocess plus that of its children (CBC runs as a child
  process; HiGHS runs inside the subprocess);
- CPU time of the subprocess and its children (wall time alone misleads on a loaded machine).

The parent also prices the two baselines of :mod:`solver.studies.baselines` on the same scenario and
capacity table, and reports the planner's saving against each: 1 − planner ÷ baseline. CBC reports
no bound through PuLP, so the table also gives every run's gap against the best bound any solver
proved on that size.

Run (from the repository root)::

    /work/venv/bin/python benchmarks/bench_plan.py [--sizes small,medium,large]
        [--solvers highs,cbc] [--time-limit 60] [--gap 0.01] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

if TYPE_CHECKING:
    from models.scenario import Scenario

#: A run that takes this much longer than its time limit is stopped (diagnosis, hang) [s].
CHILD_GRACE_S = 600.0


@dataclass
class RunResult:
    """What one (size, solver) subprocess measured."""

    size: str
    solver: str
    workloads: int
    gpu_types: int
    zones: int
    slices: int
    nodes: str = "shared"
    """Node model: ``shared`` (policy.share_nodes, the default) or ``dedicated`` pools."""
    variables: int = 0
    integer_variables: int = 0
    constraints: int = 0
    table_s: float = 0.0
    build_s: float = 0.0
    solve_s: float = 0.0
    plan_s: float = 0.0
    """Wall time of plan_scenario: builds again, solves, reads the plan back [s]."""
    cpu_s: float = 0.0
    """User + system CPU time of the subprocess and its children [s]."""
    status: str = "error"
    gap: float | None = None
    bound: float | None = None
    cost_per_month: float | None = None
    verify_problems: int | None = None
    peak_rss_mib: float = 0.0
    error: str = ""


def _rss_mib() -> float:
    """Peak resident memory of this process plus its largest child [MiB] (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024.0


def _cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_child(size: str, solver: str, time_limit_s: float, gap: float, seed: int,
              share_nodes: bool = True) -> RunResult:
    """Measure one (size, solver) run in this process (called inside the subprocess)."""
    import pulp

    from benchmarks.generate import generate_scenario, size_spec
    from solver.capacity.table import build_capacity_table
    from solver.program.build import build_program
    from solver.program.data import build_program_data
    from solver.solve.strategy import plan_scenario
    from solver.survivability.verify import verify_plan

    spec = size_spec(size)
    scenario = with_node_model(generate_scenario(size, seed), share_nodes)
    result = RunResult(size, solver, spec.workloads, spec.gpu_types, spec.zones, spec.slices,
                       nodes=_nodes(share_nodes))
    start = time.perf_counter()
    table = build_capacity_table(scenario)
    result.table_s = time.perf_counter() - start
    start = time.perf_counter()
    program = build_program(build_program_data(scenario, table))
    result.build_s = time.perf_counter() - start
    variables = program.prob.variables()
    result.variables = len(variables)
    result.integer_variables = sum(1 for v in variables if v.cat == pulp.LpInteger)
    result.constraints = len(program.prob.constraints)
    del program, variables
    start = time.perf_counter()
    plan = plan_scenario(scenario, capacity_table=table, solver=solver,
                         time_limit_s=time_limit_s, gap=gap)
    result.plan_s = time.perf_counter() - start
    result.solve_s = plan.solver.seconds
    result.status = plan.status.value
    result.gap, result.bound = plan.solver.gap, plan.solver.bound
    if plan.allocations:
        result.cost_per_month = plan.cost.per_month
        result.verify_problems = len(verify_plan(plan, scenario, table))
    result.peak_rss_mib = _rss_mib()
    result.cpu_s = _cpu_s()
    return result


def _nodes(share_nodes: bool) -> str:
    return "shared" if share_nodes else "dedicated"


def with_node_model(scenario: Scenario, share_nodes: bool) -> Scenario:
    """The scenario with ``policy.share_nodes`` set (the generator keeps the policy default)."""
    policy = scenario.policy.model_copy(update={"share_nodes": share_nodes})
    return scenario.model_copy(update={"policy": policy})


def spawn(size: str, solver: str, time_limit_s: float, gap: float, seed: int,
          share_nodes: bool = True) -> RunResult:
    """Run one (size, solver) measurement in a fresh Python process."""
    from benchmarks.generate import size_spec

    spec = size_spec(size)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(out), "--sizes", size,
               "--solvers", solver, "--time-limit", str(time_limit_s), "--gap", str(gap),
               "--seed", str(seed), "--share-nodes" if share_nodes else "--dedicated"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                  timeout=time_limit_s + CHILD_GRACE_S, check=False)
        except subprocess.TimeoutExpired:
            return RunResult(size, solver, spec.workloads, spec.gpu_types, spec.zones,
                             spec.slices, nodes=_nodes(share_nodes),
                             error=f"stopped after {time_limit_s + CHILD_GRACE_S} s")
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return RunResult(size, solver, spec.workloads, spec.gpu_types, spec.zones,
                             spec.slices, nodes=_nodes(share_nodes),
                             error=f"exit {done.returncode}: {tail[0]}")
        return RunResult(**json.loads(out.read_text()))


@dataclass
class BaselineResult:
    """A rule-of-thumb fleet on one size: cost, shape, and what it breaks."""

    size: str
    name: str
    cost_per_month: float | None
    gpus: int = 0
    gpu_types: str = ""
    broken_steady: int = 0
    """Workloads whose demand the fleet does not carry at their target utilization."""
    broken_failure: int = 0
    """Workloads that meet demand but not a failure they must survive."""
    workloads: int = 0


def baseline_results(size: str, seed: int) -> list[BaselineResult]:
    """Both rule-of-thumb baselines on the size's scenario, checked with ``check_fleet``."""
    from benchmarks.generate import generate_scenario
    from solver.capacity.table import build_capacity_table
    from solver.studies.baselines import baseline_fleet, baselines
    from solver.survivability.check import check_fleet

    scenario = generate_scenario(size, seed)
    table = build_capacity_table(scenario)
    out = []
    for name, base in baselines(scenario, table).items():
        if base is None:
            out.append(BaselineResult(size, name, None))
            continue
        broken = check_fleet(baseline_fleet(base, scenario), scenario, table).broken
        steady = {r.workload for r in broken if r.failure == "none"}
        failure = {r.workload for r in broken} - steady
        out.append(BaselineResult(
            size, name, base.cost_per_month, gpus=sum(n.gpus for n in base.nodes),
            gpu_types=", ".join(sorted({p.gpu for p in base.pools})),
            broken_steady=len(steady), broken_failure=len(failure),
            workloads=len(scenario.workloads)))
    return out


def baseline_markdown(rows: list[BaselineResult]) -> str:
    """The baselines as a markdown table: cost, GPUs, types, requirements broken."""
    lines = ["| size | baseline | GPU types | GPUs | cost $/month | workloads short of demand at "
             "target utilization | further workloads not surviving a required failure |",
             "|---|---|---|---:|---:|---:|---:|"]
    for b in rows:
        if b.cost_per_month is None:
            lines.append(f"| {b.size} | {b.name} | no fleet fits the stock | — | — | — | — |")
            continue
        lines.append(f"| {b.size} | {b.name} | {b.gpu_types} | {b.gpus:,} | "
                     f"{_money(b.cost_per_month)} | {b.broken_steady} of {b.workloads} | "
                     f"{b.broken_failure} of {b.workloads} |")
    return "\n".join(lines)


def _money(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.2%}"


def _saving(cost: float | None, baseline: float | None) -> float | None:
    if cost is None or baseline is None or baseline <= 0:
        return None
    return 1.0 - cost / baseline


def markdown(results: list[RunResult], baselines: dict[str, dict[str, float | None]]) -> str:
    """The results as a markdown table, one row per (size, solver)."""
    best_bound: dict[str, float] = {}
    for r in results:
        if r.bound is not None:
            best_bound[r.size] = max(best_bound.get(r.size, r.bound), r.bound)
    head = ("| size | W×G×Z×S | nodes | vars (int) | rows | solver | table s | build s | solve s | "
            "CPU s | status | gap | gap vs best bound | cost $/month | verified | peak MiB | "
            "single-type $/month | saving | best-type $/month | saving |")
    align = ["---"] * 6 + ["---:"] * 4 + ["---"] + ["---:"] * 3 + ["---"] + ["---:"] * 5
    lines = [head, "|" + "|".join(align) + "|"]
    for r in results:
        base = baselines.get(r.size, {})
        single, best = base.get("single_type"), base.get("best_type_per_workload")
        bound = best_bound.get(r.size)
        vs_bound = (None if r.cost_per_month is None or bound is None
                    else max(0.0, 1.0 - bound / r.cost_per_month))
        verified = ("—" if r.verify_problems is None
                    else "yes" if r.verify_problems == 0 else f"{r.verify_problems} problems")
        if r.error:
            cells = [r.size, f"{r.workloads}×{r.gpu_types}×{r.zones}×{r.slices}", r.nodes,
                     "—", "—",
                     r.solver, *["—"] * 4, f"error: {r.error}", *["—"] * 9]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        status = r.status
        lines.append(
            f"| {r.size} | {r.workloads}×{r.gpu_types}×{r.zones}×{r.slices} | {r.nodes} | "
            f"{r.variables:,} ({r.integer_variables:,}) | {r.constraints:,} | {r.solver} | "
            f"{r.table_s:.2f} | {r.build_s:.2f} | {r.solve_s:.1f} | {r.cpu_s:.1f} | {status} | "
            f"{_pct(r.gap)} | {_pct(vs_bound)} | {_money(r.cost_per_month)} | {verified} | "
            f"{r.peak_rss_mib:,.0f} | {_money(single)} | {_pct(_saving(r.cost_per_month, single))}"
            f" | {_money(best)} | {_pct(_saving(r.cost_per_month, best))} |"
        )
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def code_version() -> str:
    """The commit measured, and which solver/ or models/ files differed from it.

    To measure exactly a commit while others edit the tree, export it and run from there:
    ``git archive HEAD | tar -x -C DIR; git rev-parse --short HEAD > DIR/COMMIT``.
    """
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT,
                              check=False)
        return done.stdout.rstrip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD").strip()
    if not commit:  # an exported tree (git archive): the exporter leaves the id in COMMIT
        stamp = ROOT / "COMMIT"
        commit = stamp.read_text().strip() if stamp.exists() else "unknown"
    dirty = git("status", "--porcelain", "--", "solver", "models").splitlines()
    changed = sorted(line[3:] for line in dirty)
    return f"commit {commit}" + (f" + uncommitted {', '.join(changed)}" if changed else "")


def machine() -> str:
    """One line on where the numbers were measured."""
    load = os.getloadavg()[0]
    return (f"{_cpu_model()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, PuLP {version('pulp')}, "
            f"highspy {version('highspy')}, load average at start {load:.1f}")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--sizes", default="small,medium,large",
                   help="comma-separated sizes of benchmarks/generate.py")
    p.add_argument("--solvers", default="highs,cbc", help="comma-separated: highs, cbc")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve")
    p.add_argument("--gap", type=float, default=0.01, help="relative MIP gap to stop at")
    p.add_argument("--seed", type=int, default=0, help="scenario generator seed")
    nodes = p.add_mutually_exclusive_group()
    nodes.add_argument("--share-nodes", dest="share_nodes", action="store_true", default=True,
                       help="shared nodes (policy.share_nodes true, the default)")
    nodes.add_argument("--dedicated", dest="share_nodes", action="store_false",
                       help="dedicated pools (policy.share_nodes false: decomposition alone)")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> None:
    """Run every (size, solver), print a markdown table; one subprocess per run."""
    args = _parser().parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    solvers = [s for s in args.solvers.split(",") if s]
    if args.child is not None:
        result = run_child(sizes[0], solvers[0], args.time_limit, args.gap, args.seed,
                           args.share_nodes)
        args.child.write_text(json.dumps(asdict(result)))
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = machine()
    results: list[RunResult] = []
    costs: dict[str, dict[str, float | None]] = {}
    base_rows: list[BaselineResult] = []
    for size in sizes:
        found = baseline_results(size, args.seed)
        base_rows.extend(found)
        costs[size] = {b.name: b.cost_per_month for b in found}
        for solver in solvers:
            print(f"… {size} / {solver} / {_nodes(args.share_nodes)}", file=sys.stderr,
                  flush=True)
            r = spawn(size, solver, args.time_limit, args.gap, args.seed, args.share_nodes)
            print(f"  {r.status} in {r.plan_s:.1f} s, gap {_pct(r.gap)}, "
                  f"cost {_money(r.cost_per_month)} {r.error}", file=sys.stderr, flush=True)
            results.append(r)
    code = code_version()
    print(f"Measured {started} on {header}; {code}; {_nodes(args.share_nodes)} nodes, "
          f"time limit {args.time_limit:g} s, gap {args.gap:g}, seed {args.seed}.\n")
    print(markdown(results, costs))
    print()
    print(baseline_markdown(base_rows))
    if args.json is not None:
        payload: dict[str, Any] = {"started": started, "machine": header, "code": code,
                                   "time_limit_s": args.time_limit, "gap": args.gap,
                                   "seed": args.seed, "nodes": _nodes(args.share_nodes),
                                   "baselines": [asdict(b) for b in base_rows],
                                   "runs": [asdict(r) for r in results]}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
