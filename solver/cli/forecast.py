"""``fleetplan forecast``: growth paths and demand scenarios from a history of daily peaks."""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from models.errors import InputError, MissingExtra, Problem
from models.horizon import Horizon
from models.scenario import Scenario
from solver.cli.common import echo_json, given_file, json_option, load
from solver.cli.show import Col, table_lines
from solver.outputs.destinations import OutputFile
from solver.studies.forecast import (
    ABSURD_STEP,
    DIP_SHARE,
    DIP_WEEKS,
    END_DIP_DAYS,
    END_DIP_SHARE,
    FLAT_BAND,
    HIGH_QUANTILE,
    LOW_QUANTILE,
    SIMULATIONS,
    WEIGHTS,
    WIDE_BAND,
    Trend,
    WorkloadForecast,
    absurd_growth,
    forecast,
    read_history,
    refused_growth,
    scenario_block,
)

#: Heads the --out file: its `growth` maps workloads to their lists, which a scenario holds
#: under each workload (a top-level `growth:` pasted as written is an unknown key).
OUT_FILE_NOTE = ("# horizon and demand_scenarios go at a scenario's top level; each list under\n"
                 "# growth goes under that workload, as `growth: [...]` beside its arrival\n")


def missing_statsmodels() -> Problem:
    """What to install, and the command installing it into the Python running fleetplan (a
    bare ``pip`` may be another environment's)."""
    python = shlex.quote(sys.executable)
    return Problem("statsmodels", "", "not installed: `fleetplan forecast` fits its trend model "
                   "with statsmodels, which comes with fleetplan's `forecast` extra",
                   f"install the extra: {python} -m pip install 'fleetplan[forecast]' (from a "
                   f"clone of fleetplan: {python} -m pip install '.[forecast]')")


def _horizon(scenario: Scenario | None, start: dt.datetime | None, period_months: int | None,
             periods: int | None) -> Horizon:
    """The horizon given by options, else the scenario's; an InputError when neither says."""
    own = scenario.horizon if scenario is not None else None
    if start is None and own is None:
        raise InputError([Problem("--start", "", "no horizon to forecast over",
                                  "give --start YYYY-MM-DD (and --periods), or a --scenario "
                                  "with a `horizon`")])
    return Horizon(start=start.date() if start is not None else own.start,  # type: ignore[union-attr]
                   period_months=period_months or (own.period_months if own else 3),
                   count=periods or (own.count if own else 4))


def rps_text(value: float) -> str:
    """A rate as a planner reads it: whole req/s from 100 up, one decimal from 10, two from 1
    (``2,838``, ``61.0``, ``5.45``: never ``2.84e+03``, nor ``61`` beside ``55.1``)."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def flat_band_note(f: WorkloadForecast) -> list[str]:
    """Why a band that does not widen over the horizon is narrower than the truth (nothing
    when it widens)."""
    widening = f.band_widening
    if widening is None or widening >= FLAT_BAND:
        return []
    return [f"    note: the low–high band is about as wide in the last period as in the first "
            f"(×{widening:.2f}): the model read the history as a steady trend plus day-to-day "
            "noise, and its band holds that noise alone, not the chance that the trend itself "
            "changes (docs/program.md); far out, treat low and high as narrower than the "
            "uncertainty"]


def band_ratio_text(ratio: float) -> str:
    """A band's high over its low: ``82.0``, ``1.4e+46`` from a million on (a linear trend
    carried a year past 45 days printed a 47-digit number, fresh-s22's code history)."""
    return f"{ratio:,.1f}" if ratio < 1e6 else f"{ratio:.2g}"


def wide_band_note(f: WorkloadForecast) -> list[str]:
    """What a band whose high is many times its low a year out means (nothing when narrow)."""
    if f.band_ratio <= WIDE_BAND:
        return []
    return [f"    note: in the last period high is {band_ratio_text(f.band_ratio)}× low: the "
            "history's level wanders and the model's interval compounds that over the horizon; "
            "the band is the model's P10–P90 of the period's peak given its fitted trend "
            "(docs/program.md), not a ceiling demand was seen to stay under — weigh high as a "
            "scenario, or shorten the horizon and re-forecast"]


def refused_growth_note(f: WorkloadForecast, horizon: Horizon) -> list[str]:
    """What of the written growth a scenario refuses, per case from its first such period, and
    the fix (nothing when every value is one a scenario takes)."""
    refused = refused_growth(f)
    if not refused:
        return []
    parts = []
    for case in ("base", "low", "high"):
        mine = [(q, v) for c, q, v in refused if c == case]
        if mine:
            (q, v), n = mine[0], len(mine)
            parts.append(f"{case} {'0' if v <= 0 else f'{v:.2g}'} from {horizon.period_start(q)}"
                         f" ({n} period{'s' if n > 1 else ''})")
    return [f"    note: growth written below that validate refuses (a growth must be > 0 and "
            f"below 10^20; 3 decimals as written): {'; '.join(parts)} — the trend fitted to "
            f"{f.days} days is carried to {horizon.end - dt.timedelta(days=1)}, past what the "
            "history can tell; re-run with --trend damped, a longer history or fewer --periods, "
            "or write this workload's growth by hand"]


#: Days of 0 a note lists before "and N more".
DAYS_LISTED = 10


def left_out_note(f: WorkloadForecast) -> list[str]:
    """The days of 0 left out of the fit, and how they were taken (nothing when none)."""
    if not f.left_out:
        return []
    days = ", ".join(d.isoformat() for d in f.left_out[:DAYS_LISTED])
    more = f" and {len(f.left_out) - DAYS_LISTED} more" if len(f.left_out) > DAYS_LISTED else ""
    n = len(f.left_out)
    return [f"    note: {n} day{'' if n == 1 else 's'} with a peak of 0 left out of the fit "
            f"({days}{more}): a day of 0 (an outage, an idle day) is no level a trend on log "
            "peaks can take, so each is filled from the days beside it, as a missing day is: "
            "the forecast is of the other days"]


def dip_note(f: WorkloadForecast) -> list[str]:
    """The days far below the same weekday around them left out of the fit as outages, and
    why (nothing when none)."""
    if not f.dips:
        return []
    days = ", ".join(f"{d.isoformat()} at {r:.2f}×" for d, r in f.dips[:DAYS_LISTED])
    more = f" and {len(f.dips) - DAYS_LISTED} more" if len(f.dips) > DAYS_LISTED else ""
    n = len(f.dips)
    return [f"    note: {n} day{'' if n == 1 else 's'} under {DIP_SHARE:.0%} of the same "
            f"weekday's median in the {DIP_WEEKS} weeks either side left out of the fit as "
            f"{'an outage' if n == 1 else 'outages'} ({days}{more}): kept, such a day widens "
            "the fitted noise and raises every period's simulated peak; each is filled from "
            "the days beside it, as a missing day is. If it was demand, not an outage, the "
            "forecast is of the other days (docs/program.md)"]


def end_dip_note(f: WorkloadForecast) -> list[str]:
    """The days of the history's last week left out of the fit as holidays, and why (nothing
    when none)."""
    if not f.end_dips:
        return []
    days = ", ".join(f"{d.isoformat()} at {r:.2f}×" for d, r in f.end_dips)
    n = len(f.end_dips)
    return [f"    note: {n} day{'' if n == 1 else 's'} of the history's last week under "
            f"{END_DIP_SHARE:.0%} of the same weekday's median in the {DIP_WEEKS} weeks before "
            f"left out of the fit as {'a holiday' if n == 1 else 'holidays'} ({days}): kept, a "
            "holiday at the history's end bends the fitted trend's end down and every period "
            f"with it. More than {END_DIP_DAYS} such days would be a fall of the level, and "
            "kept (docs/program.md)"]


def _times(ratio: float) -> str:
    """A step's factor: ``×458``, ``×0.0019``."""
    return f"×{ratio:,.0f}" if ratio >= 1 else f"×{ratio:.2g}"


def absurd_growth_note(f: WorkloadForecast, horizon: Horizon) -> list[str]:
    """Growth a scenario accepts that changes tenfold or more within one period
    (:data:`ABSURD_STEP`), per case from its first such period, and the fix (nothing when
    none does)."""
    steps = absurd_growth(f)
    if not steps:
        return []
    parts = []
    for case in ("base", "low", "high"):
        mine = [(q, b, v) for c, q, b, v in steps if c == case]
        if mine:
            (q, before, value), n = mine[0], len(mine)
            parts.append(f"{case} {_times(value / before)} in the period from "
                         f"{horizon.period_start(q)} ({before:.3g} → {value:.3g}"
                         f"{'' if n == 1 else f'; {n} periods'})")
    return [f"    note: growth written below changes by a factor of {ABSURD_STEP:g} or more "
            f"within one period (over the reference in the first): {'; '.join(parts)} — a "
            "scenario accepts it, but a trend fitted to daily peaks seldom supports an order "
            f"of magnitude in a period ({f.days} days of history, carried to "
            f"{horizon.end - dt.timedelta(days=1)}); a launch or a migration belongs in the "
            "scenario as an event, else re-run with --trend damped, a longer history or "
            "fewer --periods, or write this workload's growth by hand"]


def workload_notes(f: WorkloadForecast, horizon: Horizon) -> list[str]:
    """The notes printed under a workload's table (indented ``note: …`` lines): the days of 0
    left out, the band's, the growth that changes tenfold in a period and the growth a
    scenario refuses."""
    return (left_out_note(f) + dip_note(f) + end_dip_note(f) + flat_band_note(f) + wide_band_note(f)
            + absurd_growth_note(f, horizon) + refused_growth_note(f, horizon))


def json_workload(f: WorkloadForecast, horizon: Horizon) -> dict[str, Any]:
    """One workload's forecast as ``--json`` gives it, with the notes the terminal prints under
    its table (``notes``: the band's and the refused growth's, fresh-s22 F1: a machine reading
    --json had no sign that the growth it would paste is refused)."""
    return {"workload": f.workload, "model": f.model, "days": f.days,
            "reference_rps": f.reference_rps, "base_rps": f.base_rps, "low_rps": f.low_rps,
            "high_rps": f.high_rps, "chosen": f.chosen,
            "notes": [n.strip().removeprefix("note: ") for n in workload_notes(f, horizon)]}


def out_file_text(forecasts: tuple[WorkloadForecast, ...], horizon: Horizon,
                  block: dict[str, Any]) -> str:
    """The --out file: how to paste it, a comment per workload whose growth a scenario refuses
    (:func:`refused_growth_note`: the file is pasted, the terminal may not be read), the keys."""
    refused = [f"# {f.workload}: {line.strip().removeprefix('note: ')}\n" for f in forecasts
               for line in refused_growth_note(f, horizon) + absurd_growth_note(f, horizon)]
    return (OUT_FILE_NOTE + "".join(refused)
            + yaml.safe_dump(block, sort_keys=False, default_flow_style=None))


def render(forecasts: tuple[WorkloadForecast, ...], horizon: Horizon, source: Path,
           without_history: Sequence[str] = ()) -> str:
    """The readable table, a line per scenario workload the history lacks, then the YAML keys
    to paste into the scenario."""
    starts = [horizon.period_start(q).isoformat() for q in range(horizon.count)]
    lines = [f"forecast of {source}: each period's peak (its busiest day), median and "
             f"P{LOW_QUANTILE * 100:.0f}–P{HIGH_QUANTILE * 100:.0f} over {SIMULATIONS:,} "
             "simulated paths [req/s]"]
    for f in forecasts:
        lines.append(f"  {f.workload}: {f.model}, {f.days} days; growth over "
                     f"{rps_text(f.reference_rps)} req/s ({f.reference})")
        if f.chosen:
            lines.append(f"    {f.chosen}")
        lines += table_lines(
            ["Period from", Col("Median [req/s]", right=True), Col("Low–high [req/s]", right=True),
             Col("Growth", right=True)],
            [(start, rps_text(f.base_rps[q]),
              f"{rps_text(f.low_rps[q])}–{rps_text(f.high_rps[q])}", f"{f.growth[q]:.3f}")
             for q, start in enumerate(starts)], indent=4)
        lines += workload_notes(f, horizon)
    lines += [f"  {name}: no history in {source}, so no forecast: its growth stays as the "
              "scenario gives it" for name in without_history]
    block = scenario_block(forecasts, horizon)
    block.pop("growth")
    lines += [
        "",
        "# paste into the scenario: `horizon` and `demand_scenarios` at the top level, each",
        f"# workload's growth under it (weights {WEIGHTS['low']}/{WEIGHTS['base']}/"
        f"{WEIGHTS['high']}: Swanson's rule for P10/P50/P90)",
        yaml.safe_dump(block, sort_keys=False, default_flow_style=None).rstrip(),
    ]
    for f in forecasts:  # a workload's key: pasted at the top level, `chat:` would not load
        lines += [f"# under workload {f.workload} (beside its arrival):",
                  yaml.safe_dump({"growth": [round(g, 3) for g in f.growth]},
                                 default_flow_style=None).rstrip()]
    return "\n".join(lines)


@click.command("forecast")
@click.argument("history", type=click.Path(path_type=Path))
@click.option("--scenario", "scenario_path", type=click.Path(path_type=Path), default=None,
              callback=given_file(),
              help="Scenario whose horizon and workload peak_rps the growth is relative to.")
@click.option("--start", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="First day of the horizon (default: the scenario's).")
@click.option("--period-months", type=click.IntRange(1, 12), default=None,
              help="Months per period (default: the scenario's, else 3).")
@click.option("--periods", type=click.IntRange(1, 40), default=None,
              help="Periods in the horizon (default: the scenario's, else 4).")
@click.option("--trend", type=click.Choice([t.value for t in Trend]), default=Trend.auto.value,
              show_default=True, help="Trend of the ETS model on log peaks (auto: the lower AIC).")
@click.option("--out", "out_file", type=click.Path(path_type=Path), default=None,
              help="Also write the keys to this YAML file: horizon and demand_scenarios "
                   "(top level), and growth by workload (each list goes under its workload).")
@json_option
def command(history: Path, scenario_path: Path | None, start: dt.datetime | None,
            period_months: int | None, periods: int | None, trend: str, out_file: Path | None,
            as_json: bool) -> None:
    """Forecast growth per period from HISTORY.csv (date, workload, peak_rps: each day's peak).

    Writes each workload's base growth and low/base/high demand scenarios (P10/P50/P90 of an
    ETS model's prediction interval) for the scenario's horizon.
    """
    if importlib.util.find_spec("statsmodels") is None:
        raise MissingExtra([missing_statsmodels()])
    scenario = load(scenario_path) if scenario_path is not None else None
    with contextlib.ExitStack() as reserved:
        target = None if out_file is None else reserved.enter_context(
            OutputFile(out_file, "--out", inputs=[history, scenario_path]))
        forecasts, horizon, block = _forecast(history, scenario, start, period_months,
                                              periods, trend)
        if target is not None:
            target.commit(out_file_text(forecasts, horizon, block))
    forecast_names = {f.workload for f in forecasts}
    without_history = [] if scenario is None else [
        w.name for w in scenario.workloads if w.name not in forecast_names]
    if as_json:
        echo_json({**block, "without_history": without_history,
                   "workloads": [json_workload(f, horizon) for f in forecasts]})
        return
    click.echo(render(forecasts, horizon, history, without_history))


def _forecast(history: Path, scenario: Scenario | None, start: dt.datetime | None,
              period_months: int | None, periods: int | None, trend: str,
              ) -> tuple[tuple[WorkloadForecast, ...], Horizon, dict[str, Any]]:
    """The forecasts of HISTORY over the horizon, and the scenario block they make."""
    problems: list[Problem] = []  # both at once: a missing HISTORY was hidden behind --start
    try:
        horizon = _horizon(scenario, start, period_months, periods)
    except InputError as err:
        problems += err.problems
    try:
        frame = read_history(history, None if scenario is None else
                             [w.name for w in scenario.workloads],
                             "" if scenario is None else scenario.name)
    except InputError as err:
        problems += err.problems
    if problems:
        raise InputError(problems)
    references = None if scenario is None else {
        w.name: w.arrival.peak_rps for w in scenario.workloads if w.arrival is not None}
    forecasts = forecast(frame, horizon, references, Trend(trend), str(history))
    return forecasts, horizon, scenario_block(forecasts, horizon)
