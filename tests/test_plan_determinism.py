"""Same input, same plan: a plan proven within its limit is the same ``plan.json`` from run to
run, apart from the wall-clock record of its solve, whatever the machine's timing (issue 15).

Two solves that exchanged fleets between threads once gave the demo the same cost and node
counts but different replica allocations in 3 of 4 runs; the chain now runs on one thread and
ends by choosing the allocation of its nodes by a fixed rule (the ``canonical`` stage)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from inputs import demo_scenario
from models.plan import Plan, SolveStatus
from solver.capacity.table import build_capacity_table
from solver.outputs.plan_dir import plan_json
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.variables import Program
from solver.solve.clock import Deadline
from solver.solve.highs import Model, Restriction, RunResult, model_of, run
from solver.solve.incumbent import Incumbent
from solver.solve.stages import Context, canonical
from solver.solve.strategy import plan_scenario

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

import pytest  # noqa: E402

from benchmarks.generate import generate_scenario  # noqa: E402
from models.loader import load_scenario  # noqa: E402


def timeless(plan: Plan) -> dict[str, Any]:
    """``plan.json`` without the wall-clock record of the solve (its seconds, each stage's)."""
    data: dict[str, Any] = json.loads(plan_json(plan))
    data["solver"]["seconds"] = 0.0
    for stage in data["solver"]["stages"]:
        stage["seconds"] = 0.0
    return data


def _two_allocations(seed: int) -> tuple[Program, Model, RunResult, RunResult] | None:
    """The small benchmark scenario of ``seed`` proven, and a second fleet on its proven nodes
    with other replicas (the fewest by random weights); ``None`` when its nodes hold one
    allocation only (full nodes leave no choice)."""
    sc = generate_scenario("small", seed=seed)
    program = build_program(build_program_data(sc, build_capacity_table(sc)))
    model = model_of(program)
    first = run(model, Deadline(60.0), 60.0, 0.01)
    assert first.status is SolveStatus.optimal and first.x is not None
    nodes = model.columns_named([y.name for y in program.v.nodes.values()])
    replicas = model.columns_named([x.name for x in program.v.replicas.values()])
    held = np.round(first.x[nodes])
    weights = np.zeros(model.columns_count)
    weights[replicas] = np.random.default_rng(7).uniform(1.0, 2.0, len(replicas))
    other = run(model, Deadline(60.0), 60.0, 0.01, restriction=Restriction(nodes, held, held),
                objective=weights)
    assert other.x is not None
    if np.array_equal(np.round(other.x[replicas]), np.round(first.x[replicas])):
        return None
    return program, model, first, other


def test_fleets_of_the_same_nodes_end_on_one_allocation() -> None:
    # a proven fleet and another on the same nodes with other replicas, each held by an
    # incumbent: the canonical stage gives both the same fleet, of the same cost, breaking no
    # row. The first seed whose proven nodes hold more than one allocation (which seed does
    # moves with the capacity model: seed 0's full nodes left no choice after issue 17's
    # refit, seed 1's on the fresh install of 2026-12-02, cause not found)
    found = next((c for seed in range(1, 6) if (c := _two_allocations(seed)) is not None), None)
    assert found is not None, "no small scenario of seeds 1-5 has a second allocation"
    program, model, first, other = found
    settled = []
    for x in (first.x, other.x):
        incumbent = Incumbent(model, Deadline(60.0), 0.01)
        assert incumbent.offer(x, "given")
        canonical(Context(program, model, incumbent, incumbent.deadline, 0.01), 30.0)
        assert incumbent.source == "canonical"
        settled.append(incumbent.fleet())
    (a, cost_a), (b, cost_b) = settled
    assert a is not None and b is not None and np.array_equal(a, b)
    assert cost_a == cost_b == pytest.approx(model.cost_of(first.x), rel=1e-12)
    assert model.broken_rows(a) == []


@contextmanager
def busy_python_thread() -> Iterator[None]:
    """A thread spinning in Python beside the plan: it takes the GIL from the solve's callbacks
    and so moves every moment at which the solve's threads meet."""
    stop = threading.Event()

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="plans the demo three times (a minute or more); set FLEETPLAN_SLOW=1")
def test_the_demo_plans_the_same_three_times_whatever_the_timing() -> None:
    demo = load_scenario(demo_scenario())
    table = build_capacity_table(demo)
    plans = [plan_scenario(demo, table, time_limit_s=600.0)]
    with busy_python_thread():
        plans.append(plan_scenario(demo, table, time_limit_s=600.0))
    plans.append(plan_scenario(demo, table, time_limit_s=600.0))
    assert all(p.status is SolveStatus.optimal for p in plans)
    first = timeless(plans[0])
    for p in plans[1:]:
        assert timeless(p) == first
