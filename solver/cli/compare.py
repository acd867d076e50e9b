"""``fleetplan compare``: plan several scenarios (or variants of one) and put them side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from models.errors import InputError, Problem
from models.scenario import Scenario
from solver.cli.common import (
    echo_json,
    json_option,
    load,
    solve_options,
    sources_of,
    time_limit_given,
)
from solver.cli.replay_step import not_replayed_note
from solver.cli.show import Col, table_lines
from solver.outputs.destinations import OutputFile, check_output
from solver.outputs.figures import objective_cost
from solver.outputs.labels import plural, status_label
from solver.studies.compare import (
    COMPARE_THREADS,
    Compared,
    ComparisonRow,
    SolveOptions,
    build_variants,
    comparison_row,
    gpu_types,
    parse_vary,
    plan_all,
    within_gap,
    within_gap_lines,
)
from solver.studies.comparison_workbook import comparison_workbook_bytes


def _money(value: float | None) -> str | None:
    return None if value is None else f"{value:,.0f}"


def render_table(results: list[Compared], rows: list[ComparisonRow], currency: str) -> list[str]:
    """The side-by-side table for people: one column per scenario (its status as the
    progress lines, the report and the workbook say it)."""
    types = gpu_types(rows)
    # plans over periods: the month shown is the first period's, and what each spends inside
    # its horizon per demand scenario follows (as the workbook's Comparison sheet gives it);
    # a variant without spot spent 52 % more over the year for 3 % more in its first month
    spends: list[dict[str, float]] = [{} if c.plan.horizon is None else {
        s.scenario: s.cost_in_horizon for s in c.plan.horizon.scenarios} for c in results]
    names = list(dict.fromkeys(n for spend in spends for n in spend))
    first = " (over periods: first period)" if names else ""
    spent: list[list[object]] = [[f"spent inside the horizon, {n} [{currency}]",
                                  *(_money(spend.get(n)) for spend in spends)] for n in names]
    if names:  # what each plan minimised: the spend counts an owned order's whole capital
        spent.append([f"objective, as minimised [{currency}]", *(
            None if c.plan.horizon is None else _money(objective_cost(c.plan.horizon))
            for c in results)])
    lines: list[list[object]] = [
        ["scenario", *(r.label for r in rows)],
        ["status", *(status_label(c.plan.status, c.plan.solver).lower() for c in results)],
        [f"cost [{currency}/month]{first}", *(_money(r.cost_per_month) for r in rows)],
        *spent,
        [f"cost [{currency}/Mtok]{first}", *(None if r.per_million_tokens is None
                                             else f"{r.per_million_tokens:,.3f}" for r in rows)],
        ["committed share (reserved + owned)",
         *(None if r.committed_share is None else f"{r.committed_share:.0%}" for r in rows)],
        ["survivability", *(r.survivability for r in rows)],
        ["MIP gap", *(None if r.gap is None else f"{r.gap:.2%}" for r in rows)],
    ]
    if names:  # plans over periods: what each orders now, as the workbook's rows say
        lines.append(["ordered now (every demand scenario) [GPUs]", *(
            None if c.plan.horizon is None else
            f"{sum(o.gpus for o in c.plan.orders if o.scenario is None):,}" for c in results)])
    lines += [[f"{g} GPUs{first}", *(f"{r.gpus_by_type.get(g, 0):,}" for r in rows)]
              for g in types]
    return table_lines(["", *(Col(f"S{i + 1}", right=True) for i in range(len(rows)))], lines,
                       indent=0)


#: Diagnosis lines shown per scenario without a fleet (all are in the workbook).
SHOWN_DIAGNOSIS = 3


def cannot_meet_lines(results: list[Compared]) -> list[str]:
    """Why each scenario without a fleet has none: its diagnosis as `plan` prints it (an SLO
    no configuration meets named first), the first few lines; the workbook's row "What cannot
    be met" holds them all."""
    lines: list[str] = []
    for i, result in enumerate(results):
        diagnosis = result.plan.diagnosis
        if result.plan.nodes or not diagnosis:
            continue
        lines.append(f"S{i + 1} {result.variant.label}: no fleet meets every requirement:")
        lines += [f"  - {d.message}" for d in diagnosis[:SHOWN_DIAGNOSIS]]
        if len(diagnosis) > SHOWN_DIAGNOSIS:
            lines.append(f"  … and {len(diagnosis) - SHOWN_DIAGNOSIS} more (the workbook's row "
                         "'What cannot be met')")
    return lines


def to_json(results: list[Compared], rows: list[ComparisonRow], out: Path) -> dict[str, Any]:
    """Machine output: the side-by-side rows and each plan."""
    return {
        "workbook": str(out),
        "scenarios": [{
            "label": row.label, "status": row.status, "cost_per_month": row.cost_per_month,
            "per_million_tokens": row.per_million_tokens, "gpus_by_type": row.gpus_by_type,
            "committed_share": row.committed_share, "reserved_share": row.reserved_share,
            "survivability": row.survivability,
            "gap": row.gap, "plan": r.plan.model_dump(mode="json"),
        } for r, row in zip(results, rows, strict=True)],
        # pairs whose cost difference lies within the dearer one's proven gap
        "within_gap": [{"cheaper": rows[p.cheaper].label, "dearer": rows[p.dearer].label}
                       for p in within_gap(rows)],
    }


@click.command("compare")
@click.argument("scenarios", nargs=-1, type=click.Path(path_type=Path))
@click.option("--vary", "varies", multiple=True, metavar="KEY=V1,V2,…",
              help="Variants: growth=1,1.5,3 | survivability=none,n_plus_1,zone_loss | "
                   "spot=true,false | drop_gpu=none,H100-SXM. Repeat to combine.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("outputs/compare.xlsx"),
              show_default=True, help="Comparison workbook to write.")
@solve_options("Solver time limit per scenario [s]; default: {default:g} s for a scenario of "
               "one period. A scenario over periods without it is planned as `plan` plans it: "
               "to its search limits, safety stop at {safety:g} s.")
@json_option
def command(scenarios: tuple[Path, ...], varies: tuple[str, ...], out: Path, solver: str,
            time_limit_s: float, gap: float, as_json: bool) -> None:
    """Plan SCENARIO… (default: the built-in demo), or variants of them, and compare them.

    Writes one workbook: a side-by-side sheet, then one table per topic (purchase plan, pools,
    survivability, cost, assumed figures) over every scenario, and prints the same table.
    Exit 0 when every scenario was planned, an infeasible one included (its column says what
    cannot be met); 2 on bad input.
    """
    if out.suffix.lower() != ".xlsx":
        raise InputError([Problem(str(out), "", "the comparison is an Excel workbook",
                                  "name --out with .xlsx")])
    check_output(out, "--out", inputs=scenarios)
    loaded = [load(p) for p in scenarios] if scenarios else [load(None)]
    note = not_replayed_note(loaded, "compare")
    if note is not None:
        click.echo(note, err=True)
    finished: list[str] = []
    try:
        with OutputFile(out, "--out", inputs=sources_of(loaded)) as target:
            results, rows = _compare(loaded, varies, solver, time_limit_s, gap, finished,
                                     limit_given=time_limit_given())
            target.commit(comparison_workbook_bytes(results))
    except KeyboardInterrupt:
        # was click's bare "Aborted!", exit 1: nothing said what was lost
        done = f" ({', '.join(finished)})" if finished else ""
        click.echo(f"interrupted: {plural(len(finished), 'variant')} had finished{done}; "
                   f"{out} not written (the comparison is written whole); `fleetplan sweep` "
                   "keeps each finished variant and resumes (--resume)", err=True)
        raise SystemExit(130) from None
    if as_json:
        echo_json(to_json(results, rows, out))
        return
    for line in render_table(results, rows, results[0].plan.cost.currency):
        click.echo(line)
    for line in within_gap_lines(rows, results[0].plan.cost.currency):
        click.echo(line)
    for line in cannot_meet_lines(results):
        click.echo(line)
    click.echo(f"wrote {out}")


def _compare(loaded: list[Scenario], varies: tuple[str, ...], solver: str, time_limit_s: float,
             gap: float, finished_labels: list[str] | None = None, limit_given: bool = True
             ) -> tuple[list[Compared], list[ComparisonRow]]:
    """Plan every variant, with progress on stderr; ``finished_labels`` gains each variant's
    label as it finishes (what an interruption has to say). Each variant is planned as
    ``fleetplan plan`` plans it: its threads, and over periods without a time limit given
    (``limit_given``) to its work limits with the safety stop (``SolveOptions``)."""
    variants = build_variants(loaded, [parse_vary(v) for v in varies])
    total = len(variants)
    click.echo(f"planning {plural(total, 'scenario')}…", err=True)

    finished = [0]

    def progress(i: int, result: Compared) -> None:
        # variants finish in any order (worker processes): count them, name the one
        finished[0] += 1
        if finished_labels is not None:
            finished_labels.append(f"S{i + 1}")
        plan = result.plan
        cost = (f"{plan.cost.per_month:,.0f} {plan.cost.currency}/month" if plan.nodes
                else "no fleet")
        status = status_label(plan.status, plan.solver).lower()
        gap = "" if plan.solver.gap is None else f", gap {plan.solver.gap:.2%}"
        click.echo(f"  [{finished[0]}/{total} finished] S{i + 1} {result.variant.label}: "
                   f"{status}, {cost}{gap} ({result.seconds:.1f} s, of which solve "
                   f"{plan.solver.seconds:.1f} s)", err=True)

    options = SolveOptions(solver, time_limit_s, gap, COMPARE_THREADS, limit_given)
    results = plan_all(variants, options, progress)
    return results, [comparison_row(r) for r in results]
