"""Causes found by ``benchmarks/fuzz_inputs.py`` (mutated copies of the shipped inputs, run
through every command that reads them): each a clean exit 2 naming the file, the place and a
fix, never a traceback nor a message about another file."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import yaml

from inputs import scenarios_dir
from tests.hostile import refused, run

TINY: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
QUOTE_HEADER = ("zone,gpu,kind,term_months,upfront,price_per_gpu_hour,stock_gpus,lead_time_weeks,"
                "region,source\n")


def quoted_scenario(tmp_path: Path, quotes: str) -> Path:
    """tiny.yaml priced from ``quotes.csv`` (a plain quote CSV) instead of its own zones."""
    (tmp_path / "quotes.csv").write_text(quotes, encoding="utf-8")
    doc = copy.deepcopy(TINY)
    del doc["zones"]
    doc["price_tables"] = [{"path": "quotes.csv"}]
    doc["workloads"][0]["allowed_gpus"] = ["L4", "H100"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_quote_row_longer_than_its_header_is_located(tmp_path: Path) -> None:
    # `1,5` for 1.5 months: pandas took the first column for the index and the loader's
    # int(index) raised ValueError: invalid literal for int() with base 10: 'dc-1'
    path = quoted_scenario(tmp_path, QUOTE_HEADER
                           + "dc-1,H100,reserved,1,5,all,1.95,64,10,eu-central,vendor A\n"
                           + "dc-1,L4,on_demand,,,0.80,16,,eu-central,\n")
    result = run("validate", str(path))
    refused(result, f"{tmp_path / 'quotes.csv'}: row 2: 11 cells under a header of 10 columns",
                 "quote a cell holding a comma")


def test_quote_rows_each_with_a_trailing_comma_are_not_read_shifted(tmp_path: Path) -> None:
    # every row one cell long: the zone became the index and every cell moved one column left
    rows = ["dc-1,H100,on_demand,,,3.10,16,,eu-central,q,", "dc-1,L4,on_demand,,,0.80,16,,eu,q,"]
    path = quoted_scenario(tmp_path, QUOTE_HEADER + "\n".join(rows) + "\n")
    result = run("validate", str(path))
    refused(result, "quotes.csv: row 2: 11 cells")


def test_quote_file_without_rows_is_named(tmp_path: Path) -> None:
    # a truncated quote file was read as no offers: "s.yaml: zones: no zone offers any GPU"
    path = quoted_scenario(tmp_path, QUOTE_HEADER)
    result = run("validate", str(path))
    refused(result, f"{tmp_path / 'quotes.csv'}: no rows under the header")
    assert "no zone offers any GPU" not in result.output


def test_unknown_name_in_a_measured_csv_is_reported_at_its_row(tmp_path: Path) -> None:
    # was "s.yaml: measured[0].model: unknown model", a key the scenario does not have
    (tmp_path / "measured.csv").write_text(
        "model,gpu,runtime,precision,tp,workload,max_stable_sequences,tested_peak_rps,"
        "ttft_p95_ms,decode_p95_ms_per_token,measured_on\n"
        "Llama-3.1-8B,L4,vllm,bf16,1,chat,64,3,500,40,2026-10-01\n"
        "Llama-3.1-8,H100-SXM,vllm,bf16,1,chat,64,12,500,20,2026-10-01\n", encoding="utf-8")
    doc = copy.deepcopy(TINY)
    doc["measured_csv"] = "measured.csv"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = run("validate", str(path))
    refused(result, f"{tmp_path / 'measured.csv'}: row 3.model: unknown model `Llama-3.1-8`",
                 "`Llama-3.1-8B`")
    assert "measured[1]" not in result.output


def test_missing_per_token_slo_comes_with_a_fix(tmp_path: Path) -> None:
    # the message had no fix (tests/test_loader.py's mutation test found it: fix == "")
    doc = copy.deepcopy(TINY)
    del doc["workloads"][0]["slo"]["tpot_p95_ms"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = run("validate", str(path))
    refused(result, f"{path}: workloads[0]: slo.tpot_p95_ms is required",
            "— add `tpot_p95_ms` to the workload's `slo`")


def _tiny_plan(tmp_path: Path) -> dict[str, Any]:
    """tiny.yaml's plan.json, parsed (planned in seconds)."""
    out = tmp_path / "out"
    planned = run("plan", str(scenarios_dir() / "tiny.yaml"), "--out", str(out), "--time-limit",
                  "5", "--no-replay", "--quiet")
    assert planned.exit_code == 0, planned.output
    plan: dict[str, Any] = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    return plan


def _refused_as_a_fleet(tmp_path: Path, doc: dict[str, Any], text: str) -> None:
    """``doc`` given as tiny.yaml's fleet to check and simulate: each refuses it with
    ``text`` after the file's name."""
    tiny = scenarios_dir() / "tiny.yaml"
    fleet = tmp_path / "plan.json"
    fleet.write_text(json.dumps(doc), encoding="utf-8")
    for command in (("check", str(tiny), "--fleet", str(fleet)),
                    ("simulate", str(tiny), "--fleet", str(fleet), "--trace",
                     str(Path(__file__).parent / "data" / "azure_conv_head300.csv"))):
        refused(run(*command), f"{fleet}: {text}")


def test_infinite_capacity_in_a_plan_json_is_located(tmp_path: Path) -> None:
    # `"replica_capacity_rps": Infinity` (json reads it; plan never writes it) traced back in
    # the capacity model: ValueError: cannot convert float NaN to integer
    doc = _tiny_plan(tmp_path)
    doc["allocations"][0]["replica_capacity_rps"] = math.inf
    _refused_as_a_fleet(tmp_path, doc, "allocations[0].replica_capacity_rps: `inf` is not a "
                        "finite number")


def test_decimal_comma_in_a_history_is_refused_not_read_as_a_whole_number(tmp_path: Path) -> None:
    # `9,380` for 9.38 req/s: csv put `380` past the header and the day's peak was read as 9
    text = (scenarios_dir() / "quarterly_history.csv").read_text(encoding="utf-8")
    lines = text.splitlines()
    lines[2] = lines[2].replace(".", ",")  # row 3
    path = tmp_path / "history.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run("forecast", str(path), "--start", "2027-01-01", "--periods", "4")
    refused(result, f"{path}: row 3: 4 cells under a header of 3 columns",
            "write decimals with a point")


def test_decimal_comma_in_a_measured_csv_is_refused(tmp_path: Path) -> None:
    # `18,5` moved every later cell one column on and dropped the last: the row was refused
    # for its date (`50`, the per-token P95): "Datetimes provided to dates should have zero time"
    lines = (scenarios_dir() / "twenty_rps_measured.csv").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace(",18,", ",18,5,")
    (tmp_path / "twenty_rps_measured.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp_path / "twenty_rps.yaml"
    path.write_text((scenarios_dir() / "twenty_rps.yaml").read_text(encoding="utf-8"),
                    encoding="utf-8")
    refused(run("validate", str(path)),
            f"{tmp_path / 'twenty_rps_measured.csv'}: row 2: 13 cells under a header of 12 "
            "columns")


def test_trace_row_longer_than_its_header_is_refused_at_its_line(tmp_path: Path) -> None:
    # `1,5` tokens: pandas' usecols dropped the cell past the header, so the row was read as 1
    # input and 5 output tokens (Azure and generic CSV traces alike)
    lines = (Path(__file__).parent / "data" / "azure_conv_head300.csv").read_text(
        encoding="utf-8").splitlines()
    stamp, _, generated = lines[3].split(",")
    lines[3] = f"{stamp},1,5,{generated}"  # line 4
    azure = tmp_path / "azure.csv"
    azure.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(run("profile", str(azure)), f"{azure}: line 4: 4 cells under a header of 3 columns "
            f"(`{generated}` past its last column, `GeneratedTokens`)",
            "quote a cell holding a comma")
    generic = tmp_path / "generic.csv"
    generic.write_text("timestamp_s,input_tokens,output_tokens\n0,100,20\n1,100,20\n2,1,5,129\n",
                       encoding="utf-8")
    refused(run("profile", str(generic)), f"{generic}: line 4: 4 cells under a header of 3 "
            "columns")


def _twice(text: str, column: str) -> str:
    """A CSV's text with ``column`` written twice: a copy of it appended to every line, the
    data rows' copy ``9`` (so which of the two was read would show)."""
    lines = text.splitlines()
    return "\n".join([f"{lines[0]},{column}", *(f"{line},9" for line in lines[1:])]) + "\n"


def test_measured_csv_with_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    # DictReader kept the second `tp` column's cells and dropped the first's without a word
    text = (scenarios_dir() / "twenty_rps_measured.csv").read_text(encoding="utf-8")
    (tmp_path / "twenty_rps_measured.csv").write_text(_twice(text, "tp"), encoding="utf-8")
    path = tmp_path / "twenty_rps.yaml"
    path.write_text((scenarios_dir() / "twenty_rps.yaml").read_text(encoding="utf-8"),
                    encoding="utf-8")
    header = text.splitlines()[0].split(",")
    refused(run("validate", str(path)), f"{tmp_path / 'twenty_rps_measured.csv'}: header: a "
            f"column named twice: `tp` (columns {header.index('tp') + 1}, {len(header) + 1})",
            "keep one column of each name")


def test_other_csvs_with_a_column_named_twice_are_refused(tmp_path: Path) -> None:
    # quotes (pandas read the first, renamed the second `stock_gpus.1`), history (DictReader
    # kept the second), traces (pandas' usecols read the first)
    quotes = quoted_scenario(tmp_path, _twice(QUOTE_HEADER + "dc-1,L4,on_demand,,,0.80,16,,eu,\n",
                                              "stock_gpus"))
    refused(run("validate", str(quotes)), f"{tmp_path / 'quotes.csv'}: header: a column named "
            "twice: `stock_gpus`")
    history = tmp_path / "history.csv"
    history.write_text(_twice((scenarios_dir() / "quarterly_history.csv").read_text(
        encoding="utf-8"), "peak_rps"), encoding="utf-8")
    refused(run("forecast", str(history), "--start", "2027-01-01", "--periods", "4"),
            f"{history}: header: a column named twice: `peak_rps`")
    trace = tmp_path / "trace.csv"
    trace.write_text(_twice((Path(__file__).parent / "data" / "azure_conv_head300.csv").read_text(
        encoding="utf-8"), "ContextTokens"), encoding="utf-8")
    refused(run("profile", str(trace)), f"{trace}: header: a column named twice: "
            "`ContextTokens` (columns 2, 4)")


def test_non_finite_numbers_written_as_text_in_a_plan_json_are_located(tmp_path: Path) -> None:
    # pydantic reads "1e999" as a number: a replica capacity of it traced back in the capacity
    # model (cannot convert float NaN to integer); a "nan" cost passed verification as OK
    plan = _tiny_plan(tmp_path)
    for field, text, shown in (("replica_capacity_rps", "1e999", "inf"),
                               ("cost_per_month", "nan", "nan"),
                               ("cost_per_month", "-Infinity", "-inf")):
        doc = copy.deepcopy(plan)
        doc["allocations"][0][field] = text
        _refused_as_a_fleet(tmp_path, doc, f"allocations[0].{field}: `{shown}` is not a finite "
                            "number")
