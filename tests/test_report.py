"""report.md, its charts, and the figures every procurement output shares."""

from __future__ import annotations

from pathlib import Path

import pytest
from procurement_fixtures import EVIL, make_plan, make_scenario, make_table

from models.common import PurchaseKind
from models.plan import Shortfall, SolveStatus
from models.workload import TokenPercentiles
from solver.cli.compare import render_table
from solver.outputs.figures import (
    committed_share,
    gpu_counts,
    gpus_by,
    peak_utilization,
    reserved_share,
    slice_figures,
    survivability_margins,
    tenant_costs,
)
from solver.outputs.plan_dir import COST_CHART_FILE, DAY_CHART_FILE, REPORT_FILE
from solver.outputs.report import render_report, write_report
from solver.studies.compare import Compared, Variant, plan_row

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_gpu_counts_take_elastic_at_busiest_slice() -> None:
    counts = gpu_counts(make_plan())
    assert [(c.zone, c.purchase, c.gpus, c.cost_per_month) for c in counts] == [
        ("z1", PurchaseKind.reserved, 8, 14600.0),
        ("z1", PurchaseKind.on_demand, 8, 11680.0),
        ("z2", PurchaseKind.reserved, 8, 14600.0),
    ]
    assert gpus_by(make_plan(), "zone") == {"z1": 16, "z2": 8}
    assert gpus_by(make_plan(), "gpu") == {"H100-SXM": 24}


def test_reserved_share_and_tenants() -> None:
    # (14,600 + 14,600) / 40,880 = 0.714286
    assert reserved_share(make_plan()) == pytest.approx(29200 / 40880)
    assert tenant_costs(make_plan()) == {"-team": (8880.0, 0.5e9), "acme": (32000.0, 2.0e9)}


def test_owned_capacity_counts_as_committed_in_compare_and_the_report() -> None:
    """A new user's all-owned fleet read "reserved share 0 %" in compare: owned hardware is
    committed capacity as reserved is (models.common.PurchaseKind); compare, its workbook and
    report.md show the committed share, reserved and owned."""
    plan = make_plan()
    owned = plan.model_copy(update={"nodes": tuple(
        n.model_copy(update={"purchase": PurchaseKind.owned})
        if n.purchase is PurchaseKind.reserved else n for n in plan.nodes)})
    assert reserved_share(owned) == 0.0
    assert committed_share(owned) == pytest.approx(29200 / 40880)
    assert committed_share(plan) == pytest.approx(29200 / 40880)
    every = owned.model_copy(update={"nodes": tuple(
        n.model_copy(update={"purchase": PurchaseKind.owned}) for n in plan.nodes)})
    assert committed_share(every) == 1.0
    row = plan_row("owned", every)
    assert (row.committed_share, row.reserved_share) == (1.0, 0.0)
    compared = Compared(Variant("owned", make_scenario()), every, make_table())
    shown = [" ".join(line.split()) for line in render_table([compared], [row], "USD")]
    assert "committed share (reserved + owned) 100%" in shown, shown
    text = render_report(every, make_scenario(), make_table())
    assert "| Share of cost on committed capacity (reserved + owned) | 100.0% |" in text


def test_the_replicas_column_counts_owned_replicas_and_says_so() -> None:
    """The Workloads table's Replicas first figure is every replica running all day (slice
    null), owned ones included: quarterly.yaml's chat H100-SXM TP2 read "4 + 0" under a caption
    "reserved + most elastic" where 2 were reserved and 2 owned (trace-s23)."""
    plan = make_plan()
    owned = plan.model_copy(update={"allocations": tuple(
        a.model_copy(update={"purchase": PurchaseKind.owned}) if a.slice is None else a
        for a in plan.allocations)})
    committed = sum(a.replicas for a in owned.allocations
                    if a.workload == "chat" and a.slice is None)
    assert committed > 0 and all(a.purchase is PurchaseKind.owned for a in owned.allocations
                                 if a.slice is None)  # else the check below is vacuous
    text = render_report(owned, make_scenario(), make_table())
    assert ("Replicas: committed (reserved and owned, running every hour) + most elastic "
            "(on-demand and spot) in one slice.") in text
    row = next(line for line in text.splitlines() if line.startswith("| chat |"))
    assert f"| {committed} + " in row


def test_slice_figures() -> None:
    figures = {(f.workload, f.slice): f for f in slice_figures(make_plan(), make_scenario())}
    night, day = figures[("chat", "night")], figures[("chat", "day")]
    assert (night.demand_rps, night.capacity_rps) == (5.0, 16.0)  # 10 × 0.5; 8 reserved × 2
    assert (day.demand_rps, day.capacity_rps) == (10.0, 24.0)  # + 4 on-demand × 2
    assert day.usable_rps == pytest.approx(16.8)  # 24 × 0.7
    assert figures[(EVIL, "day")].capacity_rps == 4.0


def test_survivability_margins_keep_the_worst_slice() -> None:
    margins = {(m.failure, m.workload): m for m in survivability_margins(make_plan())}
    z1 = margins[("zone:z1", "chat")]
    assert (z1.slice, z1.margin, z1.holds) == ("day", pytest.approx(-0.2), False)
    assert margins[("none", "chat")].margin == pytest.approx(1.4)  # (24 − 10) / 10


def _tables_are_rectangular(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("| "):
            cells = line.replace("\\|", "").count("|")
            assert cells >= 3, line
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    for block in blocks:
        widths = {line.replace("\\|", "").count("|") for line in block}
        assert len(widths) <= 1, block


def test_report_text() -> None:
    text = render_report(make_plan(), make_scenario(), make_table(), [COST_CHART_FILE])
    assert "| Cost per month [USD/month] | 40,880.00 |" in text
    assert "| Cost per year [USD/year] | 490,560.00 |" in text  # 40,880 × 12
    assert "| Share of cost on committed capacity (reserved + owned) | 71.4% |" in text
    assert "| Zone z1 lost | chat | day | 8.00 | 10.00 | -20.0% | FAILS |" in text
    assert f"]({COST_CHART_FILE})" in text
    assert DAY_CHART_FILE not in text  # not written, so not linked
    _tables_are_rectangular(text)


def test_user_text_cannot_break_a_table() -> None:
    sc = make_scenario()
    chat = sc.workloads[0].model_copy(update={"tenant": "a|b\nc <script>"})
    sc = sc.model_copy(update={"workloads": (chat, sc.workloads[1])})
    text = render_report(make_plan(), sc, make_table())
    assert "a\\|b c \\<script\\>" in text
    _tables_are_rectangular(text)


def test_write_report_files_and_deterministic_pngs(tmp_path: Path) -> None:
    paths = write_report(make_plan(), make_scenario(), make_table(), tmp_path / "a")
    assert [p.name for p in paths] == [REPORT_FILE, COST_CHART_FILE, DAY_CHART_FILE]
    for p in paths[1:]:
        assert p.read_bytes().startswith(PNG_MAGIC)
    again = write_report(make_plan(), make_scenario(), make_table(), tmp_path / "b")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in paths]
    assert f"]({DAY_CHART_FILE})" in paths[0].read_text()


def test_dollar_in_a_name_is_not_mathtext(tmp_path: Path) -> None:
    sc = make_scenario()
    chat = sc.workloads[0].model_copy(update={"name": "chat $x^2$ {"})
    sc = sc.model_copy(update={"workloads": (chat,)})
    paths = write_report(make_plan(), sc, make_table(), tmp_path)
    assert paths[2].read_bytes().startswith(PNG_MAGIC)


def test_infeasible_plan_report(tmp_path: Path) -> None:
    plan = make_plan().model_copy(update={
        "status": SolveStatus.infeasible, "nodes": (), "allocations": (), "survivability": (),
        "diagnosis": (Shortfall(requirement="stock", zone="z1", gpu="H100-SXM", amount=8,
                                unit="GPUs", message="needs 8 more H100-SXM in z1"),)})
    paths = write_report(plan, make_scenario(), make_table(), tmp_path)
    assert [p.name for p in paths] == [REPORT_FILE, DAY_CHART_FILE]  # no cost to chart
    text = paths[0].read_text()
    assert "## Why the scenario is infeasible" in text
    assert "needs 8 more H100-SXM in z1" in text


def test_spot_capacity_is_discounted_by_interruption() -> None:
    plan = make_plan()
    spot = plan.allocations[3].model_copy(update={"purchase": PurchaseKind.spot})
    plan = plan.model_copy(update={"allocations": (*plan.allocations[:3], spot)})
    day = next(f for f in slice_figures(plan, make_scenario())
               if (f.workload, f.slice) == ("chat", "day"))
    # 8 reserved × 2 × 0.7 + 4 spot × 2 × 0.7 × (1 − 0.05) = 11.2 + 5.32 = 16.52
    assert day.usable_rps == pytest.approx(16.52)
    assert day.capacity_rps == 24.0
    # expected capacity at SLO: 8 × 2 + 4 × 2 × 0.95 = 23.6 req/s; utilization at peak is the
    # day's demand over it, as the program, the printed summary and `fleetplan check` count it
    assert day.expected_rps == pytest.approx(23.6)
    figures = slice_figures(plan, make_scenario())
    chat = [f for f in figures if f.workload == "chat"]
    # night: 5 / (8 × 2) = 0.3125; day: 10 / 23.6 = 0.4237 (10 / 24 = 0.4167 at the full rate)
    util = peak_utilization(figures, "chat")
    assert util == pytest.approx(10.0 / 23.6)
    assert util is not None and util > max(f.demand_rps / f.capacity_rps for f in chat)


def test_report_assumptions_hold_the_node_model_and_the_typical_token_lengths() -> None:
    """Tokens per month use the mean length (else P50) and the cost rests on the node model:
    both inputs are shown, so the report's figures can be retraced from it."""
    sc = make_scenario()
    chat = sc.workloads[0].model_copy(update={
        "input_tokens": TokenPercentiles(p50=500, p95=2000, p99=4000, mean=650.5)})
    sc = sc.model_copy(update={"workloads": (chat, *sc.workloads[1:]),
                               "policy": sc.policy.model_copy(update={"share_nodes": False})})
    text = render_report(make_plan(), sc, make_table())
    assert "| Replicas of different workloads share nodes | no (dedicated pools) |" in text
    # chat: P50/P95 in 500/2000, out 200/500; typical in = the mean 650.5, out = the P50 200
    assert "| chat | llama-8b | 10 | Poisson (assumed) | 500/2000 | 200/500 | 650.5/200 |" in text
    # every column of that table carries its unit (the token columns had none: trace-s23)
    assert ("| Input P50/P95 [tokens] | Output P50/P95 [tokens] | Typical input/output [tokens] "
            "(mean, else P50) |") in text
    shared = render_report(make_plan(), make_scenario(), make_table())
    assert "| Replicas of different workloads share nodes | yes |" in shared
    _tables_are_rectangular(text)


def test_report_prices_show_the_spot_interruption_rate() -> None:
    """Usable spot capacity is discounted by (1 − interruption rate): the rate is shown."""
    text = render_report(make_plan(), make_scenario(), make_table())
    # the fixture's z1 H100 spot offer: 1.50 per GPU-hour, 16 GPUs, the default 0.05 per hour
    assert "| z1 | H100-SXM | Spot | 1.5000 | 16 | 0.05 | test table |" in text
    assert "| z1 | H100-SXM | Reserved | 2.5000 | 64 | — | test table |" in text


def test_the_survivability_caption_says_why_a_failure_row_can_exceed_none() -> None:
    """Steady state counts replicas at the target utilization, failure rows at the policy's
    failure utilization: the demo showed chat at 13.18 req/s with nothing lost and 18.83 after
    losing a zone it had no replica in, which reads as a bug unless the report says why."""
    sc = make_scenario()
    text = render_report(make_plan(), sc, make_table())
    share = f"{sc.policy.failure_utilization:.1%}"
    assert f"utilization allowed after a failure ({share}) in every failure row" in text
    hotter = sc.model_copy(update={"policy": sc.policy.model_copy(
        update={"failure_utilization": 0.85})})
    assert "after a failure (85.0%) in every failure row" in render_report(
        make_plan(), hotter, make_table())


def test_a_plan_stopped_at_its_time_limit_says_a_rerun_may_differ() -> None:
    """Same input, same plan holds for a plan the solver finished; one stopped by the clock
    depends on how far the search got, and report.md says so under its status."""
    plan = make_plan()
    assert "re-run" not in render_report(plan, make_scenario(), make_table())
    stopped = plan.model_copy(update={"status": SolveStatus.time_limit})
    text = render_report(stopped, make_scenario(), make_table())
    status, note = text.split("\n\n")[1:3]
    assert "Status **Stopped at the time limit**" in status
    assert note.startswith("The solve stopped at its time limit") and "re-run" in note


def test_the_status_says_proven_within_the_gap_not_optimal() -> None:
    """A plan stopped at a 1 % gap was reported "Status **Optimal** (…, MIP gap 1.00%)"."""
    plan = make_plan()
    at_gap = plan.model_copy(update={"solver": plan.solver.model_copy(update={"gap": 0.01})})
    text = render_report(at_gap, make_scenario(), make_table())
    assert "Status **Proven within 1.00% of the cheapest** (highs, 0.5 s, MIP gap 1.00%)" in text
    assert "Status **Optimal**" in render_report(plan, make_scenario(), make_table())


def test_survivability_table_has_the_intact_fleet_at_the_failure_utilization() -> None:
    """qa4 11: with no failure chat's capacity counts at its 70 % target, in failure rows at
    100 %, so a failure showed more margin than none. The row under *No failure* counts the
    intact fleet at 100 % too: 24 req/s at 70 % is 34.29 at 100 %, margin (34.29 − 10) / 10."""
    text = render_report(make_plan(), make_scenario(), make_table())
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| No failure | chat |"))
    assert lines[at + 1] == (f"| No failure, at 100.0% | chat | day | {24 / 0.7:,.2f} | 10.00 | "
                             f"{(24 / 0.7 - 10) / 10:.1%} | for comparison |")
    assert "Compare a failure row with the row *No failure, at 100.0%*" in text
