"""``fleetplan calibrate``: fit GPU efficiency factors to measurements, write a catalog overlay."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import yaml

from inputs import catalog_dir
from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.errors import InputError, Problem, did_you_mean
from models.loader import load_catalog
from solver.capacity.calibrate import (
    HELD_OUT_SHARE,
    PER_RUNTIME,
    Calibration,
    GpuFit,
    builtin_calibration,
    calibrate,
    overlay_document,
    predictions_csv,
    runtimes_document,
)
from solver.capacity.perfdata import Measurement, read_measurements_csv, read_shared_perf
from solver.cli.common import echo_json, finite, given_file, json_option
from solver.cli.show import Col, progress, table_lines
from solver.outputs.atomic import write_atomic
from solver.outputs.destinations import OutputFile
from solver.outputs.labels import plural
from solver.outputs.units import field_label, field_unit

#: Where ``--builtin`` writes: the calibrated layers of the built-in catalog (silicon factors per
#: GPU; runtime costs per runtime and GPU).
BUILTIN_OVERLAY = "efficiency.yaml"
BUILTIN_RUNTIMES = "runtimes.yaml"
DEFAULT_OUT = Path("outputs") / "efficiency-overlay.yaml"
#: First line of every overlay calibrate writes: a file that starts otherwise is not replaced.
OVERLAY_FIRST_LINE = ("# Calibrated efficiency factors (a catalog overlay), written by "
                      "`fleetplan calibrate`.")
RUNTIMES_FIRST_LINE = ("# Fixed costs of serving runtimes per GPU (a catalog layer), written by "
                       "`fleetplan calibrate --builtin`.")
#: The columns that end the first line of a predictions CSV calibrate writes.
PREDICTIONS_HEADER_END = "predicted,relative_error,held_out"


def _read(path: Path) -> list[Measurement]:
    return read_shared_perf(path) if path.is_dir() else read_measurements_csv(path)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _split(cal: Calibration) -> str:
    if cal.held_out_pairs:
        return "held out whole: " + ", ".join(f"{m} on {g}" for m, g in cal.held_out_pairs)
    return f"{100 * cal.held_out_share:.0f} % of each kind held out"


def _header(cal: Calibration, measurements: Path, first_line: str = OVERLAY_FIRST_LINE) -> str:
    lines = [
        first_line.removeprefix("# "),
        f"Fitted on {measurements} ({len(cal.predictions)} rows used, "
        f"{len(cal.skipped)} skipped); {_split(cal)}.",
        "Median absolute relative error, train / held-out (method: docs/calibration.md):",
    ]
    lines += table_lines(["Kind", Col("Train", right=True), Col("Held out", right=True)],
                         [(e.kind.value, _pct(e.train_median_abs_error),
                           _pct(e.held_out_median_abs_error))
                          for e in cal.errors() if e.gpu == "all"], terminal=False)
    for target, source in cal.transferred:
        lines.append(f"{target}: no measurements; takes {source}'s fitted factors.")
    return "".join(f"# {line}\n" for line in lines) + "\n"


def _unfitted(measurements: Path, rows: list[Measurement], cal: Calibration,
              gpus: tuple[GpuType, ...], models: tuple[LlmSpec, ...]) -> list[Problem]:
    """Why no measurement could be fitted: each skipped row's line, field and closest name."""
    file = str(measurements)
    gpu_names, model_names = [g.name for g in gpus], [m.name for m in models]
    out: list[Problem] = []
    for m, reason in cal.skipped:
        line = "" if measurements.is_dir() else f"line {rows.index(m) + 2}."
        if m.gpu not in gpu_names:
            out.append(Problem(file, f"{line}gpu", reason,
                               f"{did_you_mean(m.gpu, gpu_names)}; or add it with --overlay"))
        elif m.model is not None and m.model not in model_names:
            out.append(Problem(file, f"{line}model", reason,
                               f"{did_you_mean(m.model, model_names)}; or add it with --overlay"))
        else:
            out.append(Problem(file, f"{line}precision", reason,
                               "give a precision the GPU runs"))
    head = Problem(file, "", "no measurement names a catalog GPU and model",
                   "add the entries with --overlay, or fix names")
    return [head, *list(dict.fromkeys(out))[:10]]


def _refuse_foreign(path: Path, option: str, ours: Callable[[str], bool]) -> None:
    """An existing file calibrate did not write (its first line says) is never replaced: a
    scenario or a hand-written overlay named by mistake after --out would be lost."""
    if not path.is_file():
        return
    with path.open(encoding="utf-8", errors="replace") as fh:
        first = fh.readline().rstrip("\r\n")
    if not ours(first):
        raise InputError([Problem(str(path), option, "exists and was not written by "
                                  "`fleetplan calibrate`: it would be lost",
                                  f"give {option} another path, or move the file away first")])


def _runtime_name(runtime: str) -> str:
    return runtime or "(unnamed)"


def _factor(field: str, value: float) -> str:
    """``step overhead per layer 0.025 ms/layer``: a factor in words with its unit."""
    unit = field_unit(field)
    return f"{field_label(field)} {value:.4g}{'' if unit == '1' else ' ' + unit}"


def _value(value: float | tuple[float, ...]) -> str:
    """A factor's value as text; a per-ring-size table (NCCL's latency) as ``a / b / c``."""
    if isinstance(value, tuple):
        return " / ".join(f"{v:.4g}" for v in value) + " (2 / 4 / 8 … GPUs)"
    return f"{value:.4g}"


def _fit_summary(fit: GpuFit) -> dict[str, Any]:
    return {"gpu": fit.gpu, "runtime": fit.runtime, "prior": fit.prior,
            "train_rows": fit.train_rows,
            "by_runtime": {r: f.model_dump() for r, f in fit.by_runtime}}


def _summary(cal: Calibration, out: Path) -> dict[str, Any]:
    return {
        "out": str(out),
        "rows_used": len(cal.predictions),
        "rows_skipped": len(cal.skipped),
        "skipped_reasons": sorted({reason for _, reason in cal.skipped}),
        "held_out_share": cal.held_out_share,
        "factors": {g: f.model_dump() for g, f in sorted(cal.factors().items())},
        "fits": [_fit_summary(f) for f in cal.fits],
        "transferred": [{"gpu": t, "from": s} for t, s in cal.transferred],
        "errors": [
            {"kind": e.kind.value, "gpu": e.gpu, "train_rows": e.train_rows,
             "held_out_rows": e.held_out_rows,
             "train_median_abs_error": e.train_median_abs_error,
             "held_out_median_abs_error": e.held_out_median_abs_error}
            for e in cal.errors()
        ],
    }


def _print_table(cal: Calibration, out: Path) -> None:
    rows = [(e.kind.value, e.gpu, e.train_rows, e.held_out_rows, _pct(e.train_median_abs_error),
             _pct(e.held_out_median_abs_error)) for e in cal.errors()]
    for line in table_lines(["Kind", "GPU", Col("Train rows", right=True),
                             Col("Held-out rows", right=True), Col("Train err", right=True),
                             Col("Held-out err", right=True)], rows, indent=0):
        click.echo(line)
    click.echo("")
    fits = {f.gpu: f for f in cal.fits}
    transferred = dict(cal.transferred)
    for g, factors in sorted(cal.factors().items()):
        fit = fits.get(g) or fits[transferred[g]]
        note = f" no measurements: takes {fit.gpu}'s factors," if g in transferred else ""
        click.echo(f"{g}:{note} runtime {_runtime_name(fit.runtime)}")
        factor_rows = [(field_label(f), _value(getattr(factors, f)),
                        "" if field_unit(f) == "1" else field_unit(f))
                       for f in EfficiencyFactors.model_fields if getattr(factors, f) is not None]
        for line in table_lines(["Factor", Col("Value", right=True), "Unit"], factor_rows):
            click.echo(line)
        for runtime, other in fit.by_runtime:
            if runtime != fit.runtime:
                costs = ", ".join(_factor(k, getattr(other, k)) for k in PER_RUNTIME)
                click.echo(f"  fitted for {_runtime_name(runtime)} too: {costs}")
    if cal.skipped:
        reasons = sorted({reason for _, reason in cal.skipped})
        click.echo(f"skipped {plural(len(cal.skipped), 'row')}: {'; '.join(reasons)}")
    click.echo(f"wrote {out}")


@click.command("calibrate")
@click.argument("measurements", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help=f"Overlay file to write [default: {DEFAULT_OUT}].")
@click.option("--builtin", is_flag=True,
              help="Write the built-in calibrated layer inputs/catalog/efficiency.yaml instead.")
@click.option("--overlay", "overlays", multiple=True, type=click.Path(path_type=Path),
              callback=given_file(),
              help="Catalog overlay adding the GPUs/models the measurements name (repeatable).")
@click.option("--held-out-share", type=click.FloatRange(0, 1, max_open=True),
              default=HELD_OUT_SHARE, show_default=True, callback=finite,
              help="Share of each kind of measurement kept out of the fit.")
@click.option("--predictions", type=click.Path(path_type=Path), default=None,
              help="Also write every measurement with its prediction and error (CSV).")
@json_option
def command(measurements: Path, out: Path | None, builtin: bool, overlays: tuple[Path, ...],
            held_out_share: float, predictions: Path | None, as_json: bool) -> None:
    """Fit the efficiency factors to MEASUREMENTS and write a catalog overlay.

    MEASUREMENTS is a MEASUREMENTS.csv (columns in docs/calibration.md) or a directory laid out
    like ../shared/data/perf. Use the overlay in a scenario with `catalog: {overlays: [FILE]}`.
    The built-in defaults are regenerated with `fleetplan calibrate ../shared/data/perf --builtin`.
    """
    if builtin and out is not None:
        raise click.UsageError("give either --out or --builtin, not both")
    if builtin and not measurements.is_dir():
        raise click.UsageError("--builtin fits the shared perf directory (../shared/data/perf)")
    target = catalog_dir() / BUILTIN_OVERLAY if builtin else (out or DEFAULT_OUT)
    inputs = (*overlays, measurements)
    with contextlib.ExitStack() as reserved:
        overlay_file = reserved.enter_context(
            OutputFile(target, "--builtin" if builtin else "--out", inputs=inputs))
        _refuse_foreign(target, "--builtin" if builtin else "--out",
                        lambda first: first == OVERLAY_FIRST_LINE)
        predictions_file = None
        if predictions is not None:
            if predictions.resolve() == target.resolve():
                raise InputError([Problem(str(predictions), "--predictions",
                                          "is the overlay file too: one would replace the "
                                          "other", "give --predictions its own .csv path")])
            predictions_file = reserved.enter_context(
                OutputFile(predictions, "--predictions", inputs=inputs))
            _refuse_foreign(predictions, "--predictions",
                            lambda first: first.endswith(PREDICTIONS_HEADER_END))
        cal = _fit(measurements, builtin, overlays, held_out_share, as_json, overlay_file)
        if predictions_file is not None:
            predictions_file.commit(predictions_csv(cal))
    if as_json:
        echo_json(_summary(cal, target))
    else:
        _print_table(cal, target)


def _fit(measurements: Path, builtin: bool, overlays: tuple[Path, ...], held_out_share: float,
         as_json: bool, overlay_file: OutputFile) -> Calibration:
    """Fit the factors and write the overlay (and, with --builtin, the runtimes layer)."""
    rows = _read(measurements)
    gpus, models, _ = load_catalog(overlays=overlays)
    with progress(f"fitting {plural(len(rows), 'measurement')}…", enabled=not as_json):
        cal = (builtin_calibration(measurements, gpus, models) if builtin
               else calibrate(rows, gpus, models, held_out_share=held_out_share))
    if cal.predictions and all(p.held_out for p in cal.predictions):
        # every row held out: the "fit" would be the prior, written as if calibrated
        raise InputError([Problem(
            str(measurements), "--held-out-share",
            f"{held_out_share:g} holds out every usable measurement: none is left to fit",
            f"lower --held-out-share (default {HELD_OUT_SHARE:g}) or add measurements")])
    if not cal.fits:
        raise InputError(_unfitted(measurements, rows, cal, gpus, models))
    source = (f"fleetplan calibrate on {measurements} (method and errors: "
              "docs/calibration.md)")
    doc = overlay_document(cal, source)
    runtimes = runtimes_document(cal, [g.name for g in gpus], source)
    if builtin:
        text = _header(cal, measurements) + yaml.safe_dump(doc, sort_keys=False,
                                                            allow_unicode=True)
        write_atomic(catalog_dir() / BUILTIN_RUNTIMES,
                     _header(cal, measurements, RUNTIMES_FIRST_LINE)
                     + yaml.safe_dump(runtimes, sort_keys=False, allow_unicode=True))
    else:  # one overlay: silicon factors and, for named runtimes, their costs
        doc["runtimes"] = runtimes["runtimes"]
        text = _header(cal, measurements) + yaml.safe_dump(doc, sort_keys=False,
                                                            allow_unicode=True)
    overlay_file.commit(text)
    return cal
