"""The capacity table's build made cheaper without moving a figure (build-s24): each table here
is compared, byte for byte as JSON, with the one main's code built before the change
(tests/data/tables/*.json, written by ``benchmarks/table_build.py`` at main 1ed5b57), and the
work the change saves is checked to be skipped."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import solver.capacity.replica as replica
from inputs import scenarios_dir
from models.loader import load_scenario
from solver.capacity.perf import workload_perf
from solver.capacity.queueing import cyclic_split_scv, pk_mean_wait_ms, qna_factor
from solver.capacity.replica import (
    burst_ttft_ms,
    chunk_share,
    chunked_prefill_ms,
    load_point,
    load_profile,
)
from solver.capacity.table import build_capacity_table
from solver.cli.common import load

DATA = Path(__file__).parent / "data" / "tables"
SLOW = os.environ.get("FLEETPLAN_SLOW") == "1"

#: (scenario, reference table, every GPU of the catalog): a burst block divided over replicas
#: (tiny 8B), a linked trace's replayed window (routed recursion), a 70B fp8 conversation burst
#: ×5 (the batch position's counts), the demo on every GPU (no burst: the plain search)
TABLES = [
    ("bursty.yaml", "bursty.json", False),
    ("traced.yaml", "traced.json", False),
    ("conversation_x5.yaml", "conversation_x5.json", False),
    (str(scenarios_dir() / "demo.yaml"), "demo_every_gpu.json", True),
    # the Azure code burst ×5 (a window's term past the SLO), two bursty models (3 CPU-s each)
    pytest.param("code_x5.yaml", "code_x5.json", False,
                 marks=pytest.mark.skipif(not SLOW, reason="3 CPU-s; set FLEETPLAN_SLOW=1")),
    pytest.param("platform.yaml", "platform.json", False,
                 marks=pytest.mark.skipif(not SLOW, reason="3 CPU-s; set FLEETPLAN_SLOW=1")),
]


@pytest.mark.parametrize(("scenario", "reference", "every_gpu"), TABLES)
def test_the_table_is_main_s_byte_for_byte(scenario: str, reference: str,
                                           every_gpu: bool) -> None:
    sc = load(DATA / scenario)  # as plan reads it: a linked trace's burst and window
    table = build_capacity_table(sc, None if every_gpu else sc.gpus_sold_or_held())
    built = json.dumps(table.model_dump(mode="json"), sort_keys=True)
    assert table.rows and built == (DATA / reference).read_text(encoding="utf-8")


def test_the_slo_search_asks_no_rate_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Halvings past one ulp asked again at the interval's ends (deterministic: the same
    answer); each TTFT is now asked once per rate and purpose (a halving's, which may stop
    at the SLO, or a point's whole P95)."""
    asked: list[tuple[int, float, float, float]] = []
    profiles: list[replica.LoadProfile] = []  # kept alive: no other profile takes its id
    computed = replica.burst_ttft_ms

    def counted(profile: replica.LoadProfile, wait_mean_ms: float, rho: float, *args: float,
                **kwargs: float) -> float:
        profiles.append(profile)
        enough_ms = kwargs.get("enough_ms", math.inf)
        asked.append((id(profile), rho, args[1], enough_ms))  # ρ names the rate
        return computed(profile, wait_mean_ms, rho, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(replica, "burst_ttft_ms", counted)
    sc = load_scenario(DATA / "bursty.yaml")
    assert build_capacity_table(sc).rows
    assert len(asked) > 100 and len(set(asked)) == len(asked)


def test_a_window_past_the_slo_skips_the_backlog_s_supremum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A halving only asks whether the TTFT P95 passes the SLO: once the largest window's
    term does, the backlog's supremum (two FFT passes and the upcrossings) cannot bring it
    back; the P95 itself is that term or above."""
    sc = load_scenario(DATA / "code_x5.yaml")
    workload = sc.workloads[0]
    perf = workload_perf(sc, workload, sc.gpu("H100-SXM"), 1)
    assert not isinstance(perf, str)
    profile = load_profile(perf, workload)
    rate, replicas = 6.0, 8.0
    point = load_point(profile, rate, replicas=replicas)
    rho, seqs = point.prefill_share, point.decode_seqs_p95
    service_scv = profile.prefill_second_moment_ms2 / profile.prefill_mean_ms ** 2 - 1.0
    wait_ms = pk_mean_wait_ms(rate / 1000, profile.prefill_mean_ms,
                              profile.prefill_second_moment_ms2) * qna_factor(
        cyclic_split_scv(profile.wait_scv(profile.stream_share(rate, replicas)), replicas),
        service_scv, rho)
    args = (profile, wait_ms, rho, profile.perf.decode_step_time_ms(
        seqs, round(seqs * profile.decode_context_tokens)), replicas, chunk_share(profile, seqs),
        profile.stream_share(rate, replicas), chunked_prefill_ms(profile, seqs))
    p95 = burst_ttft_ms(*args)
    assert p95 == point.ttft_p95_ms  # load_point's, to the bit

    def never(*_: object, **__: object) -> float:
        raise AssertionError("the backlog's supremum was computed")

    monkeypatch.setattr(replica, "sup_backlog_ttft_ms", never)
    stopped = burst_ttft_ms(*args, enough_ms=1.0)  # every window's term passes 1 ms
    assert 1.0 < stopped <= p95
