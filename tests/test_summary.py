"""Scenario summary figures: peak rate and peak token demand per workload, zones by region."""

from __future__ import annotations

import pytest

from inputs import scenarios_dir
from models.common import PurchaseKind
from models.loader import load_scenario
from models.workload import Workload
from solver.outputs.summary import peak_rps, peak_tokens_per_s, summarize


def workload(**over: object) -> Workload:
    data: dict[str, object] = {
        "name": "w", "model": "m",
        "arrival": {"peak_rps": 10, "hourly_shape": [0.5] * 23 + [1.0]},
        "input_tokens": {"p50": 1000, "p95": 2000, "p99": 3000},
        "output_tokens": {"p50": 100, "p95": 200, "p99": 300, "mean": 150},
        "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
    }
    data.update(over)
    return Workload.model_validate(data)


def test_peak_of_an_arrival_is_its_peak_rate() -> None:
    assert peak_rps(workload()) == 10


def test_token_demand_uses_the_mean_else_the_median() -> None:
    # input: no mean → P50 1,000 × 10 req/s = 10,000; output: mean 150 × 10 = 1,500
    assert peak_tokens_per_s(workload()) == (10_000, 1_500)


def test_batch_peak_spreads_the_volume_over_its_window() -> None:
    wl = workload(arrival=None, batch={"daily_requests": 72_000, "window_hours": [1, 2, 3, 4]},
                  **{"class": "batch"})
    # 72,000 requests ÷ (4 h × 3,600 s/h) = 5 req/s
    assert peak_rps(wl) == pytest.approx(5.0)
    assert peak_tokens_per_s(wl) == pytest.approx((5_000, 750))  # 5 × 1,000; 5 × 150


def test_summary_groups_zones_by_region_with_what_they_sell() -> None:
    summary = summarize(load_scenario(scenarios_dir() / "demo.yaml"))
    assert [z.id for z in summary.regions["us-east-1"]] == ["use1-az1", "use1-az2", "use1-az6"]
    az2 = summary.regions["us-west-2"][1]
    assert az2.offers["L4"].kinds == (PurchaseKind.reserved, PurchaseKind.on_demand)
    assert az2.offers["H100-SXM"].gpus_per_node == 8
    h200 = next(g for g in summary.gpus if g.name == "H200")
    assert h200.zones == 2  # use1-az2 and usw2-az2 sell p5en
    assert h200.cheapest_on_demand_per_gpu_hour == pytest.approx(10.6)  # 84.80 / 8
    assert summary.catalog_gpu_count == 10
    assert summary.peak_tokens_per_s == pytest.approx(
        sum(w.peak_tokens_per_s for w in summary.workloads))


def test_summary_of_batch_pool_in_demo() -> None:
    summary = summarize(load_scenario(scenarios_dir() / "demo.yaml"))
    nightly = next(w for w in summary.workloads if w.name == "nightly-summaries")
    # 300,000 ÷ (6 h × 3,600) = 13.89 req/s; × P50 3,000 input = 41,667 tokens/s
    assert nightly.peak_rps == pytest.approx(13.888, rel=1e-3)
    assert nightly.peak_input_tokens_per_s == pytest.approx(41_666.7, rel=1e-4)
    assert nightly.target_utilization == 0.9  # batch default
