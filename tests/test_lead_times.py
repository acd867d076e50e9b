"""The one date rule of lead times (solver/program/orders.py): the last day to order for a
period, the day an order placed arrives, and the first period it can serve — read by the
program over periods (``HorizonData.order_by``, P3) and by ``validate``'s lead-time lines
(solver/cli/lead_times.py), which must agree.

Dates by hand: four quarters from 2027-01-01 start on 01-01, 04-01, 07-01 and 10-01.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from models.horizon import Horizon
from models.offers import Offer, OnDemandTerms, ReservedTerms
from models.scenario import Scenario
from solver.cli.lead_times import early_order_line, first_period_line, late_orders, lead_time_text
from solver.program.orders import arrives, first_period, lead_days, order_by, plan_date_of
from solver.program.periods import build_horizon_data
from tests.plan_fixtures import gpu, row, scenario, table, workload, zone

STARTS = [dt.date(2027, 1, 1), dt.date(2027, 4, 1), dt.date(2027, 7, 1), dt.date(2027, 10, 1)]


def test_a_lead_time_pushes_the_order_a_period_earlier() -> None:
    """Four weeks (28 days): the order serving from 2027-04-01 is due 2027-03-04, inside the
    first quarter; nothing ordered on 2027-01-01 serves that quarter (it was due 2026-12-04),
    so the first period served is 1."""
    assert order_by(STARTS[1], 4) == dt.date(2027, 3, 4)
    assert STARTS[0] <= order_by(STARTS[1], 4) < STARTS[1]
    assert order_by(STARTS[0], 4) == dt.date(2026, 12, 4)
    assert first_period(STARTS, 4, STARTS[0]) == 1
    assert first_period(STARTS, 0, STARTS[0]) == 0
    assert arrives(STARTS[0], 4) == dt.date(2027, 1, 29)


def test_an_order_due_on_the_plan_date_can_still_be_placed() -> None:
    """13 weeks = 91 days: quarter 1 (2027-04-01) is due 2026-12-31. Planned that day, the
    order can be placed (first period 1); planned a day later, it cannot (first period 2,
    due 2027-04-01)."""
    assert order_by(STARTS[1], 13) == dt.date(2026, 12, 31)
    assert first_period(STARTS, 13, dt.date(2026, 12, 31)) == 1
    assert first_period(STARTS, 13, dt.date(2027, 1, 1)) == 2
    assert order_by(STARTS[2], 13) == dt.date(2027, 4, 1)
    # arriving on the day a period starts serves it; a day after does not
    assert arrives(dt.date(2026, 12, 31), 13) == STARTS[1]
    assert arrives(dt.date(2027, 1, 1), 13) == dt.date(2027, 4, 2)


def test_a_lead_time_past_the_last_start_serves_no_period() -> None:
    """40 weeks = 280 days: even the last quarter (2027-10-01) was due 2026-12-25."""
    assert order_by(STARTS[3], 40) == dt.date(2026, 12, 25)
    assert first_period(STARTS, 40, STARTS[0]) is None
    assert first_period(STARTS, 39, STARTS[0]) == 3  # 273 days: due 2027-01-01
    assert first_period([], 0, STARTS[0]) is None


def test_part_of_a_day_is_dropped() -> None:
    """Half a week is 3.5 days, counted as 3: due 2027-03-29 for 2027-04-01, and placed then
    it arrives on 2027-04-01."""
    assert lead_days(0.5) == 3
    assert lead_days(4) == 28
    assert lead_days(0) == 0
    assert order_by(STARTS[1], 0.5) == dt.date(2027, 3, 29)
    assert arrives(dt.date(2027, 3, 29), 0.5) == STARTS[1]
    assert first_period(STARTS, 0.5, dt.date(2027, 3, 29)) == 1
    assert first_period(STARTS, 0.5, dt.date(2027, 3, 30)) == 2


@pytest.mark.parametrize("weeks", [0, 0.5, 1, 2.3, 4, 4.000000000000001, 13, 13 + 1e-7, 52.9])
def test_the_rule_is_the_date_arithmetic_it_replaces_and_agrees_with_itself(weeks: float
                                                                           ) -> None:
    """``order_by`` and ``arrives`` are what the program and validate each computed before (a
    date less or plus ``timedelta(days=weeks × 7)``, which moves a date by the whole days); a
    period is served exactly when it starts on or after the arrival of an order
    placed on the plan date, and the first period is the first so served."""
    for plan in (STARTS[0] + dt.timedelta(days=d) for d in range(-400, 300, 7)):
        for start in STARTS:
            assert order_by(start, weeks) == start - dt.timedelta(days=weeks * 7)
            assert (order_by(start, weeks) >= plan) == (start >= arrives(plan, weeks))
        assert arrives(plan, weeks) == plan + dt.timedelta(days=weeks * 7)
        served = [q for q, start in enumerate(STARTS) if start >= arrives(plan, weeks)]
        assert first_period(STARTS, weeks, plan) == (served[0] if served else None)


def _quarterly(*leads: float, as_of: str | None = None) -> Scenario:
    """Four quarters from 2027-01-01, one zone per lead time selling a reserved quote."""
    zones = [zone(f"z{i}", Offer(
        gpu="G", gpus_per_node=1, on_demand=OnDemandTerms(price_per_gpu_hour=1.0, stock_gpus=8),
        reserved=ReservedTerms(price_per_gpu_hour=0.5, stock_gpus=8, commitment_months=12,
                               lead_time_weeks=lead))) for i, lead in enumerate(leads)]
    sc = scenario([workload("chat", 1.0, utilization=1.0)], zones, gpus=[gpu("G", 1)])
    return sc.model_copy(update={
        "horizon": Horizon(start=STARTS[0], period_months=3, count=4),
        "policy": sc.policy.model_copy(update={"as_of": as_of})})


@pytest.mark.parametrize("as_of", [None, "2026-12-31", "2027-02-01"])
def test_validate_and_the_program_give_the_same_first_period(as_of: str | None) -> None:
    """Per quote, the first period ``validate`` says it serves (``late_orders``; not listed:
    period 0) is the first arrival the program lets be ordered (P3: order-by not before the
    plan date). The plan date is ``as_of`` where given, before the start too: from 2026-12-31
    the 13-week quote (due 2026-12-31 for 2027-04-01) serves quarter 1, not 2; from 2027-02-01
    nothing serves quarter 0."""
    sc = _quarterly(0, 4, 13, 40, as_of=as_of)
    data = build_horizon_data(sc, lambda _: table(row("chat", "G", 1, 1.0)))
    assert data.plan_date == plan_date_of(sc)
    said = {r.option.pool: r.first_period for r in late_orders(sc)}
    for option in data.options:
        allowed = [k.arrival for k in data.order_keys
                   if k.option == option and data.order_by(k) >= data.plan_date]
        assert said.get(option.pool, 0) == (min(allowed) if allowed else None)
    expected = {None: [0, 1, 2, None], "2026-12-31": [0, 1, 1, None],
                "2027-02-01": [1, 1, 2, None]}[as_of]
    assert [said.get(o.pool, 0) for o in data.options] == expected


def test_orders_are_planned_from_an_as_of_before_the_start() -> None:
    """F5: planning on 2026-12-04 for quarters from 2027-01-01. 16 weeks = 112 days: placed on
    2026-12-04 an order arrives on 2027-03-26 and serves quarter 1 (2027-04-01); placed on the
    start it arrives on 2027-04-23 and serves quarter 2. With ``as_of: 2026-12-04`` the plan
    date is that day, validate says quarter 1 and the program lets an order arrive for it (it
    was planned from 2027-01-01 whatever ``as_of`` said); the re-plan stays a period after the
    start (orders for quarter 1 are still decided now), not a period after ``as_of``."""
    early = _quarterly(16, as_of="2026-12-04")
    assert plan_date_of(early) == dt.date(2026, 12, 4)
    assert arrives(dt.date(2026, 12, 4), 16) == dt.date(2027, 3, 26)
    data = build_horizon_data(early, lambda _: table(row("chat", "G", 1, 1.0)))
    assert data.plan_date == dt.date(2026, 12, 4)
    assert data.replan_date == dt.date(2027, 4, 1)
    assert min(k.arrival for k in data.order_keys if data.order_by(k) >= data.plan_date) == 1
    (reach,) = late_orders(early)
    assert reach.first_period == 1
    assert ("ordered on the plan date, 2026-12-04 (policy.as_of), it arrives on 2027-03-26, so "
            "it serves from period 1 (2027-04-01) on") in lead_time_text(early, reach)
    start = _quarterly(16)
    assert plan_date_of(start) == STARTS[0]
    (reach,) = late_orders(start)
    assert reach.first_period == 2
    assert "the plan date, 2027-01-01 (the horizon's start)" in lead_time_text(start, reach)


def test_without_as_of_a_start_ahead_says_orders_could_be_placed_sooner() -> None:
    """Without ``as_of`` the plan date is the start (a date of the input: the same plan
    whenever it is run), and a warning names the quotes an order placed today would bring a
    period sooner, with the line to add; none once ``as_of`` is set, none where no quote
    would serve sooner (5 weeks from 2026-12-04 or 2027-01-01: quarter 1 either way; 4 weeks
    from 2026-12-04 arrive on 2027-01-01 and serve quarter 0), none from the start on."""
    today = dt.date(2026, 12, 4)
    warning = early_order_line(_quarterly(0, 5, 16), today)
    assert warning is not None
    assert ("can be placed from today (2026-12-04); placed today, G's reserved quote (12 months) "
            "in z2 (lead time 16 weeks) would serve from period 1 (2027-04-01), not 2 "
            "(2027-07-01) — ") in warning
    assert "z1" not in warning and "z0" not in warning
    assert warning.endswith("set `policy.as_of: 2026-12-04` to plan orders from today")
    assert early_order_line(_quarterly(0, 5, 16, as_of="2026-12-04"), today) is None
    assert early_order_line(_quarterly(0, 5), today) is None
    assert "from period 0 (2027-01-01), not 1" in (early_order_line(_quarterly(4), today) or "")
    assert early_order_line(_quarterly(16), STARTS[0]) is None


def test_a_stale_as_of_is_warned_and_the_orders_it_dates_in_the_past_are_named() -> None:
    """A price-quote date left in ``policy.as_of`` (2026-06-01) read on 2026-12-03: orders are
    planned from it, so the plan said "order by 2026-11-06", a day already past, silently.
    Demand 1, 1, 1, 2 nodes, a 12-month reservation at 0.45 with 8 weeks (56 days) of lead
    time: one node ordered for quarter 0 by 2027-01-01 − 56 d = 2026-11-06 (the rest on
    demand: tests/test_horizon_start.py). validate and plan warn before planning, naming the
    field, the dates and the fix; plan names the order dated before today after it plans.
    Not an error: ``as_of`` re-runs a plan as it was made (read on 2026-11-01, nothing)."""
    from solver.cli.lead_times import past_order_lines, stale_as_of_warning
    from tests.test_periods import plan as plan_periods
    from tests.test_periods import quarterly

    sc = quarterly([1, 1, 1, 2], lead_weeks=8)
    sc = sc.model_copy(update={"policy": sc.policy.model_copy(update={"as_of": "2026-06-01"})})
    today = dt.date(2026, 12, 3)
    warning = stale_as_of_warning(sc, today)
    assert warning is not None
    assert warning.startswith("policy.as_of 2026-06-01 is before today (2026-12-03): orders "
                              "are planned from it, so an order can be dated before today: "
                              "G's reserved quote (12 months) in a serving period 0 "
                              "(2027-01-01) would be ordered by 2026-11-06")
    assert "set `policy.as_of: 2026-12-03` to plan orders from today" in warning
    assert stale_as_of_warning(sc, dt.date(2026, 11, 1)) is None  # due 11-06: still ahead
    assert stale_as_of_warning(quarterly([1, 1, 1, 2], lead_weeks=8), today) is None
    planned = plan_periods(sc)
    assert [(o.order_by, o.nodes) for o in planned.orders] == [(dt.date(2026, 11, 6), 1)]
    (line,) = past_order_lines(planned, sc, today)
    assert line.startswith("warning: 1 order of this plan is due before today (2026-12-03), "
                           "from 2026-06-01 (policy.as_of): 1 G in a by 2026-11-06 — ")
    assert past_order_lines(planned, sc, dt.date(2026, 11, 6)) == []  # due today: placeable


def test_validate_and_plan_say_a_stale_as_of(tmp_path: Path) -> None:
    """quarterly.yaml with ``as_of: 2026-01-15`` on the pinned today (2026-12-03,
    tests/conftest.py): its 16-week owned hardware for 2027-01-01 is due 2026-09-11 (112 days
    before). twenty_rps.yaml's ``as_of: 2026-11-01`` (one peak day, no orders: it only ages
    the measured rows) is not warned."""
    import yaml
    from click.testing import CliRunner

    from inputs import scenarios_dir
    from solver.cli import main

    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    doc["policy"]["as_of"] = "2026-01-15"
    path = tmp_path / "stale.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert ("warning: policy.as_of 2026-01-15 is before today (2026-12-03): orders are "
            "planned from it, so an order can be dated before today: H100-SXM's owned hardware "
            "in onprem-dc1 serving period 0 (2027-01-01) would be ordered by 2026-09-11"
            ) in result.stderr
    quiet = CliRunner().invoke(main, ["validate", str(scenarios_dir() / "twenty_rps.yaml")])
    assert "policy.as_of" not in quiet.stderr


def test_plan_names_the_order_a_stale_as_of_dated_before_today(tmp_path: Path) -> None:
    """tiny.yaml over four quarters from 2027-01-01 with 8-week reserved quotes and
    ``as_of: 2026-06-01``, planned on the pinned today (2026-12-03): a 12-month H100-SXM
    reservation (2.40 × 8,760 = 21,024) beats four quarters on demand (4.00 × 8,760), and is
    due 2027-01-01 − 56 days = 2026-11-06, a day already past. plan warns before planning and
    names the order after it (the report's order line alone said "by 2026-11-06")."""
    import yaml
    from click.testing import CliRunner

    from inputs import scenarios_dir
    from solver.cli import main

    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["horizon"] = {"start": "2027-01-01", "period_months": 3, "count": 4}
    doc["policy"]["as_of"] = "2026-06-01"
    for offer in doc["zones"][0]["offers"]:
        offer["reserved"]["lead_time_weeks"] = 8
    path = tmp_path / "stale.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                       "--quiet"])
    assert result.exit_code == 0, result.output
    assert ("warning: policy.as_of 2026-06-01 is before today (2026-12-03): orders are planned "
            "from it") in result.stderr
    assert ("warning: 1 order of this plan is due before today (2026-12-03), from 2026-06-01 "
            "(policy.as_of): 1 H100-SXM in zone-a by 2026-11-06 — a day already past"
            ) in result.stderr
    # the same words in plan.json (read back whole) and report.md, not only on stderr: the
    # buyer reads those, later (s21: the stale date was said on stderr alone)
    from models.plan import Plan
    from models.text import markdown_text

    said = [line.removeprefix("warning: ") for line in result.stderr.splitlines()
            if "policy.as_of" in line and line.startswith("warning: ")]
    assert len(said) == 2, result.stderr
    text = (tmp_path / "out" / "plan.json").read_text(encoding="utf-8")
    plan = Plan.model_validate_json(text)
    assert list(plan.warnings) == said
    assert Plan.model_validate_json(plan.model_dump_json()).warnings == plan.warnings
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Warnings" in report
    for warning in said:
        assert f"- {markdown_text(warning)}" in report


def test_an_order_that_misses_a_period_by_days_is_said_with_by_how_much() -> None:
    """fresh-s24 F4: planning on 2026-12-05, every 4-week quote arrives on 2027-01-02 (28
    days), a day after the first quarter starts; the quarter counts only nodes in service on
    each of its days, so it ran on on-demand, and validate said only "from period 1". The line
    now says by how many days; a miss of weeks (16 weeks from 2026-12-04 arrives 2027-03-26,
    84 days into quarter 0) is not called narrow."""
    near = _quarterly(4, as_of="2026-12-05")
    line = first_period_line(near, late_orders(near))
    assert line is not None and line.endswith(
        "lead time 4 weeks (the soonest arrives on 2027-01-02, 1 day after period 0 starts: a "
        "period counts only nodes in service on each of its days, so a lead time 1 day "
        "shorter would serve period 0)")
    far = _quarterly(16, as_of="2026-12-04")
    line = first_period_line(far, late_orders(far))
    assert line is not None and line.endswith("lead time 16 weeks")
