"""A plan's directory: ``plan.json``, the resolved scenario, the workbook, contract and report.

``write_plan_outputs`` is a plain list of writer calls; each writer is one file, written
atomically. The CLI calls it, into the staging directory of a
:class:`~solver.outputs.destinations.PlanDirectory` that then replaces the plan's directory
whole; the core never does (the core never writes files).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from models.capacity import CapacityTable
from models.plan import Plan
from models.scenario import Scenario
from solver.outputs.assumptions import ASSUMED, assumed_figures
from solver.outputs.atomic import write_atomic

if TYPE_CHECKING:
    from solver.outputs.contract import TableFor

#: File names of a plan's directory, in the order they are written.
PLAN_FILE = "plan.json"
RESOLVED_SCENARIO_FILE = "scenario.resolved.yaml"
WORKBOOK_FILE = "plan.xlsx"
CONTRACT_FILE = "contract.yaml"
REPORT_FILE = "report.md"
COST_CHART_FILE = "cost_by_zone.png"
DAY_CHART_FILE = "capacity_vs_demand.png"
PERIOD_CHART_FILE = "capacity_by_period.png"
#: Every file a plan's directory may hold (the charts only where there is a fleet to draw, the
#: chart per period only for a plan over periods).
PLAN_DIR_FILES = (PLAN_FILE, RESOLVED_SCENARIO_FILE, WORKBOOK_FILE, CONTRACT_FILE, REPORT_FILE,
                  COST_CHART_FILE, DAY_CHART_FILE, PERIOD_CHART_FILE)

#: CPU seconds of :func:`write_plan_outputs` with its libraries imported: a fixed part, and a
#: part per workload (one panel of the capacity-vs-demand chart each, its rows in the workbook
#: and report). Fitted to the demo (4 workloads: 0.85 s), the small (3: 0.79 s) and large (12:
#: 1.97 s) benchmark sizes at ×25, measured 2026-12-04 18:43 UTC (load 9–10;
#: benchmarks/results/clock.md, "The time limit on the user's stopwatch").
WRITE_CPU_S = 0.45
WRITE_CPU_PER_WORKLOAD_S = 0.12
#: What the estimate is multiplied by beyond the machine's measured slowdown: the summary, the
#: directory's commit and the interpreter's exit follow the writing, and the load moves [1].
WRITE_MARGIN = 1.25
#: Libraries only the writers need, imported beside the solve (:func:`import_writers_beside`):
#: 0.57 CPU-s, 2–3 s of wall time at load 9 (measured as :data:`WRITE_CPU_S`).
WRITER_LIBRARIES = ("matplotlib.figure", "matplotlib.backends.backend_agg", "openpyxl")


def write_seconds(scenario: Scenario, slowdown: float) -> float:
    """Wall seconds writing a plan of ``scenario`` is expected to take on a machine that
    stretches this process's CPU seconds ``slowdown`` times (its libraries imported) [s]."""
    cpu_s = WRITE_CPU_S + WRITE_CPU_PER_WORKLOAD_S * len(scenario.workloads)
    return cpu_s * slowdown * WRITE_MARGIN


#: The threads :func:`import_writers_beside` started and no writer has waited for yet.
_importing: list[threading.Thread] = []


def import_writers_beside() -> threading.Thread:
    """Import :data:`WRITER_LIBRARIES` in a daemon thread, while the main thread waits on a
    solve: HiGHS releases the GIL while it runs, so the import overlaps it rather than following
    it. Only third-party libraries the solve does not import; the writers wait for the thread
    before they import them (:func:`writers_imported`: a writer importing matplotlib while the
    thread was half-way through it got the half-made module, "module 'matplotlib' has no
    attribute '_docstring'"). An import that fails is left for the writer to raise."""

    def run() -> None:
        for name in WRITER_LIBRARIES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=run, name="import-writers", daemon=True)
    _importing.append(thread)
    thread.start()
    return thread


def writers_imported() -> None:
    """Wait for every import :func:`import_writers_beside` began (nothing if none did)."""
    while _importing:
        _importing.pop().join()


def plan_json(plan: Plan) -> str:
    """``plan.json``: the plan with its fields in schema order."""
    return json.dumps(plan.model_dump(mode="json"), indent=2) + "\n"


def assumptions_comment(scenario: Scenario) -> str:
    """YAML comment lines naming every assumed figure of the scenario (an offer's own list is
    in its ``assumed:`` key, a derived reserved price says ``assumed: true``)."""
    found = assumed_figures(scenario)
    if not found:
        return ""
    lines = ["Assumed, not given (each offer's `assumed:` names its own; docs/outputs.md):"]
    lines += [f"  {a.figure}: {a.value} ({ASSUMED}; {a.applies_to}): {a.why}" for a in found]
    return "".join("# " + " ".join(line.splitlines()) + "\n" for line in lines)


def resolved_scenario_yaml(scenario: Scenario) -> str:
    """The resolved scenario (every catalog entry and offer spelled out) the plan was made from,
    its assumed figures named in a comment at the top."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    return assumptions_comment(scenario) + yaml.safe_dump(data, sort_keys=False,
                                                          allow_unicode=True)


def write_plan_json(plan: Plan, scenario: Scenario, out_dir: Path) -> Path:
    """Write ``plan.json``."""
    path = out_dir / PLAN_FILE
    write_atomic(path, plan_json(plan))
    return path


def write_resolved_scenario(plan: Plan, scenario: Scenario, out_dir: Path) -> Path:
    """Write ``scenario.resolved.yaml``."""
    path = out_dir / RESOLVED_SCENARIO_FILE
    write_atomic(path, resolved_scenario_yaml(scenario))
    return path


def write_plan_outputs(plan: Plan, scenario: Scenario, out_dir: Path,
                       fleet_scenario: Scenario | None = None,
                       table: CapacityTable | None = None,
                       table_for: TableFor | None = None) -> list[Path]:
    """Write every output of a plan into ``out_dir``; returns the paths written.

    ``fleet_scenario`` is the single-period scenario the plan's fleet was sized for (over a
    horizon: the first period of the demand scenario shown); default ``scenario``. It keeps
    ``scenario``'s inventory, which the planner leaves out of a period's scenario: the workbook
    and report say which nodes of the fleet are already held (:mod:`solver.outputs.held`).
    ``table`` is its capacity table where the caller has it (default: built again from it);
    ``table_for``, over periods, the planner's tables by period scenario (the first period's
    table and the contract's later periods are read from them instead of built again: 2.5–3 s
    a plan of quarterly.yaml).
    The documents are dated the day the plan is prepared on, read from ``scenario``
    (:func:`~solver.outputs.prepared.prepared_on`): a period's scenario has its start as
    ``as_of``, which over a horizon is the horizon's start, a different fact.
    """
    from solver.outputs.prepared import prepared_on

    fleet = scenario if fleet_scenario is None else with_inventory(fleet_scenario, scenario)
    return [
        write_plan_json(plan, scenario, out_dir),
        write_resolved_scenario(plan, scenario, out_dir),
        *write_procurement_outputs(plan, fleet, out_dir, table,
                                   prepared_on(scenario.policy.as_of), scenario, table_for),
    ]


def with_inventory(fleet_scenario: Scenario, scenario: Scenario) -> Scenario:
    """The single-period scenario a plan's fleet was sized for, with ``scenario``'s inventory
    (the planner leaves it out of a period's scenario): what the outputs say is held, and
    whose price is assumed, read from it."""
    return fleet_scenario.model_copy(
        update={"inventory": fleet_scenario.inventory or scenario.inventory})


def write_procurement_outputs(plan: Plan, scenario: Scenario, out_dir: str | Path,
                              table: CapacityTable | None = None,
                              prepared: dt.date | None = None,
                              horizon_scenario: Scenario | None = None,
                              table_for: TableFor | None = None) -> list[Path]:
    """Write ``plan.xlsx``, ``contract.yaml`` and ``report.md`` (with its charts) into ``out_dir``.

    ``table`` defaults to the capacity table of the GPUs the scenario sells or holds (the one
    the planner used: it is a pure function of the scenario); rows the trace replay de-rated
    are shown at the rate the plan runs them (:func:`solver.outputs.as_planned.as_planned`).
    ``prepared``: the day the workbook and report are dated (default: ``scenario``'s
    ``policy.as_of``, else the day written). ``horizon_scenario``: for a plan over periods,
    the scenario with its ``horizon`` (``scenario`` is the first period's), whose later
    periods' configurations the contract lists too; ``table_for``: the tables it was planned
    with, by period scenario (``table``'s default and the contract's later periods).
    """
    # openpyxl and matplotlib are heavy: imported when a plan is written (or beside its solve),
    # not at start-up
    writers_imported()
    from solver.outputs.contract import build_contract, contract_yaml
    from solver.outputs.report import write_report
    from solver.outputs.workbook import write_plan_workbook

    if table is None and table_for is not None:
        table = table_for(scenario)
    if table is None:
        from solver.capacity.table import build_capacity_table

        table = build_capacity_table(scenario, scenario.gpus_sold_or_held())
    if plan.replay:  # rows the trace replay de-rated, at the rate the plan runs them
        from solver.outputs.as_planned import as_planned

        table = as_planned(table, plan, scenario)
    out = Path(out_dir)
    # one contract, every period's rows, for contract.yaml and the workbook's sheet alike
    contract = build_contract(plan, scenario, table, horizon_scenario, table_for)
    workbook = write_plan_workbook(plan, scenario, table, out / WORKBOOK_FILE, prepared,
                                   contract)
    write_atomic(out / CONTRACT_FILE, contract_yaml(contract))
    return [
        workbook,
        out / CONTRACT_FILE,
        *write_report(plan, scenario, table, out, prepared),
    ]
