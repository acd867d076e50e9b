"""Two what-ifs of the burst model against the replay, on the cases of burst_agreement.py.

The SCV-only burst model's two misses on the shared traces (docs/capacity-model.md, "Bursty
arrivals") — code completion's per-token P95 after a node loss on H100 × 1 and chat's intact
TTFT — are each put to one change of the model, computed here beside that model (the
workloads' ``arrival.burst`` without its ``followers``), on the same replayed window. They led
to the follower model (docs/capacity-model.md, "Bursts divided over replicas"), which reads the
followers' curve from ``profile`` instead of the trace window:

- **TTFT as the quantile of a sum.** The model adds the P95 prompt's prefill to the P95 wait.
  Here: the 95th percentile of wait + prefill, ``P(W + P ≤ t) = Σ_i w_i F_W(t − p_i)`` over
  the input-length points (``P(W > x) = ρ exp(−ρ x ÷ E[W])``, the model's own wait tail).
- **Per-token: the prompts an arriving request sees.** The model counts the prompts prefilled
  in a request's life as a negative binomial of mean ``λ T`` (a time average). A request in a
  burst sees its burst-mates after it, and the least-loaded router sends them to the other
  replicas first. Here: the count is taken from the trace window itself — for each arrival,
  the arrivals that follow it within the life window ``T`` (and, with probability ρ, within
  ``T`` + the mean wait of a request that waits, in place of the model's geometric wait term),
  divided among the ``n`` replicas in turn (``⌊f ÷ n⌋``: round robin, what least-loaded
  routing of equal replicas does with a burst) — the empirical distribution of what arrivals
  saw, in place of the negative binomial. The rest of the model (chunks, cap, fixed point) is
  unchanged. It needs the trace, which the capacity model does not have: a what-if, not a
  model.

Run: ``.venv/bin/python benchmarks/burst_whatif.py [--also WORKLOAD=GPU:TP:N ...]`` from the
repository root (about a minute). Prints a markdown table: replayed P95, the model's bursty
prediction and the what-if's, each with predicted ÷ replayed − 1. ``--followers`` instead
prints, for each trace's window, the mean number of arrivals that follow an arrival within T
against ``λ T`` (the excess is what a burst adds), for T from 1 ms to 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import burst_agreement as agreement

import solver.capacity.replica as replica_model
from inputs import demo_scenario
from models.loader import load_scenario
from models.scenario import Scenario
from solver.capacity.perf import replica_perf
from solver.capacity.queueing import (
    GRID_CELLS,
    GRID_SDS,
    binned_jumps,
    kingman_factor,
    length_samples,
    mixture_quantile_ms,
    pk_mean_wait_ms,
    wait_quantile_ms,
)
from solver.capacity.replica import cache_split, load_point, load_profile
from solver.replay.traces import Trace, read_trace

FloatArray = npt.NDArray[np.float64]


def ttft_sum_quantile_ms(scenario: Scenario, case: agreement.Case, rate_rps: float,
                         q: float = 0.95) -> float:
    """``q``-quantile of wait + own prefill + one decode step at ``rate_rps`` on one replica
    (the model's wait with its burst correction, the prefill of each input-length point)."""
    wl = case.workload
    perf = replica_perf(scenario, wl.model, case.gpu, wl.precision, case.tp, wl.runtime)
    profile = load_profile(perf, wl)
    point = load_point(profile, rate_rps, with_tpot_p95=False)
    rate_per_ms = rate_rps / 1000.0
    rho = rate_per_ms * profile.prefill_mean_ms
    service_scv = profile.prefill_second_moment_ms2 / profile.prefill_mean_ms ** 2 - 1.0
    wait_ms = pk_mean_wait_ms(rate_per_ms, profile.prefill_mean_ms,
                              profile.prefill_second_moment_ms2) * kingman_factor(
        profile.replica_scv(rate_rps), service_scv)
    inputs = length_samples(wl.input_tokens)
    own = np.array([perf.prefill_time_ms(*cache_split(float(x), wl.prefix_cache_hit_rate))
                    for x in inputs.tokens])
    step_ms = point.ttft_p95_ms - profile.prefill_p95_ms - wait_quantile_ms(wait_ms, rho, q)
    mean_tail = wait_ms / rho if rho > 0 and wait_ms > 0 else 0.0

    def cdf(t: float) -> float:
        x = t - step_ms - own
        f_w = np.where(x >= 0, 1.0 - (rho * np.exp(-x / mean_tail) if mean_tail > 0 else 0.0),
                       0.0)
        return float(inputs.weights @ f_w)

    low, high = 0.0, point.ttft_p95_ms * 2 + 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (low, mid) if cdf(mid) >= q else (mid, high)
    return high


@contextlib.contextmanager
def arrivals_seen(arrival_ms: FloatArray, replicas: int, rate_rps: float) -> Iterator[None]:
    """The capacity model's per-token quantile, inside this block, with the count of prompts in
    a life taken from ``arrival_ms`` as arrivals saw it (module docstring)."""
    real = replica_model.tpot_quantile_ms
    rate_per_ms = rate_rps / 1000.0
    after = np.arange(arrival_ms.size)

    def seen(window_ms: float) -> FloatArray:
        followers = np.searchsorted(arrival_ms, arrival_ms + window_ms, side="right") - after - 1
        counts = np.bincount(followers // replicas).astype(np.float64)
        return counts / counts.sum()

    def quantile(decode_steps: npt.ArrayLike, weights: npt.ArrayLike, step_ms: float,
                 jump_ms: npt.ArrayLike, jump_weights: npt.ArrayLike,
                 expected_jumps: npt.ArrayLike, waiting_share: float = 0.0,
                 jumps_per_wait: float = 0.0, cap_ms: npt.ArrayLike = math.inf,
                 q: float = 0.95, dispersion: float = 1.0) -> float:
        m = np.asarray(decode_steps, dtype=np.float64)
        windows = np.broadcast_to(np.asarray(expected_jumps, dtype=np.float64), m.shape)
        windows = windows / rate_per_ms  # the life window of each length point [ms]
        rho = waiting_share if jumps_per_wait > 0 else 0.0
        mean_wait_ms = jumps_per_wait / rate_per_ms if jumps_per_wait > 0 else 0.0
        pmfs = []
        for t in windows:
            pmf = seen(t)
            if rho > 0:
                waited = seen(t + mean_wait_ms)
                k = max(pmf.size, waited.size)
                pmf = ((1 - rho) * np.pad(pmf, (0, k - pmf.size))
                       + rho * np.pad(waited, (0, k - waited.size)))
            pmfs.append(pmf)
        return _quantile_with_counts(m, np.asarray(weights, dtype=np.float64), step_ms,
                                     jump_ms, jump_weights, pmfs, cap_ms, q)

    replica_model.tpot_quantile_ms = quantile
    try:
        yield
    finally:
        replica_model.tpot_quantile_ms = real


def _quantile_with_counts(m: FloatArray, weights: FloatArray, step_ms: float,
                          jump_ms: npt.ArrayLike, jump_weights: npt.ArrayLike,
                          count_pmfs: list[FloatArray], cap_ms: npt.ArrayLike,
                          q: float) -> float:
    """solver.capacity.queueing.tpot_quantile_ms with each row's count of prompts given as a
    distribution (``count_pmfs``) instead of Poisson / negative binomial + geometric."""
    w = weights / weights.sum()
    jumps = np.broadcast_to(np.asarray(jump_ms, dtype=np.float64), (m.size, np.size(jump_weights)))
    jw = np.asarray(jump_weights, dtype=np.float64)
    jw = jw / jw.sum()
    cap = np.broadcast_to(np.asarray(cap_ms, dtype=np.float64), m.shape)
    most = max(p.size for p in count_pmfs)
    counts = np.array([np.pad(p, (0, most - p.size)) for p in count_pmfs])
    k = np.arange(most)
    mean_k, second_k = counts @ k, counts @ (k * k)
    s1, s2 = jumps @ jw, (jumps * jumps) @ jw
    mean_a = mean_k * s1
    var_a = mean_k * (s2 - s1 * s1) + (second_k - mean_k * mean_k) * s1 * s1
    span = mean_a + GRID_SDS * np.sqrt(np.maximum(var_a, 0.0)) + jumps.max(axis=1)
    if not (span > 0).any() or not (cap > 0).any():
        return step_ms
    cell = np.where(span > 0, span, 1.0) / GRID_CELLS
    phi_s = np.fft.rfft(binned_jumps(jumps, jw, cell), axis=1)
    phi = np.zeros_like(phi_s)
    for j in range(most - 1, -1, -1):  # Σ_k P(K = k) φ_S^k (Horner)
        phi = phi * phi_s + counts[:, j][:, None]
    return mixture_quantile_ms(phi, w, m, cell, step_ms, np.minimum(cap, span), q)


def rows(scenario: Scenario, case: agreement.Case, trace: Trace,
         window_s: float) -> list[str]:
    """Two table rows (intact, node lost) for one case."""
    wl = case.workload
    perf = replica_perf(scenario, wl.model, case.gpu, wl.precision, case.tp, wl.runtime)
    out = []
    for r in agreement.replay_case(scenario, case, trace, window_s):
        s, serving, per_replica = r.summary, r.serving, r.per_replica_rps
        model = load_point(load_profile(perf, wl), per_replica)
        with arrivals_seen(r.arrival_ms, serving, per_replica):
            seen = load_point(load_profile(perf, wl), per_replica)
        ttft_sum = ttft_sum_quantile_ms(scenario, case, per_replica)
        cells = [wl.name, f"{case.gpu} × {case.tp}", r.label, str(serving),
                 f"{s.ttft_ms.p95:,.0f}", agreement._vs(model.ttft_p95_ms, s.ttft_ms.p95,
                                                        "{:,.0f}"),
                 agreement._vs(ttft_sum, s.ttft_ms.p95, "{:,.0f}"), f"{s.tpot_ms.p95:.1f}",
                 agreement._vs(model.tpot_p95_ms, s.tpot_ms.p95, "{:.1f}"),
                 agreement._vs(seen.tpot_p95_ms, s.tpot_ms.p95, "{:.1f}")]
        out.append("| " + " | ".join(cells) + " |")
    return out


FOLLOWER_WINDOWS_S = (0.001, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0)


def followers(scenario: Scenario, traces: Path, window_s: float) -> None:
    """Per trace window: mean arrivals following an arrival within T, λ T, and the share of
    arrivals with at least one follower within T."""
    print("| trace (workload) | window rate [req/s] | T [s] | followers, mean | λ T | excess | "
          "share with a follower |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, workload_name in agreement.CASES:
        wl = scenario.workload(workload_name)
        cut, start_s, rate = agreement.window(read_trace(traces / name),
                                              max(wl.hourly_demand_rps()), window_s)
        t = cut.arrival_s[cut.arrival_s >= start_s]
        after = np.arange(t.size)
        for span in FOLLOWER_WINDOWS_S:
            f = np.searchsorted(t, t + span, side="right") - after - 1
            f = f[t + span <= t[-1]]  # arrivals whose window lies inside the trace
            print(f"| {name} ({workload_name}) | {rate:.2f} | {span:g} | {f.mean():.2f} | "
                  f"{rate * span:.2f} | {f.mean() - rate * span:.2f} | {(f > 0).mean():.2f} |")


def main(argv: list[str]) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--window-s", type=float, default=600.0)
    parser.add_argument("--traces", type=Path, default=agreement.TRACES)
    parser.add_argument("--also", action="append", default=[], metavar="WORKLOAD=GPU:TP:N")
    parser.add_argument("--followers", action="store_true")
    args = parser.parse_args(argv)
    if not args.traces.is_dir():
        sys.exit(f"no traces at {args.traces}")
    scenario = load_scenario(demo_scenario())
    if args.followers:
        followers(scenario, args.traces, args.window_s)
        return
    print("| workload | GPU × TP | case | replicas | TTFT P95 replay [ms] | model | quantile of "
          "the sum | TPOT P95 replay [ms] | model | as arrivals see it |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for case, trace in agreement.cases(scenario, args.traces, args.also, followers=False):
        for line in rows(scenario, case, trace, args.window_s):
            print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
