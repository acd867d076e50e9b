"""CSV and workbook writers write a float as the decimal it stands for, not its binary value's
last digits.

A new user's measured.csv said ``tested_peak_rps`` 19.700000000000003: import-bench's
interpolation 15.8 + 0.5 × (23.6 − 15.8), written by ``repr``.
"""

from __future__ import annotations

import csv
import io

import pandas as pd
from openpyxl import Workbook

from models.measured import MeasuredCapacity, measured_csv
from solver.outputs.xlsx_cells import put
from solver.studies.sweep_results import results_csv

RATE = 15.8 + 0.5 * (23.6 - 15.8)  # the README's interpolated rate, 19.700000000000003


def test_the_readme_rate_is_written_as_its_decimal() -> None:
    assert repr(RATE) == "19.700000000000003"  # what was written
    row = MeasuredCapacity(model="Llama-3.1-8B", gpu="H100-SXM", runtime="vllm",
                           precision="bf16", tp=1, workload="chat", max_stable_sequences=170,
                           tested_peak_rps=RATE, ttft_p95_ms=0.1 + 0.2,
                           decode_p95_ms_per_token=36.0, measured_on="2026-09-21")
    (written,) = csv.DictReader(io.StringIO(measured_csv([row])))
    assert (written["tested_peak_rps"], written["ttft_p95_ms"]) == ("19.7", "0.3")
    assert written["decode_p95_ms_per_token"] == "36.0"


def test_sweep_csv_numbers_keep_fifteen_digits_and_nothing_past_them() -> None:
    frame = pd.DataFrame({"cost_per_month": [0.1 + 0.2, 1 / 3, 1752.0], "attempts": [1, 2, 3]})
    lines = results_csv(frame).splitlines()
    assert lines[1:] == ["0.3,1", "0.333333333333333,2", "1752.0,3"]


def test_a_workbook_cell_stores_the_decimal() -> None:
    """The Schedule sheet stored a quoted 6.36 USD/GPU-hour as 6.359999999999999 and a demand
    of 35.75 req/s as 35.75000000000001: every workbook writes its cells through ``put``."""
    ws = Workbook().active
    assert ws is not None
    noisy = (RATE, 0.1 * 3, 1.1 * 1.1)
    assert [repr(v) for v in noisy] == ["19.700000000000003", "0.30000000000000004",
                                        "1.2100000000000002"]
    for col, value in enumerate((*noisy, 2 / 3, float("inf")), start=1):
        put(ws, 1, col, value, "#,##0.000")
    assert [c.value for c in ws[1]] == [19.7, 0.3, 1.21, 0.666666666666667, float("inf")]
