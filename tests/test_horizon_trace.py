"""benchmarks/horizon_trace.py ``--steps``: the restricted solves and the hour-by-hour pass
inside a block's plan, each traced with its seconds and costs."""

from __future__ import annotations

import pytest

from solver.program.periods import build_horizon_data
from tests.test_periods import TABLE, quarterly


def test_steps_trace_a_shared_block_s_support_and_pass(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A shared block planned on its LP support (``plan_block``) logs that restricted solve and
    its hour-by-hour pass, and plans the same fleet as untraced (2 × 730 a month)."""
    from benchmarks.horizon_trace import install_steps
    from solver.solve import block_plans

    for name in ("_restricted", "polish_slices"):  # restored after the test
        monkeypatch.setattr(block_plans, name, getattr(block_plans, name))
    install_steps()
    data = build_horizon_data(quarterly([1.5], reserved=None), lambda _: TABLE)
    (block,) = data.blocks
    _, values, outcome = block_plans.plan_block(block.data, "highs", 10.0, 0.01)
    assert values is not None and outcome.report.objective == pytest.approx(2 * 730)
    lines = capsys.readouterr().out.splitlines()
    restricted = [line for line in lines if "_restricted" in line]
    assert restricted and "optimal, cost 1,460" in restricted[0]
    assert "CPU-s" in restricted[0] and "columns fixed to zero" in restricted[0]
    assert any("polish_slices" in line and "-> 1,460" in line for line in lines)
