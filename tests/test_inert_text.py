"""Text is inert wherever it goes (models/text.py): Markdown that never links, shows an image or
runs HTML; workbooks whose cells and chart titles always reopen; CSV cells no spreadsheet runs;
a terminal that shows escape sequences instead of obeying them.

Each case was found by the hostile-input audit: report.md showed images and links to any host,
a control character in a chart title made plan.xlsx unreadable (exit 0), CSV outputs wrote
``=`` cells verbatim, and escape sequences reached the terminal raw.
"""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

import cmarkgfm
import yaml
from cmarkgfm.cmark import Options
from openpyxl import load_workbook
from procurement_fixtures import make_plan, make_scenario, make_table

from inputs import scenarios_dir
from models.loader import load_measured_csv
from models.measured import MeasuredCapacity, measured_csv
from models.text import FORMULA_STARTS, csv_text, markdown_code, markdown_text, terminal_text
from solver.outputs.workbook import write_plan_workbook
from tests.hostile import run

TINY: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
#: Names a planner could type (printable, so the door lets them through) that mean something
#: to Markdown, HTML, a spreadsheet or matplotlib.
HOSTILE_NAME = "![img](http://evil.example/x.png)"
HOSTILE_TENANT = "<img src=x onerror=alert(1)>"
HOSTILE_DESCRIPTION = ("[click](http://evil.example) www.evil.example me@evil.example\n"
                       "# not a heading\n<div>raw</div> `code` $x^2$")


def html_of(markdown: str) -> str:
    """``markdown`` as GitHub renders it (cmark-gfm), raw HTML allowed, as a reader would see."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown,
                                                          options=Options.CMARK_OPT_UNSAFE))


def hostile_plan(tmp_path: Path) -> Path:
    doc = copy.deepcopy(TINY)
    doc["description"] = HOSTILE_DESCRIPTION
    doc["workloads"][0]["name"] = HOSTILE_NAME
    doc["workloads"][0]["tenant"] = HOSTILE_TENANT
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    out = tmp_path / "out"
    result = run("plan", str(path), "--time-limit", "5", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_the_report_renders_user_text_as_text(tmp_path: Path) -> None:
    # Was: the workload's name became an image fetched from any host, the description a link
    # and raw HTML.
    html = html_of((hostile_plan(tmp_path) / "report.md").read_text(encoding="utf-8"))
    assert "<a " not in html
    assert "<script" not in html and "<div>" not in html and "<img src=x" not in html
    images = re.findall(r'<img src="([^"]*)"', html)
    assert set(images) <= {"cost_by_zone.png", "capacity_vs_demand.png"}, images
    assert "<h1>not a heading" not in html and "# not a heading" in html
    text = re.sub(r"<[^>]+>", "", html).replace("\u200b", "")
    assert HOSTILE_NAME in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_markdown_escapes_hold_under_githubs_renderer() -> None:
    for text in (HOSTILE_NAME, HOSTILE_TENANT, HOSTILE_DESCRIPTION, "a|b", "_x_ *y* ~~z~~",
                 "[ref]: http://evil.example", "<http://evil.example>", "&amp; &#60;"):
        for line_start in (False, True):
            html = html_of(f"| {markdown_text(text, line_start)} |\n|---|\n")
            assert "<a " not in html and "<img" not in html and "<em>" not in html, (text, html)
            assert "<del>" not in html and "<h1>" not in html, (text, html)
            assert html.count("<td>") == 0 and html.count("<th>") == 1, (text, html)
        code = html_of(markdown_code(text))
        assert "<a " not in code and "<img" not in code, (text, code)


def test_the_workbook_reopens_whatever_its_text(tmp_path: Path) -> None:
    # Was: a control character in a workload's name went into a chart title unescaped: exit 0
    # and a plan.xlsx that openpyxl (and Excel) could not open. Names can no longer hold one,
    # but text from elsewhere (a file name, a scenario built in code) still reaches the writer.
    scenario = make_scenario()
    evil = "chat\x01\x1b[31m $x$ \ufffe"
    workloads = tuple(w.model_copy(update={"name": evil if w.name == "chat" else w.name})
                      for w in scenario.workloads)
    plan = make_plan()
    plan = plan.model_copy(update={"allocations": tuple(
        a.model_copy(update={"workload": evil if a.workload == "chat" else a.workload})
        for a in plan.allocations)})
    path = tmp_path / "plan.xlsx"
    write_plan_workbook(plan, scenario.model_copy(update={"workloads": workloads}),
                        make_table(), path)
    load_workbook(path)  # opens
    with zipfile.ZipFile(path) as archive:
        charts = [n for n in archive.namelist() if n.startswith("xl/charts/")]
        assert charts
        titles = [ET.fromstring(archive.read(n)).itertext() for n in charts]
    # the workload's step chart is titled by its name, the characters XML cannot hold removed
    assert any("".join(t).startswith("chat[31m $x$ ") for t in titles)


def test_csv_cells_never_start_a_formula_and_read_back_as_written(tmp_path: Path) -> None:
    # Was: measured_csv (import-bench --out) wrote `=…` cells verbatim.
    row = MeasuredCapacity(model="Llama-3.1-8B", gpu="L4", runtime="vllm", precision="bf16",
                           tp=1, workload='=HYPERLINK("http://evil.example","x")',
                           max_stable_sequences=8, tested_peak_rps=1.0, ttft_p95_ms=500,
                           decode_p95_ms_per_token=40, measured_on="2025-01-01",
                           source="@SUM(A1)")
    text = measured_csv([row])
    assert "'=HYPERLINK" in text and "'@SUM(A1)" in text
    assert not any(cell.startswith(("=", "@")) for line in text.splitlines()
                   for cell in line.split(","))
    path = tmp_path / "measured.csv"
    path.write_text(text, encoding="utf-8")
    (read,) = load_measured_csv(path)
    assert read == row.model_copy(update={"origin": f"{path} line 2"})
    assert csv_text("-1.5") == "-1.5" and csv_text("-x") == "'-x" and csv_text("\tx") == "'\tx"
    assert csv_text("-inf") == "'-inf" and csv_text("+NaN") == "'+NaN"  # no number to Excel


def test_the_terminal_shows_escape_sequences_instead_of_obeying_them(tmp_path: Path) -> None:
    # Was: a file name or a value read from a file reached the terminal raw: a bell, a
    # window-title sequence, a right-to-left override that reverses what follows.
    path = tmp_path / "s\x07\x1b]0;pwned\x07\u202e.yaml"
    path.write_text("name: x\n", encoding="utf-8")
    result = run("validate", str(path))
    assert result.exit_code == 2
    assert "\x07" not in result.output and "\x1b" not in result.output
    assert "\u202e" not in result.output
    assert "s\\x07\\x1b]0;pwned\\x07\\u202e.yaml" in result.output
    trace = tmp_path / "trace.csv"
    trace.write_text("time\x1b[2J,\x07in,out\n1,2,3\n", encoding="utf-8")
    profiled = run("profile", str(trace))
    assert profiled.exit_code == 2 and "\x07" not in profiled.output
    assert "\\x07in" in profiled.output


def test_terminal_text_keeps_line_ends_and_printable_text() -> None:
    assert terminal_text("plan ok: 4 × H100 — 1,752 USD\n\tdone") == (
        "plan ok: 4 × H100 — 1,752 USD\n\tdone")
    assert terminal_text("\x1b[2J\x9b\u2028") == "\\x1b[2J\\x9b\\u2028"


def test_quote_and_measured_cells_that_start_a_formula_reach_the_workbook_as_text(
        tmp_path: Path) -> None:
    # Issue 19's leftover: a quote CSV's source and region, and a measured CSV's source,
    # starting with = + - @ must be neutralised wherever they are written. The workbook's
    # cells were already text (xlsx_cells.put); this guards the whole path from the two CSVs
    # to plan.xlsx (the CSV writers are tested above).
    quotes = tmp_path / "quotes.csv"
    quotes.write_text("zone,gpu,kind,term_months,upfront,price_per_gpu_hour,stock_gpus,"
                      "lead_time_weeks,region,source\n"
                      'dc-1,L4,on_demand,,,1.0,8,,@SUM(1),"=HYPERLINK(""http://e.example"")"\n'
                      "dc-1,L4,reserved,12,none,0.6,2,,@SUM(1),+cmd\n", encoding="utf-8")
    measured = tmp_path / "measured.csv"
    measured.write_text("model,gpu,runtime,precision,tp,workload,max_stable_sequences,"
                        "tested_peak_rps,ttft_p95_ms,decode_p95_ms_per_token,measured_on,source\n"
                        "Llama-3.1-8B,L4,vllm,bf16,1,chat,24,0.8,500,40,2026-11-01,-2+3\n",
                        encoding="utf-8")
    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    del doc["zones"]
    doc["price_tables"] = [{"path": str(quotes)}]
    doc["measured_csv"] = str(measured)
    doc["workloads"][0]["allowed_gpus"] = ["L4"]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    out = tmp_path / "out"
    result = run("plan", str(path), "--time-limit", "5", "--out", str(out))
    assert result.exit_code == 0, result.output
    hostile = ('=HYPERLINK("http://e.example")', "+cmd", "@SUM(1)", "-2+3")
    found: set[str] = set()
    for ws in load_workbook(out / "plan.xlsx").worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and any(h in cell.value for h in hostile):
                    found |= {h for h in hostile if h in cell.value}
                    assert cell.data_type == "s", (ws.title, cell.coordinate, cell.value)
                    if cell.value.startswith(FORMULA_STARTS):
                        assert cell.quotePrefix, (ws.title, cell.coordinate, cell.value)
    assert found >= {'=HYPERLINK("http://e.example")', "@SUM(1)"}, found
