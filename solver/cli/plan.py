"""``fleetplan plan``: the cheapest fleet for a scenario, written to ``outputs/<scenario>/``."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import click

from models.common import PurchaseKind
from models.errors import InputError, Problem
from models.loader import read_document, validate_as
from models.plan import Plan, SolveStatus
from models.scenario import Scenario
from solver.capacity.table import build_capacity_table
from solver.cli.common import (
    echo_json,
    json_option,
    load,
    scenario_argument,
    solve_options,
)
from solver.cli.signoff import sign_off, sign_off_periods
from solver.outputs.destinations import PlanDirectory
from solver.outputs.figures import (
    Margin,
    peak_utilization,
    slice_figures,
    survivability_margins,
)
from solver.outputs.plan_dir import PLAN_DIR_FILES, write_plan_outputs
from solver.outputs.schedule import schedule_lines
from solver.solve.assemble import solver_summary
from solver.solve.horizon import first_period_scenario, keep_orders, plan_horizon
from solver.solve.strategy import plan_scenario

#: Bytes of a directory name on common file systems (ext4, xfs, btrfs, APFS, NTFS: 255).
NAME_MAX_BYTES = 255

#: Statuses that may carry a fleet (exit 0 when they do); the others exit 1.
HAS_FLEET = (SolveStatus.optimal, SolveStatus.feasible, SolveStatus.time_limit)


def gpu_table(plan: Plan, scenario: Scenario | None = None) -> list[str]:
    """GPUs by type × zone × purchase kind: reserved, and the most elastic in any slice; zones
    with the account's name beside the id where the scenario maps one."""
    peak: dict[tuple[str, str, PurchaseKind], int] = defaultdict(int)
    for n in plan.nodes:
        key = (n.gpu, n.zone, n.purchase)
        peak[key] = max(peak[key], n.gpus)
    lines = [f"  {'GPU':<10} {'zone':<12} {'reserved':>9} {'on-demand':>10} {'spot':>6}"]
    for gpu, zone in sorted({(g, z) for g, z, _ in peak}):
        cells = [peak.get((gpu, zone, k), 0) for k in PurchaseKind]
        label = scenario.zone_label(zone) if scenario is not None else zone
        lines.append(f"  {gpu:<10} {label:<12} {cells[0]:>9} {cells[1]:>10} {cells[2]:>6}")
    lines.append("  (on-demand and spot: the most running in any slice)")
    return lines


def workload_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """Per workload: configurations used and peak utilization of the SLO-holding rate (as the
    report and workbook give it: :func:`solver.outputs.figures.peak_utilization`)."""
    lines = []
    figures = slice_figures(plan, scenario)
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        configs = sorted({f"{a.gpu}×{a.tp} ({a.capacity_source.value})"
                          for a in plan.allocations if a.workload == wl.name})
        util = peak_utilization(figures, wl.name) or 0.0
        cost = next((c for c in plan.workload_costs if c.workload == wl.name), None)
        per_mtok = "-" if cost is None or cost.per_million_tokens is None else (
            f"{cost.per_million_tokens:.3f}")
        lines.append(f"  {wl.name:<20} {', '.join(configs) or '-':<34} peak util {util:5.1%}  "
                     f"{per_mtok} {plan.cost.currency}/Mtok")
    return lines


def survivability_lines(plan: Plan) -> list[str]:
    """Per workload: the failures it must survive, and the worst margin over slices
    (:func:`~solver.outputs.figures.survivability_margins`, as the report and workbook give it)."""
    by_workload: dict[str, list[Margin]] = {}
    for m in survivability_margins(plan):
        if m.failure != "none" and m.margin is not None:
            by_workload.setdefault(m.workload, []).append(m)
    lines = []
    for w, items in sorted(by_workload.items()):
        failing = sorted(m.failure for m in items if not m.holds)
        tightest = min(items, key=lambda m: (m.margin, m.failure))
        verdict = "holds" if not failing else "FAILS " + ", ".join(failing)
        lines.append(f"  {w:<20} {len(items)} failures checked, {verdict}; tightest "
                     f"{tightest.failure} ({tightest.margin:+.0%})")
    return lines or ["  no workload asks for n_plus_1 or zone_loss"]


def unproven_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """What a plan stopped at its time limit proves, and how to prove more (else nothing)."""
    s = plan.solver
    if plan.status is not SolveStatus.time_limit or s.gap is None or s.bound is None:
        return []
    out = [f"not proven within the requested gap: no fleet costs less than {s.bound:,.0f} "
           f"{plan.cost.currency}/month, so this one is at most {s.gap:.1%} above the cheapest"]
    hint = "a longer --time-limit"
    if scenario.policy.share_nodes:
        hint += ("; or dedicated pools (policy.share_nodes: false), which are solved workload by "
                 "workload and proven much faster, but cost more")
    return [*out, f"  to narrow it: {hint} (docs/program.md, \"Where the gap comes from\")"]


def render(plan: Plan, scenario: Scenario, written: list[Path]) -> list[str]:
    """The readable summary."""
    out = [f"plan {plan.scenario}: {plan.status.value} ({solver_summary(plan.solver)})"]
    out += unproven_lines(plan, scenario)
    out += schedule_lines(plan)
    if plan.horizon is not None and plan.nodes:
        out.append(f"the fleet below is the first period's ({plan.horizon.start}) if demand "
                   f"follows `{plan.horizon.fleet_shown}`:")
    if plan.status not in HAS_FLEET or not plan.nodes:
        out.append("no fleet meets every requirement:" if plan.diagnosis else "no fleet found")
        out += [f"  - {d.message}" for d in plan.diagnosis]
    else:
        c = plan.cost
        mtok = "-" if c.per_million_tokens is None else f"{c.per_million_tokens:.3f}"
        out_mtok = ("-" if c.per_million_output_tokens is None
                    else f"{c.per_million_output_tokens:.3f}")
        out.append(f"cost: {c.per_month:,.0f} {c.currency}/month; {mtok} {c.currency} per "
                   f"million tokens ({out_mtok} per million output tokens)")
        out.append("GPUs:")
        out += gpu_table(plan, scenario)
        out.append("workloads:")
        out += workload_lines(plan, scenario)
        out.append("survivability:")
        out += survivability_lines(plan)
    out.append("wrote " + ", ".join(str(p) for p in written))
    return out


def output_dir(scenario: Scenario, scenario_path: Path | None, out_dir: Path | None) -> Path:
    """``--out``, else ``outputs/<scenario name>/``; a name that is not one plain directory name
    (``../x``, ``a/b``) would write elsewhere, so it is refused."""
    if out_dir is not None:
        return out_dir
    name = scenario.name
    if Path(name).name != name or name in (".", "..") or "\\" in name:
        raise InputError([Problem(str(scenario_path or "demo"), "name",
                                  f"`{name}` cannot name the output directory outputs/{name}/",
                                  "use a name without `/`, `\\` or `..`, or give --out")])
    if len(os.fsencode(name)) > NAME_MAX_BYTES:
        raise InputError([Problem(str(scenario_path or "demo"), "name",
                                  f"`{name[:40]}…` is {len(os.fsencode(name))} bytes: too long "
                                  f"for a directory name (at most {NAME_MAX_BYTES})",
                                  "give --out, or a shorter name")])
    return Path("outputs") / name


@click.command("plan")
@scenario_argument()
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Output directory (default: outputs/<scenario name>/).")
@solve_options()
@json_option
@click.option("--existing", "existing", type=click.Path(path_type=Path), default=None,
              help="An earlier plan.json over periods: keep the orders it placed already "
                   "(due before this plan's date) and re-plan the rest.")
@click.option("--robust", is_flag=True, help="Over demand scenarios: minimise the worst "
              "case instead of the expected cost.")
def command(scenario: Path | None, out_dir: Path | None, solver: str, time_limit_s: float,
            gap: float, as_json: bool, existing: Path | None, robust: bool) -> None:
    """Plan the cheapest fleet for SCENARIO (default: the built-in demo)."""
    sc = load(scenario)
    if existing is not None:
        earlier = validate_as(Plan, read_document(existing), str(existing))
        sc = keep_orders(sc, earlier, str(existing))
    out = output_dir(sc, scenario, out_dir)
    with PlanDirectory(out, "--out", PLAN_DIR_FILES,
                       inputs=[scenario, existing, *sc.sources]) as target:
        plan, shown = _plan(sc, solver, time_limit_s, gap, as_json, robust)
        write_plan_outputs(plan, sc, target.staging, shown)
        written = target.commit()
    if as_json:
        echo_json(plan.model_dump(mode="json"))
    else:
        for line in render(plan, shown, written):
            click.echo(line)
    if plan.status not in HAS_FLEET or not plan.allocations:
        raise SystemExit(1)  # infeasible, or no fleet found within the time limit


def _plan(sc: Scenario, solver: str, time_limit_s: float, gap: float, as_json: bool,
          robust: bool) -> tuple[Plan, Scenario]:
    """The plan of ``sc``, and the single-period scenario its fleet was sized for."""
    if not as_json:
        click.echo(f"planning {sc.name}: {len(sc.workloads)} workloads, {len(sc.zones)} zones "
                   f"(time limit {time_limit_s:g} s)…", err=True)
    if sc.multi_period:
        plan = sign_off_periods(plan_horizon(sc, solver=solver, time_limit_s=time_limit_s,
                                             gap=gap, robust=robust), sc)
        shown = first_period_scenario(plan, sc)
    else:
        table = build_capacity_table(sc)
        plan = sign_off(plan_scenario(sc, table, solver=solver, time_limit_s=time_limit_s,
                                      gap=gap), sc, table)
        shown = sc
    return plan, shown
