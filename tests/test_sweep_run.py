"""fleetplan sweep, running it: executors, retries, records, resume, the results and Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner

from inputs import scenarios_dir
from models.loader import load_scenario
from models.text import csv_cell
from solver.cli import main
from solver.studies.executors import (
    Event,
    Finished,
    LocalExecutor,
    Planned,
    RayExecutor,
    Retrying,
    SolveOptions,
    Task,
    plan_task,
    run_tasks,
)
from solver.studies.sweep import Design, build_sweep
from solver.studies.sweep_results import results_csv, results_table
from solver.studies.sweep_runner import Progress, run_sweep
from solver.studies.sweep_spec import parse_vary
from solver.studies.sweep_store import SweepStore, without_timings
from solver.studies.sweep_workbook import SWEEP_SHEET, TORNADO_SHEET, column_title
from solver.studies.tornado import swings

TINY = scenarios_dir() / "tiny.yaml"
OPTIONS = SolveOptions(time_limit_s=30)
#: tiny's reserved H100 at 2.40 $/GPU-h × 0.8 or × 1.2, and its peak at 4 or 40 req/s
VARY = ["--vary", "zones.*.offers.H100-SXM.reserved.price_per_gpu_hour=×0.8,×1.2",
        "--vary", "workloads.chat.arrival.peak_rps=4,40"]


def _variants(*specs: str) -> list[Task]:
    tiny = load_scenario(TINY)
    variants = build_sweep(tiny, [parse_vary(s) for s in specs], Design(), OPTIONS)
    return [Task(v.key, v.label, v.scenario, OPTIONS) for v in variants]


def crash_first_try(task: Task) -> Planned:
    """Kills its worker process the first time it sees a task (a lost worker), then plans."""
    marker = Path(os.environ["SWEEP_TEST_DIR"]) / task.key
    if not marker.exists():
        marker.touch()
        os._exit(1)
    return plan_task(task)


def always_raises(task: Task) -> Planned:
    raise ValueError(f"no plan for {task.label}")


def _events(tasks: list[Task], executor: LocalExecutor | RayExecutor) -> list[Event]:
    try:
        return list(run_tasks(tasks, executor))
    finally:
        executor.close()


def test_a_lost_worker_is_retried_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWEEP_TEST_DIR", str(tmp_path))
    tasks = _variants("workloads.chat.arrival.peak_rps=4,6")
    events = _events(tasks, LocalExecutor(1, crash_first_try))
    finished = [e for e in events if isinstance(e, Finished)]
    assert sorted(e.task.key for e in finished) == sorted(t.key for t in tasks)
    assert all(e.planned is not None and e.attempts == 2 for e in finished)
    assert sum(isinstance(e, Retrying) for e in events) == 2


def test_a_task_failing_twice_is_reported_never_dropped() -> None:
    events = _events(_variants("workloads.chat.arrival.peak_rps=4,6"),
                     LocalExecutor(2, always_raises))
    finished = [e for e in events if isinstance(e, Finished)]
    assert len(finished) == 2 and all(e.planned is None and e.attempts == 2 for e in finished)
    assert all(e.error is not None and "ValueError: no plan for tiny" in e.error
               for e in finished)


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "tiny"
    result = CliRunner().invoke(main, ["sweep", str(TINY), *VARY, "--out", str(out),
                                       "--workers", "2", "--time-limit", "30", "--json"])
    assert result.exit_code == 0, result.output
    return out


def test_results_table_and_swings(tiny_sweep: Path) -> None:
    frame = pd.read_csv(tiny_sweep / "sweep.csv")
    key = "zones.*.offers.H100-SXM.reserved.price_per_gpu_hour"
    assert list(frame[key]) == ["×0.8", "×0.8", "×1.2", "×1.2"]
    assert list(frame["workloads.chat.arrival.peak_rps"]) == [4, 40, 4, 40]
    assert set(frame["status"]) == {"optimal"}
    # 4 req/s: one reserved H100, 2.40 × 0.8 × 730 = 1,401.60 $/month (× 1.2: 2,102.40)
    assert frame["cost_per_month"][0] == pytest.approx(1401.6)
    assert frame["cost_per_month"][2] == pytest.approx(2102.4)
    assert (frame["cost_per_month"][1::2].to_numpy() > frame["cost_per_month"][::2].to_numpy()
            ).all()  # 40 req/s needs more than the one reserved H100 tiny sells
    assert list(frame["gpus_total"]) == [
        sum(frame.filter(like="gpus_").drop(columns="gpus_total").iloc[i]) for i in range(4)]
    data = json.loads((tiny_sweep / "study.json").read_text())
    assert data["variants"] == 4 and data["threads_per_plan"] == 1
    by_key = {s["key"] for s in json.loads(CliRunner().invoke(main, [
        "sweep", str(TINY), *VARY, "--out", str(tiny_sweep), "--resume", "--json",
        "--time-limit", "30"]).stdout)["swings"]}
    assert by_key == {key, "workloads.chat.arrival.peak_rps"}


def test_swing_of_a_grid_is_the_spread_of_level_means(tiny_sweep: Path) -> None:
    frame = pd.read_csv(tiny_sweep / "sweep.csv")
    store = SweepStore(tiny_sweep)
    keys = ["zones.*.offers.H100-SXM.reserved.price_per_gpu_hour",
            "workloads.chat.arrival.peak_rps"]
    tiny = load_scenario(TINY)
    variants = build_sweep(tiny, [parse_vary(v) for v in VARY[1::2]], Design(), OPTIONS)
    results = run_sweep(variants, OPTIONS, store, LocalExecutor(1, always_raises))
    assert all(r.resumed for r in results)  # every variant read back: nothing planned
    bars = {s.key: s for s in swings(results, keys)}
    cost = list(frame["cost_per_month"])
    price = bars[keys[0]]
    assert (price.low_value, price.high_value) == ("×0.8", "×1.2")
    assert price.low_cost == pytest.approx((cost[0] + cost[1]) / 2)
    assert price.high_cost == pytest.approx((cost[2] + cost[3]) / 2)
    assert results_csv(results_table(results, keys)) == (tiny_sweep / "sweep.csv").read_text()


def test_workbook_holds_the_table_and_the_swings(tiny_sweep: Path) -> None:
    wb = openpyxl.load_workbook(tiny_sweep / "sweep.xlsx")
    assert wb.sheetnames == [SWEEP_SHEET, TORNADO_SHEET, "Study"]
    table = pd.read_excel(tiny_sweep / "sweep.xlsx", sheet_name=SWEEP_SHEET)
    csv = pd.read_csv(tiny_sweep / "sweep.csv")
    # the sheet titles each column with its unit (a new user's sheet said cost_per_month,
    # plan_seconds), the CSV keeps the keys --json gives
    assert list(table.columns) == [column_title(c, "USD") for c in csv.columns]
    assert {"Cost [USD/month]", "Cost per million tokens [USD/Mtok]", "Plan time [s]",
            "GPUs, all types [GPUs]", "MIP gap [1]"} <= set(table.columns)
    assert all("_" not in c for c in table.columns if not c.startswith(
        ("workloads.", "zones.", "policy.")))
    assert list(table["Cost [USD/month]"]) == pytest.approx(list(csv["cost_per_month"]))
    assert len(wb[TORNADO_SHEET]._images) == 1  # the chart
    assert (tiny_sweep / "tornado.png").read_bytes().startswith(b"\x89PNG")


def test_text_cells_never_become_formulas() -> None:
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_cell("-5") == "-5" and csv_cell("×0.8") == "×0.8" and csv_cell(3) == 3


def test_an_existing_sweep_is_kept_without_resume(tiny_sweep: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", str(TINY), *VARY, "--out", str(tiny_sweep)])
    assert result.exit_code == 2
    assert "holds 4 finished variants" in result.output and "--resume" in result.output


def test_progress_counts_and_eta() -> None:
    tiny = load_scenario(TINY)
    variants = build_sweep(tiny, [parse_vary("workloads.chat.arrival.peak_rps=4,6,8")],
                           Design(), OPTIONS)
    seen: list[Progress] = []
    run_sweep(variants, OPTIONS, None, LocalExecutor(2), seen.append)
    assert seen[0].finished == 0 and seen[0].eta_s is None and seen[0].waiting == 3
    assert max(p.running for p in seen) == 2
    done = [p for p in seen if p.last is not None]
    assert [p.finished for p in done] == [1, 2, 3]
    assert done[-1].eta_s == 0 and done[-1].running == 0 and done[-1].failed == 0
    assert all(p.eta_s is not None and p.eta_s >= 0 for p in done)


def _records(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "variants").glob("*.json"))}


def test_a_killed_sweep_resumes_without_replanning(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    rates = ",".join(str(r) for r in range(2, 14))  # 12 variants, one worker
    args = [sys.executable, "-c", "from solver.cli import main; main()", "sweep", str(TINY),
            "--vary", f"workloads.chat.arrival.peak_rps={rates}", "--out", str(out),
            "--workers", "1", "--time-limit", "30", "--quiet"]
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while len(_records(out) if (out / "variants").exists() else {}) < 1:
        assert proc.poll() is None and time.monotonic() < deadline, "no variant finished"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # the command and its worker, mid-sweep
    proc.wait()
    before = _records(out)
    assert 1 <= len(before) < 12, "the kill came after the sweep ended: nothing to resume"
    result = CliRunner().invoke(main, ["sweep", str(TINY), "--vary",
                                       f"workloads.chat.arrival.peak_rps={rates}", "--out",
                                       str(out), "--workers", "1", "--time-limit", "30",
                                       "--resume", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["resumed"], data["planned"], data["failed"]) == (len(before), 12 - len(before),
                                                                  0)
    after = _records(out)
    assert {k: after[k] for k in before} == before  # finished records untouched
    assert len(after) == 12


def test_cli_refuses_bad_input_cleanly(tmp_path: Path) -> None:
    runner = CliRunner()
    for args, message in (
            (["--vary", "workloads.caht.arrival.peak_rps=1"], "did you mean `chat`"),
            (["--vary", "workloads.chat.arrival.peak_rps=~uniform(1,2)"], "needs --samples"),
            (["--vary", "workloads.chat.arrival.peak_rps=1,2", "--zip", "--vary",
              "policy.share_nodes=true"], "as many levels"),
    ):
        result = runner.invoke(main, ["sweep", str(TINY), *args, "--out", str(tmp_path / "o")])
        assert result.exit_code == 2 and message in result.output, result.output
        assert "Traceback" not in result.output
    listed = runner.invoke(main, ["sweep", str(TINY), *VARY, "--dry-run", "--json"])
    assert listed.exit_code == 0
    assert len(json.loads(listed.stdout)["variants"]) == 4
    assert not (tmp_path / "o").exists()  # nothing written before the input was right


def test_without_ray_the_sweep_says_the_environment_lacks_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was headed "1 problem in the input:" though the scenario is fine: Ray is missing."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    result = CliRunner().invoke(main, ["sweep", str(TINY), *VARY, "--out", str(tmp_path / "o"),
                                       "--ray", "local"])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0] == "1 problem in the environment (not the input):"
    assert "Ray is not installed" in lines[1] and "fleetplan[ray]" in lines[1]


@pytest.fixture(scope="module")
def ray_sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pytest.importorskip("ray")
    out = tmp_path_factory.mktemp("ray") / "tiny"
    result = CliRunner().invoke(main, ["sweep", str(TINY), *VARY, "--out", str(out),
                                       "--ray", "local", "--time-limit", "30", "--json"])
    assert result.exit_code == 0, result.output
    yield out


def test_ray_returns_the_local_results_bit_for_bit(tiny_sweep: Path, ray_sweep: Path) -> None:
    local, ray = _records(tiny_sweep), _records(ray_sweep)
    assert local.keys() == ray.keys() and len(local) == 4
    for name in local:
        a, b = json.loads(local[name]), json.loads(ray[name])
        assert json.dumps(without_timings(a)) == json.dumps(without_timings(b)), name
    csv_local = pd.read_csv(tiny_sweep / "sweep.csv").drop(columns="plan_seconds")
    csv_ray = pd.read_csv(ray_sweep / "sweep.csv").drop(columns="plan_seconds")
    assert csv_local.to_csv() == csv_ray.to_csv()
    assert json.loads((ray_sweep / "study.json").read_text())["executor"] == "ray"


def test_ray_retries_a_lost_or_failing_task_once_then_reports_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Ray as on local workers: a worker that dies is retried once and the plan comes back;
    a task that raises twice is reported, with its error, never dropped."""
    pytest.importorskip("ray")
    from ray import cloudpickle

    # Ray's workers cannot import this test module: they get its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setenv("SWEEP_TEST_DIR", str(tmp_path))  # before Ray starts: its workers see it
    tasks = _variants("workloads.chat.arrival.peak_rps=4,6")
    crashing = RayExecutor("local", 1, crash_first_try)  # starts a private local instance
    try:
        events = list(run_tasks(tasks, crashing))
        # a second executor on the same instance, whose tasks always raise
        failing = list(run_tasks(tasks, RayExecutor("local", 1, always_raises)))
    finally:
        crashing.close()  # shuts the instance it started
    finished = [e for e in events if isinstance(e, Finished)]
    assert sorted(e.task.key for e in finished) == sorted(t.key for t in tasks)
    assert all(e.planned is not None and e.attempts == 2 for e in finished)
    retried = [e for e in events if isinstance(e, Retrying)]
    assert len(retried) == 2 and all("Worker" in e.error for e in retried), retried
    alone = {t.key: plan_task(t).plan.cost for t in tasks}
    assert {e.task.key: e.planned.plan.cost for e in finished  # type: ignore[union-attr]
            } == alone
    gave_up = [e for e in failing if isinstance(e, Finished)]
    assert len(gave_up) == 2 and all(e.planned is None and e.attempts == 2 for e in gave_up)
    assert all(e.error is not None and "ValueError: no plan for tiny" in e.error
               for e in gave_up)
    assert sum(isinstance(e, Retrying) for e in failing) == 2


QUARTERS = """
name: quarters
zones:
  - id: a
    region: r
    offers:
      - gpu: L4
        gpus_per_node: 4
        on_demand: {price_per_gpu_hour: 1.0, stock_gpus: 64}
workloads:
  - name: chat
    model: Llama-3.1-8B
    arrival: {peak_rps: 4}
    input_tokens: {p50: 1000, p95: 1500, p99: 2000}
    output_tokens: {p50: 200, p95: 300, p99: 400}
    slo: {ttft_p95_ms: 1000, tpot_p95_ms: 50}
    allowed_gpus: [L4]
    growth: [1, 1.5, 2, 3]
horizon: {start: 2027-01-01, period_months: 3, count: 4}
"""


def test_a_horizon_is_swept_as_plan_plans_it(tmp_path: Path) -> None:
    """A scenario over quarters is planned over its horizon; its growth path varies by path."""
    from solver.solve.horizon import plan_horizon

    path = tmp_path / "q.yaml"
    path.write_text(QUARTERS)
    base = load_scenario(path)
    variants = build_sweep(base, [parse_vary("workloads.chat.growth=×1,×2")], Design(),
                           OPTIONS)
    assert variants[1].scenario.workload("chat").growth == (2, 3, 4, 6)
    results = run_sweep(variants, OPTIONS, None, LocalExecutor(1))
    for result, variant in zip(results, variants, strict=True):
        assert result.plan is not None and result.plan.periods  # planned over its quarters
        alone = plan_horizon(variant.scenario, time_limit_s=30)
        assert result.plan.cost == alone.cost
    assert results[1].plan.cost.per_month > results[0].plan.cost.per_month  # type: ignore


def test_progress_says_each_status_as_plan_does(capsys: pytest.CaptureFixture[str]) -> None:
    """Was: ``[1/1] tiny …: optimal, 1,752 USD/month`` for a plan proven within 1 %."""
    from solver.cli.sweep import Reporter
    from solver.solve.strategy import plan_scenario
    from solver.studies.sweep_results import SweepResult

    (variant,) = build_sweep(load_scenario(TINY), [parse_vary("policy.share_nodes=true")],
                             Design(), OPTIONS)
    plan = plan_scenario(variant.scenario, time_limit_s=30)
    at_gap = plan.model_copy(update={"solver": plan.solver.model_copy(update={"gap": 0.01})})
    Reporter(quiet=False)(Progress(total=1, finished=1, running=0, failed=0, retried=0,
                                   elapsed_s=1.0, last=SweepResult(variant, at_gap, 0.1, 1)))
    assert ": proven within 1.00% of the cheapest, 1,752 USD/month" in capsys.readouterr().err
