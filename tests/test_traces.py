"""Trace readers, format detection, located errors, and the synthetic trace."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from models.errors import InputError
from models.workload import Arrival, Slo, TokenPercentiles, Workload
from solver.replay import traces
from solver.replay.traces import (
    TraceFormat,
    detect_format,
    lognormal_params,
    read_trace,
    scale_arrivals,
    synthetic_trace,
)

DATA = Path(__file__).resolve().parent / "data"
AZURE_SLICE = DATA / "azure_conv_head300.csv"
MOONCAKE_SLICE = DATA / "mooncake_conv_head200.jsonl"


def _workload(peak_rps: float = 10.0) -> Workload:
    return Workload(
        name="chat", model="m", arrival=Arrival(peak_rps=peak_rps),
        input_tokens=TokenPercentiles(p50=1000, p95=4000, p99=6000),
        output_tokens=TokenPercentiles(p50=100, p95=400, p99=600),
        slo=Slo(ttft_p95_ms=1000, tpot_p95_ms=50),
    )


def test_detect_format(tmp_path: Path) -> None:
    generic = tmp_path / "t.csv"
    generic.write_text("time_s,input_tokens,output_tokens\n0,10,5\n")
    assert detect_format(AZURE_SLICE) is TraceFormat.azure
    assert detect_format(MOONCAKE_SLICE) is TraceFormat.mooncake
    assert detect_format(generic) is TraceFormat.csv


def test_azure_slice_reads_times_from_first_request() -> None:
    trace = read_trace(AZURE_SLICE)
    assert len(trace) == 300
    # First rows: 18:15:46.6805900,374,44 then 18:15:50.9951690,396,109.
    assert trace.arrival_s[0] == 0.0
    assert trace.arrival_s[1] == pytest.approx(50.9951690 - 46.6805900, abs=1e-6)
    assert trace.input_tokens[:2].tolist() == [374, 396]
    assert trace.output_tokens[:2].tolist() == [44, 109]
    start = datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC).timestamp()
    assert trace.start_epoch_s == pytest.approx(start, abs=1e-6)
    # Last row 18:17:10.7096920: 84.029102 s after the first.
    assert trace.duration_s == pytest.approx(84.029102, abs=1e-6)
    assert trace.prefix_block_ids is None


def test_mooncake_slice_keeps_block_ids_in_order() -> None:
    rows = [json.loads(line) for line in MOONCAKE_SLICE.read_text().splitlines()]
    trace = read_trace(MOONCAKE_SLICE)
    assert len(trace) == len(rows) == 200
    assert trace.arrival_s.tolist() == [r["timestamp"] / 1000 for r in rows]
    assert trace.input_tokens.tolist() == [r["input_length"] for r in rows]
    assert trace.prefix_block_ids is not None
    assert trace.prefix_block_ids.tolist() == [h for r in rows for h in r["hash_ids"]]
    assert trace.start_epoch_s is None


def test_generic_csv_named_columns_sorted(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("Prompt_Tokens,completion_tokens,time_s\n30,3,5.5\n10,1,2.0\n20,2,2.5\n")
    trace = read_trace(path)
    # Sorted by time 2.0, 2.5, 5.5 and shifted to start at 0.
    assert trace.arrival_s.tolist() == [0.0, 0.5, 3.5]
    assert trace.input_tokens.tolist() == [10, 20, 30]
    assert trace.output_tokens.tolist() == [1, 2, 3]


def test_generic_csv_with_a_millisecond_time_column(tmp_path: Path) -> None:
    """A `_ms` time column is read as milliseconds (matched as the other names are: `Time_MS`
    too): without it the header error's fix, "name one column timestamp_s …", invited
    renaming a millisecond column to seconds, a trace 1,000× too slow."""
    path = tmp_path / "t.csv"
    path.write_text("Time_MS,input_tokens,output_tokens\n0,10,5\n250,11,6\n1500,12,7\n")
    assert read_trace(path).arrival_s.tolist() == [0.0, 0.25, 1.5]
    seconds = tmp_path / "s.csv"
    seconds.write_text("time_s,input_tokens,output_tokens\n0,10,5\n250,11,6\n")
    assert read_trace(seconds).arrival_s.tolist() == [0.0, 250.0]
    nameless = tmp_path / "n.csv"
    nameless.write_text("when,input_tokens,output_tokens\n0,10,5\n")
    with pytest.raises(InputError) as err:
        read_trace(nameless)
    assert "timestamp_ms" in err.value.problems[0].fix


def test_azure_file_read_as_generic_csv() -> None:
    # ContextTokens / GeneratedTokens match context_tokens / generated_tokens.
    generic = read_trace(AZURE_SLICE, TraceFormat.csv)
    azure = read_trace(AZURE_SLICE, TraceFormat.azure)
    assert np.array_equal(generic.arrival_s, azure.arrival_s)
    assert np.array_equal(generic.input_tokens, azure.input_tokens)
    assert np.array_equal(generic.output_tokens, azure.output_tokens)


def test_generic_csv_with_datetimes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp,input_length,output_length\n"
                    "2024-01-01T10:00:00Z,5,6\n2024-01-01T10:00:01.5Z,7,8\n")
    trace = read_trace(path, TraceFormat.csv)
    assert trace.arrival_s.tolist() == [0.0, 1.5]
    assert trace.start_epoch_s == datetime(2024, 1, 1, 10, tzinfo=UTC).timestamp()


def test_bad_cell_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.68,374,44\n"
                    "2023-11-16 18:15:47.00,lots,44\n"
                    "yesterday,10,0\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    where = {(p.file, p.location) for p in err.value.problems}
    assert where == {(str(path), "line 3, column ContextTokens"),
                     (str(path), "line 4, column TIMESTAMP"),
                     (str(path), "line 4, column GeneratedTokens")}


def test_generic_csv_without_length_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("time_s,tokens\n0,5\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    messages = [p.message for p in err.value.problems]
    assert len(messages) == 2
    assert "no input column" in messages[0]
    assert "no output column" in messages[1]


def test_mooncake_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
                    '{"timestamp": 10, "input_length": 5\n'
                    '{"timestamp": 20, "input_length": -1, "output_length": 2}\n')
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert [p.location for p in err.value.problems] == ["line 2", "line 3, column input_length"]


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_trace(tmp_path / "nope.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    with pytest.raises(InputError, match="no requests"):
        read_trace(empty)


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.csv", "blank.jsonl"])
def test_an_empty_file_is_said_to_hold_no_requests_whatever_its_format(
        tmp_path: Path, name: str) -> None:
    """An empty Mooncake ``.jsonl`` was told "no CSV header — start with a header row naming
    the columns": advice for another format (a new user's finding)."""
    path = tmp_path / name
    path.write_text("\n  \n" if name.startswith("blank") else "")
    for fmt in (None, TraceFormat.mooncake, TraceFormat.azure, TraceFormat.csv):
        with pytest.raises(InputError) as err:
            read_trace(path, fmt)
        (problem,) = err.value.problems
        assert problem.message == "empty file: no requests" and "CSV header" not in str(problem)
        assert "JSON lines" in problem.fix and "header row" in problem.fix


def test_lognormal_params_hit_median_and_p95() -> None:
    mu, sigma = lognormal_params(100, 400)
    assert np.exp(mu) == pytest.approx(100)
    assert np.exp(mu + 1.6448536 * sigma) == pytest.approx(400, rel=1e-6)


def test_synthetic_trace_rate_and_lengths() -> None:
    wl = _workload(peak_rps=20.0)
    trace = synthetic_trace(wl, duration_s=1000.0, seed=7)
    again = synthetic_trace(wl, duration_s=1000.0, seed=7)
    assert np.array_equal(trace.arrival_s, again.arrival_s)
    # Poisson count: mean 20 000, sd 141: within 5 sd.
    assert abs(len(trace) - 20_000) < 5 * 141
    assert trace.arrival_s[0] == 0.0 and trace.arrival_s[-1] < 1000.0
    assert np.all(np.diff(trace.arrival_s) >= 0)
    assert np.median(trace.input_tokens) == pytest.approx(1000, rel=0.04)
    assert np.percentile(trace.output_tokens, 95) == pytest.approx(400, rel=0.06)
    # Clipped at the workload's P99 (6000 in, 600 out); the lognormal's own P99 lies above.
    assert trace.input_tokens.max() == 6000 and trace.output_tokens.max() == 600
    doubled = synthetic_trace(wl, duration_s=1000.0, seed=7, rate_scale=2.0)
    assert abs(len(doubled) - 40_000) < 5 * 200


def test_scale_arrivals_divides_gaps() -> None:
    trace = synthetic_trace(_workload(), duration_s=10.0, seed=1)
    scaled = scale_arrivals(trace, 4.0)
    assert np.allclose(np.diff(scaled.arrival_s), np.diff(trace.arrival_s) / 4.0)
    assert scaled.input_tokens is trace.input_tokens


# --- hostile traces (issue 18): located refusals, never a traceback or gigabytes ------------


@pytest.mark.parametrize(("name", "text", "message"), [
    # Was: per-minute counts of 1,157,407 days: 12.4 GiB allocated, a traceback.
    ("centuries.csv", "timestamp_s,input_tokens,output_tokens\n0,10,10\n1e11,10,10\n",
     "span 1,157,407 days"),
    # Was: OverflowError converting the minute count.
    ("float_limit.csv", "timestamp_s,input_tokens,output_tokens\n0,10,10\n1e300,10,10\n",
     "span 1.16e+295 days"),
    ("float_limit.jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
     '{"timestamp": 1e300, "input_length": 5, "output_length": 5}\n', "span 1.16e+292 days"),
    # Was: 1.57 GiB of per-minute rates, a traceback.
    ("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n1800-01-01 00:00:00,10,10\n"
     "2200-01-01 00:00:00,10,10\n", "span 146,097 days"),
])
def test_a_trace_spanning_centuries_is_refused(tmp_path: Path, name: str, text: str,
                                               message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(path) in str(err.value) and message in str(err.value)
    assert "at most 366 days are read" in str(err.value)


def test_a_header_with_spaces_after_its_commas_is_read(tmp_path: Path) -> None:
    # Was: "Usecols do not match columns", although names match ignoring spaces.
    path = tmp_path / "spaced.csv"
    path.write_text("timestamp_s, input_tokens , output_tokens\n0,10,5\n2, 20, 6\n",
                    encoding="utf-8")
    trace = read_trace(path)
    assert trace.arrival_s.tolist() == [0.0, 2.0]
    assert trace.input_tokens.tolist() == [10, 20] and trace.output_tokens.tolist() == [5, 6]
    azure = tmp_path / "azure.csv"
    azure.write_text("TIMESTAMP, ContextTokens, GeneratedTokens\n2023-11-16 18:15:46,374,44\n",
                     encoding="utf-8")
    assert read_trace(azure).input_tokens.tolist() == [374]


def test_a_json_line_nested_too_deeply_is_located(tmp_path: Path) -> None:
    # Was: RecursionError out of json.loads, a traceback.
    path = tmp_path / "deep.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 5, "output_length": 5}\n'
                    + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_trace(path, TraceFormat.mooncake)
    assert f"{path}: line 2" in str(err.value)


def test_a_trace_past_its_request_count_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces, "MAX_TRACE_REQUESTS", 3)
    monkeypatch.setattr(traces, "CHUNK_ROWS", 2)
    rows = "".join(f"{i},10,5\n" for i in range(4))
    numbers = tmp_path / "n.csv"
    numbers.write_text("time_s,input_tokens,output_tokens\n" + rows, encoding="utf-8")
    stamps = tmp_path / "d.csv"
    stamps.write_text("time,input_tokens,output_tokens\n" + "".join(
        f"2024-01-01 00:00:0{i},10,5\n" for i in range(4)), encoding="utf-8")
    lines = tmp_path / "m.jsonl"
    lines.write_text("".join(f'{{"timestamp": {i}, "input_length": 5, "output_length": 5}}\n'
                             for i in range(4)), encoding="utf-8")
    for path in (numbers, stamps, lines):
        with pytest.raises(InputError, match="more than 3 requests"):
            read_trace(path)
    numbers.write_text("time_s,input_tokens,output_tokens\n" + rows[:-7], encoding="utf-8")
    assert len(read_trace(numbers)) == 3


def test_bad_cells_of_a_datetime_trace_read_in_chunks_are_located(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traces, "CHUNK_ROWS", 2)
    path = tmp_path / "d.csv"
    path.write_text("time,input_tokens,output_tokens\n2024-01-01 00:00:03,10,5\n"
                    "2024-01-01 00:00:01,10,5\nsoon,10,5\n2024-01-01 00:00:02,x,5\n",
                    encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert "line 4, column time: not a time" in str(err.value)
    assert "line 5, column input_tokens" in str(err.value)
    path.write_text("time,input_tokens,output_tokens\n2024-01-01 00:00:03,10,5\n"
                    "2024-01-01 00:00:01,11,5\n2024-01-01 00:00:02,12,5\n", encoding="utf-8")
    trace = read_trace(path)
    assert trace.arrival_s.tolist() == [0.0, 1.0, 2.0]
    assert trace.input_tokens.tolist() == [11, 12, 10]


def test_a_trace_that_is_a_device_is_not_read_forever() -> None:
    with pytest.raises(InputError, match="not a regular file"):
        read_trace(Path("/dev/zero"))
