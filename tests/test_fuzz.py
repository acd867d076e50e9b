"""Fuzzing every command with hostile input (issue 18): exit 0, 1 or 2, never a traceback,
within 3 GiB of address space and a time limit, and outputs that reopen.

Hypothesis mutates what users bring — scenarios (as YAML text and as values), fleets
(``plan.json``), traces, scenario workbooks, calibration measurements and load-test results —
replacing a value anywhere with a hostile one (huge or non-finite numbers, booleans, control
characters, formula and Markdown text, deep or long structures), deleting it, or flipping bytes.
Each run is a forked child under the address-space limit (``tests/hostile.run_forked``), so a
regression that allocates gigabytes or never ends fails one example instead of the machine.
Where a plan is written, ``plan.xlsx`` must reopen with openpyxl and ``plan.json`` validate as
a :class:`~models.plan.Plan`. The examples are derandomised: the suite is the same in CI and
here, a few minutes on two cores.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

from inputs import scenarios_dir
from models.plan import Plan
from solver.outputs.scenario_template import template_workbook
from tests.hostile import Bounded, run, run_forked

TINY_TEXT = (scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8")
TINY: dict[str, Any] = yaml.safe_load(TINY_TEXT)
#: Time a fuzzed command may take [s]: far above what any takes on these small inputs.
FUZZ_TIMEOUT_S = 60.0

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

#: Text that means something somewhere: formulas, Markdown, HTML, escapes, paths, YAML words.
NASTY_TEXT = ["=cmd|' /C calc'!A0", "@SUM(1+1)", "+1+2", "-2+3", "\t=1", "\x1b]0;x\x07",
              "\x1b[31mred", "\u202eevil", "a\x00b", "![i](http://e.example/i.png)",
              "<script>x</script>", "[l](javascript:x)", "$x^2$", "../../etc/passwd", "..",
              "/", "", " ", "a" * 5_000, "yes", "null", "~", ".inf", "1e309", "0x10", "é" * 200]

scalars = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25),
    st.sampled_from([0, -1, 2**63, 10**400, 10**19, 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 1e-300, -0.0, 1e20]),
    st.booleans(),
    st.none(),
    st.sampled_from(NASTY_TEXT),
    st.text(max_size=40),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.dictionaries(st.text(max_size=8), scalars, max_size=3),
    st.integers(1, 60).map(lambda depth: _nested(depth)),
)


def _nested(depth: int) -> Any:
    out: Any = 1
    for _ in range(depth):
        out = [out]
    return out


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document a value sits (mappings' keys, lists' indices)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any, changes: int = 3) -> Any:
    """``doc`` with up to ``changes`` places replaced by a hostile value, deleted, or (a
    list) repeated many times."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, changes))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "repeat"]))
        if action == "delete":
            del parent[key]
        elif action == "repeat" and isinstance(parent[key], list) and parent[key]:
            parent[key] = parent[key] * draw(st.sampled_from([2, 50, 2_000]))
        else:
            parent[key] = draw(values)
    return doc


@st.composite
def perturbed(draw: st.DrawFn, doc: Any, changes: int = 3) -> Any:
    """``doc`` with up to ``changes`` leaves changed as a user might and still be read: a
    number scaled far up or down, a text replaced by one that means something elsewhere
    (a formula, Markdown, HTML, an escape sequence)."""
    doc = copy.deepcopy(doc)
    leaves = [p for p in _paths(doc) if not isinstance(_at(doc, p), dict | list)
              and "time_blocks" not in p and "hourly_shape" not in p]
    for _ in range(draw(st.integers(1, changes))):
        path = draw(st.sampled_from(leaves))
        parent = _at(doc, path[:-1])
        value = parent[path[-1]]
        if isinstance(value, bool):
            parent[path[-1]] = not value
        elif isinstance(value, int | float):
            factor = draw(st.sampled_from([0, 1e-6, 0.01, 0.5, 3, 100, 1e4, 1e6]))
            scaled = value * factor
            parent[path[-1]] = round(scaled) if isinstance(value, int) else scaled
        elif isinstance(value, str):
            parent[path[-1]] = draw(st.sampled_from(NASTY_TEXT))
    return doc


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def survived(done: Bounded, *codes: int) -> None:
    """Exit 0, 1 or 2 (or one of ``codes``), no traceback, within the time limit."""
    assert done.exit_code is not None, f"ran past {FUZZ_TIMEOUT_S} s"
    assert done.exit_code in (codes or (0, 1, 2)), (done.exit_code, done.output[-3_000:])
    assert not done.traceback, done.output[-3_000:]


def dump(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=False)


def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# --- scenarios ------------------------------------------------------------------------------


@FUZZ
@given(doc=mutated(TINY))
def test_validate_and_capacity_survive_mutated_scenarios(
        tmp_path_factory: pytest.TempPathFactory, doc: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "s.yaml"
    path.write_text(dump(doc), encoding="utf-8")
    survived(run_forked("validate", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))
    survived(run_forked("capacity", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


@FUZZ
@given(cut=st.integers(0, len(TINY_TEXT)), junk=st.binary(max_size=64))
def test_validate_survives_flipped_bytes(tmp_path_factory: pytest.TempPathFactory, cut: int,
                                         junk: bytes) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "s.yaml"
    raw = TINY_TEXT.encode()
    path.write_bytes(raw[:cut] + junk + raw[cut + len(junk):])
    survived(run_forked("validate", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


def reopens(out: Path) -> None:
    """A plan directory's outputs open as their readers open them."""
    Plan.model_validate_json((out / "plan.json").read_text(encoding="utf-8"))
    load_workbook(out / "plan.xlsx")
    yaml.safe_load((out / "contract.yaml").read_text(encoding="utf-8"))


@settings(FUZZ, max_examples=20)
@given(doc=st.one_of(mutated(TINY, changes=2), perturbed(TINY)))
def test_plan_survives_mutated_scenarios_and_its_outputs_reopen(
        tmp_path_factory: pytest.TempPathFactory, doc: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "s.yaml"
    path.write_text(dump(doc), encoding="utf-8")
    out = work / "out"
    done = run_forked("plan", str(path), "--time-limit", "2", "--out", str(out), cwd=work,
                      timeout_s=FUZZ_TIMEOUT_S)
    survived(done)
    if done.exit_code in (0, 1):
        reopens(out)


# --- fleets -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("tiny") / "out"
    result = run("plan", str(scenarios_dir() / "tiny.yaml"), "--time-limit", "5", "--out",
                 str(out))
    assert result.exit_code == 0, result.output
    plan: dict[str, Any] = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    return plan


SMALL_TRACE = "time_s,input_tokens,output_tokens\n" + "".join(
    f"{k * 0.5},600,50\n" for k in range(60))


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_check_and_simulate_survive_mutated_fleets(tmp_path_factory: pytest.TempPathFactory,
                                                   tiny_plan: dict[str, Any],
                                                   data: st.DataObject) -> None:
    work = fuzz_dir(tmp_path_factory)
    fleet = work / "plan.json"
    fleet.write_text(json.dumps(data.draw(mutated(tiny_plan))), encoding="utf-8")
    trace = work / "t.csv"
    trace.write_text(SMALL_TRACE, encoding="utf-8")
    scenario = str(scenarios_dir() / "tiny.yaml")
    survived(run_forked("check", scenario, "--fleet", str(fleet), cwd=work,
                        timeout_s=FUZZ_TIMEOUT_S))
    survived(run_forked("simulate", scenario, "--fleet", str(fleet), "--trace", str(trace),
                        cwd=work, timeout_s=FUZZ_TIMEOUT_S))


# --- traces ---------------------------------------------------------------------------------

HEADERS = ["time_s,input_tokens,output_tokens", "timestamp, input_length , output_length",
           "TIMESTAMP,ContextTokens,GeneratedTokens", "time;input_tokens;output_tokens",
           "arrival_s,prompt_tokens", ""]
cells = st.one_of(scalars.map(lambda v: "" if v is None else str(v)),
                  st.sampled_from(["2023-11-16 18:15:46.68", "1677-09-21", "2262-04-12",
                                   "9999-12-31 23:59:59", "0", "1e11", "60", '"1,2"', '"']))


@FUZZ
@given(header=st.sampled_from(HEADERS),
       rows=st.lists(st.lists(cells, min_size=2, max_size=4), max_size=20))
def test_profile_survives_generated_csv_traces(tmp_path_factory: pytest.TempPathFactory,
                                               header: str, rows: list[list[str]]) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "t.csv"
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8",
                    errors="surrogatepass")
    survived(run_forked("profile", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


MOONCAKE_ROW = {"timestamp": 0, "input_length": 600, "output_length": 50, "hash_ids": [1, 2]}


@FUZZ
@given(rows=st.lists(mutated(MOONCAKE_ROW, changes=2), min_size=1, max_size=10))
def test_profile_survives_mutated_mooncake_traces(tmp_path_factory: pytest.TempPathFactory,
                                                  rows: list[Any]) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    survived(run_forked("profile", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


# --- workbooks --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("template") / "t.xlsx"
    template_workbook().save(path)
    return path.read_bytes()


cell_values = scalars.filter(lambda v: not isinstance(v, int) or abs(v) < 2**63).map(
    lambda v: v.replace("\x00", "") if isinstance(v, str) else v)


@settings(FUZZ, max_examples=30)
@given(sheet=st.integers(0, 6), row=st.integers(1, 12), col=st.integers(1, 25),
       value=cell_values)
def test_validate_survives_hostile_workbook_cells(tmp_path_factory: pytest.TempPathFactory,
                                                  template_bytes: bytes, sheet: int, row: int,
                                                  col: int, value: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    src = work / "t.xlsx"
    src.write_bytes(template_bytes)
    wb = load_workbook(src)
    wb.worksheets[sheet].cell(row=row, column=col).value = value
    path = work / "s.xlsx"
    try:
        wb.save(path)
    except (ValueError, TypeError):  # openpyxl will not write it: no such workbook exists
        return
    survived(run_forked("validate", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


@settings(FUZZ, max_examples=30)
@given(part=st.integers(0, 23), at=st.floats(0, 1), junk=st.binary(max_size=32),
       drop=st.integers(0, 64))
def test_validate_survives_mutated_workbook_parts(tmp_path_factory: pytest.TempPathFactory,
                                                  template_bytes: bytes, part: int, at: float,
                                                  junk: bytes, drop: int) -> None:
    work = fuzz_dir(tmp_path_factory)
    src = work / "t.xlsx"
    src.write_bytes(template_bytes)
    path = work / "s.xlsx"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        names = zin.namelist()
        for i, name in enumerate(names):
            raw = zin.read(name)
            if i == part % len(names):
                cut = int(at * len(raw))
                raw = raw[:cut] + junk + raw[cut + drop:]
            zout.writestr(name, raw)
    survived(run_forked("validate", str(path), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


# --- measurements and load-test results -------------------------------------------------------

MEASUREMENT_HEADER = "kind,model,gpu,tp,batch,input_tokens,value"
MEASUREMENT_ROWS = ["prefill_ms,Llama-2-70B,H100-SXM,2,1,512,60",
                    "decode_ms,Llama-2-70B,H100-SXM,2,8,512,25",
                    "prefill_ms,Llama-2-70B,H100-SXM,2,1,2048,210"]


@settings(FUZZ, max_examples=30)
@given(rows=st.lists(st.one_of(st.sampled_from(MEASUREMENT_ROWS),
                               st.lists(cells, min_size=7, max_size=7).map(",".join)),
                     min_size=1, max_size=8))
def test_calibrate_survives_mutated_measurements(tmp_path_factory: pytest.TempPathFactory,
                                                 rows: list[str]) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "measurements.csv"
    path.write_text(MEASUREMENT_HEADER + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    done = run_forked("calibrate", str(path), "--out", str(work / "overlay.yaml"), cwd=work,
                      timeout_s=FUZZ_TIMEOUT_S)
    survived(done)
    if done.exit_code == 0:
        yaml.safe_load((work / "overlay.yaml").read_text(encoding="utf-8"))


VLLM_RESULT = {"date": "20250101-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B",
               "num_prompts": 100, "request_rate": 4.0, "completed": 100, "duration": 25.0,
               "total_input_tokens": 51200, "total_output_tokens": 12800,
               "request_throughput": 4.0, "output_throughput": 512.0,
               "mean_ttft_ms": 50.0, "p99_ttft_ms": 120.0, "median_ttft_ms": 45.0,
               "mean_tpot_ms": 12.0, "p99_tpot_ms": 20.0, "median_tpot_ms": 11.0,
               "max_concurrency": None, "percentiles_ttft_ms": [[95, 100.0]]}


@settings(FUZZ, max_examples=30)
@given(doc=mutated(VLLM_RESULT))
def test_import_bench_survives_mutated_results(tmp_path_factory: pytest.TempPathFactory,
                                               doc: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "result.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = run_forked("import-bench", str(path), "--gpu", "L4", "--tp", "1", "--slo-ttft-ms",
                      "500", "--slo-tpot-ms", "50", "--out", str(work / "measured.csv"),
                      cwd=work, timeout_s=FUZZ_TIMEOUT_S)
    survived(done)


# --- the other commands -----------------------------------------------------------------------


@settings(FUZZ, max_examples=30)
@given(doc=st.one_of(mutated(TINY), perturbed(TINY)))
def test_template_from_mutated_scenarios_writes_workbooks_that_reopen(
        tmp_path_factory: pytest.TempPathFactory, doc: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "s.yaml"
    path.write_text(dump(doc), encoding="utf-8")
    out = work / "s.xlsx"
    done = run_forked("template", "--from", str(path), "--out", str(out), cwd=work,
                      timeout_s=FUZZ_TIMEOUT_S)
    survived(done)
    if done.exit_code == 0:
        load_workbook(out)
        survived(run_forked("validate", str(out), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


@settings(FUZZ, max_examples=30)
@given(rows=st.lists(st.one_of(
    st.sampled_from(["2026-01-01,chat,4", "2026-02-01,chat,5", "2026-03-01,chat,7"]),
    st.lists(cells, min_size=3, max_size=3).map(",".join)), min_size=1, max_size=12))
def test_forecast_survives_generated_histories(tmp_path_factory: pytest.TempPathFactory,
                                               rows: list[str]) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "history.csv"
    path.write_text("date,workload,peak_rps\n" + "\n".join(rows) + "\n", encoding="utf-8")
    survived(run_forked("forecast", str(path), "--start", "2027-01-01", "--periods", "4",
                        cwd=work, timeout_s=FUZZ_TIMEOUT_S))


option_text = st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=20),
                        scalars.map(str)).map(lambda t: t.replace("\x00", ""))


@settings(FUZZ, max_examples=30)
@given(model=st.one_of(st.just("Llama-3.1-8B"), option_text),
       gpu=st.one_of(st.just("H100-SXM"), option_text),
       tokens=st.one_of(st.integers(1, 10**12), option_text),
       concurrency=st.one_of(st.integers(1, 10**9), option_text))
def test_estimate_survives_hostile_options(tmp_path_factory: pytest.TempPathFactory, model: str,
                                           gpu: str, tokens: Any, concurrency: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    survived(run_forked("estimate", "--model", model, "--gpu", gpu, "--precision", "bf16",
                        "--input-tokens", str(tokens), "--output-tokens", "100",
                        "--concurrency", str(concurrency), cwd=work, timeout_s=FUZZ_TIMEOUT_S))


@settings(FUZZ, max_examples=30)
@given(key=st.one_of(st.sampled_from([
    "workloads.chat.arrival.peak_rps", "zones.*.offers.L4.on_demand.price_per_gpu_hour",
    "policy.share_nodes", "growth", "workloads", "name", "zones.0.id"]), option_text),
    levels=st.lists(option_text, min_size=1, max_size=4))
def test_sweep_dry_run_survives_hostile_variations(tmp_path_factory: pytest.TempPathFactory,
                                                   key: str, levels: list[str]) -> None:
    work = fuzz_dir(tmp_path_factory)
    survived(run_forked("sweep", str(scenarios_dir() / "tiny.yaml"), "--vary",
                        f"{key}={','.join(levels)}", "--dry-run", "--out", str(work / "sweep"),
                        cwd=work, timeout_s=FUZZ_TIMEOUT_S))


@settings(FUZZ, max_examples=6)
@given(doc=perturbed(TINY, changes=2))
def test_compare_survives_mutated_scenarios_and_its_workbook_reopens(
        tmp_path_factory: pytest.TempPathFactory, doc: Any) -> None:
    work = fuzz_dir(tmp_path_factory)
    path = work / "s.yaml"
    path.write_text(dump(doc), encoding="utf-8")
    out = work / "c.xlsx"
    done = run_forked("compare", str(path), "--vary", "growth=1,2", "--time-limit", "2",
                      "--out", str(out), cwd=work, timeout_s=FUZZ_TIMEOUT_S)
    survived(done)
    if done.exit_code == 0:
        load_workbook(out)


# --- the harness bounds what it claims --------------------------------------------------------


def test_a_forked_run_past_its_memory_or_time_is_caught(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The child inherits this process, monkeypatches included: a `validate` that allocates
    # 4 GiB fails as a traceback (MemoryError), one that sleeps past the limit as a timeout.
    import time

    import solver.cli.validate as validate

    def greedy(path: Path | None) -> Any:
        return bytearray(4 * 1024**3)

    monkeypatch.setattr(validate, "load", greedy)
    done = run_forked("validate", "x.yaml", cwd=tmp_path, timeout_s=FUZZ_TIMEOUT_S)
    assert done.traceback and "MemoryError" in done.output, done.output[-500:]

    def slow(path: Path | None) -> Any:
        time.sleep(30)

    monkeypatch.setattr(validate, "load", slow)
    done = run_forked("validate", "x.yaml", cwd=tmp_path, timeout_s=1)
    assert done.exit_code is None and done.seconds < 10
