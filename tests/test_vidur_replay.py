"""The conversation trace replayed on fleetplan's step time against Vidur's profiled operator
times (benchmarks/vidur_replay.py): issue 17's second "Done when", checked so a change of the
model or its factors that moves the replay away from the profiles fails here."""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.vidur_replay import (  # noqa: E402
    CASES,
    CHECK_RUNTIME,
    DEFAULT_TRACE,
    OVERLOAD_FACTOR,
    TOLERANCE,
    Row,
    run,
)
from solver.replay.traces import read_trace  # noqa: E402

HEAD = ROOT / "tests" / "data" / "azure_conv_head300.csv"
SLOW = os.environ.get("FLEETPLAN_SLOW") == "1"


@cache
def _rows(trace_path: Path) -> dict[str, Row]:
    return {r.case: r for r in run(read_trace(trace_path), (CHECK_RUNTIME,))}


TRACES = [pytest.param(HEAD, id="head300"),
          pytest.param(DEFAULT_TRACE, id="full", marks=pytest.mark.skipif(
              not SLOW or not DEFAULT_TRACE.exists(),
              reason="the whole Azure conversation trace (../shared/data); FLEETPLAN_SLOW=1"))]


@pytest.mark.parametrize("trace", TRACES)
def test_8b_at_half_rate_is_within_20_percent_of_the_profiles(trace: Path) -> None:
    row = _rows(trace)[CASES[0].name]
    assert {k: round(d, 3) for k, d in row.diffs().items() if abs(d) > TOLERANCE} == {}


@pytest.mark.parametrize("trace", TRACES)
def test_70b_tp2_ttft_is_within_20_percent_of_the_profiles(trace: Path) -> None:
    d = _rows(trace)[CASES[1].name].diffs()
    assert abs(d["ttft_p50_ms"]) <= TOLERANCE and abs(d["ttft_p95_ms"]) <= TOLERANCE


@pytest.mark.parametrize("trace", TRACES)
def test_70b_tp2_per_token_is_within_20_percent_of_the_profiles(trace: Path) -> None:
    d = _rows(trace)[CASES[1].name].diffs()
    assert abs(d["tpot_p50_ms"]) <= TOLERANCE and abs(d["tpot_p95_ms"]) <= TOLERANCE


@pytest.mark.parametrize("trace", TRACES)
def test_overloads_degrade_alike_not_by_orders_of_magnitude(trace: Path) -> None:
    rows = _rows(trace)
    for case in CASES[2:]:
        row = rows[case.name]
        ratio = row.fleetplan.ttft_p95_ms / row.profiled.ttft_p95_ms
        assert 1 / OVERLOAD_FACTOR <= ratio <= OVERLOAD_FACTOR, case.name
    kv_bound = rows[CASES[3].name]  # both replays preempt, at shares a few points apart
    assert kv_bound.fleetplan.preempted_share > 0.05
    assert kv_bound.profiled.preempted_share > 0.05
    assert abs(kv_bound.fleetplan.preempted_share - kv_bound.profiled.preempted_share) < 0.03


def test_the_all_reduce_what_if_swaps_only_the_all_reduce_term() -> None:
    from dataclasses import replace

    from benchmarks.vidur_replay import ProfiledAllReduce, fleetplan_perf, profiled_model
    from models.loader import load_catalog

    models = {m.name: m for m in load_catalog()[1]}
    for case in CASES[:2]:
        model = models[case.model]
        ours = fleetplan_perf(model, case.tp, CHECK_RUNTIME)
        ref = profiled_model(model, case, ours.kv_capacity_tokens)
        alt = ProfiledAllReduce(ours, ref)
        bare = replace(ours, allreduce_ms_per_step=0.0, allreduce_ms_per_token=0.0)
        for args in ((0, 16, 16_000), (512, 8, 8_000)):
            tokens = args[0] + args[1]
            extra = ref.layers * 2 * ref.allreduce_time_ms(tokens) if case.tp > 1 else 0.0
            assert alt.step_time_ms(*args) == pytest.approx(bare.step_time_ms(*args) + extra)
        if case.tp == 1:
            step = ours.step_time_ms(0, 16, 16_000)
            assert alt.step_time_ms(0, 16, 16_000) == pytest.approx(step)
