"""Forecast demand growth per planning period from a history of daily peaks.

Per workload, an exponential-smoothing state-space model (ETS: additive errors, an additive
trend, damped or not, weekly seasonality when the history holds four weeks or more) is fitted
to the logarithm of the daily peak request rate with ``statsmodels`` (Hyndman et al.,
*Forecasting with Exponential Smoothing*, 2008; the damped trend after Gardner & McKenzie,
1985). By default both trends are fitted and the one of lower AIC kept, as Hyndman's ``ets``
selects a model, the damped one unless the linear one is lower by :data:`AIC_TIE` or more
and the forecast reaches no further than :data:`REACH_PER_HISTORY` times the history's
length: a damped trend flattens a steady growth that the history shows, a linear one extrapolates a
growth that is slowing, and where the history cannot tell them apart the damped trend is the
safer extrapolation. On the log
scale growth is multiplicative and the prediction interval stays positive. For each planning
period the peak is the highest of its days' peaks: the fitted model's future is simulated
(:data:`SIMULATIONS` paths, seeded) and the median of each path's period maximum is ``base``,
its 10th and 90th percentiles ``low`` and ``high`` (peaks, not averages: the busiest day's
median alone is short by the top of ~90 days' noise). The three
become demand scenarios with Swanson's 30/40/30 weights, the usual three-point stand-in for a
distribution given by its P10, P50 and P90 (docs/program.md, "Demand scenarios").

Growth is the period's peak over a reference rate: the scenario's ``peak_rps`` for the
workload (so the planned demand is the forecast), else the busiest day of the history's last
week. ``base`` becomes the workload's ``growth``; ``low`` and ``high`` multiply it.
"""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.errors import InputError, Problem, did_you_mean
from models.horizon import Horizon
from models.input_files import check_file, duplicate_columns, long_row
from models.limits import MAX_TABLE_ROWS
from models.loader import SOLVER_INFINITY
from models.units import renamed_column_fix

#: Columns of a history file.
DATE, WORKLOAD, PEAK = "date", "workload", "peak_rps"
#: Fewest days of history a workload needs for a trend [days]; weekly seasonality needs four
#: whole weeks.
MIN_DAYS, SEASONAL_DAYS, SEASON = 14, 28, 7
#: Percentiles of the low and high scenarios, and the scenarios' weights (Swanson's rule).
LOW_QUANTILE, HIGH_QUANTILE = 0.10, 0.90
WEIGHTS = {"low": 0.3, "base": 0.4, "high": 0.3}
#: Paths of the fitted model simulated to find each period's peak, and the seed of their errors.
#: With 2,000 paths the medians of the periods' peaks were within 0.5 % and their P10 and P90
#: within 1.1 % of those of 20,000 paths on ``benchmarks/forecast_peaks.py``'s history (a
#: sampling error, fixed by the seed: the same history gives the same forecast); 2,000 paths
#: of 396 days took 0.75 s at load 14.
SIMULATIONS, SEED = 2000, 20261204
#: A day whose peak is under DIP_SHARE of the median of the same weekday's peaks in the
#: DIP_WEEKS weeks either side (at least one before and one after it) is read as an outage or
#: a gap in the data, not demand, and left out of the fit as a day of 0 is
#: (:func:`dip_days`). Kept, one such day widens the fitted noise and with it every simulated
#: period's peak: a new user's 9 months of daily peaks with one partial outage (12 % of a
#: normal day) forecast ``base`` 13 % (code) and 25 % (summariser) above the same history
#: without the day, and above the process's true P90 (fresh-s24 F1). The day after is required
#: so that a fall at the history's end, which may be real, is never taken for an outage; a
#: holiday (about 55 % of a normal day) is kept. Judgements, not published rules: stated.
DIP_SHARE, DIP_WEEKS = 0.5, 3
#: In the history's last weeks, where a day has no same weekday after it, a day under
#: END_DIP_SHARE of the median of the same weekday in the DIP_WEEKS weeks before it is a
#: holiday or an outage, and left out of the fit, when at most END_DIP_DAYS days of the
#: history's last week are so: more is a fall of the level, which may be real, and is kept.
#: fresh-s24 F2: a history ending 2026-11-30 (Thanksgiving and the Friday after at 55 %, 4 days
#: before its end) bent the end of the fitted trend down and forecast chat 6.5–17 % under the
#: true period-peak medians, Q4's ``high`` under the true median. 0.7: above a holiday's ~55 %
#: with its noise, below a normal day's ~1 ± 0.1 (4–5 % noise); 2 days: a holiday and a bridge
#: day. Judgements, stated, not published rules.
END_DIP_SHARE, END_DIP_DAYS = 0.7, 2
#: Rows of 0 a refusal lists before "and N more".
ROWS_LISTED = 5
#: Days of the history's end whose busiest day is the reference when no scenario gives one.
REFERENCE_DAYS = 7
#: A band that widens less than this over the horizon (last period's ``ln(P90 ÷ P10)`` over the
#: first's) is flat: the fitted smoothing weights are near 0, the model read the history as a
#: fixed trend plus day-to-day noise, and the interval holds that noise alone (an ETS interval
#: leaves out the uncertainty of its fitted parameters), so it understates the uncertainty of a
#: forecast far out. Said, not hidden (docs/program.md, "Demand scenarios from history").
FLAT_BAND = 1.25
#: A band whose last period's P90 is more than this many times its P10 is wide: the history's
#: level wanders and the model's interval compounds that over the horizon; said, not hidden.
WIDE_BAND = 4.0
#: An AIC difference below which the two trends are read as equally supported by the history
#: (Burnham & Anderson, *Model Selection and Multimodel Inference*, 2002: Δ < 2); ``auto`` then
#: keeps the damped trend, the one that does not extrapolate the last slope for ever and the
#: more accurate of the two far out in forecasting competitions (Gardner & McKenzie, 1985; the
#: M3 results). A wandering history (qa1: a random walk of 3 % a day) fitted the linear trend
#: 1.4 better by AIC and gave a P10–P90 band of 2.4–16,384 req/s a year out; the damped one
#: gives 11.7–54.1.
AIC_TIE = 2.0
#: ``auto`` keeps the linear trend only where the forecast reaches no further past the history's
#: last day than REACH_PER_HISTORY times the history's length (a year ahead on half a year of
#: history, as the shipped quarterly_history.csv's 184 days reach 365): a slope fitted on 45 days
#: and carried 392 days out is a guess the AIC cannot weigh (it scores the fit, not the reach).
#: A new user's 45 days of a real trace's peaks fitted the linear trend 3.69 better by AIC and
#: wrote growth [0.147, 0, 0, 0] and a high of 3.2e+32 (fresh-s22 F1); ``--trend linear`` keeps
#: it where the user knows the slope holds. A judgement, not a published rule: stated, not hidden.
REACH_PER_HISTORY = 2.0
#: The upper bound of the damping φ in statsmodels' ``ETSModel`` fit (0.98 a step, Hyndman's
#: ``ets`` bound too). Where the two trends' AICs lie within :data:`AIC_TIE` of each other,
#: ``auto`` keeps the damped trend only if its fitted φ is below this bound (less
#: :data:`PHI_SLACK`): a φ at the bound is the estimate pressed against its limit — the history
#: asks for no more damping than the least the bound allows — and the damped forecast is then
#: the linear one bent by the bound alone: per day, at most φ ÷ (1 − φ) = 49 more days of the
#: last slope however far the horizon. fresh-s24 F2: 9 months growing ×1.15 a quarter (holidays
#: and outage left out) fitted the damped trend 1.15 lower by AIC with φ = 0.98 and forecast
#: 2027 flat, 24–52 % under the true period-peak medians; the linear one is 4–8 % under. A
#: wandering history (qa1) fits φ = 0.84 and keeps its damped trend.
PHI_UPPER, PHI_SLACK = 0.98, 1e-3


#: A period whose growth is this many times the one before it (the first period: the
#: reference, ×1), or as many times less, gets a note though a scenario accepts it: an order of
#: magnitude within one period (a quarter by default) is a change the planner should know the
#: cause of — a launch or a migration is an event the scenario states, not a trend — and a
#: trend fitted to daily peaks that extrapolates one is most likely carried past what its
#: history tells. A new user's 45 days fitted a linear log-trend that wrote base growth 0.0541
#: → 0.000103 (÷525 in a quarter, validate accepts it) and a high of ×458 in the first quarter
#: (fresh-s22 F1). Growth of LLM services has exceeded ×10 a quarter only at a launch; the
#: factor is a judgement, stated with why, not a published rule.
ABSURD_STEP = 10.0


class Trend(StrEnum):
    """Trend of the ETS model on the log scale: chosen by AIC, damped or linear."""

    auto = "auto"
    damped = "damped"
    linear = "linear"


@dataclass(frozen=True)
class WorkloadForecast:
    """One workload's forecast per period: peak rates and growth over the reference."""

    workload: str
    reference_rps: float
    reference: str
    """Where the reference came from (``scenario peak_rps`` or the history's last week)."""
    model: str
    """The fitted model, e.g. ``ETS(A,Ad,A) on log peak_rps``."""
    days: int
    base_rps: tuple[float, ...]
    low_rps: tuple[float, ...]
    high_rps: tuple[float, ...]
    chosen: str = ""
    """Why ``auto`` kept this trend (empty when ``--trend`` named it)."""
    left_out: tuple[dt.date, ...] = ()
    """Days of the history with a peak of 0, left out of the fit (:func:`zero_peak_days`)."""
    dips: tuple[tuple[dt.date, float], ...] = ()
    """Days far below the same weekday around them, left out of the fit as outages, each with
    its peak over that weekday's median [1] (:func:`dip_days`)."""
    end_dips: tuple[tuple[dt.date, float], ...] = ()
    """Days of the history's last week far below the same weekday in the weeks before, left out
    of the fit as holidays, each with that ratio [1] (:data:`END_DIP_SHARE`)."""

    @property
    def growth(self) -> tuple[float, ...]:
        """Base growth per period [1]."""
        return tuple(b / self.reference_rps for b in self.base_rps)

    @property
    def band_widening(self) -> float | None:
        """The last period's P10–P90 band over the first's, as ratios ``ln(high ÷ low)`` [1];
        ``None`` with one period. Near 1: the band does not widen with the horizon (see
        :data:`FLAT_BAND`)."""
        if len(self.base_rps) < 2:
            return None
        first = math.log(self.high_rps[0] / self.low_rps[0])
        last = math.log(self.high_rps[-1] / self.low_rps[-1])
        return last / first if first > 0 else None

    @property
    def band_ratio(self) -> float:
        """The last period's P90 over its P10 [1]."""
        return self.high_rps[-1] / self.low_rps[-1]

    def multiplier(self, case: str) -> tuple[float, ...]:
        """A scenario's multiplier on the base growth per period [1]."""
        rates = self.low_rps if case == "low" else self.high_rps
        return tuple(r / b for r, b in zip(rates, self.base_rps, strict=True))


def _row_problems(row: Mapping[str, str], where: str, file: str) -> list[Problem]:
    problems = []
    try:
        dt.date.fromisoformat(row[DATE])
    except ValueError:
        problems.append(Problem(file, f"{where}.{DATE}", f"`{row[DATE]}` is not a date",
                                "write the date as YYYY-MM-DD"))
    if not row[WORKLOAD].strip():
        problems.append(Problem(file, f"{where}.{WORKLOAD}", "empty", "name the workload"))
    try:
        peak = float(row[PEAK])
    except ValueError:
        peak = math.nan
    if not (math.isfinite(peak) and peak >= 0):  # 0: a day left out (zero_peak_days)
        problems.append(Problem(file, f"{where}.{PEAK}", f"`{row[PEAK]}` is not a positive "
                                "rate", "give the day's peak request rate [1/s] (0 for a day "
                                "without demand: it is left out of the fit)"))
    return problems


def read_history(path: Path, workloads: Sequence[str] | None = None,
                 scenario: str = "") -> pd.DataFrame:
    """A history CSV (``date``, ``workload``, ``peak_rps``), checked; errors name the row.
    With ``workloads`` (those of the scenario named ``scenario``), a workload not among them
    is an error at its first row (a typo would be forecast and pasted in for nothing)."""
    file = str(path)
    check_file(path, "CSV table")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            rows = list(itertools.islice(reader, MAX_TABLE_ROWS + 1))  # no more in memory
            columns = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError([Problem(file, "", f"cannot read the CSV: {exc}",
                                  f"give a CSV with columns {DATE}, {WORKLOAD}, {PEAK}")]) from None
    if len(rows) > MAX_TABLE_ROWS:
        raise InputError([Problem(file, "", f"more than {MAX_TABLE_ROWS:,} rows; at most "
                                  f"{MAX_TABLE_ROWS:,} are read", "split the history")])
    twice = duplicate_columns(columns, file)
    if twice is not None:  # DictReader kept the second column's cells, dropped the first's
        raise InputError([twice])
    missing = [c for c in (DATE, WORKLOAD, PEAK) if c not in columns]
    if missing:
        # a peak in another rate unit (`peak_rpm`): the column meant and its values scaled
        renamed = [fix for c in columns
                   if (fix := renamed_column_fix(c.strip(), [PEAK])) is not None]
        raise InputError([Problem(file, "header", f"missing columns: {', '.join(missing)}",
                                  renamed[0][1] if PEAK in missing and renamed else
                                  f"the header needs {DATE}, {WORKLOAD}, {PEAK} (one row per "
                                  "workload and day: the day's busiest request rate)")])
    if not rows:  # a header alone: nothing to fit (was a traceback on the empty date column)
        raise InputError([Problem(file, "row 2", "no rows of history: the file holds its "
                                  "header only", f"give one row per workload and day ({DATE}, "
                                  f"{WORKLOAD}, {PEAK}), at least {MIN_DAYS} days a workload")])
    problems: list[Problem] = []
    seen: dict[tuple[str, str], int] = {}
    days: dict[str, int] = {}
    first: dict[str, int] = {}  # a workload's first row
    zeros: dict[str, list[int]] = {}  # a workload's rows of a 0 peak: left out of the fit
    for i, row in enumerate(rows, start=2):
        if row.get(None):  # DictReader's cells past the header
            problems.append(long_row(len(columns) + len(row[None]), len(columns), file,
                                     f"row {i}"))
            continue
        row = {k: (row.get(k) or "").strip() for k in (DATE, WORKLOAD, PEAK)}
        found = _row_problems(row, f"row {i}", file)
        problems += found
        key = (row[WORKLOAD], row[DATE])
        if key in seen:
            problems.append(Problem(file, f"row {i}", f"{key[0]} on {key[1]} is also on row "
                                    f"{seen[key]}", "give one row per workload and day"))
        seen.setdefault(key, i)
        first.setdefault(row[WORKLOAD], i)
        if not found and float(row[PEAK]) == 0:
            zeros.setdefault(row[WORKLOAD], []).append(i)
            continue
        days[row[WORKLOAD]] = days.get(row[WORKLOAD], 0) + 1
    unknown = set() if workloads is None else {n for n in days if n and n not in workloads}
    for name in sorted(unknown, key=lambda n: first[n]):
        problems.append(Problem(
            file, f"row {first[name]}", f"workload `{name}` is not in scenario `{scenario}` "
            f"(its workloads: {', '.join(workloads or ())})",
            did_you_mean(name, workloads or ()) + " (or leave out --scenario to forecast it "
            "without one)"))
    for name, count in sorted(days.items()):
        if name and name not in unknown and count < MIN_DAYS and name not in zeros:
            problems.append(Problem(file, WORKLOAD, f"{name} has {count} days of history",
                                    f"give at least {MIN_DAYS} days per workload"))
    for name, at in sorted(zeros.items()):
        if name and name not in unknown and days.get(name, 0) < MIN_DAYS:
            problems.append(too_few_above_zero(name, days.get(name, 0), at, file))
    if problems:
        raise InputError(problems)
    return pd.DataFrame({
        DATE: pd.to_datetime([r[DATE].strip() for r in rows]),
        WORKLOAD: [r[WORKLOAD].strip() for r in rows],
        PEAK: [float(r[PEAK]) for r in rows],
    }).sort_values([WORKLOAD, DATE]).reset_index(drop=True)


def too_few_above_zero(name: str, count: int, zero_rows: Sequence[int], file: str) -> Problem:
    """A workload whose days with a peak above 0 are too few to fit once its days of 0 are
    left out (:func:`zero_peak_days`), located at its first row of 0."""
    listed = ", ".join(str(r) for r in zero_rows[:ROWS_LISTED])
    more = f" and {len(zero_rows) - ROWS_LISTED} more" if len(zero_rows) > ROWS_LISTED else ""
    return Problem(file, f"row {zero_rows[0]}.{PEAK}",
                   f"{name} has {count} day{'' if count == 1 else 's'} with a peak above 0: its "
                   f"{len(zero_rows)} day{'' if len(zero_rows) == 1 else 's'} of 0 (rows "
                   f"{listed}{more}) are left out of the fit, and a trend needs {MIN_DAYS}",
                   f"give at least {MIN_DAYS} days of {name} with a peak above 0")


def zero_peak_days(rows: pd.DataFrame) -> tuple[dt.date, ...]:
    """The days of a workload's history whose peak is 0, in date order: left out of the fit
    and filled as a missing day is (:func:`_daily`). A day of 0 — an outage, an idle minute of
    a trace — is no level a log-trend can take (log 0), and one such day refused the whole
    history (fresh-s22 F7); the forecast says which days it left out."""
    return tuple(d.date() for d in rows.loc[rows[PEAK] == 0, DATE].sort_values())


def dip_days(rows: pd.DataFrame) -> tuple[tuple[dt.date, float], ...]:
    """The days of a workload's history whose peak is under :data:`DIP_SHARE` of the median
    of the same weekday's peaks in the :data:`DIP_WEEKS` weeks before and after it (at least
    one of each, days of 0 not counted), and the days of its last week under
    :data:`END_DIP_SHARE` of that median in the weeks before it (at most :data:`END_DIP_DAYS`
    of them), each with that ratio [1], in date order: outages and holidays left out of the
    fit and filled as a missing day is (:func:`_daily`)."""
    above = rows[rows[PEAK] > 0]
    peaks = dict(zip((d.date() for d in above[DATE]), above[PEAK].astype(float), strict=True))
    found, at_end = [], []
    last = max(peaks, default=dt.date.min)
    for day, peak in sorted(peaks.items()):
        before = [peaks[d] for k in range(1, DIP_WEEKS + 1)
                  if (d := day - dt.timedelta(weeks=k)) in peaks]
        after = [peaks[d] for k in range(1, DIP_WEEKS + 1)
                 if (d := day + dt.timedelta(weeks=k)) in peaks]
        if before and after:
            ratio = peak / float(np.median(before + after))
            if ratio < DIP_SHARE:
                found.append((day, ratio))
        elif before and (last - day).days < 7:
            ratio = peak / float(np.median(before))
            if ratio < END_DIP_SHARE:
                at_end.append((day, ratio))
    if len(at_end) <= END_DIP_DAYS:  # a holiday; more is a fall of the level, kept
        found += at_end
    return tuple(sorted(found))


def _daily(rows: pd.DataFrame) -> pd.Series:
    """Log peaks on a daily index; missing days, and days of 0 (:func:`zero_peak_days`),
    filled by interpolation (ETS needs every day)."""
    rows = rows[rows[PEAK] > 0]
    series = pd.Series(np.log(rows[PEAK].to_numpy(dtype=float)), index=rows[DATE])
    every_day = pd.date_range(series.index.min(), series.index.max(), freq="D")
    return series.reindex(every_day).interpolate(limit_direction="both")


def _fit(y: pd.Series, damped: bool, seasonal: bool) -> Any:
    """The fitted ETS model of log peaks."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    model = ETSModel(y, error="add", trend="add", damped_trend=damped,
                     seasonal="add" if seasonal else None,
                     seasonal_periods=SEASON if seasonal else None)
    with warnings.catch_warnings():  # optimiser chatter: the fit with the lower AIC is kept
        warnings.simplefilter("ignore")
        return model.fit(disp=False)


def _reach_days(y: pd.Series, horizon: Horizon) -> int:
    """Days from the history's last day to the horizon's last [days]."""
    return (horizon.end - dt.timedelta(days=1) - y.index.max().date()).days


def _periods(fit: Any, y: pd.Series, horizon: Horizon) -> tuple[list[float], ...]:
    """Each period's peak, the highest of its days' peaks: the median, P10 and P90 of that
    maximum over :data:`SIMULATIONS` paths of the fitted model [req/s].

    A period's peak is the maximum of some 90 noisy days, so it lies above the busiest day's
    median by about the top of that noise: the busiest forecast day's median (the method until
    2026-12) fell 7–8 % short of the simulated quarter's peak on a history with 5 % daily noise
    (docs/program.md, "Demand scenarios from history"). The paths start after the history's last
    day and carry the fitted states forward with normal errors of the fit's variance, drawn from
    a generator seeded with :data:`SEED`: the same history gives the same forecast."""
    last = y.index.max().date()
    steps = _reach_days(y, horizon)
    rng = np.random.default_rng(SEED)
    errors = rng.standard_normal((steps, SIMULATIONS)) * math.sqrt(float(fit.scale))
    paths = np.asarray(fit.simulate(nsimulations=steps, anchor="end", repetitions=SIMULATIONS,
                                    random_errors=errors), dtype=float)  # log req/s, day × path
    days = pd.date_range(last + dt.timedelta(days=1), periods=steps, freq="D")
    base, low, high = [], [], []
    for q in range(horizon.count):
        inside = (days >= pd.Timestamp(horizon.period_start(q))) & (
            days < pd.Timestamp(horizon.period_start(q + 1)))
        peaks = np.exp(paths[inside].max(axis=0))  # each path's busiest day in the period
        p10, p50, p90 = np.quantile(peaks, [LOW_QUANTILE, 0.5, HIGH_QUANTILE])
        base.append(float(p50))
        low.append(float(p10))
        high.append(float(p90))
    return base, low, high


def _rps(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def forecast_workload(
    name: str, rows: pd.DataFrame, horizon: Horizon, reference_rps: float | None,
    trend: Trend = Trend.auto,
) -> WorkloadForecast:
    """Fit the ETS model to one workload's history and read the periods' peaks off it."""
    dips = dip_days(rows)
    last = rows[DATE].max().date()
    at_end = tuple(x for x in dips if (last - x[0]).days < SEASON)  # END_DIP_SHARE's
    y = _daily(rows[~rows[DATE].dt.date.isin({d for d, _ in dips})])
    seasonal = len(y) >= SEASONAL_DAYS
    chosen = ""
    if trend is Trend.auto:
        damped_fit, linear_fit = _fit(y, True, seasonal), _fit(y, False, seasonal)
        lead = float(damped_fit.aic) - float(linear_fit.aic)  # > 0: the linear trend fits better
        undamped = abs(lead) < AIC_TIE and float(damped_fit.damping_trend) >= PHI_UPPER - PHI_SLACK
        damped = lead < AIC_TIE and not undamped
        reach = _reach_days(y, horizon)
        too_far = not damped and reach > REACH_PER_HISTORY * len(y)
        damped = damped or too_far
        fit = damped_fit if damped else linear_fit
        if too_far:
            chosen = (f"damped trend chosen: the linear one's AIC is {lead:.2f} lower, but the "
                      f"forecast reaches {reach} days past a history of {len(y)} days, more than "
                      f"{REACH_PER_HISTORY:g} times its length, and a slope fitted on it is not "
                      "known to hold that far (a longer history lets auto weigh it); "
                      f"{_linear_gives(linear_fit, y, horizon)}")
        elif undamped:
            chosen = (f"linear trend chosen: the two trends' AICs are {abs(lead):.2f} apart, "
                      f"less than the {AIC_TIE:g} that tells two fits apart, and the damped "
                      f"one's φ is at its bound of {PHI_UPPER:g} a day: the history shows no "
                      "damping, the bound alone would flatten the forecast (--trend damped "
                      "keeps it)")
        elif not damped:
            chosen = (f"linear trend chosen: its AIC is {lead:.2f} below the damped one's, a "
                      f"lead of {AIC_TIE:g} or more")
        else:  # damped: say what the other gives, the damping being per day (F2)
            linear = _linear_gives(linear_fit, y, horizon)
            chosen = (f"damped trend chosen: its AIC is {-lead:.2f} below the linear one's; "
                      f"{linear}" if lead <= 0 else
                      f"damped trend chosen: the linear one's AIC is lower by only {lead:.2f}, "
                      f"less than the {AIC_TIE:g} that tells two fits apart, so the history "
                      "supports both alike and the damped trend, the safer extrapolation, is "
                      f"kept; {linear}")
    else:
        damped = trend is Trend.damped
        fit = _fit(y, damped, seasonal)
    base, low, high = _periods(fit, y, horizon)
    if reference_rps is None:
        reference_rps = float(np.exp(y.iloc[-REFERENCE_DAYS:].max()))
        where = f"the busiest day of the history's last {REFERENCE_DAYS} days"
    else:
        where = "the scenario's peak_rps"
    label = f"ETS(A,{'Ad' if damped else 'A'},{'A' if seasonal else 'N'})"
    return WorkloadForecast(name, reference_rps, where, f"{label} on log {PEAK}", len(y),
                            tuple(base), tuple(low), tuple(high), chosen, zero_peak_days(rows),
                            tuple(x for x in dips if x not in at_end), at_end)


def _linear_gives(linear_fit: Any, y: pd.Series, horizon: Horizon) -> str:
    """What the linear trend the forecast set aside gives in the last period, for a planner
    choosing between them (the damping being per day, a damped forecast at its bound adds at
    most ~49 days of the last slope; fresh-s24 F2)."""
    base, low, high = _periods(linear_fit, y, horizon)
    return (f"the linear one gives {_rps(base[-1])} ({_rps(low[-1])}–{_rps(high[-1])}) req/s "
            "in the last period (--trend linear)")


def forecast(
    history: pd.DataFrame, horizon: Horizon, references: Mapping[str, float] | None = None,
    trend: Trend = Trend.auto, file: str = "history",
) -> tuple[WorkloadForecast, ...]:
    """Every workload's forecast over the horizon, in name order."""
    last = history[DATE].max().date()
    if horizon.start <= last:
        raise InputError([Problem(file, DATE, f"the history runs to {last}, past the horizon's "
                                  f"start {horizon.start}", "start the horizon after the "
                                  "history ends")])
    out = []
    for name, rows in history.groupby(WORKLOAD, sort=True):
        ref = None if references is None else references.get(str(name))
        out.append(forecast_workload(str(name), rows, horizon, ref, trend))
    return tuple(out)


def _rounded(values: tuple[float, ...]) -> list[float]:
    return [round(v, 3) for v in values]


def refused_growth(f: WorkloadForecast) -> list[tuple[str, int, float]]:
    """(case, period, value) of each growth written for ``f`` (3 decimals, as
    :func:`scenario_block` writes it) that a scenario refuses: 0 or less (``growth``'s field) or
    10^20 and beyond (the loader's ``SOLVER_INFINITY``) — a trend extrapolated far past a short
    history writes such values, and the pasted block then fails ``validate``."""
    cases = (("base", f.growth), ("low", f.multiplier("low")), ("high", f.multiplier("high")))
    return [(case, q, v) for case, values in cases for q, v in enumerate(_rounded(values))
            if not 0 < v < SOLVER_INFINITY]


def absurd_growth(f: WorkloadForecast) -> list[tuple[str, int, float, float]]:
    """(case, period, growth before, growth in the period) of each period whose growth (base,
    low and high as demand over the reference: ``rps ÷ reference_rps``) is at least
    :data:`ABSURD_STEP` times the period's before (the first's: the reference, 1), or at most
    its inverse — values a scenario accepts; those it refuses (:func:`refused_growth`), and
    steps from them, are left to that note."""
    refused = {(case, q) for case, q, _ in refused_growth(f)}
    paths = (("base", f.growth),
             ("low", tuple(r / f.reference_rps for r in f.low_rps)),
             ("high", tuple(r / f.reference_rps for r in f.high_rps)))
    out = []
    for case, path in paths:
        before = 1.0
        for q, value in enumerate(path):
            kept = (case, q) not in refused and (q == 0 or (case, q - 1) not in refused)
            if kept and before > 0 and value > 0 and not (
                    1 / ABSURD_STEP < value / before < ABSURD_STEP):
                out.append((case, q, before, value))
            before = value
    return out


def scenario_block(forecasts: tuple[WorkloadForecast, ...], horizon: Horizon) -> dict[str, object]:
    """The scenario keys the forecast fills: ``horizon``, each workload's ``growth`` and three
    ``demand_scenarios`` (low and high multiply the base growth)."""
    return {
        "horizon": {"start": horizon.start.isoformat(), "period_months": horizon.period_months,
                    "count": horizon.count},
        "growth": {f.workload: _rounded(f.growth) for f in forecasts},
        "demand_scenarios": [
            {"name": "low", "probability": WEIGHTS["low"],
             "growth": {f.workload: _rounded(f.multiplier("low")) for f in forecasts}},
            {"name": "base", "probability": WEIGHTS["base"]},
            {"name": "high", "probability": WEIGHTS["high"],
             "growth": {f.workload: _rounded(f.multiplier("high")) for f in forecasts}},
        ],
    }
