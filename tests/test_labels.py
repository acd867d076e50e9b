"""Words people read: labels of enum values, configurations and failures."""

from __future__ import annotations

import pytest

from models.common import CapacitySource, Precision, PurchaseKind, Survivability
from models.plan import SolveStatus
from solver.cli import plan as plan_cli
from solver.outputs.figures import Margin
from solver.outputs.labels import (
    config_label,
    failure_label,
    label,
    margin_label,
    plural,
    status_label,
)


def test_a_configuration_spells_out_the_gpus_a_replica_spans() -> None:
    assert config_label("H100-SXM", 2) == "H100-SXM TP2 (2 GPUs)"
    assert config_label("L4", 1) == "L4 TP1 (1 GPU)"
    assert config_label("H100-SXM", 2, Precision.fp8) == "H100-SXM FP8 TP2 (2 GPUs)"


def test_enum_words_become_labels() -> None:
    assert label(PurchaseKind.on_demand) == "On-demand"
    assert label(Survivability.n_plus_1) == "N+1 (a node)"
    assert label(CapacitySource.analytic) == "Predicted"
    assert label(SolveStatus.time_limit) == "Time limit"  # no label of its own: its words
    assert label("use1-az1") == "use1-az1" and label(None) == ""


def test_failures_in_words() -> None:
    assert failure_label("none") == "No failure"
    assert failure_label("zone:use1-az1") == "Zone use1-az1 lost"
    assert failure_label("region:us-east-1") == "Region us-east-1 lost"
    assert failure_label("node:use1-az1/L40S/spot") == "One L40S spot node in use1-az1 lost"
    assert failure_label("node:z/H100-SXM") == "One H100-SXM node in z lost"
    assert failure_label("odd") == "odd"


def test_plural() -> None:
    assert [plural(n, "workload") for n in (0, 1, 2)] == ["0 workloads", "1 workload",
                                                          "2 workloads"]
    assert plural(1_000, "request") == "1,000 requests"


def test_a_status_says_how_close_to_the_cheapest_it_is_proven() -> None:
    """``optimal`` means within the requested gap: "optimal" beside "gap 1.00%" read as a
    contradiction, so a gap that shows is said in words."""
    from models.plan import SolverReport

    def report(gap: float | None) -> SolverReport:
        return SolverReport(name="highs", seconds=1.0, gap=gap)

    assert (status_label(SolveStatus.optimal, report(0.01))
            == "Proven within 1.00% of the cheapest")
    assert status_label(SolveStatus.optimal, report(0.0)) == "Optimal"
    assert status_label(SolveStatus.optimal, report(0.00004)) == "Optimal"  # shows as 0.00%
    assert (status_label(SolveStatus.optimal, report(None))  # CBC reports no gap
            == "Proven within the requested gap of the cheapest")
    assert status_label(SolveStatus.time_limit, report(0.2)) == "Stopped at the time limit"
    assert status_label(SolveStatus.infeasible, report(None)) == "Infeasible"


def test_a_fallback_fleet_is_named_in_the_status_whether_the_clock_or_the_user_stopped_it() -> None:
    """Ctrl-C before any stage found a fleet over periods leaves the fallback fleet: the report's
    and workbook's status said only "Interrupted" (the terminal's note said fallback), so a
    reader of report.md could take a greedy fleet for a searched one."""
    from models.plan import FALLBACK_STAGE, SolverReport, SolverStage

    fallback = SolverReport(name="highs", seconds=1.0, gap=0.8,
                            stages=(SolverStage(name=FALLBACK_STAGE, seconds=0.1),))
    searched = SolverReport(name="highs", seconds=1.0, gap=0.8)
    assert status_label(SolveStatus.interrupted, fallback) == "Interrupted, fallback fleet"
    assert status_label(SolveStatus.interrupted, searched) == "Interrupted"
    assert (status_label(SolveStatus.time_limit, fallback)
            == "Stopped at the time limit, fallback fleet")


def test_a_margin_under_one_percent_shows_a_decimal_so_zero_is_not_both_held_and_failed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert [margin_label(m) for m in (0.003, -0.005, 0.0, 0.4, -0.25)] == [
        "+0.3%", "-0.5%", "+0.0%", "+40%", "-25%"]
    # plan's survivability table (the demo's chat read "+0%" at a margin of 0.3 %)
    margins = [Margin("zone:a", "chat", "day", 20.06, 20.0, 0.003, True),
               Margin("zone:b", "chat", "day", 30.0, 20.0, 0.5, True)]
    monkeypatch.setattr(plan_cli, "survivability_margins", lambda _plan: margins)
    table = "\n".join(plan_cli.survivability_lines(None))  # type: ignore[arg-type]
    assert "+0.3%" in table and "+0%" not in table
