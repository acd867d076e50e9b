"""Benchmark the fleet planner on generated scenarios of three sizes and several demand scales.

For each case — a size of benchmarks/generate.py at a demand scale (×1 the benchmark scenarios,
×25 and ×100 the same scenarios with every peak, daily volume and stock multiplied: fleets of
hundreds to thousands of GPUs) — and each solver, one subprocess, so runs share neither their
peak memory nor warm caches, measures:

- capacity-table build time (:func:`solver.capacity.table.build_capacity_table`);
- program build time (:func:`solver.program.data.build_program_data` +
  :func:`solver.program.build.build_program`), with the program's variable and row counts;
- the plan (``plan_scenario`` at ``--time-limit`` and ``--gap``): wall time of the whole call,
  status, proven gap and bound from the plan's solver report, monthly cost, and whether the
  independent verifier (:func:`solver.survivability.verify.verify_plan`) accepts the plan;
- peak memory: ``ru_maxrss`` of the subprocess plus that of its children (CBC runs as a child
  process; HiGHS runs inside the subprocess);
- CPU time of the subprocess and its children (wall time alone misleads on a loaded machine).

**The cold reference.** For HiGHS, a second subprocess right after the plan's solves *the same
program* cold: written to MPS by PuLP, read by HiGHS (``highspy``) with the options the planner
gives it (threads, seed, gap) and the same time limit, no start, nothing else. Its fleet, bound,
wall and CPU time sit beside the plan's, and the table gives the plan's cost as a ratio of the
cold solve's, both measured in the same run under the same load: the planner's strategy (starts,
improvement steps) must pay for itself against that ratio (≤ 1), not against figures taken on
another day. ``--solvers highs,highs-arrays`` adds a second cold solve, of the arrays the plan's
own solves are given: HiGHS takes another path on the MPS file's rounded coefficients, and the
spread between the two cold solves says how much of a ratio near 1 is that path.

The parent also prices the two baselines of :mod:`solver.studies.baselines` on the ×1 scenarios, and
reports the planner's saving against each: 1 − planner ÷ baseline. CBC reports no bound through
PuLP, so the table also gives every run's gap against the best bound any run proved on that
case, and against the best fleet known (``BEST_KNOWN``: the cheapest seen,
benchmarks/results/scale.md).

Run (from the repository root)::

    /work/venv/bin/python benchmarks/bench_plan.py [--sizes small,medium,large]
        [--scales 1,25] [--also large:100] [--solvers highs] [--no-cold]
        [--time-limit 60] [--gap 0.01] [--seed 0] [--share-nodes | --dedicated]
        [--quarterly medium:25] [--json out.json]

**The multi-period size** (``--quarterly``, benchmarks/bench_quarterly.py): each case over 4
quarters × 3 demand scenarios, planned as ``fleetplan plan`` plans a horizon and solved cold
by HiGHS, at twice ``--time-limit``.
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
from dataclasses import asdict, dataclass, fields
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

#: Cheapest fleet known per (size, scale) of seed 0 with shared nodes [USD/month]
#: (benchmarks/results/scale.md, "Run F"), on the programs of 2026-12-02 evening (the capacity
#: model's later calibration passes changed every program: the morning's figures were below today's
#: proven bounds at ×100 and above today's plans at small ×25): medium and large ×25 the 60-s
#: plans from which 300 s of HiGHS found nothing cheaper (benchmarks/best_known.py, 21:03);
#: the others the cheapest seen in any run (plan or cold) of that evening — small ×1 and large
#: ×1 the cold solves of run F (large ×1 quiet), medium ×1 and small ×25 its plans, large
#: ×100 a plan with the ``hours`` stage given 0.45 of the limit (an A/B variant, not kept).
#: Medium ×25 is run I's plan (2026-12-03, 1,262,597 in four runs, verified), on that day's
#: program (its LP 1,224,643 against run F's 1,220,949: the others may be stale the same way).
#: Small ×25 is run K's plan with the ``polish`` stage around the joint solve's own fleet
#: (2026-12-03 16:48, 1,145,833 verified; run J's 1,145,853; run H's quiet plan without the
#: ×25 path was 1,146,737): run F's 1,126,694 lay below every proven bound of today's program
#: (run I: 1,136,259).
BEST_KNOWN: dict[tuple[str, int], float] = {
    ("small", 1): 96_341.0, ("medium", 1): 100_573.0, ("large", 1): 115_078.0,
    ("small", 25): 1_145_683.0, ("medium", 25): 1_262_597.0, ("large", 25): 940_513.0,
    ("large", 100): 3_422_880.0,
}

#: The cases run by default beside ``--sizes`` × ``--scales``: one size at ×100.
ALSO_DEFAULT = "large:100"


@dataclass
class RunResult:
    """What one (case, solver) subprocess measured; ``solver`` ``highs-cold`` is the reference."""

    size: str
    solver: str
    workloads: int
    gpu_types: int
    zones: int
    slices: int
    scale: int = 1
    nodes: str = "shared"
    """Node model: ``shared`` (policy.share_nodes, the default) or ``dedicated`` pools."""
    variables: int = 0
    integer_variables: int = 0
    constraints: int = 0
    table_s: float = 0.0
    build_s: float = 0.0
    solve_s: float = 0.0
    """The plan's ``solver.seconds`` (the cold reference: HiGHS's own run time) [s]."""
    plan_s: float = 0.0
    """Wall time of plan_scenario: builds again, solves, reads the plan back (the cold
    reference: reading the MPS file and solving it) [s]."""
    cpu_s: float = 0.0
    """User + system CPU time of the subprocess and its children [s]."""
    status: str = "error"
    gap: float | None = None
    bound: float | None = None
    cost_per_month: float | None = None
    verify_problems: int | None = None
    peak_rss_mib: float = 0.0
    load_average: float = 0.0
    """One-minute load average when the run started."""
    stages: str = ""
    """The plan's ``solver.stages``: name, seconds, cost and bound after each (where the plan
    spent its time; empty for the cold reference)."""
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


def _program_counts(result: RunResult, program: Any) -> None:
    import pulp

    variables = program.prob.variables()
    result.variables = len(variables)
    result.integer_variables = sum(1 for v in variables if v.cat == pulp.LpInteger)
    result.constraints = len(program.prob.constraints())


def _prepared(size: str, scale: int, solver: str, seed: int,
              share_nodes: bool) -> tuple[Scenario, Any, Any, RunResult]:
    """The case's scenario, capacity table and built program, timed into a fresh result."""
    from benchmarks.generate import generate_scenario, size_spec
    from solver.capacity.table import build_capacity_table
    from solver.program.build import build_program
    from solver.program.data import build_program_data

    spec = size_spec(size)
    scenario = with_node_model(generate_scenario(size, seed, scale), share_nodes)
    result = RunResult(size, solver, spec.workloads, spec.gpu_types, spec.zones, spec.slices,
                       scale=scale, nodes=_nodes(share_nodes), load_average=os.getloadavg()[0])
    start = time.perf_counter()
    table = build_capacity_table(scenario)
    result.table_s = time.perf_counter() - start
    start = time.perf_counter()
    program = build_program(build_program_data(scenario, table))
    result.build_s = time.perf_counter() - start
    _program_counts(result, program)
    return scenario, table, program, result


def run_child(size: str, solver: str, time_limit_s: float, gap: float, seed: int,
              share_nodes: bool = True, scale: int = 1) -> RunResult:
    """Measure one (case, solver) plan in this process (called inside the subprocess)."""
    from solver.solve.strategy import plan_scenario
    from solver.survivability.verify import verify_plan

    scenario, table, program, result = _prepared(size, scale, solver, seed, share_nodes)
    del program
    start = time.perf_counter()
    plan = plan_scenario(scenario, capacity_table=table, solver=solver,
                         time_limit_s=time_limit_s, gap=gap)
    result.plan_s = time.perf_counter() - start
    result.solve_s = plan.solver.seconds
    result.status = plan.status.value
    result.gap, result.bound = plan.solver.gap, plan.solver.bound
    result.stages = stages_line(plan.solver.stages)
    if plan.allocations:
        result.cost_per_month = plan.cost.per_month
        result.verify_problems = len(verify_plan(plan, scenario, table))
    result.peak_rss_mib = _rss_mib()
    result.cpu_s = _cpu_s()
    return result


def stages_line(stages: Any) -> str:
    """A plan's stages on one line: ``name seconds s cost/bound`` each, in order."""
    return "; ".join(f"{s.name} {s.seconds:.1f}s {_money(s.cost_after)}/{_money(s.bound_after)}"
                     for s in stages)


def run_cold_child(size: str, time_limit_s: float, gap: float, seed: int,
                   share_nodes: bool = True, scale: int = 1, arrays: bool = False) -> RunResult:
    """The cold reference: the case's program written to MPS and solved by HiGHS alone, with
    the planner's solver options (threads, seed, gap) and the time limit, from no start.

    ``arrays`` (solver ``highs-arrays``): the same, from the arrays the plan's own solves are
    given (:func:`solver.solve.highs.model_of`) instead of the MPS file. The MPS file rounds
    every coefficient to 13 significant digits, and on that equally valid program HiGHS takes
    another search path (small ×25, 20 nodes: 1,258,814 from the MPS file or the rounded
    arrays, 1,250,634 from the arrays): the two cold solves side by side show how much of a
    plan's difference from the cold solve is that path, not the plan's strategy."""
    import highspy

    from solver.solve.backends import SOLVER_SEED, SOLVER_THREADS
    from solver.solve.highs import model_of

    _, _, program, result = _prepared(size, scale, COLD_ARRAYS if arrays else COLD, seed,
                                      share_nodes)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "program.mps"
        lp = model_of(program).lp if arrays else None
        if lp is None:
            program.prob.writeMPS(str(path))
        del program
        start = time.perf_counter()
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        if lp is None:
            highs.readModel(str(path))
        else:
            highs.passModel(lp)
    for option, value in (("time_limit", float(time_limit_s)), ("mip_rel_gap", gap),
                          ("threads", SOLVER_THREADS), ("random_seed", SOLVER_SEED)):
        highs.setOptionValue(option, value)
    highs.run()
    result.plan_s = time.perf_counter() - start
    info = highs.getInfo()
    status = highs.getModelStatus()
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    result.solve_s = float(highs.getRunTime())
    result.status = {highspy.HighsModelStatus.kOptimal: "optimal",
                     highspy.HighsModelStatus.kTimeLimit: "time_limit",
                     highspy.HighsModelStatus.kInfeasible: "infeasible"}.get(status, str(status))
    result.bound = _finite(info.mip_dual_bound)
    if found:
        result.cost_per_month = float(info.objective_function_value)
        result.gap = _finite(info.mip_gap)
    result.peak_rss_mib = _rss_mib()
    result.cpu_s = _cpu_s()
    return result


def _finite(x: float) -> float | None:
    return None if x != x or abs(x) == float("inf") else float(x)


def _nodes(share_nodes: bool) -> str:
    return "shared" if share_nodes else "dedicated"


def with_node_model(scenario: Scenario, share_nodes: bool) -> Scenario:
    """The scenario with ``policy.share_nodes`` set (the generator keeps the policy default)."""
    policy = scenario.policy.model_copy(update={"share_nodes": share_nodes})
    return scenario.model_copy(update={"policy": policy})


#: Solver name of the cold reference runs.
COLD = "highs-cold"
#: Solver name of the cold solve of the plan's own HiGHS arrays (``--solvers highs,highs-arrays``).
COLD_ARRAYS = "highs-arrays"


def spawn(size: str, solver: str, time_limit_s: float, gap: float, seed: int,
          share_nodes: bool = True, scale: int = 1) -> RunResult:
    """Run one (case, solver) measurement in a fresh Python process (``COLD``: the reference)."""
    from benchmarks.generate import size_spec

    spec = size_spec(size)
    failed = RunResult(size, solver, spec.workloads, spec.gpu_types, spec.zones, spec.slices,
                       scale=scale, nodes=_nodes(share_nodes))
    result = child_json(Path(__file__), [
        "--sizes", size, "--scales", str(scale), "--also", "", "--solvers", solver,
        "--time-limit", str(time_limit_s), "--gap", str(gap), "--seed", str(seed),
        "--share-nodes" if share_nodes else "--dedicated"], time_limit_s)
    if isinstance(result, str):
        failed.error = result
        return failed
    known = {f.name for f in fields(RunResult)}
    return RunResult(**{k: v for k, v in result.items() if k in known})


def child_json(script: Path, args: list[str], time_limit_s: float) -> dict[str, Any] | str:
    """Run ``script --child OUT *args`` in a fresh Python process, given the limit and a grace.

    Returns the JSON record the child wrote to OUT, or why there is none (a timeout, or the exit
    code and the last line the child printed).
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(script.resolve()), "--child", str(out), *args]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                  timeout=time_limit_s + CHILD_GRACE_S, check=False)
        except subprocess.TimeoutExpired:
            return f"stopped after {time_limit_s + CHILD_GRACE_S} s"
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"exit {done.returncode}: {tail[0]}"
        record: dict[str, Any] = json.loads(out.read_text())
        return record


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


def _case(r: RunResult) -> str:
    return r.size if r.scale == 1 else f"{r.size} ×{r.scale}"


def _best_bounds(results: list[RunResult]) -> dict[tuple[str, int], float]:
    best: dict[tuple[str, int], float] = {}
    for r in results:
        if r.bound is not None:
            key = (r.size, r.scale)
            best[key] = max(best.get(key, r.bound), r.bound)
    return best


def _above(cost: float | None, reference: float | None) -> float | None:
    """How far ``cost`` lies above ``reference`` [1] (negative: below it)."""
    if cost is None or reference is None or reference <= 0:
        return None
    return cost / reference - 1.0


def markdown(results: list[RunResult], baselines: dict[str, dict[str, float | None]]) -> str:
    """Every run as a markdown table row, one per (case, solver), the cold reference included."""
    best_bound = _best_bounds(results)
    head = ("| case | W×G×Z×S | nodes | vars (int) | rows | solver | table s | build s | solve s | "
            "wall s | CPU s | load | status | gap | gap vs best bound | bound | cost $/month | "
            "verified | peak MiB | single-type $/month | saving | best-type $/month | saving |")
    align = ["---"] * 6 + ["---:"] * 6 + ["---"] + ["---:"] * 4 + ["---"] + ["---:"] * 5
    lines = [head, "|" + "|".join(align) + "|"]
    for r in results:
        base = baselines.get(r.size, {}) if r.scale == 1 else {}
        single, best = base.get("single_type"), base.get("best_type_per_workload")
        bound = best_bound.get((r.size, r.scale))
        vs_bound = (None if r.cost_per_month is None or bound is None
                    else max(0.0, 1.0 - bound / r.cost_per_month))
        verified = ("—" if r.verify_problems is None
                    else "yes" if r.verify_problems == 0 else f"{r.verify_problems} problems")
        dims = f"{r.workloads}×{r.gpu_types}×{r.zones}×{r.slices}"
        if r.error:
            cells = [_case(r), dims, r.nodes, "—", "—", r.solver, *["—"] * 6,
                     f"error: {r.error}", *["—"] * 10]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        lines.append(
            f"| {_case(r)} | {dims} | {r.nodes} | {r.variables:,} ({r.integer_variables:,}) | "
            f"{r.constraints:,} | {r.solver} | {r.table_s:.2f} | {r.build_s:.2f} | "
            f"{r.solve_s:.1f} | {r.plan_s:.1f} | {r.cpu_s:.1f} | {r.load_average:.1f} | "
            f"{r.status} | {_pct(r.gap)} | {_pct(vs_bound)} | {_money(r.bound)} | "
            f"{_money(r.cost_per_month)} | {verified} | {r.peak_rss_mib:,.0f} | {_money(single)} | "
            f"{_pct(_saving(r.cost_per_month, single))} | {_money(best)} | "
            f"{_pct(_saving(r.cost_per_month, best))} |"
        )
    return "\n".join(lines)


def against_cold(results: list[RunResult]) -> str:
    """Per case, the HiGHS plan beside the cold solve of the same program in the same run."""
    cold = {(r.size, r.scale, r.nodes): r for r in results if r.solver == COLD}
    head = ("| case | plan $/month | plan gap | plan bound | plan wall s | plan CPU s | "
            "cold $/month | cold gap | cold bound | cold wall s | cold CPU s | plan ÷ cold | "
            "plan vs best known |")
    lines = [head, "|---|" + "---:|" * 12]
    for r in results:
        c = cold.get((r.size, r.scale, r.nodes))
        if r.solver != "highs" or c is None:
            continue
        ratio = (None if r.cost_per_month is None or c.cost_per_month is None
                 else r.cost_per_month / c.cost_per_month)
        known = _above(r.cost_per_month, BEST_KNOWN.get((r.size, r.scale)))
        lines.append(
            f"| {_case(r)} | {_money(r.cost_per_month)} | {_pct(r.gap)} | {_money(r.bound)} | "
            f"{r.plan_s:.1f} | {r.cpu_s:.1f} | {_money(c.cost_per_month)} | {_pct(c.gap)} | "
            f"{_money(c.bound)} | {c.plan_s:.1f} | {c.cpu_s:.1f} | "
            f"{'—' if ratio is None else f'{ratio:.3f}'} | "
            f"{'—' if known is None else f'{known:+.2%}'} |")
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


def parse_cases(sizes: str, scales: str, also: str) -> list[tuple[str, int]]:
    """(size, scale) cases: every size at every scale, then ``also`` (``size:scale,…``)."""
    cases = [(size, int(k)) for k in scales.split(",") if k for size in sizes.split(",") if size]
    for item in (a for a in also.split(",") if a):
        size, _, k = item.partition(":")
        if (size, int(k or 1)) not in cases:
            cases.append((size, int(k or 1)))
    return cases


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--sizes", default="small,medium,large",
                   help="comma-separated sizes of benchmarks/generate.py")
    p.add_argument("--scales", default="1,25",
                   help="comma-separated demand scales each size runs at")
    p.add_argument("--also", default=ALSO_DEFAULT,
                   help="further size:scale cases, comma-separated ('' for none)")
    p.add_argument("--solvers", default="highs",
                   help="comma-separated: highs, cbc, highs-arrays (the cold solve of the "
                        "plan's own arrays)")
    p.add_argument("--no-cold", dest="cold", action="store_false",
                   help="skip the cold HiGHS reference")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per solve")
    p.add_argument("--gap", type=float, default=0.01, help="relative MIP gap to stop at")
    p.add_argument("--seed", type=int, default=0, help="scenario generator seed")
    nodes = p.add_mutually_exclusive_group()
    nodes.add_argument("--share-nodes", dest="share_nodes", action="store_true", default=True,
                       help="shared nodes (policy.share_nodes true, the default)")
    nodes.add_argument("--dedicated", dest="share_nodes", action="store_false",
                       help="dedicated pools (policy.share_nodes false: decomposition alone)")
    p.add_argument("--quarterly", default=None,
                   help="multi-period cases (size:scale, 4 quarters × 3 demand scenarios: "
                        "benchmarks/bench_quarterly.py) run after the others; default "
                        "medium:25, '' for none")
    p.add_argument("--json", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    return p


def _quarterly(args: argparse.Namespace) -> list[Any]:
    """The multi-period cases (benchmarks/bench_quarterly.py), their table printed: at twice
    the time limit, as the issue's target gives the multi-period size 120 s to the others' 60."""
    from benchmarks.bench_quarterly import QUARTERLY_DEFAULT, markdown, run_cases

    cases = parse_cases("", "", QUARTERLY_DEFAULT if args.quarterly is None else args.quarterly)
    if not cases:
        return []
    limit = 2 * args.time_limit
    found = run_cases(cases, args.seed, limit, args.gap, args.share_nodes, args.cold)
    print(f"\nOver 4 quarters × 3 demand scenarios (time limit {limit:g} s):\n")
    print(markdown(found))
    return found


def main(argv: list[str] | None = None) -> None:
    """Run every (case, solver) and the cold references, print markdown tables; one subprocess
    per run, one run at a time."""
    args = _parser().parse_args(argv)
    cases = parse_cases(args.sizes, args.scales, args.also)
    solvers = [s for s in args.solvers.split(",") if s]
    if args.child is not None:
        (size, scale), solver = cases[0], solvers[0]
        if solver in (COLD, COLD_ARRAYS):
            result = run_cold_child(size, args.time_limit, args.gap, args.seed,
                                    args.share_nodes, scale, arrays=solver == COLD_ARRAYS)
        else:
            result = run_child(size, solver, args.time_limit, args.gap, args.seed,
                               args.share_nodes, scale)
        args.child.write_text(json.dumps(asdict(result)))
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = machine()
    results: list[RunResult] = []
    costs: dict[str, dict[str, float | None]] = {}
    base_rows: list[BaselineResult] = []
    for size, scale in cases:
        if scale == 1 and size not in costs:
            found = baseline_results(size, args.seed)
            base_rows.extend(found)
            costs[size] = {b.name: b.cost_per_month for b in found}
        runs = [*solvers, *([COLD] if args.cold and "highs" in solvers else [])]
        for solver in runs:
            print(f"… {size} ×{scale} / {solver} / {_nodes(args.share_nodes)}", file=sys.stderr,
                  flush=True)
            r = spawn(size, solver, args.time_limit, args.gap, args.seed, args.share_nodes,
                      scale)
            print(f"  {r.status} in {r.plan_s:.1f} s (CPU {r.cpu_s:.1f} s), gap {_pct(r.gap)}, "
                  f"bound {_money(r.bound)}, cost {_money(r.cost_per_month)} {r.error}",
                  file=sys.stderr, flush=True)
            if r.stages:
                print(f"  stages: {r.stages}", file=sys.stderr, flush=True)
            results.append(r)
    code = code_version()
    print(f"Measured {started} on {header}; {code}; {_nodes(args.share_nodes)} nodes, "
          f"time limit {args.time_limit:g} s, gap {args.gap:g}, seed {args.seed}.\n")
    if any(r.solver == COLD for r in results):
        print(against_cold(results))
        print()
    print(markdown(results, costs))
    if base_rows:
        print()
        print(baseline_markdown(base_rows))
    quarterly = _quarterly(args)
    if args.json is not None:
        payload: dict[str, Any] = {"started": started, "machine": header, "code": code,
                                   "time_limit_s": args.time_limit, "gap": args.gap,
                                   "seed": args.seed, "nodes": _nodes(args.share_nodes),
                                   "baselines": [asdict(b) for b in base_rows],
                                   "runs": [asdict(r) for r in results],
                                   "quarterly": [asdict(r) for r in quarterly]}
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
