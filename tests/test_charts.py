"""The charts answer the planner's questions: rendered, then their data series read back."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import openpyxl
import pytest
from matplotlib.lines import Line2D
from procurement_fixtures import EVIL, make_plan, make_scenario, make_table

from models.common import PurchaseKind, WorkloadClass
from models.scenario import Scenario
from models.workload import BatchVolume
from solver.outputs.charts import (
    AFTER_FAILURE,
    DEMAND,
    USABLE,
    WINDOW,
    capacity_by_period_figure,
    capacity_vs_demand_figure,
    cost_by_zone_figure,
    png,
)
from solver.outputs.figures import cost_by_zone_gpu_and_kind, day_series

C = {"c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
     "a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
HOURS = list(range(25))  # steps on the hour: 24 hours have 25 edges


def _with_batch() -> Scenario:
    """The hand-made scenario plus a nightly batch of 216,000 requests in hours 2-7 (UTC)."""
    sc = make_scenario()
    batch = sc.workloads[0].model_copy(update={
        "name": "nightly", "workload_class": WorkloadClass.batch, "arrival": None,
        "batch": BatchVolume(daily_requests=216_000, window_hours=(2, 3, 4, 5, 6, 7))})
    return sc.model_copy(update={"workloads": (*sc.workloads, batch)})


def _lines(ax: object) -> dict[str, Line2D]:
    return {line.get_label(): line for line in ax.get_lines()}  # type: ignore[attr-defined]


def test_day_series_hour_by_hour_with_the_worst_failure() -> None:
    chat, evil = day_series(make_plan(), make_scenario())
    assert chat.demand_rps == (5.0,) * 12 + (10.0,) * 12
    # usable = capacity × 0.7: night 8 reserved × 2 = 16 → 11.2; day + 4 on-demand × 2 → 16.8
    assert chat.usable_rps == pytest.approx((11.2,) * 12 + (16.8,) * 12)
    # after a zone loss (the fixture's rows): night min(8, 8) = 8, day min(8, 16) = 8
    assert chat.after_failure_rps == (8.0,) * 24
    assert chat.worst_failure == ("zone:z1",) * 24
    assert evil.after_failure_rps is None  # it must survive nothing
    assert evil.workload == EVIL


def test_capacity_chart_draws_demand_usable_and_the_failure_line_as_hourly_steps() -> None:
    fig = capacity_vs_demand_figure(day_series(make_plan(), make_scenario()), "UTC", 1.0)
    chat = _lines(fig.axes[0])
    assert set(chat) == {DEMAND, USABLE, AFTER_FAILURE}
    for line in chat.values():
        assert line.get_drawstyle() == "steps-post"  # held over [h, h + 1): steps on the hour
        assert list(line.get_xdata()) == HOURS
    assert list(chat[AFTER_FAILURE].get_ydata()) == [8.0] * 25
    assert list(chat[DEMAND].get_ydata()) == [5.0] * 12 + [10.0] * 13
    assert AFTER_FAILURE not in _lines(fig.axes[1])  # the second workload survives nothing
    assert fig.axes[0].get_xlabel() == "hour of the peak day (UTC)"
    assert fig.axes[0].get_xlim() == (0.0, 24.0)
    assert png(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("panels", [1, 2, 3])
def test_every_text_of_the_capacity_chart_lies_inside_it_apart_from_the_others(
        panels: int) -> None:
    """The panels are laid out at fixed margins (no constrained layout: it measured every label
    twice, 40 % of the chart's drawing at 12 panels): the title, each panel's title and axes,
    and the legend stay inside the figure and off each other. A single panel's legend of four
    entries in a row ran past both edges of its 6-in figure (main's chart, cut at "…lure
    (at 100")."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    series = day_series(make_plan(), _with_batch())
    fig = capacity_vs_demand_figure((list(series) * 2)[:panels], "UTC", 1.0)
    renderer = FigureCanvasAgg(fig).get_renderer()
    whole = fig.bbox
    [title] = [t for t in fig.findobj(Text) if t.get_text() == fig.get_suptitle()]
    boxes = {"title": title.get_window_extent(renderer),
             "legend": fig.legends[0].get_window_extent(renderer)}
    for i, ax in enumerate(fig.axes):
        boxes[f"panel {i}"] = Bbox.union([ax.get_tightbbox(renderer), ax.bbox])
    for name, box in boxes.items():
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1, name
        assert whole.y0 <= box.y0 and box.y1 <= whole.y1, name
    names = sorted(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not boxes[a].overlaps(boxes[b]), (a, b)


def test_a_batch_window_is_drawn_over_its_hours_with_the_work_it_carries() -> None:
    series = day_series(make_plan(), _with_batch())
    fig = capacity_vs_demand_figure(series, "Europe/Berlin", 1.0)
    nightly = fig.axes[2]
    demand = list(_lines(nightly)[DEMAND].get_ydata())
    # 216,000 requests in 6 hours: 216,000 ÷ (6 × 3,600 s) = 10 req/s in each hour 2..7, else 0
    assert demand[:24] == [0.0] * 2 + [10.0] * 6 + [0.0] * 16
    spans = [p for p in nightly.patches if p.get_label() == WINDOW]
    assert len(spans) == 1
    span = spans[0]
    assert (span.get_x(), span.get_width()) == (2.0, 6.0)  # type: ignore[attr-defined]
    # the window's six hours, not a one-hour spike
    assert nightly.get_xlabel() == "hour of the peak day (Europe/Berlin)"


def test_cost_chart_stacks_gpu_type_by_purchase_kind_with_value_labels() -> None:
    costs = cost_by_zone_gpu_and_kind(make_plan())
    assert costs == {("z1", "H100-SXM", PurchaseKind.reserved): 14600.0,
                     ("z1", "H100-SXM", PurchaseKind.on_demand): 11680.0,
                     ("z2", "H100-SXM", PurchaseKind.reserved): 14600.0}
    fig = cost_by_zone_figure(costs, "USD")
    ax = fig.axes[0]
    stacks = {c.get_label(): [bar.get_height() for bar in c] for c in ax.containers}
    assert stacks == {"H100-SXM reserved": [14600.0, 14600.0],
                      "H100-SXM on-demand": [11680.0, 0.0]}
    labels = {t.get_text() for t in ax.texts}
    # each segment's value, and each zone's total on top: z1 = 14,600 + 11,680 = 26,280
    assert {"14.6k", "11.7k", "26.3k"} <= labels
    assert "total 40,880 USD/month" in ax.get_title()


def test_a_plan_over_quarters_gets_a_chart_per_period(tmp_path: Path) -> None:
    from solver.outputs.plan_dir import PERIOD_CHART_FILE, write_plan_outputs
    from solver.solve.horizon import first_period_scenario
    from tests.test_schedule import base_high

    plan, sc = base_high()  # one workload over 4 quarters; `high` triples from the second
    fig = capacity_by_period_figure(plan)
    lines = _lines(fig.axes[0])
    assert set(lines) == {f"{s}: {kind}" for s in ("base", "high") for kind in (DEMAND, USABLE)}
    base, high = (list(lines[f"{s}: {DEMAND}"].get_ydata()) for s in ("base", "high"))
    assert list(lines[f"high: {DEMAND}"].get_xdata()) == [0, 1, 2, 3, 4]  # steps per quarter
    assert high[1] == pytest.approx(3 * base[1]) and high[0] == pytest.approx(base[0])
    for s in ("base", "high"):  # each period's usable capacity carries its demand
        usable = lines[f"{s}: {USABLE}"].get_ydata()
        demand = lines[f"{s}: {DEMAND}"].get_ydata()
        assert all(u >= d - 1e-9 for u, d in zip(usable, demand, strict=True))
    write_plan_outputs(plan, sc, tmp_path, first_period_scenario(plan, sc))  # type: ignore[arg-type]
    assert (tmp_path / PERIOD_CHART_FILE).read_bytes().startswith(b"\x89PNG")
    assert f"]({PERIOD_CHART_FILE})" in (tmp_path / "report.md").read_text()


def _chart_parts(path: Path) -> list[ET.Element]:
    with zipfile.ZipFile(path) as z:
        names = sorted((n for n in z.namelist() if re.fullmatch(r"xl/charts/chart\d+\.xml", n)),
                       key=lambda n: int(re.findall(r"\d+", n)[0]))
        return [ET.fromstring(z.read(n)) for n in names]


def _values(wb: openpyxl.Workbook, ref: str) -> list[object]:
    """The cells a chart's formula (``'Chart data'!$B$2:$B$49``) points at, top to bottom."""
    sheet, cells = ref.rsplit("!", 1)
    cells = cells.replace("$", "")
    if ":" not in cells:
        cells = f"{cells}:{cells}"
    return [row[0].value for row in wb[sheet.strip("'")][cells]]


def test_the_workbook_draws_the_same_charts_as_native_step_charts(tmp_path: Path) -> None:
    """The Charts sheet's native charts carry the PNGs' series: cost stacked by GPU type ×
    kind with value labels, and per workload demand, usable capacity and the failure line as
    straight (never smoothed) steps on the hour, the batch window as its six hours of work."""
    from solver.outputs.workbook import write_plan_workbook

    plan, scenario = make_plan(), _with_batch()
    path = write_plan_workbook(plan, scenario, make_table(), tmp_path / "plan.xlsx")
    wb = openpyxl.load_workbook(path)
    cost, *steps = _chart_parts(path)
    bar = cost.find(".//c:barChart", C)
    assert bar is not None and bar.find("c:grouping", C).get("val") == "stacked"  # type: ignore[union-attr]
    assert bar.find("c:dLbls/c:showVal", C).get("val") == "1"  # type: ignore[union-attr]
    stacks = {s.findtext("c:tx/c:v", "", C): _values(wb, s.findtext("c:val/c:numRef/c:f", "", C))
              for s in bar.iterfind("c:ser", C)}
    assert stacks == {"H100-SXM reserved": [14600.0, 14600.0],
                      "H100-SXM on-demand": [11680.0, 0.0]}
    series = {s.workload: s for s in day_series(plan, scenario)}
    assert len(steps) == len(series) == 3
    for chart in steps:
        title = "".join(t.text or "" for t in chart.iterfind("c:chart/c:title//a:t", C))
        want = series[title]
        drawn = {}
        for ser in chart.iterfind(".//c:scatterChart/c:ser", C):
            assert ser.find("c:smooth", C).get("val") == "0", title  # type: ignore[union-attr]
            xs = _values(wb, ser.findtext("c:xVal/c:numRef/c:f", "", C))
            assert xs == [x for h in range(24) for x in (h, h + 1)]  # each hour's two edges
            drawn[ser.findtext("c:tx/c:v", "", C)] = _values(
                wb, ser.findtext("c:yVal/c:numRef/c:f", "", C))[::2]  # one value per hour
        expected = {DEMAND: list(want.demand_rps), USABLE: list(want.usable_rps)}
        if want.after_failure_rps is not None:
            expected[AFTER_FAILURE] = list(want.after_failure_rps)
        assert set(drawn) == set(expected), title
        for name, values in expected.items():
            assert drawn[name] == pytest.approx(values), (title, name)
    nightly = next(c for c in steps if "nightly" in ET.tostring(c, encoding="unicode"))
    demand = next(s for s in nightly.iterfind(".//c:ser", C) if s.findtext("c:tx/c:v", "", C)
                  == DEMAND)
    hours = _values(wb, demand.findtext("c:yVal/c:numRef/c:f", "", C))[::2]
    assert hours == [0.0] * 2 + [10.0] * 6 + [0.0] * 16  # the window's hours, not a spike


def test_every_numeric_column_of_the_chart_data_names_its_unit(tmp_path: Path) -> None:
    """The hidden *Chart data* sheet's headers carry units as the other sheets' do (its hour
    and cost columns had none); the cost chart's legend keeps the stack names alone."""
    from solver.outputs.workbook import CHART_DATA, write_plan_workbook

    plan, scenario = make_plan(), _with_batch()
    path = write_plan_workbook(plan, scenario, make_table(), tmp_path / "plan.xlsx")
    sheet = openpyxl.load_workbook(path)[CHART_DATA]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    zone_row = next(i for i, r in enumerate(rows) if r[0] == "Zone")
    titles = [t for t in (*rows[0], *rows[zone_row][1:]) if t is not None]  # all numeric
    assert len(titles) == 1 + 3 * len(scenario.workloads) + 2  # hour, 3 series each, 2 stacks
    for title in titles:
        assert re.search(r"\[[^\]]+\]$", str(title)), title
    assert rows[0][0] == f"Hour ({scenario.policy.time_zone}) [h]"
    assert rows[zone_row][1:3] == ["H100-SXM reserved [USD/month]",
                                   "H100-SXM on-demand [USD/month]"]
    cost = _chart_parts(path)[0]
    assert [s.findtext("c:tx/c:v", "", C) for s in cost.iterfind(".//c:ser", C)] == [
        "H100-SXM reserved", "H100-SXM on-demand"]
