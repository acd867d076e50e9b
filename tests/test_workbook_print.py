"""The workbook a buyer prints: page setup of every sheet, Excel Tables, defined names, assumed
figures said to be assumed, an OOXML-valid package, and — where LibreOffice is installed — the
demo plan and a 3-variant comparison converted to PDF within their page budgets, each sheet one
page wide.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest
from procurement_fixtures import make_plan, make_scenario, make_table

from inputs import demo_scenario
from models.loader import load_scenario
from models.plan import Plan
from models.scenario import Scenario
from solver.capacity.table import build_capacity_table
from solver.outputs.report import render_report
from solver.outputs.workbook import CHART_DATA, SHEETS, write_plan_workbook
from solver.solve.strategy import plan_scenario
from solver.studies.compare import SolveOptions, apply_variation, plan_all
from solver.studies.comparison_workbook import DETAIL_SHEETS, comparison_workbook_bytes

OFFICE = shutil.which("soffice") or shutil.which("libreoffice")
#: Page budgets of the issue: the demo's plan.xlsx, and a comparison of three variants.
PLAN_PAGES, COMPARISON_PAGES = 12, 8
#: A short solve is enough: the layout, not the optimum, decides the pages.
TIME_LIMIT_S = 5.0


@pytest.fixture(scope="module")
def demo() -> tuple[Plan, Scenario]:
    scenario = load_scenario(demo_scenario())
    return plan_scenario(scenario, build_capacity_table(scenario),
                         time_limit_s=TIME_LIMIT_S), scenario


@pytest.fixture
def workbook(tmp_path: Path) -> openpyxl.Workbook:
    path = write_plan_workbook(make_plan(), make_scenario(), make_table(), tmp_path / "p.xlsx")
    return openpyxl.load_workbook(path)


def test_every_sheet_prints_landscape_one_page_wide_with_its_frame(
        workbook: openpyxl.Workbook) -> None:
    for title in SHEETS:
        ws = workbook[title]
        setup = ws.page_setup
        assert setup.orientation == "landscape", title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, title
        assert int(setup.fitToWidth) == 1, title
        assert int(setup.fitToHeight) == (1 if title == "Charts" else 0), title  # 0: as tall
        footer = ws.oddFooter
        assert footer.left.text == "Scenario hand-made · fingerprint fingerprint", title
        assert footer.center.text == "Prepared 2026-03-01", title  # the scenario's as_of
        assert footer.right.text == "Page &P of &N", title
        assert ws.oddHeader.center.text == "&B&A", title  # the sheet's own name
    for title in ("Purchase plan", "Pools", "Hourly", "Capacity contract", "Offers"):
        assert workbook[title].print_title_rows == "$1:$1", title  # its header on every page
    assert workbook[CHART_DATA].sheet_state == "hidden"  # printed by nobody


def test_data_blocks_are_excel_tables_with_autofilters(workbook: openpyxl.Workbook) -> None:
    names = set()
    for title in SHEETS:
        ws = workbook[title]
        for table in ws.tables.values():
            names.add(table.displayName)
            assert table.autoFilter is not None and table.autoFilter.ref == table.ref, title
            head = [c.value for c in next(iter(ws[table.ref]))]
            assert [c.name for c in table.tableColumns] == head, (title, table.ref)
    assert {"Purchases", "Pools", "Hourly", "Survivability", "Contract", "Assumed",
            "Offers"} <= names
    pools = workbook["Pools"]
    assert pools.freeze_panes == "B2"  # the header row and the workload column stay in view


def test_figures_other_sheets_use_have_defined_names(workbook: openpyxl.Workbook) -> None:
    shown = {n: d.attr_text for n, d in workbook.defined_names.items()}
    labels = {c.value: c.row for c in workbook["Summary"]["A"]}
    assert shown["cost_per_month"] == f"'Summary'!$B${labels['Cost per month']}"
    assert shown["cost_per_mtok"] == f"'Summary'!$B${labels['Cost per million tokens']}"
    year = workbook["Summary"].cell(row=labels["Cost per year"], column=2)
    assert year.value == "=cost_per_month*12"  # by name, not by address


def test_every_assumed_figure_of_the_demo_says_assumed(
        demo: tuple[Plan, Scenario], tmp_path: Path) -> None:
    plan, scenario = demo
    table = build_capacity_table(scenario)
    wb = openpyxl.load_workbook(write_plan_workbook(plan, scenario, table, tmp_path / "d.xlsx"))
    purchases = wb["Purchase plan"]
    heads = [c.value for c in purchases[1]]
    col = {h: i for i, h in enumerate(heads)}
    for row in purchases.iter_rows(min_row=2, max_row=purchases.max_row - 1):
        # the demo's stock is the price table's assumption; reserved prices are derived
        assert row[col["Stock [GPUs]"]].number_format.endswith('" (assumed)"')
        if row[col["Purchase kind"]].value == "Reserved":
            assert row[col["Price [USD/GPU-hour]"]].number_format.endswith('" (assumed)"')
            assert row[col["Commitment [months]"]].number_format.endswith('" (assumed)"')
    offers = wb["Offers"]
    heads = [c.value for c in offers[1]]
    spot = [r for r in offers.iter_rows(min_row=2) if r[3].value == "Spot"]
    assert spot and all(r[heads.index("Interruption rate [1/h]")].number_format.endswith(
        '" (assumed)"') for r in spot)
    pools = wb["Pools"]
    target = [c.value for c in pools[1]].index("Target utilization [1]")
    assert all(r[target].number_format.endswith('" (assumed)"')  # no workload states one
               for r in pools.iter_rows(min_row=2))
    assumptions = [r[0] for r in wb["Assumptions"].iter_rows(values_only=True)]
    first = assumptions[2:9]  # listed first, each said to be assumed
    assert first == ["Reserved price (assumed)", "Reserved commitment and lead time (assumed)",
                     "Stock (assumed)", "Spot interruption rate (assumed)",
                     "On-demand start-up time (assumed)", "Target utilization (assumed)",
                     "Arrivals (assumed)"]
    arrivals = next(r for r in wb["Assumptions"].iter_rows(values_only=True)
                    if r[0] == "Arrivals")
    assert list(arrivals[1:4]) == ["Poisson (assumed)"] * 3 and arrivals[4] == "batch window"
    report = render_report(plan, scenario, table)
    for figure in ("Reserved price", "Stock", "Spot interruption rate", "Target utilization",
                   "Arrivals", "On-demand start-up time"):
        assert f"| {figure} (assumed) |" in report
    prices = [line for line in report.splitlines() if line.startswith("| use1-az1 |")]
    reserved = next(line for line in prices if "| Reserved |" in line and ".csv" in line)
    assert reserved.count("(assumed)") == 2  # its derived price and the table's stock
    assert "| Poisson (assumed) |" in report and "70.0% (assumed)" in report


def test_the_package_is_valid_ooxml(demo: tuple[Plan, Scenario], tmp_path: Path) -> None:
    """Checked against the Open XML SDK's schemas (openxml-audit): what Excel repairs on open
    is a schema or semantic error there; only warnings (inline strings Excel would move to a
    shared table when it saves) may remain."""
    from openxml_audit import FileFormat, OpenXmlValidator, ValidationSeverity

    plan, scenario = demo
    path = write_plan_workbook(plan, scenario, build_capacity_table(scenario),
                               tmp_path / "plan.xlsx")
    result = OpenXmlValidator(file_format=FileFormat.OFFICE_2019, max_errors=0).validate(path)
    errors = [f"{e.part_uri} {e.path}: {e.description}" for e in result.errors
              if e.severity is ValidationSeverity.ERROR]
    assert errors == []


def _pdf(xlsx: Path) -> list[str]:
    """The text of each page of ``xlsx`` printed to PDF by LibreOffice."""
    from pypdf import PdfReader

    assert OFFICE is not None
    subprocess.run([OFFICE, "--headless", "--convert-to", "pdf", "--outdir", str(xlsx.parent),
                    str(xlsx)], check=True, capture_output=True, timeout=300)
    return [page.extract_text() for page in PdfReader(xlsx.with_suffix(".pdf")).pages]


def _one_page_wide(pages: list[str], wb: openpyxl.Workbook, sheets: tuple[str, ...]) -> None:
    """Each sheet's first page holds its first table's last column: nothing was cut off to a
    page on the right."""
    for title in sheets:
        ws = wb[title]
        if not ws.tables:
            continue
        first_table = min(ws.tables.values(), key=lambda t: ws[t.ref][0][0].row)
        last_title = str(ws[first_table.ref][0][-1].value)
        page = next(p for p in pages if title in p.splitlines()[0])  # the header names it
        words = last_title.split()
        assert words[0] in page and words[-1] in page, (title, last_title)


@pytest.mark.skipif(OFFICE is None, reason="LibreOffice is not installed")
def test_the_demo_plan_prints_in_twelve_pages_one_page_wide(
        demo: tuple[Plan, Scenario], tmp_path: Path) -> None:
    plan, scenario = demo
    path = write_plan_workbook(plan, scenario, build_capacity_table(scenario),
                               tmp_path / "plan.xlsx")
    pages = _pdf(path)
    assert len(pages) <= PLAN_PAGES
    _one_page_wide(pages, openpyxl.load_workbook(path), SHEETS)
    assert "Page 1 of" in pages[0] and "Prepared " in pages[0]


@pytest.mark.skipif(OFFICE is None, reason="LibreOffice is not installed")
def test_a_three_variant_comparison_prints_in_eight_pages(tmp_path: Path) -> None:
    from solver.studies.compare import Variant

    demo = load_scenario(demo_scenario())
    variants = [Variant(f"demo growth={g}", apply_variation(demo, "growth", g))
                for g in ("1", "1.5", "3")]
    results = plan_all(variants, SolveOptions(time_limit_s=TIME_LIMIT_S), workers=1)
    path = tmp_path / "compare.xlsx"
    path.write_bytes(comparison_workbook_bytes(results))
    pages = _pdf(path)
    assert len(pages) <= COMPARISON_PAGES
    _one_page_wide(pages, openpyxl.load_workbook(path), ("Comparison", *DETAIL_SHEETS))


def test_a_lead_time_nobody_gave_says_assumed(tmp_path: Path) -> None:
    """tiny.yaml's reserved quotes give no lead_time_weeks: the Offers sheet showed "0" and
    nothing listed it (a new user's finding); now the cell, the Assumptions sheet and the
    report say *assumed*."""
    from inputs import scenarios_dir

    scenario = load_scenario(scenarios_dir() / "tiny.yaml")
    table = build_capacity_table(scenario)
    plan = plan_scenario(scenario, table, time_limit_s=TIME_LIMIT_S)
    wb = openpyxl.load_workbook(write_plan_workbook(plan, scenario, table, tmp_path / "t.xlsx"))
    offers = wb["Offers"]
    heads = [c.value for c in offers[1]]
    reserved = [r for r in offers.iter_rows(min_row=2) if r[3].value == "Reserved"]
    assert reserved and all(r[heads.index("Lead time [weeks]")].value == 0 and r[heads.index(
        "Lead time [weeks]")].number_format.endswith('" (assumed)"') for r in reserved)
    assert "Lead time (assumed)" in [r[0] for r in wb["Assumptions"].iter_rows(values_only=True)]
    assert "| Lead time (assumed) | 0 weeks |" in render_report(plan, scenario, table)
