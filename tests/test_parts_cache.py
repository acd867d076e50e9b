"""The prefill parts of a bursty workload's TTFT are kept, not computed again (trust-s23 item 4):
the rate search asks for the same parts several times at one load point (62 % of the calls on
the Azure code trace's table). Kept results must give the very figures computed ones do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import solver.capacity.queueing as queueing
import solver.capacity.replica as replica
from inputs import scenarios_dir
from models.loader import load_scenario
from solver.capacity.queueing import (
    burst_share_pmf,
    computed_burst_share_pmf,
    computed_prefill_parts,
    kept_by_value,
    prefill_parts,
)
from solver.capacity.table import build_capacity_table

#: the README walk-through's Azure conversation burst block (profile of the shared trace)
BURST = {"interarrival_scv": 1.197, "peak_1s_ratio": 2.893, "peak_10s_ratio": 1.772,
         "peak_60s_ratio": 1.528, "followers": [
             {"window_gaps": g, "followers_mean": m, "followers_variance": v}
             for g, m, v in ((0.01, 0.017, 0.017), (0.1, 0.083, 0.086), (1.0, 0.713, 0.754),
                             (10.0, 6.962, 9.675), (100.0, 68.879, 292.387))]}


def test_kept_parts_are_the_computed_ones_and_read_only() -> None:
    own, weights = np.array([10.0, 20.0, 40.0]), np.array([0.5, 0.3, 0.2])
    pmf = np.array([0.6, 0.3, 0.1])
    first = prefill_parts(own, weights, own * 2, pmf, extra_ms=5.0)
    again = prefill_parts(own.copy(), list(weights), own * 2, pmf, extra_ms=5.0)
    assert again[0] is first[0] and again[1] is first[1]  # kept, not computed again
    fresh = computed_prefill_parts(own, weights, own * 2, pmf, 5.0)
    assert np.array_equal(first[0], fresh[0]) and np.array_equal(first[1], fresh[1])
    with pytest.raises(ValueError, match="read-only"):
        first[1][0] = 1.0
    other = prefill_parts(own, weights, own * 2, pmf, extra_ms=6.0)  # another input
    assert not np.array_equal(other[0], first[0])


def test_kept_burst_shares_are_the_computed_ones_and_read_only() -> None:
    mean, var = np.array([0.5, 3.0, 12.0]), np.array([0.5, 9.0, 80.0])  # Poisson, NB, NB
    first = burst_share_pmf(mean, var, 2.0)
    assert burst_share_pmf(mean.copy(), var.copy(), 2) is first
    assert np.array_equal(first, computed_burst_share_pmf(mean, var, 2.0))
    with pytest.raises(ValueError, match="read-only"):
        first[0, 0] = 1.0
    # a scalar variance broadcast over the rows, as callers give it
    assert np.array_equal(burst_share_pmf(mean, 20.0, 1.0),
                          computed_burst_share_pmf(mean, 20.0, 1.0))


def test_kept_results_are_keyed_by_every_arrays_shape_and_the_numbers() -> None:
    """The key of a kept result is each array's bytes *and* shape, and the numbers: the same
    six floats as 2 × 3 and as 3 × 2, or another number, are other inputs."""
    calls: list[tuple[int, ...]] = []

    def shape_times(a: queueing.FloatArray, b: queueing.FloatArray, k: float
                    ) -> queueing.FloatArray:
        calls.append(a.shape)
        assert not a.flags.writeable and not b.flags.writeable  # the kept inputs' bytes
        return np.array([*a.shape, *b.shape], dtype=np.float64) * k

    kept = kept_by_value(8, shape_times)
    six = np.arange(6.0)
    first = kept((six.reshape(2, 3), six), 1.0)
    assert kept((six.reshape(2, 3).copy(), six.copy()), 1.0) is first
    assert list(kept((six.reshape(3, 2), six), 1.0)) == [3.0, 2.0, 6.0]
    assert list(kept((six.reshape(2, 3), six), 2.0)) == [4.0, 6.0, 12.0]
    assert calls == [(2, 3), (3, 2), (2, 3)]
    assert list(first) == [2.0, 3.0, 6.0] and not first.flags.writeable


def test_a_bursty_table_is_the_same_with_and_without_kept_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    data["workloads"][0]["arrival"]["burst"] = BURST
    path = tmp_path / "bursty.yaml"
    path.write_text(yaml.safe_dump(data))
    sc = load_scenario(path)
    kept = build_capacity_table(sc)
    monkeypatch.setattr(queueing, "prefill_parts", computed_prefill_parts)
    monkeypatch.setattr(queueing, "burst_share_pmf", computed_burst_share_pmf)
    monkeypatch.setattr(replica, "burst_share_pmf", computed_burst_share_pmf)
    computed = build_capacity_table(sc)
    assert kept.rows and kept.model_dump() == computed.model_dump()
