"""``fleetplan import-bench``: load-test results → measured capacity rows (``measured_csv``).

Reads vLLM, GuideLLM and AIPerf/GenAI-Perf results (format detected per file), finds the
highest tested rate at which the SLO held (interpolated between tested loads, never
extrapolated; refused with the reason when no load held) and writes the configuration's row.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from models.common import Precision
from models.errors import InputError, Problem, did_you_mean
from models.loader import load_catalog, load_measured_csv, load_scenario
from models.measured import MEASURED_COLUMNS, MeasuredCapacity, measured_csv
from models.names import resolve_gpu, resolve_model
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.bench.formats import read_bench_file
from solver.capacity.bench.points import BenchPoint, LoadKind
from solver.capacity.bench.row import RowSpec, measured_row
from solver.capacity.bench.slo import Slo, SloHolding, slo_holding
from solver.capacity.measured import (
    above_ceiling,
    kv_does_not_hold,
    no_such_candidate,
    staleness,
    weights_do_not_fit,
)
from solver.cli.common import echo_json, finite, given_file, json_option
from solver.cli.show import Col, table_lines
from solver.outputs.destinations import OutputFile
from solver.outputs.labels import config_label


def _workload(scenario: Scenario | None, name: str | None, path: Path | None,
              files_model: str | None = None) -> tuple[Workload | None, str | None]:
    """The workload the row stands for: ``--workload``, else the scenario's only one, else its
    only one of the files' model (``files_model``, a catalog name), with a note saying so
    (``None`` where named or the only one). A scenario of two workloads asked for --workload
    where one alone served the files' model (findings s23, F7)."""
    if scenario is None:
        return None, None
    names = [w.name for w in scenario.workloads]
    if name is None and len(names) == 1:
        return scenario.workloads[0], None
    same = [w for w in scenario.workloads if files_model is not None and w.model == files_model]
    if name is None and len(same) == 1:
        return same[0], (f"workload {same[0].name}: the scenario's only workload of "
                         f"{files_model}, the files' model (--workload to choose another)")
    if name is None or name not in names:
        several = ("the scenario has several workloads" if not same else
                   f"the scenario has several workloads of {files_model}, the files' model")
        choices = [w.name for w in same] or names
        raise InputError([Problem(str(path), "--workload", f"`{name}` is not a workload of the "
                                  "scenario" if name else several,
                                  did_you_mean(name or "", names) if name else
                                  "give --workload, one of " + ", ".join(choices))])
    return scenario.workload(name), None


def _files_model(points: Sequence[BenchPoint], model: str | None,
                 models: Mapping[str, Sequence[str]]) -> str | None:
    """The catalog model the files (or ``--model``) name, where one resolves; else ``None``
    (the row's own reading then says what is wrong)."""
    named = {p.model for p in points if p.model}
    typed = model or (named.pop() if len(named) == 1 else None)
    return None if typed is None else resolve_model(typed, models)[0]


def _slo(workload: Workload | None, ttft: float | None, tpot: float | None) -> Slo:
    ttft = ttft if ttft is not None else (workload.slo.ttft_p95_ms if workload else None)
    # a workload of one-token outputs plans no per-token SLO: its rate is the TTFT's
    tpot = tpot if tpot is not None else (workload.tpot_slo_ms if workload else None)
    if ttft is None or tpot is None:
        raise click.UsageError("give --slo-ttft-ms and --slo-tpot-ms, or --scenario (with "
                               "--workload) to take the workload's SLO")
    return Slo(ttft, tpot)


def _file_date(files: tuple[Path, ...]) -> dt.date:
    return min(dt.date.fromtimestamp(f.stat().st_mtime) for f in files)


def _merged(out: Path, rows: list[MeasuredCapacity]) -> list[MeasuredCapacity]:
    """``out``'s rows (a measured CSV) with ``rows`` replacing the same configuration and date."""
    if not out.exists():
        return rows
    with out.open(encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline().strip().split(",")
    if not set(MEASURED_COLUMNS[:4]) <= set(header):
        raise InputError([Problem(str(out), "--out", "exists and is not a measured-capacity CSV: "
                                  "it would be lost", "give --out another path, or move the "
                                  "file away first")])
    def key(r: MeasuredCapacity) -> tuple[object, ...]:
        return (r.model, r.gpu, r.runtime, r.precision, r.tp, r.workload, r.measured_on)
    new = {key(r) for r in rows}
    return [r for r in load_measured_csv(out) if key(r) not in new] + rows


def _load(p: BenchPoint) -> str:
    if p.load_kind is LoadKind.rate:
        return f"{p.load:g} req/s"
    return f"{p.load:g} in flight" if p.load_kind is LoadKind.concurrency else "unbounded"


def _print(holding: SloHolding, row: MeasuredCapacity, notes: list[str], slo: Slo,
           warnings: list[str], out: Path | None) -> None:
    rows = [(_load(v.point), f"{v.point.throughput_rps:,.3f}", f"{v.point.ttft_p95_ms:,.1f}",
             f"{v.point.tpot_p95_ms:,.2f}", f"{v.point.failed_share:.1%}",
             "held" if v.holds else "broke: " + "; ".join(v.broken)) for v in holding.verdicts]
    for line in table_lines([Col("Load", right=True), Col("Served [req/s]", right=True),
                             Col("TTFT P95 [ms]", right=True),
                             Col("Per-token P95 [ms]", right=True), Col("Failed", right=True),
                             "SLO"], rows, indent=0):
        click.echo(line)
    click.echo("")
    how = ("interpolated between the last load that held and the first that broke"
           if holding.interpolated else "the highest tested load at which it held")
    per_token = (f"per-token P95 {slo.tpot_p95_ms:,g} ms" if math.isfinite(slo.tpot_p95_ms)
                 else "no per-token SLO")
    click.echo(f"SLO (TTFT P95 {slo.ttft_p95_ms:,g} ms, {per_token}) "
               f"holds up to {row.tested_peak_rps:.3f} req/s ({how})")
    click.echo(f"row: {row.model} on {config_label(row.gpu, row.tp, row.precision)}, "
               f"{row.runtime}, workload {row.workload}, {row.max_stable_sequences} sequences, "
               f"measured {row.measured_on}")
    bases = sorted({v.point.basis.value for v in holding.verdicts})
    for text in [*holding.notes, *notes, *(f"latencies: {b}" for b in bases), *warnings]:
        click.echo(f"note: {text}")
    if out is not None:
        click.echo(f"wrote {out}")
    else:
        click.echo("")
        click.echo(measured_csv([row]).rstrip())


def _summary(holding: SloHolding, row: MeasuredCapacity, notes: list[str],
             warnings: list[str], out: Path | None) -> dict[str, Any]:
    def point(p: BenchPoint) -> dict[str, Any]:
        return {"file": p.file, "where": p.where, "tool": p.tool, "load_kind": p.load_kind.value,
                "load": None if math.isinf(p.load) else p.load,
                "throughput_rps": p.throughput_rps, "ttft_p95_ms": p.ttft_p95_ms,
                "tpot_p95_ms": p.tpot_p95_ms, "failed_share": p.failed_share,
                "latency_basis": p.basis.value}
    return {
        "row": row.model_dump(mode="json"),
        "interpolated": holding.interpolated,
        "fraction": holding.fraction,
        "points": [{**point(v.point), "holds": v.holds, "broken": list(v.broken)}
                   for v in holding.verdicts],
        "notes": [*holding.notes, *notes], "warnings": warnings,
        "out": None if out is None else str(out),
    }


@click.command("import-bench")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--gpu", required=True, help="GPU type tested: catalog name, common name or "
              "instance type (p5.48xlarge).")
@click.option("--tp", required=True, type=click.IntRange(1, 64),
              help="Tensor-parallel degree of the replica tested.")
@click.option("--model", default=None, help="Model tested (default: the one the files name).")
@click.option("--runtime", default=None,
              help="Engine and version, as workloads name it (default: the files' engine).")
@click.option("--precision", type=click.Choice([p.value for p in Precision]), default=None,
              help="Weight precision tested (default: the model name's suffix, else bf16).")
@click.option("--scenario", type=click.Path(path_type=Path), default=None, callback=given_file(),
              help="Take the workload's SLO, model, precision and runtime where not given, and "
                   "check the row against it.")
@click.option("--workload", default=None, help="Workload the row stands for.")
@click.option("--slo-ttft-ms", type=click.FloatRange(min=0, min_open=True), default=None,
              callback=finite, help="TTFT P95 limit [ms] (default: the workload's).")
@click.option("--slo-tpot-ms", type=click.FloatRange(min=0, min_open=True), default=None,
              callback=finite, help="Per-token P95 limit [ms] (default: the workload's).")
@click.option("--measured-on", type=click.DateTime(["%Y-%m-%d"]), default=None,
              help="Date of the test (default: the files' date).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Measured CSV to write; an existing one keeps its other rows.")
@json_option
def command(files: tuple[Path, ...], gpu: str, tp: int, model: str | None,
            runtime: str | None, precision: str | None, scenario: Path | None,
            workload: str | None, slo_ttft_ms: float | None, slo_tpot_ms: float | None,
            measured_on: dt.datetime | None, out: Path | None, as_json: bool) -> None:
    """Turn FILES of one load-tested configuration into its measured capacity row.

    FILES are vLLM bench serve results (--save-result, one per load, or a sweep), GuideLLM
    benchmarks.json or AIPerf/GenAI-Perf profile exports. The row is printed, or written to
    --out (use it as the scenario's `measured_csv`).
    """
    with contextlib.ExitStack() as reserved:
        target = None if out is None else reserved.enter_context(
            OutputFile(out, "--out", inputs=(*files, scenario)))
        row, holding, notes, slo, warnings = _import(
            files, gpu, tp, model, runtime, precision, scenario, workload, slo_ttft_ms,
            slo_tpot_ms, measured_on)
        if target is not None and out is not None:
            target.commit(measured_csv(_merged(out, [row])))
    if as_json:
        echo_json(_summary(holding, row, notes, warnings, out))
    else:
        _print(holding, row, notes, slo, warnings, out)


def _import(files: tuple[Path, ...], gpu: str, tp: int, model: str | None, runtime: str | None,
            precision: str | None, scenario: Path | None, workload: str | None,
            slo_ttft_ms: float | None, slo_tpot_ms: float | None,
            measured_on: dt.datetime | None) -> tuple[Any, ...]:
    """The measured row FILES give, with the points that held and what to tell the user."""
    sc = load_scenario(scenario, measured_optional=True) if scenario is not None else None
    gpus, models = (sc.gpus, sc.models) if sc is not None else load_catalog()[:2]
    aliases = {m.name: m.aliases for m in models}
    points = [p for f in files for p in read_bench_file(f)]
    wl, picked = _workload(sc, workload, scenario, _files_model(points, model, aliases))
    if wl is None and workload is None:
        raise click.UsageError("give --workload: the scenario workload the row stands for")
    slo = _slo(wl, slo_ttft_ms, slo_tpot_ms)
    gpu_name, _, why = resolve_gpu(gpu, [g.name for g in gpus])
    if gpu_name is None:
        raise InputError([Problem("command line", "--gpu", f"unknown GPU `{gpu}`", why)])
    holding = slo_holding(points, slo)
    spec = RowSpec(gpu=gpu_name, tp=tp, workload=wl.name if wl else str(workload), model=model,
                   runtime=runtime, precision=Precision(precision) if precision else None,
                   measured_on=measured_on.date() if measured_on else None)
    row, notes = measured_row(points, holding, spec, aliases, wl, _file_date(files))
    notes = [*([picked] if picked else []), *notes]
    warnings = []
    if sc is not None and wl is not None:
        # stale, its weights cannot fit its GPUs, or no candidate of the workload is its
        # configuration (a wrong --gpu or --tp): every reason, as validate would say it
        reason = "; ".join(r for r in (staleness(sc, row), weights_do_not_fit(sc, row),
                                       kv_does_not_hold(sc, row), no_such_candidate(sc, row))
                           if r)
        if reason:
            warnings.append(f"the plan will not use this row for {wl.name}: {reason}")
        elif (any(g.name == row.gpu for g in sc.gpus)
              and (high := above_ceiling(sc, row)) is not None):
            warnings.append(f"for {wl.name}: {high}")
    return row, holding, notes, slo, warnings
