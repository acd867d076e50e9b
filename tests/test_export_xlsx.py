"""The procurement workbook: every sheet read back and checked against the plan it came from."""

from __future__ import annotations

import datetime as dt
import io
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from procurement_fixtures import EVIL, TOTAL_COST, evaluate, make_plan, make_scenario, make_table

from models.catalog import EfficiencyFactors
from models.scenario import Scenario
from models.workload import TokenPercentiles
from solver.outputs.labels import failure_label
from solver.outputs.units import field_header
from solver.outputs.workbook import CHART_DATA, SHEETS, write_plan_workbook
from solver.outputs.xlsx_cells import put


@pytest.fixture
def workbook_path(tmp_path: Path) -> Path:
    return write_plan_workbook(make_plan(), make_scenario(), make_table(), tmp_path / "plan.xlsx")


def _rows(ws: openpyxl.worksheet.worksheet.Worksheet) -> list[tuple[object, ...]]:
    return [tuple(c.value for c in row) for row in ws.iter_rows()]


def test_sheets_in_order_with_frozen_headers(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    assert tuple(wb.sheetnames) == (*SHEETS, CHART_DATA)
    assert wb[CHART_DATA].sheet_state == "hidden"  # the native charts' step points
    for title in SHEETS:
        ws = wb[title]
        if title == "Charts":
            continue
        frozen = ws.freeze_panes
        assert frozen is not None and frozen[1:] in ("2", "3"), title  # below its header


def test_purchase_total_is_a_formula_equal_to_plan_cost(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Purchase plan"]
    last = ws.max_row
    assert ws.cell(row=last, column=1).value == "Total"
    total = ws.cell(row=last, column=11)
    assert total.data_type == "f" and str(total.value).startswith("=SUM(")
    assert evaluate(wb, "Purchase plan", f"K{last}") == pytest.approx(TOTAL_COST)
    # every row's cost is GPUs × price × hours, also a formula; each equals the plan's node cost
    plan = make_plan()
    costs = sorted(evaluate(wb, "Purchase plan", f"K{r}") for r in range(2, last))
    assert costs == pytest.approx(sorted(n.cost_per_month for n in plan.nodes))


def test_editing_a_node_count_moves_the_cost(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Purchase plan"]
    # rows sorted by zone, GPU, kind: row 2 is z1 H100-SXM reserved (1 node, 14,600 $/month)
    assert (ws["A2"].value, ws["C2"].value, ws["G2"].value) == ("z1", "Reserved", 1)
    ws["G2"].value = 2
    # 40,880 + one more node: 8 GPUs × 2.50 × 730 = 14,600 → 55,480
    assert evaluate(wb, "Purchase plan", f"K{ws.max_row}") == pytest.approx(55480.0)
    assert _named(wb, "cost_per_month") == pytest.approx(55480.0)


def _named(wb: openpyxl.Workbook, name: str) -> float:
    """Value of the cell a defined name points at."""
    sheet, cell = next(wb.defined_names[name].destinations)
    return evaluate(wb, sheet, cell.replace("$", ""))


def test_summary_says_its_formulas_hold_no_stored_value(workbook_path: Path) -> None:
    """qa4 9: pandas read the cost cells as NaN and nothing in the workbook said why. The
    Summary says so under its table, and where to read the figures instead; the cells it names
    are indeed formulas openpyxl stores no value for."""
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Summary"]
    lines = [c.value for c in ws["A"] if isinstance(c.value, str)]
    assert any("live formulas" in t and "pandas and openpyxl read them empty" in t
               and "plan.json" in t for t in lines)
    labels = {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)}
    assert ws.cell(row=labels["Cost per month"], column=2).data_type == "f"
    cached = openpyxl.load_workbook(workbook_path, data_only=True)["Summary"]
    assert cached.cell(row=labels["Cost per month"], column=2).value is None


def test_summary_figures(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Summary"]
    labels = {ws.cell(row=r, column=1).value: r for r in range(1, ws.max_row + 1)}
    def value(label: str) -> float:
        return evaluate(wb, "Summary", f"B{labels[label]}")
    assert value("Cost per month") == pytest.approx(TOTAL_COST)
    assert value("Cost per year") == pytest.approx(TOTAL_COST * 12)  # 490,560
    assert value("Cost per million tokens") == pytest.approx(16.352)  # 40,880 / 2,500 Mtok
    assert value("Cost per million output tokens") == pytest.approx(81.76)  # 40,880 / 500
    assert ws.cell(row=labels["Scenario"], column=2).value == "hand-made"
    assert ws.cell(row=labels["Solver status"], column=2).value == "Optimal"  # a label
    prepared = ws.cell(row=labels["Prepared on"], column=2)
    assert prepared.value == dt.datetime(2026, 3, 1)  # the scenario's as_of
    assert prepared.is_date and prepared.number_format == "yyyy-mm-dd"
    # units in the number formats: the figure stays a number
    cost = ws.cell(row=labels["Cost per month"], column=2)
    assert cost.number_format == '#,##0.00" USD/month"'
    # GPUs by purchase kind: reserved 8 + 8 (z1, z2); on-demand 8 at the busiest slice
    rows = _rows(ws)  # the three GPU tables side by side: by type A:B, zone D:E, kind G:H
    start = next(i for i, r in enumerate(rows) if r[6] == "Purchase kind")
    assert rows[start + 1][6:8] == ("On-demand", 8)
    assert rows[start + 2][6:8] == ("Reserved", 16)


def test_every_formula_evaluates(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    formulas = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type == "f":
                    formulas += 1
                    evaluate(wb, ws.title, cell.coordinate)  # raises on an error or division by 0
    # 3 node rows × 2 formulas + total + 4 summary + 4 cost-attribution rows × 2
    assert formulas == 3 * 2 + 1 + 4 + 4 * 2
    for name in wb.defined_names:  # and every defined name points at a figure
        if name != "prepared_on":  # a date
            _named(wb, name)


def test_user_text_is_never_a_formula(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    hits = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and "HYPERLINK" in cell.value:
                    hits.append(cell)
                    assert cell.data_type == "s", f"{ws.title}!{cell.coordinate}"
                    assert EVIL in cell.value
    assert len(hits) >= 5  # pools, hourly headers, survivability, contract, cost, assumptions
    with zipfile.ZipFile(workbook_path) as z:
        for name in z.namelist():
            if name.startswith("xl/worksheets/sheet"):
                xml = z.read(name).decode()
                assert not re.search(r"<f>[^<]*HYPERLINK", xml), name  # never inside a formula
                assert "HYPERLINK" not in xml or 't="inlineStr"><is><t>=HYPERLINK' in xml
    tenant = next(c for c in wb["Cost attribution"]["B"] if c.value == "-team")
    assert tenant.data_type == "s" and tenant.quotePrefix


def test_pools_read_back_with_pandas(workbook_path: Path) -> None:
    pools = pd.read_excel(workbook_path, sheet_name="Pools")
    chat_z1 = pools[(pools["Workload"] == "chat") & (pools["Zone"] == "z1")].iloc[0]
    assert chat_z1["Reserved replicas"] == 4
    assert chat_z1["On-demand replicas (busiest slice)"] == 4
    assert chat_z1["SLO-holding rate [req/s per replica]"] == 2.0
    # peak demand 10 req/s in the day slice on 12 replicas × 2 req/s = 24 req/s → 10/24
    assert chat_z1["Utilization at peak [1]"] == pytest.approx(10 / 24)
    assert chat_z1["TTFT P95 at SLO rate [ms]"] == 600
    # capacity headroom: tightest slice 24 × 1 ÷ 10 − 1 = 1.4 (night: 16 ÷ 5 − 1 = 2.2)
    assert chat_z1["Capacity headroom [1]"] == pytest.approx(1.4)
    assert chat_z1["Latency slack at SLO rate [1]"] == pytest.approx(0.4)
    evil = pools[pools["Workload"] == EVIL].iloc[0]
    assert evil["Tenant"] == "-team" and evil["Capacity"] == "Measured"
    assert evil["Class"] == "Interactive" and evil["Precision"] == "BF16"  # labels, not enums


def test_hourly_demand_and_capacity(workbook_path: Path) -> None:
    hourly = pd.read_excel(workbook_path, sheet_name="Hourly")
    assert list(hourly["Hour (UTC)"])[:2] == ["00:00–01:00", "01:00–02:00"]
    assert list(hourly["Slice"]) == ["night"] * 12 + ["day"] * 12
    # night: 10 × 0.5 = 5 req/s on 8 reserved replicas × 2 × 0.7 = 11.2; day: 10 on 12 × 2 × 0.7
    assert list(hourly["chat demand [req/s]"]) == pytest.approx([5.0] * 12 + [10.0] * 12)
    assert list(hourly["chat usable capacity [req/s]"]) == pytest.approx([11.2] * 12
                                                                         + [16.8] * 12)
    # after losing z1 (the worst required failure): 8 req/s in both slices
    assert list(hourly["chat after the worst required failure [req/s]"]) == [8.0] * 24
    assert list(hourly[f"{EVIL} demand [req/s]"]) == pytest.approx([2.0] * 24)
    assert hourly[f"{EVIL} after the worst required failure [req/s]"].isna().all()
    with zipfile.ZipFile(workbook_path) as z:  # cost by zone, and a step chart per workload
        assert sum(n.startswith("xl/charts/chart") for n in z.namelist()) == 3


def test_survivability_matrix_margins_and_colours(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Survivability"]
    assert [c.value for c in ws[1]][1:3] == ["chat", EVIL]
    rows = {r[0]: r[1:] for r in _rows(ws)[1:5]}
    assert rows["Zone z1 lost"][0] == pytest.approx(-0.2)  # day: (8 − 10) / 10
    assert rows["Zone z2 lost"][0] == pytest.approx(0.6)  # both slices (8 − 5)/5 = (16 − 10)/10
    assert rows["No failure"][0] == pytest.approx(1.4)  # worst of (16 − 5)/5, (24 − 10)/10
    assert rows["No failure"][1] == pytest.approx(1.0)  # (4 − 2) / 2
    # qa4 11: the intact fleet at the failure rows' 100 % (24 req/s at the 70 % target), right
    # under "No failure": no failure row shows more
    names = [r[0] for r in _rows(ws)[1:5]]
    assert names[names.index("No failure") + 1] == "No failure, at 100%"
    assert rows["No failure, at 100%"][0] == pytest.approx((24 / 0.7 - 10) / 10)
    assert rows["No failure, at 100%"][1] == pytest.approx((4 / 0.7 - 2) / 2)
    assert all(rows[f][0] <= rows["No failure, at 100%"][0] for f in ("Zone z1 lost",
                                                                        "Zone z2 lost"))
    assert rows["Zone z1 lost"][1] is None  # not checked: blank
    # below, each workload's tightest case: a failing one first, however many failures exist
    detail = ws.tables["Survivability_detail"]
    head, *cases = [[c.value for c in row] for row in ws[detail.ref]]
    assert head == ["Workload", "Tightest failure", "Worst slice", "Capacity [req/s]",
                    "Demand [req/s]", "Margin [1]", "Failures checked", "Result"]
    assert [c[:3] + c[4:] for c in cases] == [
        ["chat", "Zone z1 lost", "day", 10.0, pytest.approx(-0.2), 2, "FAILS 1"],
        [EVIL, "No failure", cases[1][2], 2.0, pytest.approx(1.0), 0, "holds"]]
    # Failures checked: the failures other than "No failure" (z1, z2 for chat; none for the
    # other), the printed summary's count; main counted the no-failure row too (3 and 1)
    formats = list(ws.conditional_formatting)
    assert [str(f.sqref) for f in formats] == ["B2:C5"]
    # only numbers are coloured: a blank cell reads as 0, and `>= 0` would paint it green
    assert sorted(r.formula[0] for r in formats[0].rules) == [
        "AND(ISNUMBER(B2),B2<0)", "AND(ISNUMBER(B2),B2>=0)"]


def test_contract_and_cost_attribution(workbook_path: Path) -> None:
    contract = pd.read_excel(workbook_path, sheet_name="Capacity contract")
    assert list(contract["Workload"]) == ["chat", EVIL]  # the L4 candidate is not used
    assert list(contract["Configuration"]) == ["H100-SXM BF16 TP1 (1 GPU)"] * 2
    # what a load test measured and what the model predicts never share a column
    assert list(contract["Predicted SLO rate [req/s]"].fillna(0)) == [2.0, 0]
    assert list(contract["Measured peak [req/s]"].fillna(0)) == [0, 1.0]
    assert contract["Measured on"].isna().iloc[0]
    assert str(contract["Measured on"].iloc[1]).startswith("2026-01-10")
    wb = openpyxl.load_workbook(workbook_path)
    ws = wb["Cost attribution"]
    assert ws["A2"].value == "chat" and ws["C2"].value == 32000.0
    assert evaluate(wb, "Cost attribution", "F2") == pytest.approx(16.0)  # 32,000 / 2,000 Mtok
    assert evaluate(wb, "Cost attribution", "F3") == pytest.approx(17.76)  # 8,880 / 500 Mtok


def test_offers_of_what_the_plan_buys_and_one_line_for_the_rest(workbook_path: Path) -> None:
    wb = openpyxl.load_workbook(workbook_path)
    rows = _rows(wb["Offers"])
    prices = [r for r in rows if r[0] == "z1" and r[2] == "H100-SXM"]
    assert [(r[3], r[4]) for r in prices] == [("Reserved", 2.5), ("On-demand", 4.0),
                                              ("Spot", 1.5)]
    assert prices[0][6:8] == (12, 6)  # commitment months, lead time weeks
    assert not any(r[2] == "L4" for r in rows)  # z1 sells L4 too; the plan buys none
    assert any(isinstance(r[0], str) and r[0].startswith("1 other offer (L4 in 1 zone) not "
                                                          "used") for r in rows)
    # the line runs on to the right: the zone column stays as wide as a zone
    assert wb["Offers"].column_dimensions["A"].width < 12


def test_offers_list_every_reserved_quote(tmp_path: Path) -> None:
    """A new user's use2-az1 H100 offer quoted 12 months at 7.90 and 36 months (part upfront)
    at 5.40; the plan ordered the 12-month quote, but the Offers sheet and the report's price
    table showed only the cheapest, 36-month quote: the price ordered was in no table of
    prices."""
    from models.common import Upfront
    from models.offers import ReservedTerms
    from solver.outputs.report import write_report

    sc = make_scenario()
    z1 = sc.zones[0]
    h100 = z1.offers[0]
    quotes = (h100.reserved_quotes[0],
              ReservedTerms(price_per_gpu_hour=1.9, stock_gpus=32, commitment_months=36,
                            lead_time_weeks=8, upfront=Upfront.all))
    z1 = z1.model_copy(update={"offers": (h100.model_copy(update={"reserved": quotes}),
                                          *z1.offers[1:])})
    sc = sc.model_copy(update={"zones": (z1, *sc.zones[1:])})
    path = write_plan_workbook(make_plan(), sc, make_table(), tmp_path / "plan.xlsx")
    rows = _rows(openpyxl.load_workbook(path)["Offers"])
    prices = [r for r in rows if r[0] == "z1" and r[2] == "H100-SXM"]
    assert [(r[3], r[4], r[6], r[7]) for r in prices] == [
        ("Reserved 12 months", 2.5, 12, 6), ("Reserved 36 months, upfront all", 1.9, 36, 8),
        ("On-demand", 4.0, None, None), ("Spot", 1.5, None, None)]
    write_report(make_plan(), sc, make_table(), tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "| z1 | H100-SXM | Reserved 12 months | 2.5000 | 64 | — | test table |" in text
    assert "| z1 | H100-SXM | Reserved 36 months, upfront all | 1.9000 | 32 | — |" in text


@pytest.mark.skipif(shutil.which("soffice") is None and shutil.which("libreoffice") is None,
                    reason="LibreOffice is not installed")
def test_libreoffice_recalculates_the_plan_cost(workbook_path: Path, tmp_path: Path) -> None:
    office = shutil.which("soffice") or shutil.which("libreoffice")
    assert office is not None
    out = tmp_path / "recalc"
    subprocess.run([office, "--headless", "--convert-to", "xlsx", "--outdir", str(out),
                    str(workbook_path)], check=True, capture_output=True, timeout=120)
    wb = openpyxl.load_workbook(out / "plan.xlsx", data_only=True)
    ws = wb["Purchase plan"]
    assert ws.cell(row=ws.max_row, column=11).value == pytest.approx(TOTAL_COST)
    assert wb["Summary"]["B10"].value == pytest.approx(TOTAL_COST)


def test_real_plan_outputs_agree_with_plan_json(tmp_path: Path) -> None:
    """Plan a shipped scenario, write every procurement output, read them back against the plan."""
    from inputs import scenarios_dir
    from models.loader import load_scenario
    from models.plan import Plan
    from solver.capacity.table import build_capacity_table
    from solver.outputs.plan_dir import write_procurement_outputs
    from solver.solve.strategy import plan_scenario

    scenario = load_scenario(scenarios_dir() / "twenty_rps.yaml")
    table = build_capacity_table(scenario)
    plan = plan_scenario(scenario, table, time_limit_s=30)
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    written = write_procurement_outputs(plan, scenario, tmp_path)
    assert [p.name for p in written] == ["plan.xlsx", "contract.yaml", "report.md",
                                         "cost_by_zone.png", "capacity_vs_demand.png"]
    plan = Plan.model_validate_json((tmp_path / "plan.json").read_text())
    wb = openpyxl.load_workbook(tmp_path / "plan.xlsx")
    last = wb["Purchase plan"].max_row
    assert evaluate(wb, "Purchase plan", f"K{last}") == pytest.approx(plan.cost.per_month)
    assert _named(wb, "cost_per_mtok") == pytest.approx(plan.cost.per_million_tokens)
    purchase = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="Purchase plan").iloc[:-1]
    assert int(purchase["Nodes"].sum()) == sum(n.nodes for n in plan.nodes)
    pools = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="Pools")
    reserved = sum(a.replicas for a in plan.allocations if a.slice is None)
    assert int(pools["Reserved replicas"].sum()) == reserved
    costs = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="Cost attribution", nrows=len(
        plan.workload_costs))
    assert list(costs["Cost [USD/month]"]) == pytest.approx(
        [w.cost_per_month for w in plan.workload_costs])
    surv = pd.read_excel(tmp_path / "plan.xlsx", sheet_name="Survivability")
    assert set(surv.iloc[:, 0].dropna()) >= {failure_label(r.failure)
                                              for r in plan.survivability}
    for sheet in SHEETS:  # every sheet of figures reads back with pandas
        if sheet != "Charts":
            assert not pd.read_excel(tmp_path / "plan.xlsx", sheet_name=sheet).empty, sheet


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
               max_size=40).map(lambda s: "=+-@"[len(s) % 4] + s))
def test_any_user_text_reads_back_as_the_same_text(name: str) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    put(ws, 1, 1, name)
    buffer = io.BytesIO()
    wb.save(buffer)
    cell = openpyxl.load_workbook(io.BytesIO(buffer.getvalue()))["Sheet"]["A1"]
    assert (cell.value, cell.data_type, cell.quotePrefix) == (name, "s", True)


def _by_field(rows: list[tuple[object, ...]], first: str) -> dict[object, dict[object, object]]:
    """A transposed block (a row per field, a column per entry) read as entry → field → value;
    ``first`` is its header's first title."""
    at = next(i for i, r in enumerate(rows) if r[0] == first)
    names = [n for n in rows[at][1:] if n is not None]
    out: dict[object, dict[object, object]] = {n: {} for n in names}
    for r in rows[at + 1:]:
        if r[0] is None:
            break
        for n, v in zip(names, r[1:], strict=False):
            out[n][r[0]] = v
    return out


def test_assumptions_show_every_efficiency_factor_with_its_unit(tmp_path: Path) -> None:
    scenario = make_scenario()
    # distinct values, so each must land under its own header
    values: dict[str, object] = {name: 0.01 * (i + 1)
                                 for i, name in enumerate(EfficiencyFactors.model_fields)}
    values["nccl_latency_us"] = (28.4, 33.23)  # NCCL's latency at 2 and 4 GPUs
    values["nccl_link_efficiency"] = (0.6372, 0.7662)  # NCCL's bandwidth share at 2 and 4
    gpus = tuple(g.model_copy(update={"efficiency": EfficiencyFactors(**values)})
                 for g in scenario.gpus)
    path = write_plan_workbook(make_plan(), scenario.model_copy(update={"gpus": gpus}),
                               make_table(), tmp_path / "plan.xlsx")
    shown = _by_field(_rows(openpyxl.load_workbook(path)["Assumptions"]), "GPU")["H100-SXM"]
    assert shown["Memory [GiB]"] == 80
    assert shown["Decode step overhead [ms]"] == values["decode_step_overhead_ms"]
    assert shown["Step overhead per layer [ms/layer]"] == values["step_overhead_ms_per_layer"]
    assert shown["Step overhead per sequence [ms/sequence]"] == values["step_overhead_ms_per_seq"]
    assert shown["All-reduce latency [µs]"] == values["allreduce_latency_us"]
    assert shown["NCCL latency [µs]"] == "28.4 / 33.23 (at 2 / 4 GPUs)"
    assert shown[field_header("nccl_link_efficiency")] == "0.6372 / 0.7662 (at 2 / 4 GPUs)"
    del values["nccl_latency_us"], values["nccl_link_efficiency"]
    assert [shown[field_header(name)] for name in values] == list(values.values())


def test_the_same_plan_writes_the_same_bytes(tmp_path: Path) -> None:
    first = write_plan_workbook(make_plan(), make_scenario(), make_table(), tmp_path / "a.xlsx")
    again = write_plan_workbook(make_plan(), make_scenario(), make_table(), tmp_path / "b.xlsx")
    assert first.read_bytes() == again.read_bytes()
    # no clock inside: the properties and every zip entry carry the scenario's as_of, 2026-03-01
    props = openpyxl.load_workbook(first).properties
    assert props.created == props.modified == dt.datetime(2026, 3, 1)
    with zipfile.ZipFile(first) as z:
        assert {i.date_time for i in z.infolist()} == {(2026, 3, 1, 0, 0, 0)}


def _dedicated_scenario_with_a_mean() -> Scenario:
    """The hand-made scenario with dedicated pools and a mean input length for `chat`."""
    sc = make_scenario()
    chat = sc.workloads[0].model_copy(update={
        "input_tokens": TokenPercentiles(p50=500, p95=2000, p99=4000, mean=650.5)})
    return sc.model_copy(update={"workloads": (chat, *sc.workloads[1:]),
                                 "policy": sc.policy.model_copy(update={"share_nodes": False})})


def test_assumptions_hold_the_node_model_and_the_typical_token_lengths(tmp_path: Path) -> None:
    """Inputs figures rest on: the node model sets costs and nodes, the typical lengths (mean,
    else P50) set tokens per month; both must be in the workbook to retrace them."""
    path = write_plan_workbook(make_plan(), _dedicated_scenario_with_a_mean(), make_table(),
                               tmp_path / "plan.xlsx")
    rows = _rows(openpyxl.load_workbook(path)["Assumptions"])
    assert next(r for r in rows if r[0] == "share_nodes")[:2] == ("share_nodes", False)
    shown = _by_field(rows, "Workload")
    typical = ("Typical input [tokens] (mean, else P50)",
               "Typical output [tokens] (mean, else P50)")
    assert tuple(shown["chat"][t] for t in typical) == (650.5, 200)  # mean given; output P50
    assert tuple(shown[EVIL][t] for t in typical) == (500, 200)  # no mean: the P50s


def test_the_survivability_sheet_says_what_a_margin_counts(workbook_path: Path) -> None:
    """Under the matrix, the caption report.md and ``check`` carry: with nothing lost capacity
    counts at the target utilization, in failure rows at the failure utilization, so a failure
    row can show more capacity than no failure (the demo's chat: 13.18 → 18.83 req/s)."""
    ws = openpyxl.load_workbook(workbook_path)["Survivability"]
    matrix = ws.tables["Survivability"]
    below = int(matrix.ref.split(":")[1].lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")) + 2
    caption = str(ws.cell(row=below, column=1).value)
    assert "target utilization with no failure" in caption
    assert "after a failure (100%) in every failure row" in caption


def test_an_offer_the_plan_orders_from_is_listed_though_the_first_fleet_runs_none(
        tmp_path: Path) -> None:
    """A new user's plan over periods ordered 1 reserved H100-SXM node in use1-az4 from
    period 1 (at an assumed price); the first period's fleet ran none there, and the Offers
    sheet left that offer out and counted it among the "other offers … not used by the
    plan": the price ordered had no row or source in the workbook. An order's offer, and
    a later period's, are offers the plan buys."""
    from models.common import PurchaseKind, Upfront
    from models.plan import Order
    from solver.outputs.assumptions import offers_bought

    plan, sc = make_plan(), make_scenario()
    assert not any(n.gpu == "L4" for n in plan.nodes)
    day = dt.date(2027, 4, 1)
    order = Order(scenario=None, zone="z1", gpu="L4", purchase=PurchaseKind.reserved, nodes=1,
                  gpus=8, order_period=0, order_by=dt.date(2027, 2, 18), usable_period=1,
                  usable_from=day, expires=dt.date(2028, 4, 1), term_months=12,
                  upfront=Upfront.none, price_per_gpu_hour=1.0, cost_per_month=5840.0,
                  cost_in_horizon=52560.0, committed_total=70080.0)
    ordered = plan.model_copy(update={"orders": (order,)})
    bought, unused = offers_bought(ordered, sc)
    assert ("z1", "L4") in {(b.zone, b.offer.gpu) for b in bought}
    assert unused == ""
    rows = _rows(openpyxl.load_workbook(write_plan_workbook(
        ordered, sc, make_table(), tmp_path / "plan.xlsx"))["Offers"])
    assert any(r[0] == "z1" and r[2] == "L4" for r in rows)
    assert not any(isinstance(r[0], str) and "not used" in r[0] for r in rows)
