"""``fleetplan validate``: a summary and exit 0 for a good scenario, every problem and exit 2 for a
bad one, never a traceback."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inputs import scenarios_dir
from models.loader import load_scenario
from solver.cli import main


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args])


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def clean_exit(result: Result) -> bool:
    """The command ended through click (exit code), not an escaped exception."""
    return result.exception is None or isinstance(result.exception, SystemExit)


def test_demo_is_the_default_and_valid() -> None:
    result = run()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "scenario demo: valid"
    assert len(lines) <= 40  # one screen
    assert "zones (5 in 2 regions" in result.output
    assert "us-east-1" in result.output and "us-west-2" in result.output
    assert "nightly-summaries" in result.output


def test_summary_shows_peak_demand_in_tokens_per_s() -> None:
    result = run(str(scenarios_dir() / "tiny.yaml"))
    assert result.exit_code == 0, result.output
    # 4 req/s × 1,000 input tokens = 4,000 in; × 200 output = 800 out
    chat = next(line for line in result.output.splitlines() if line.strip().startswith("chat"))
    assert "4.00" in chat and "4,000 + 800" in chat and "None" in chat and "L4, H100-SXM" in chat
    assert "peak demand, all pools: 4,800 tokens/s" in result.output
    assert "zone-a" in result.output
    assert "L4 (1), H100-SXM (1): reserved, on-demand" in result.output


def test_measured_rows_are_listed() -> None:
    result = run(str(scenarios_dir() / "twenty_rps.yaml"))
    assert result.exit_code == 0, result.output
    assert "measured rows (1)" in result.output
    assert "H100-SXM FP8 TP2 (2 GPUs): 72 sequences, 18 req/s" in result.output


def test_json_output() -> None:
    result = run("--json", str(scenarios_dir() / "demo.yaml"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["valid"] is True
    assert [w["name"] for w in data["workloads"]] == [
        "chat", "code-completion", "agent", "nightly-summaries"]
    chat = data["workloads"][0]
    # 12 req/s × mean 1,155 input tokens = 13,860; × mean 211 output = 2,532
    assert (chat["peak_input_tokens_per_s"], chat["peak_output_tokens_per_s"]) == (13860, 2532)
    assert set(data["regions"]) == {"us-east-1", "us-west-2"}
    assert data["peak_tokens_per_s"] == sum(w["peak_tokens_per_s"] for w in data["workloads"])


def bad_scenario(tmp_path: Path) -> Path:
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["workloads"][0]["model"] = "Llama-3.1-8C"
    doc["workloads"][0]["arrival"]["peak_rps"] = -4
    doc["workloads"][0]["input_tokens"]["p95"] = 900
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_bad_scenario_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = bad_scenario(tmp_path)
    result = run(str(path))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "problems in the input" in result.output
    assert f"{path}: workloads[0].arrival.peak_rps" in result.output
    assert f"{path}: workloads[0].input_tokens: percentiles must rise" in result.output


def test_unknown_reference_suggests_a_name(tmp_path: Path) -> None:
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["workloads"][0]["model"] = "Llama-3.1-8C"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 2
    assert ("workloads[0].model: unknown model `Llama-3.1-8C` — did you mean `Llama-3.1-8B`"
            in result.output)


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert "file not found" in result.output


def test_syntax_error_exits_2_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nworkloads: [\n", encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 2
    assert f"{path}: line " in result.output and "invalid YAML" in result.output


TINY = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
TINY["measured"] = [{  # a measured row, so the summary's stale-row check is exercised too
    "model": "Llama-3.1-8B", "gpu": "H100-SXM", "runtime": "vllm", "precision": "bf16", "tp": 1,
    "workload": "chat", "max_stable_sequences": 64, "tested_peak_rps": 9,
    "ttft_p95_ms": 600, "decode_p95_ms_per_token": 30, "measured_on": "2026-10-01"}]
TINY["policy"]["as_of"] = "2026-11-01"


def _leaves(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in [(*prefix, k), *_leaves(v, (*prefix, k))]]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in [(*prefix, i), *_leaves(v, (*prefix, i))]]
    return []


PATHS = _leaves(TINY)
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-1e3, 1e3),
                 st.text(max_size=6), st.lists(st.integers(0, 30), max_size=25))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), drop=st.booleans(), junk=JUNK)
def test_mutated_scenarios_never_give_a_traceback(
    path: tuple[Any, ...], drop: bool, junk: Any
) -> None:
    doc = copy.deepcopy(TINY)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = junk
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "s.yaml"
        file.write_text(yaml.safe_dump(doc), encoding="utf-8")
        result = run(str(file))
    assert clean_exit(result), result.exception
    assert result.exit_code in (0, 2)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert "problem" in result.output and str(file) in result.output


def test_stale_measured_row_is_a_warning_not_an_error(tmp_path: Path) -> None:
    # twenty_rps's row is dated 2026-10-15; planning as of 2027-11-01 makes it 382 days old.
    doc = yaml.safe_load((scenarios_dir() / "twenty_rps.yaml").read_text(encoding="utf-8"))
    doc["policy"]["as_of"] = "2027-11-01"
    doc["measured_csv"] = str(scenarios_dir() / "twenty_rps_measured.csv")
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = run("--json", str(path))
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    (warning,) = data["measured_warnings"]
    assert "stale, not used: measured 382 days ago, older than the policy's 180" in warning
    assert f"warning: {warning}" in result.stderr
    # the summary's list of measured rows marks it too (it read as any row in use)
    assert [m["used"] for m in data["measured"]] == [False]
    text = run(str(path))
    assert ("H100-SXM FP8 TP2 (2 GPUs): 72 sequences, 18 req/s (measured 2026-10-15) — not "
            "used (the warning above says why)") in text.stdout
    fresh = run(str(scenarios_dir() / "twenty_rps.yaml"))
    assert "not used" not in fresh.output


def test_a_quarterly_scenario_shows_what_it_plans_over_time(tmp_path: Path) -> None:
    """Was (qa3 F15): validate listed the workloads at their base peak and an empty list of
    purchase kinds for the on-prem zone; nothing of the horizon, the inventory, the demand
    scenarios, growth, the launch or the migration; and a reservation that ended before the
    horizon passed silently though it counts for nothing."""
    result = run(str(scenarios_dir() / "quarterly.yaml"))
    assert result.exit_code == 0
    out = result.output
    assert "onprem-dc1  H100-SXM (8): owned" in out
    for line in (
        "  horizon: 4 periods of 3 months, 2027-01-01 to 2028-01-01 (a date after \"to\" is "
        "the day after the last, here and below)",
        "  inventory: 2 owned H100-SXM nodes (8 GPUs each) in onprem-dc1",
        # ends: 2027-06-30 in the convention of every span on screen (a new user saw "ends
        # 2028-03-31" and "to 2028-04-01" for one reservation)
        "  inventory: 2 reserved H100-SXM nodes (p5.48xlarge, 8 GPUs each) in use1-az1 to "
        "2027-07-01 at 4.50 USD/GPU-hour; counts in periods 0, 1",
        "  demand scenarios: low (probability 0.3), base (probability 0.4), high (probability "
        "0.3)",
        # qa4 13: each scenario's growth figures (they were nowhere in validate's summary)
        "    low: ×1, ×0.9, ×0.85, ×0.8 on each workload's own growth, period by period",
        "    base: each workload's own growth",
        "    high: ×1, ×1.3, ×1.6, ×2 on each workload's own growth, period by period",
        # what the launch adds, and that the agent's growth leaves it as stated: a new user's
        # launch with growth [1, 1, 1.5, 2] read as growing, and stayed at its 40 req/s
        "  agent: growth ×1, ×1.2, ×1.4, ×1.6; `eu-launch` adds 1 req/s from period 2 (growth "
        "does not scale it)",
    ):
        assert line in out.splitlines(), line
    assert "migrates to Qwen2.5-72B, vllm-0.7 from period 3" in out
    assert "warning" not in result.stderr
    ended = tmp_path / "ended.yaml"
    ended.write_text((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8").replace(
        "ends: 2027-06-30", "ends: 2026-06-30"), encoding="utf-8")
    result = run("--json", str(ended))
    assert result.exit_code == 0
    (warning,) = json.loads(result.stdout)["inventory_warnings"]
    assert warning.startswith("inventory[1]: 2 reserved H100-SXM nodes")
    assert ("is held through no whole period of the horizon (2027-01-01 to 2028-01-01): it "
            "counts for nothing — correct its dates or remove the line") in warning
    assert f"warning: {warning}" in result.stderr


def test_an_event_says_what_it_adds_and_only_where_growth_follows_that_growth_leaves_it(
        tmp_path: Path) -> None:
    """Growth multiplies a workload's own demand, not an event's (Workload.in_period): the
    summary says so where the workload grows after the event starts, and not where it does
    not; a batch event adds requests a day."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    flat = text.replace("    growth: [1.0, 1.2, 1.4, 1.6]\n", "").replace(
        "    growth: [1.0, 1.0, 1.25, 1.25]\n",
        "    growth: [1.0, 1.0, 1.25, 1.25]\n"
        "    events: [{name: archive, from_period: 1, add_daily_requests: 50000}]\n")
    assert flat.count("events:") == 2
    path = tmp_path / "flat.yaml"
    path.write_text(flat, encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  agent: `eu-launch` adds 1 req/s from period 2" in lines
    assert ("  nightly-summaries: growth ×1, ×1, ×1.25, ×1.25; `archive` adds 50,000 "
            "requests/day from period 1 (growth does not scale it)") in lines


def quarterly_with(tmp_path: Path, old: str, new: str) -> Path:
    """quarterly.yaml with ``old`` (which it holds) replaced by ``new``, written in ``tmp_path``."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "edited.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_held_nodes_no_workload_may_run_on_are_a_warning(tmp_path: Path) -> None:
    """A new user typed p4de.24xlarge (A100-80GB) for the reserved H200 nodes' p5en.48xlarge:
    validate accepted it without a word, and the plan held and paid them, idle in every
    period. quarterly.yaml's reservation so mistyped: no workload allows A100-80GB."""
    path = quarterly_with(tmp_path, "{zone: use1-az1, instance_type: p5.48xlarge, nodes: 2,",
                          "{zone: use1-az1, instance_type: p4de.24xlarge, nodes: 2,")
    result = run("--json", str(path))
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(result.stdout)["inventory_warnings"]
    assert warning.startswith("inventory[1]: 2 reserved A100-80GB nodes (p4de.24xlarge, 8 GPUs "
                              "each) in use1-az1")
    assert ("no workload may run on A100-80GB (every workload's allowed_gpus leaves it out), "
            "so these nodes are held and run idle") in warning
    assert "warning" not in run(str(scenarios_dir() / "quarterly.yaml")).stderr


def test_a_migration_to_a_model_no_gpu_holds_is_a_warning_naming_it(tmp_path: Path) -> None:
    """A new user's chat migrated to DeepSeek-V3 BF16 from period 2 (about 1.25 TiB of weights;
    H200 × 8 holds 1.1): validate said nothing, and the plan, infeasible after 37 s, listed 15
    shortfalls of period 2, none naming the migration or the model."""
    path = quarterly_with(
        tmp_path, "migrations: [{from_period: 3, model: Qwen2.5-72B, runtime: vllm-0.7}]",
        "migrations: [{from_period: 3, model: DeepSeek-V3, precision: bf16}]")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    (warning,) = [w for w in result.stderr.splitlines() if "holds it" in w]
    assert warning.startswith(
        "warning: workloads[0].migrations[0]: from period 3 `chat` runs DeepSeek-V3 BF16 and no "
        "GPU it may use that a zone sells holds it at any TP (H100-SXM TP8 (8 GPUs): weights ")
    assert "H200 TP8 (8 GPUs): weights" in warning and "L40S" in warning
    assert warning.endswith("— allow a GPU with more memory, or give a lower precision or a "
                            "smaller model")
    assert "holds it" not in run(str(scenarios_dir() / "quarterly.yaml")).stderr


def test_a_reservation_ending_inside_the_first_period_is_not_told_to_be_removed(
        tmp_path: Path) -> None:
    """A new user's reservation ending 2027-05-15 in a horizon from 2027-04-01 was told "it
    counts for nothing — correct its dates or remove the line": its dates were right, and it
    is paid to its end (the plan's spend counts those weeks); it carries no load."""
    ending = tmp_path / "ending.yaml"
    ending.write_text((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8").replace(
        "ends: 2027-06-30", "ends: 2027-02-15"), encoding="utf-8")
    result = run("--json", str(ending))
    assert result.exit_code == 0
    (warning,) = json.loads(result.stdout)["inventory_warnings"]
    assert warning.startswith("inventory[1]: 2 reserved H100-SXM nodes")
    assert ("is held through no whole period of the horizon (2027-01-01 to 2028-01-01): it "
            "carries no load in the plan (a period counts only nodes held through the whole of "
            "it), and its payments inside the horizon are counted in what it spends") in warning
    assert "remove the line" not in warning
    # `plan` prints this warning on stderr alone, without validate's horizon line that says
    # once what "to" means: a new user read "ends: 2026-06-15" in their file as "to
    # 2026-06-16" there with no word why; the warning now says it itself
    from solver.outputs.labels import TO_EXCLUSIVE

    assert " to 2027-02-16 " in warning
    assert warning.endswith(f"({TO_EXCLUSIVE}; its `ends: 2027-02-15` is the last day held)")
    from solver.cli.validate import scenario_warnings

    assert f"warning: {warning}" in scenario_warnings(load_scenario(ending), slo=False)


def test_growth_written_as_percentages_is_warned(tmp_path: Path) -> None:
    """A new user wrote `growth: [100, 120, 140, 170]` (percent of today's peak): validated as
    written, each quarter was planned at 100 to 170 times the peak, and nothing said so."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    percent = tmp_path / "percent.yaml"
    percent.write_text(text.replace("growth: [1.0, 1.15, 1.3, 1.5]",
                                    "growth: [100, 115, 130, 150]").replace(
        "{name: high, probability: 0.3, growth: [1.0, 1.3, 1.6, 2.0]}",
        "{name: high, probability: 0.3, growth: [100, 130, 160, 200]}"), encoding="utf-8")
    result = run("--json", str(percent))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["growth_warnings"] == [
        "workloads[0].growth (chat): ×150 in period 3 — growth multiplies the peak (1.2 is "
        "+20 %), it is not a percentage: if these are percentages, write [1, 1.15, 1.3, 1.5]",
        "demand_scenarios[2].growth (high): ×200 in period 3 — growth multiplies the peak (1.2 "
        "is +20 %), it is not a percentage: if these are percentages, write [1, 1.3, 1.6, 2]"]
    shown = run(str(percent))
    assert "warning: workloads[0].growth (chat): ×150 in period 3" in shown.stderr
    assert "growth_warnings" not in run("--json", str(scenarios_dir() / "quarterly.yaml")).stdout


def test_steep_forecast_growth_is_not_read_as_percentages(tmp_path: Path) -> None:
    """A new user pasted `forecast`'s growth of a fast-growing pool, [2.23, 3.865, 6.7, 11.811]
    (multipliers), and was told "if these are percentages, write [0.0223, …]": 2 % of the
    peak. An entry under 10 cannot be a percentage of the peak; the list is named as steep."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    steep = tmp_path / "steep.yaml"
    steep.write_text(text.replace("growth: [1.0, 1.2, 1.4, 1.6]",
                                  "growth: [2.23, 3.865, 6.7, 11.811]"), encoding="utf-8")
    result = run("--json", str(steep))
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["growth_warnings"]
    assert warnings == [
        "workloads[2].growth (agent): ×11.811 in period 3 — growth multiplies the peak (1.2 is "
        "+20 %): the peak ×11.811 by period 3, from ×2.23 in period 0 — check that it is meant"]
    assert "percentage" not in warnings[0]


def test_forecast_growth_pasted_at_the_top_level_is_told_where_each_list_goes(
        tmp_path: Path) -> None:
    """A new user pasted `fleetplan forecast --out`'s file whole into a scenario: its `growth:`
    (lists by workload name) stayed at the top level, and validate said "unknown key `growth`
    — remove this key or check its spelling", as if it were a typo."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    pasted = tmp_path / "pasted.yaml"
    pasted.write_text(text + "growth:\n  agent: [1.1, 1.2, 1.3, 1.4]\n  chatt: [1, 1, 1, 1]\n",
                      encoding="utf-8")
    result = run("--json", str(pasted))
    assert result.exit_code == 2
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["field"] == "growth"
    assert problem["fix"] == (
        "growth is per workload: move each list under its workload, as `growth: [...]` beside "
        "its arrival (`agent`'s to workloads[2].growth; `chatt`'s to its workload (none is "
        "named so)), and remove this key")


def test_owned_terms_in_a_one_day_scenario_are_warned_to_buy_nothing(tmp_path: Path) -> None:
    """A new user's scenario with an offer selling `owned` hardware and no horizon validated
    silently, and its plan bought none of it (infeasible: "`chat` is 20 req/s short"): owned
    hardware is ordered only over periods. quarterly.yaml without its horizon, inventory and
    demand scenarios is such a scenario; with them (the test above) no warning."""
    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    for key in ("horizon", "inventory", "demand_scenarios"):
        doc.pop(key)
    for w in doc["workloads"]:
        for key in ("growth", "events", "migrations"):
            w.pop(key, None)
    path = tmp_path / "one_day.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = run("--json", str(path))
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(result.stdout)["inventory_warnings"]
    assert warning.startswith("onprem-dc1: H100-SXM's `owned` hardware is bought only in a plan "
                              "over periods"), warning
    assert "add `horizon: {start, period_months, count}`" in warning
    assert f"warning: {warning}" in result.stderr


def test_a_demand_scenario_growth_per_workload_is_shown(tmp_path: Path) -> None:
    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    doc["demand_scenarios"][2]["growth"] = {"chat": [1, 1.5, 2, 2.5]}
    path = tmp_path / "per_workload.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    names = [w["name"] for w in doc["workloads"] if w["name"] != "chat"]
    assert (f"    high: chat ×1, ×1.5, ×2, ×2.5 on those workloads' own growth, period by period; "
            f"{', '.join(names)}: own growth") in result.output.splitlines()


def test_a_one_day_scenario_summary_has_no_planning_keys() -> None:
    data = json.loads(run("--json", str(scenarios_dir() / "demo.yaml")).stdout)
    assert "over_time" not in data and "inventory_warnings" not in data


def _tiny_over_months(tmp_path: Path, lead_time_weeks: float, on_demand: bool) -> Path:
    """tiny.yaml over two 1-month periods, its reserved quotes arriving ``lead_time_weeks``
    after they are ordered."""
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["horizon"] = {"start": "2027-01-01", "period_months": 1, "count": 2}
    for offer in doc["zones"][0]["offers"]:
        offer["reserved"]["lead_time_weeks"] = lead_time_weeks
        if not on_demand:
            del offer["on_demand"]
    path = tmp_path / "lead.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_quote_whose_lead_time_outlasts_the_horizon_is_a_warning(tmp_path: Path) -> None:
    """Fresh-clone trial: a 20-week lead time over a 2-month horizon passed validate silently;
    plan then bought on-demand and never said why the cheaper reservation was left, or (with
    nothing else sold) said only "orders cannot be placed in time"."""
    result = run(str(_tiny_over_months(tmp_path, 20, on_demand=True)))
    assert result.exit_code == 0
    warning = ("warning: `lead_time_weeks: 20` of L4's reserved quote (12 months) in zone-a: "
               "ordered on the plan date, 2027-01-01 (the horizon's start), it arrives on "
               "2027-05-21, after the last period starts (2027-02-01), so it serves no "
               "period — shorten its lead time, lengthen the horizon (horizon.count); until "
               "then only zone-a's on-demand L4 (rented by the hour, no lead time) adds "
               "capacity there")
    assert warning in result.stderr.splitlines()
    assert "  horizon: 2 periods of 1 month, 2027-01-01 to 2027-03-01" in result.stdout
    planned = run_cli("plan", str(tmp_path / "lead.yaml"), "--out", str(tmp_path / "out"),
                      "--quiet")
    assert planned.exit_code == 0, planned.output
    assert ("horizon 2027-01-01 to 2027-03-01 (2 periods of 1 month; a date after \"to\" is the "
            "day after the last), planned on 2027-01-01" in planned.stdout)
    # within the horizon: no warning, one line of when new orders can first serve
    result = run(str(_tiny_over_months(tmp_path, 2, on_demand=True)))
    assert "warning" not in result.stderr
    # the pinned today (2026-12-03): placed then, both 2-week quotes would serve period 0 (F5)
    assert ("  orders are planned from horizon.start 2027-01-01 (policy.as_of is not set), but "
            "can be placed from today (2026-12-03); placed today, H100-SXM's reserved quote (12 "
            "months) in zone-a; L4's reserved quote (12 months) in zone-a (lead time 2 weeks) "
            "would serve from period 0 (2027-01-01), not 1 (2027-02-01) — set `policy.as_of: "
            "2026-12-03` to plan orders from today") in result.stdout.splitlines()
    assert ("  new orders (placed from 2027-01-01 (the horizon's start)) serve at the "
            "earliest from period 1 (2027-02-01): H100-SXM's reserved quote (12 months) in "
            "zone-a; L4's reserved quote (12 months) in zone-a, lead time 2 weeks"
            ) in result.stdout.splitlines()


def test_an_earlier_period_short_in_time_is_named_before_a_later_one_short_of_stock(
        tmp_path: Path) -> None:
    """fresh-s22 F3: a plan short of stock in period 1 on its own was diagnosed there alone,
    while period 0 — which no order could reach in time — was short too. tiny over two months,
    reserved only (2-week lead time from 2027-01-01: nothing in service in period 0), growth
    ×10 in period 1 (beyond the reserved stock): both are named, period 0's first."""
    path = _tiny_over_months(tmp_path, 2, on_demand=False)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["workloads"][0]["growth"] = [1, 10]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = run_cli("plan", str(path), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 1, result.output
    diagnosis = json.loads((tmp_path / "out" / "plan.json").read_text())["diagnosis"]
    messages = [d["message"] for d in diagnosis]
    in_time = [i for i, m in enumerate(messages) if m.startswith(
        "with only the committed capacity in service by then") and "period 0 (2027-01-01)" in m]
    own = [i for i, m in enumerate(messages) if m.startswith("base, period 1 (2027-02-01): ")]
    assert in_time and own, messages
    assert max(in_time) < min(own)


def test_the_earliest_period_short_is_diagnosed_before_a_scenario_listed_first(
        tmp_path: Path) -> None:
    """fresh-s22 F3's rest: the diagnosis took the blocks scenario by scenario, so `low`
    (listed first), short only in period 1, was named while `high` was short in period 0 —
    the period a planner must meet first. tiny over two months, on demand sold (nothing is
    short in time alone): low ×1 then ×50, high ×50 then ×1 (×50: 200 req/s, beyond every
    offer's stock). Period 0 (high) is named first."""
    path = _tiny_over_months(tmp_path, 2, on_demand=True)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["demand_scenarios"] = [
        {"name": "low", "probability": 0.5, "growth": {"chat": [1, 50]}},
        {"name": "high", "probability": 0.5, "growth": {"chat": [50, 1]}}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = run_cli("plan", str(path), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 1, result.output
    diagnosis = json.loads((tmp_path / "out" / "plan.json").read_text())["diagnosis"]
    messages = [d["message"] for d in diagnosis]
    assert messages and messages[0].startswith("high, period 0 (2027-01-01): "), messages
    assert not any(m.startswith("low, period 1") for m in messages), messages


def test_infeasible_plan_names_the_lead_times_that_keep_orders_out(tmp_path: Path) -> None:
    path = _tiny_over_months(tmp_path, 20, on_demand=False)
    result = run_cli("plan", str(path), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "  - each period can be met on its own, but not with orders placed in time: lead " \
        "times, order stock or the budget keep committed capacity from arriving when it is " \
        "needed" in lines
    assert any(line.startswith("  - `lead_time_weeks: 20` of L4's reserved quote (12 months) in "
                               "zone-a: ordered on the plan date, 2027-01-01 (the horizon's "
                               "start), it arrives on 2027-05-21") for line in lines), lines
    diagnosis = json.loads((tmp_path / "out" / "plan.json").read_text())["diagnosis"]
    assert sum("lead_time_weeks: 20" in d["message"] for d in diagnosis) == 2
    # F12: when and by how much (chat, 4 req/s, needs 1 H100-SXM; nothing can be in service
    # in period 0), and the fix is an on-demand offer, not "sell on-demand capacity there"
    assert ("  - with only the committed capacity in service by then (inventory, and orders "
            "placed from the plan date 2027-01-01 on), base, period 0 (2027-01-01): `chat` "
            "needs 1 H100-SXM GPUs (reserved) in zone-a to carry its demand; stock allows 0: 1 "
            "more than stock") in lines
    short = next(d for d in diagnosis if d["message"].startswith("with only"))
    assert (short["requirement"], short["amount"], short["workload"]) == ("stock", 1.0, "chat")
    assert any(line.endswith("or add an `on_demand` offer of L4 (rented by the hour, no lead "
                             "time) to zone-a if it rents any, else to a zone that does")
               for line in lines), lines
    assert "sell" not in result.stdout


def test_a_held_reservation_priced_per_node_is_warned_of(tmp_path: Path) -> None:
    """A new user's held p5.48xlarge reservation at 48.80 "price_per_gpu_hour" (6.10 per GPU
    × 8, the node's price) passed without a word, though an offer's node price is warned of:
    the plan reported that reservation's spend eight times over."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    path = tmp_path / "q.yaml"
    path.write_text(text.replace("price_per_gpu_hour: 4.50}", "price_per_gpu_hour: 36.0}"),
                    encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert "inventory[1]: H100-SXM reservation" not in result.stderr  # 2.3×: below the ratio
    path.write_text(text.replace("price_per_gpu_hour: 4.50}", "price_per_gpu_hour: 52.0}"),
                    encoding="utf-8")
    result = run(str(path))
    assert ("warning: inventory[1]: H100-SXM reservation in use1-az1 price_per_gpu_hour 52.00 "
            "is 3.3× the highest on-demand price per GPU-hour of H100-SXM in the bundled AWS "
            "table (15.98, p5.48xlarge): a node's price? the field is per GPU: 52.00 ÷ 8 GPUs "
            "per node = 6.50") in result.stderr
    assert "inventory[1]" not in run(str(scenarios_dir() / "quarterly.yaml")).stderr


def test_a_node_price_written_per_gpu_is_warned_of(tmp_path: Path) -> None:
    """A p5.48xlarge's hourly price (98.32 USD, 8 H100) written as price_per_gpu_hour passed
    without a word: the plan then shuns H100 at 8× its price. It is well-formed (exit 0), and
    validate warns with the per-GPU figure; the same offer priced per GPU gets no warning."""
    doc: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    doc["zones"][0]["offers"] = [{"gpu": "p5.48xlarge",
                                  "on_demand": {"price_per_gpu_hour": 98.32, "stock_gpus": 64}}]
    doc["workloads"][0]["allowed_gpus"] = ["H100-SXM"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert ("warning: zone-a: H100-SXM on_demand price_per_gpu_hour 98.32 is 6.2× the highest "
            "on-demand price per GPU-hour of H100-SXM in the bundled AWS table (15.98, "
            "p5.48xlarge): a node's price? the field is per GPU: 98.32 ÷ 8 GPUs per node = "
            "12.29") in result.stderr
    data = json.loads(run(str(path), "--json").stdout)
    assert len(data["price_warnings"]) == 1
    planned = run_cli("plan", str(path), "--out", str(tmp_path / "out"))  # plan warns too
    assert "warning: zone-a: H100-SXM on_demand price_per_gpu_hour 98.32" in planned.stderr
    doc["zones"][0]["offers"][0]["on_demand"]["price_per_gpu_hour"] = 12.29
    path.write_text(yaml.safe_dump(doc))
    assert "price_per_gpu_hour" not in run(str(path)).stderr


def test_an_inventory_line_priced_per_node_hour_is_told_the_price_per_gpu(
        tmp_path: Path) -> None:
    """``price_per_node_hour`` on a held line was told "did you mean price_per_gpu_hour" with
    the node's price left to copy over, eight times too high: the fix gives the division where
    the node size is known (an instance type, or gpus_per_node), and says to divide where not."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    path = tmp_path / "q.yaml"
    path.write_text(text.replace("price_per_gpu_hour: 4.50}", "price_per_node_hour: 36.0}"),
                    encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 2
    assert ("inventory[1].price_per_node_hour: unknown key `price_per_node_hour` — the field is "
            "`price_per_gpu_hour`, per GPU: write `price_per_gpu_hour: 4.5` (36 per node-hour "
            "÷ 8 GPUs per node, a p5.48xlarge)") in result.output
    by_gpu = text.replace("instance_type: p5.48xlarge, nodes: 2, purchase: reserved",
                          "gpu: H100-SXM, nodes: 2, purchase: reserved")
    path.write_text(by_gpu.replace("price_per_gpu_hour: 4.50}", "price_per_node_hour: 36.0}"),
                    encoding="utf-8")
    assert "divide the node's price by its GPUs per node" in run(str(path)).output
    path.write_text(by_gpu.replace("price_per_gpu_hour: 4.50}",
                                   "gpus_per_node: 4, price_per_node_hour: 36.0}"),
                    encoding="utf-8")
    assert "write `price_per_gpu_hour: 9` (36 per node-hour ÷ 4 GPUs per node, gpus_per_node)" \
        in run(str(path)).output


def test_an_inventory_line_of_no_nodes_is_refused(tmp_path: Path) -> None:
    """``nodes: 0`` on a held line was accepted: a line that holds and prices nothing, left at
    0 in a template or meant to be removed. It is refused at its field, with the fix."""
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    path = tmp_path / "q.yaml"
    path.write_text(text.replace("gpu: H100-SXM, nodes: 2, purchase: owned",
                                 "gpu: H100-SXM, nodes: 0, purchase: owned"), encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 2
    assert (f"{path}: inventory[0].nodes: `nodes: 0` holds no node: give the number of nodes "
            "held (1 or more), or remove the line") in result.output


def test_a_horizon_starting_in_the_past_is_warned_with_the_fix(tmp_path: Path) -> None:
    """A new user's horizon from 2026-07-01, validated and planned on 2026-12-03, was accepted
    silently: the plan was made as of 2026-07-01, its orders due from then (months before the
    day it was run). It is warned, with `policy.as_of` (plan orders from today) and the first
    period still to come named — saying that orders are then placed on that day, so a lead
    time serves a later period; `as_of` given, or a start not in the past, no warning."""
    import datetime as dt

    from models.loader import load_scenario
    from solver.cli.lead_times import past_start_warning

    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    doc["horizon"]["start"] = "2020-07-01"
    doc["inventory"][1]["ends"] = "2021-06-30"
    path = tmp_path / "past.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    sc = load_scenario(path)
    today = dt.date(2020, 12, 3)
    warning = past_start_warning(sc, today)
    assert warning is not None
    assert warning.startswith("horizon.start 2020-07-01 is before today (2020-12-03) and "
                              "policy.as_of is not set: the plan is made as of 2020-07-01")
    assert "periods 0, 1 (begun by today)" in warning
    assert warning.endswith("set `policy.as_of: 2020-12-03` to plan orders from today, or move "
                            "horizon.start to the first period still to come (2021-01-01), "
                            "where orders are placed on that day and those with lead times "
                            "serve later periods")
    assert past_start_warning(sc, dt.date(2020, 7, 1)) is None  # starts today
    assert "every period has begun" in (past_start_warning(sc, dt.date(2021, 6, 1)) or "")
    # the command says it (the real clock: 2020 is past whatever day the test runs)
    result = run("--json", str(path))
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["inventory_warnings"]
    assert any(w.startswith("horizon.start 2020-07-01 is before today") for w in warnings)
    assert "warning: horizon.start 2020-07-01 is before today" in result.stderr
    doc["policy"]["as_of"] = "2020-07-01"  # the plan dated on purpose: as it was made
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert past_start_warning(load_scenario(path), today) is None
    assert "horizon.start" not in run(str(path)).stderr


def test_the_past_start_fix_pasted_as_the_warning_writes_it_validates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning says "set `policy.as_of: 2027-02-01`"; a new user typed that line into
    quarterly.yaml's policy block and validate refused it ("policy.as_of: Input should be a
    valid string"): YAML reads an unquoted date as a date. Pasted as written, it now plans
    orders from that day and the warning is gone."""
    import re

    monkeypatch.setenv("FLEETPLAN_TODAY", "2027-02-01")
    text = (scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8")
    warned = run(str(scenarios_dir() / "quarterly.yaml"))
    fix = re.search(r"set `(policy\.as_of: [0-9-]+)`", warned.stderr)
    assert fix is not None, warned.stderr
    line = fix.group(1).removeprefix("policy.")
    assert line == "as_of: 2027-02-01"
    assert text.count("\npolicy:\n") == 1
    path = tmp_path / "quarterly.yaml"
    path.write_text(text.replace("\npolicy:\n", f"\npolicy:\n  {line}\n"), encoding="utf-8")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert "horizon.start" not in result.stderr
    assert "new orders (placed from 2027-02-01 (policy.as_of))" in result.stdout

def test_today_may_be_pinned_so_the_examples_stay_in_the_future(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """quarterly.yaml's horizon starts 2027-01-01: run on a later day, validate warns that it
    starts in the past. The tests pin today (tests/conftest.py) so its tests, which expect no
    warning, do not start failing then; unpinned, today is the clock's."""
    import datetime as dt

    from solver.cli.lead_times import TODAY_ENV, today_date

    monkeypatch.setenv(TODAY_ENV, "2027-02-01")
    assert today_date() == dt.date(2027, 2, 1)
    assert "horizon.start 2027-01-01 is before today (2027-02-01)" in run(
        str(scenarios_dir() / "quarterly.yaml")).stderr
    monkeypatch.delenv(TODAY_ENV)
    assert today_date() == dt.date.today()
