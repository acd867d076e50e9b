"""``fleetplan sweep``: a study over any scenario field, planned on local cores or on Ray."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import click

from models.errors import InputError, Problem
from models.scenario import Scenario
from solver.cli.common import (
    echo_json,
    json_option,
    load,
    scenario_argument,
    solve_options,
    time_limit_given,
)
from solver.cli.replay_step import not_replayed_note
from solver.cli.show import Col, table_lines
from solver.outputs.atomic import write_atomic
from solver.outputs.destinations import check_output
from solver.outputs.labels import plural, status_label
from solver.studies.executors import (
    Executor,
    LocalExecutor,
    RayExecutor,
    SolveOptions,
    default_workers,
)
from solver.studies.sweep import Design, SweepVariant, build_sweep, fleetplan_version
from solver.studies.sweep_results import SweepResult, results_csv, results_table
from solver.studies.sweep_runner import Progress, run_sweep
from solver.studies.sweep_spec import Vary, parse_vary
from solver.studies.sweep_store import STUDY_FILE, VARIANTS_DIR, SweepStore
from solver.studies.sweep_workbook import sweep_workbook_bytes
from solver.studies.tornado import swings, tornado_chart

OUTPUT_FILES = ("sweep.csv", "sweep.xlsx", "tornado.png", STUDY_FILE)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Reporter:
    """Progress on stderr: a line rewritten in place on a terminal, a line per variant else."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()

    def __call__(self, p: Progress) -> None:
        if self.quiet:
            return
        counts = (f"{p.finished + p.failed}/{p.total} done, {p.running} running, "
                  f"{p.failed} failed, {p.waiting} waiting · {_duration(p.elapsed_s)} elapsed, "
                  f"ETA {_duration(p.eta_s)}")
        if self.tty:
            click.echo(f"\r\033[K{counts}", err=True, nl=False)
            if p.last is not None and p.last.plan is None:
                click.echo(f"\n  failed: {p.last.variant.label}: {p.last.error}", err=True)
        elif p.last is not None:
            last = p.last
            plan = last.plan
            what = (f"failed: {last.error}" if plan is None else
                    f"{status_label(plan.status, plan.solver).lower()}, "
                    + (f"{plan.cost.per_month:,.0f} {plan.cost.currency}/month" if plan.nodes
                       else "no fleet") + f" ({last.seconds or 0:.1f} s)")
            click.echo(f"  [{p.finished + p.failed}/{p.total}] {last.variant.label}: {what} · "
                       f"{p.running} running, {p.failed} failed, ETA {_duration(p.eta_s)}",
                       err=True)

    def close(self) -> None:
        if self.tty and not self.quiet:
            click.echo("", err=True)


def _executor(ray: str | None, workers: int | None, threads: int, count: int) -> Executor:
    if ray is not None:
        return RayExecutor(ray, threads)
    n = workers if workers is not None else default_workers(threads)
    return LocalExecutor(max(1, min(n, count)))


def _study(scenario: Scenario, varies: list[Vary], design: Design, options: SolveOptions,
           variants: list[SweepVariant], executor: str) -> dict[str, Any]:
    return {
        "scenario": scenario.name, "vary": [v.spec for v in varies],
        "design": "zip" if design.zip_levels else "grid", "samples": design.samples,
        "seed": design.seed, "solver": options.solver, "time_limit_s": options.time_limit_s,
        "time_limit_given": options.time_limit_given,
        "gap": options.gap, "threads_per_plan": options.threads, "executor": executor,
        "fleetplan": fleetplan_version(), "variants": len(variants),
        "keys": [v.key for v in variants],
    }


def _check_fresh(out: Path, resume: bool) -> None:
    """Without ``--resume``, a directory holding finished variants is refused (never erased)."""
    store = SweepStore(out)
    if not resume and store.finished():
        raise InputError([Problem(str(out), "--out", f"holds {len(store.finished())} finished "
                                  "variants of an earlier sweep", "add --resume to keep them "
                                  "and plan the rest, or give another --out")])


@click.command("sweep")
@scenario_argument()
@click.option("--vary", "varies", multiple=True, required=True,
              metavar="KEY=V1,V2,… | KEY=~DIST(…)",
              help="A scenario field by path (workloads.chat.arrival.peak_rps=10,20,40; "
                   "zones.*.offers.H100-SXM.spot.price_per_gpu_hour=×0.8,×1.2; "
                   "policy.share_nodes=true,false) or a compare shortcut (growth=1,1.5); "
                   "~uniform(lo,hi), ~triangular(lo,mode,hi), ~normal(m,sd), "
                   "~lognormal(median,sigma), ~loguniform(lo,hi) are sampled (×~… draws a "
                   "multiplier). Repeat for more keys.")
@click.option("--grid/--zip", "grid", default=True, show_default=True,
              help="Every combination of the levels, or the i-th level of every key together.")
@click.option("--samples", type=click.IntRange(min=1), default=None,
              help="Monte Carlo samples of the distributions, per combination of levels.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the samples (sample i draws from (seed, i)).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Directory of the results [default: outputs/sweep-<scenario>].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes [default: cores ÷ threads].")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="Solver threads per plan, whichever executor runs it.")
@click.option("--ray", default=None, metavar="auto|local|ADDRESS",
              help="Plan on Ray (pip install 'fleetplan[ray]'): auto joins this machine's "
                   "cluster or starts a local one; local always starts a private one; ADDRESS "
                   "joins that cluster.")
@click.option("--resume", is_flag=True, help="Keep the finished variants in --out; plan the rest.")
@click.option("--dry-run", is_flag=True, help="List the variants and plan nothing.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@solve_options("Solver time limit per variant [s]; default: {default:g} s for a scenario of "
               "one period. A scenario over periods without it is planned as `plan` plans it: "
               "to its search limits, safety stop at {safety:g} s.")
@json_option
def command(scenario: Path | None, varies: tuple[str, ...], grid: bool, samples: int | None,
            seed: int, out: Path | None, workers: int | None, threads: int, ray: str | None,
            resume: bool, dry_run: bool, quiet: bool, solver: str, time_limit_s: float,
            gap: float, as_json: bool) -> None:
    """Plan every variant of SCENARIO (default: the built-in demo) that the --vary options
    describe, and tabulate them: sweep.csv, sweep.xlsx, tornado.png in --out.

    Each finished variant is recorded in --out/variants/ as it lands; --resume skips those.
    Exit 1 when a variant failed (after one retry); its row says why.
    """
    base = load(scenario)
    out = out if out is not None else Path("outputs") / f"sweep-{base.name}"
    check_output(out, "--out", directory=True, files=OUTPUT_FILES,
                 inputs=(scenario,))
    specs = [parse_vary(v) for v in varies]
    design = Design(zip_levels=not grid, samples=samples, seed=seed)
    options = SolveOptions(solver, time_limit_s, gap, threads, time_limit_given())
    variants = build_sweep(base, specs, design, options)
    if dry_run:
        _dry_run(variants, as_json)
        return
    _check_fresh(out, resume)
    store = SweepStore(out)
    executor = _executor(ray, workers, threads, len(variants))
    study = _study(base, specs, design, options, variants, executor.name)
    store.write_study(study)
    reporter = Reporter(quiet)
    if not quiet:
        click.echo(f"sweep of {base.name}: {len(variants)} variants on {executor.name} "
                   f"({executor.slots} at a time, {threads} solver thread(s) each) → {out}",
                   err=True)
        note = not_replayed_note([base], "sweep")
        if note is not None:
            click.echo(note, err=True)
    try:
        results = run_sweep(variants, options, store, executor, reporter)
    except KeyboardInterrupt:
        reporter.close()
        click.echo(f"interrupted: finished variants are kept in {out / VARIANTS_DIR}; "
                   "run again with --resume to plan the rest", err=True)
        raise SystemExit(130) from None
    finally:
        executor.close()
    reporter.close()
    _write_outputs(out, base, specs, results, study, as_json)
    if any(r.plan is None for r in results):
        raise SystemExit(1)


def _dry_run(variants: list[SweepVariant], as_json: bool) -> None:
    if as_json:
        echo_json({"variants": [{"variant": v.index + 1, "label": v.label, "key": v.key,
                                 "values": {k: v.shown(k) for k, _ in v.values}}
                                for v in variants]})
        return
    for line in table_lines([Col("Variant", right=True), "Key", "Label"],
                            [(v.index + 1, v.key, v.label) for v in variants], indent=0):
        click.echo(line)
    click.echo(f"{plural(len(variants), 'variant')} "
               f"({plural(len({v.key for v in variants}), 'distinct plan')})")


#: Groups of variants without a fleet shown (every variant's diagnosis is in sweep.csv).
SHOWN_GROUPS = 5


def cannot_meet_lines(results: list[SweepResult]) -> list[str]:
    """The variants without a fleet, grouped by why: the SLOs no configuration meets (as
    `plan` names them), else the first line of the diagnosis; sweep.csv's `diagnosis` column
    holds each variant's whole diagnosis."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for r in results:
        if r.plan is None or r.plan.nodes or not r.plan.diagnosis:
            continue
        slo = tuple(d.message for d in r.plan.diagnosis if d.requirement == "slo")
        why = slo or (r.plan.diagnosis[0].message + (
            f" (and {len(r.plan.diagnosis) - 1} more: sweep.csv, column `diagnosis`)"
            if len(r.plan.diagnosis) > 1 else ""),)
        groups.setdefault(why, []).append(r.variant.index + 1)
    lines: list[str] = []
    for why, numbers in list(groups.items())[:SHOWN_GROUPS]:
        shown = ", ".join(str(n) for n in numbers[:10]) + (", …" if len(numbers) > 10 else "")
        lines.append(f"no fleet in {plural(len(numbers), 'variant')} ({shown}):")
        lines += [f"  - {message}" for message in why]
    if len(groups) > SHOWN_GROUPS:
        lines.append(f"… and {len(groups) - SHOWN_GROUPS} more reasons (sweep.csv, column "
                     "`diagnosis`)")
    return lines


def _write_outputs(out: Path, base: Scenario, specs: list[Vary], results: list[SweepResult],
                   study: dict[str, Any], as_json: bool) -> None:
    keys = [v.key for v in specs]
    frame = results_table(results, keys)
    drawn = [v.key for v in specs if v.distribution is not None]
    bars = swings(results, keys, drawn)
    costs = [r.plan.cost.per_month for r in results if r.plan is not None and r.plan.nodes]
    center = statistics.fmean(costs) if costs else None
    currency = base.policy.currency
    chart = tornado_chart(bars, center, currency, len(results) - len(costs))
    summary = {k: v for k, v in study.items() if k != "keys"}
    write_atomic(out / "sweep.csv", results_csv(frame))
    write_atomic(out / "tornado.png", chart)
    write_atomic(out / "sweep.xlsx", sweep_workbook_bytes(frame, bars, chart, summary, currency,
                                                          base.policy.as_of))
    resumed = sum(r.resumed for r in results)
    failed = sum(r.plan is None for r in results)
    if as_json:
        echo_json({
            "out": str(out), "variants": len(results), "resumed": resumed,
            "planned": len(results) - resumed - failed, "failed": failed,
            "rows": json.loads(frame.to_json(orient="records")),
            "swings": [{"key": s.key, "low_value": s.low_value, "low_cost": s.low_cost,
                        "high_value": s.high_value, "high_cost": s.high_cost,
                        "width": s.width} for s in bars],
        })
        return
    click.echo(f"{len(results)} variants: {len(results) - resumed - failed} planned, "
               f"{resumed} from earlier runs, {failed} failed")
    for line in cannot_meet_lines(results):
        click.echo(line)
    for s in bars:
        click.echo(f"  {s.key}: no effect on the cost" if s.width == 0 else
                   f"  {s.key}: {s.low_cost:,.0f} ({s.low_value}) → {s.high_cost:,.0f} "
                   f"({s.high_value}) {currency}/month, swing {s.width:,.0f}")
    click.echo(f"wrote {out / 'sweep.csv'}, {out / 'sweep.xlsx'}, {out / 'tornado.png'}")
