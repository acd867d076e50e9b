"""Does ``fleetplan forecast`` give each period's *peak*? A history with a known generating
process, the true distribution of each quarter's busiest day, and the forecast beside it.

The process (a fresh-clone user's, findings F10): two workloads, a year of daily peaks ending
2026-11-30 at ``chat-70b`` 160 and ``assistant-8b`` 600 req/s on a typical weekday, growing
×1.4 a year, a weekly shape (Mon..Sun 1.00 1.02 1.03 1.01 0.96 0.78 0.74), ×0.8 from 12-22 to
01-02, and log-normal noise of σ 0.05 a day, drawn with ``--seed``. The truth: ``--paths`` draws
of the same process over each quarter of 2027, and the P10/P50/P90 of each quarter's maximum.
The forecast runs with the code found first on ``sys.path`` (``--code DIR`` puts DIR there:
main's tree beside this one)::

    git -C /work/main archive main | tar -x -C /tmp/main_forecast
    nice -n 19 .venv/bin/python benchmarks/forecast_peaks.py --code /tmp/main_forecast
    nice -n 19 .venv/bin/python benchmarks/forecast_peaks.py --code .
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WEEKLY = (1.0, 1.02, 1.03, 1.01, 0.96, 0.78, 0.74)  # Mon..Sun
END_RPS = {"chat-70b": 160.0, "assistant-8b": 600.0}  # a typical weekday at the end [req/s]
GROWTH_PER_YEAR, NOISE_SIGMA = 1.4, 0.05
END = dt.date(2026, 11, 30)


def expected_peak_rps(name: str, day: dt.date) -> float:
    """The process's noiseless peak on ``day`` [req/s]."""
    holiday = 0.8 if (day.month == 12 and day.day >= 22) or (day.month == 1 and day.day <= 2) \
        else 1.0
    level = END_RPS[name] * GROWTH_PER_YEAR ** ((day - END).days / 365.0)
    return level * WEEKLY[day.weekday()] * holiday


def write_history(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = ["date,workload,peak_rps"]
    for name in END_RPS:
        for i in range(365):
            day = END - dt.timedelta(days=364 - i)
            peak = expected_peak_rps(name, day) * math.exp(rng.normal(0, NOISE_SIGMA))
            rows.append(f"{day.isoformat()},{name},{peak:.2f}")
    path.write_text("\n".join(rows) + "\n")


def truth(name: str, start: dt.date, end: dt.date, paths: int, seed: int) -> np.ndarray:
    """P10, P50, P90 of the period's busiest day over ``paths`` draws of the process."""
    days = [start + dt.timedelta(days=i) for i in range((end - start).days)]
    mean = np.array([expected_peak_rps(name, d) for d in days])
    noise = np.random.default_rng(seed).normal(0, NOISE_SIGMA, (paths, len(days)))
    return np.quantile((mean * np.exp(noise)).max(axis=1), [0.1, 0.5, 0.9])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--paths", type=int, default=2000)
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    from models.horizon import Horizon
    from solver.studies.forecast import forecast, read_history

    horizon = Horizon(start=dt.date(2027, 1, 1), period_months=3, count=4)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "history.csv"
        write_history(csv, args.seed)
        began = time.perf_counter()
        results = forecast(read_history(csv), horizon)
        seconds = time.perf_counter() - began
    print(f"code {args.code}, seed {args.seed}, forecast {seconds:.1f} s")
    print(f"{'workload':<13} {'quarter':<10} {'true P10/P50/P90':>22} "
          f"{'forecast low/base/high':>24} {'base/true P50':>14}")
    for f in results:
        for q in range(horizon.count):
            t = truth(f.workload, horizon.period_start(q), horizon.period_start(q + 1),
                      args.paths, args.seed + q)
            print(f"{f.workload:<13} {horizon.period_start(q).isoformat():<10} "
                  f"{t[0]:6.1f} {t[1]:6.1f} {t[2]:6.1f}   {f.low_rps[q]:6.1f} {f.base_rps[q]:6.1f} "
                  f"{f.high_rps[q]:6.1f}   {f.base_rps[q] / t[1] - 1:+13.1%}")
        print(f"{'':<13} model {f.model}; {f.chosen}")


if __name__ == "__main__":
    main()
