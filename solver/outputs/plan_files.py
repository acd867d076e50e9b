"""Write a plan's output files: ``plan.json`` and the resolved scenario beside it, atomically.

``write_plan_outputs`` is a plain list of writer calls; each writer is one file. The CLI calls
it; the core never does (the core never writes files).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from models.plan import Plan
from models.scenario import Scenario
from solver.outputs.atomic import write_atomic

PLAN_FILE = "plan.json"
RESOLVED_SCENARIO_FILE = "scenario.resolved.yaml"



def plan_json(plan: Plan) -> str:
    """``plan.json``: the plan with its fields in schema order."""
    return json.dumps(plan.model_dump(mode="json"), indent=2) + "\n"


def resolved_scenario_yaml(scenario: Scenario) -> str:
    """The resolved scenario (every catalog entry and offer spelled out) the plan was made from."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


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


def write_plan_outputs(plan: Plan, scenario: Scenario, out_dir: Path) -> list[Path]:
    """Write every output of a plan into ``out_dir``; returns the paths written."""
    from solver.outputs.workbook import write_procurement_outputs  # openpyxl + matplotlib: heavy

    return [
        write_plan_json(plan, scenario, out_dir),
        write_resolved_scenario(plan, scenario, out_dir),
        *write_procurement_outputs(plan, scenario, out_dir),  # plan.xlsx, contract.yaml, report
    ]
