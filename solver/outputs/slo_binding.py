"""Which SLO binds a capacity row, and its end-to-end P95, as the deliverable shows them.

A row's SLO-holding rate is where its tightest SLO is met (docs/capacity-model.md, "The
end-to-end SLO"): TTFT, per-token or — where the workload states ``slo.e2e_p95_ms`` — the
end-to-end time of an answer of the P95 output length. The workbook's Pools sheet, report.md's
workloads table and ``fleetplan capacity`` name that SLO beside the row's P95s, so a planner
sees why a rate is what it is. A measured row whose own latencies are over an SLO the user
stated is not used (``solver.capacity.measured``: ``e2e_mismatch`` and the TTFT and per-token
checks beside it), so a row shown over its SLO is one a table was given as it is.
"""

from __future__ import annotations

from models.capacity import CapacityRow
from models.workload import Workload
from solver.capacity.replica import e2e_p95_ms

#: An SLO met this close at a row's SLO-holding rate is the one that binds it [1]: the rate
#: search stops within a relative width of 10⁻⁴ of the edge (solver.capacity.replica's
#: RATE_TOLERANCE), which leaves the binding P95 up to a few tenths of a percent under its
#: SLO (0.2 % on the demo's chat H100-SXM TP8 row at a 20-s end-to-end SLO).
BINDING_SLACK = 0.01


def row_e2e_ms(row: CapacityRow, workload: Workload) -> float | None:
    """End-to-end P95 of an answer of the workload's P95 output length at the row's P95s [ms]
    (TTFT P95 + (output P95 − 1) × per-token P95); ``None`` where the workload states no
    ``slo.e2e_p95_ms``."""
    if workload.slo.e2e_p95_ms is None:
        return None
    return e2e_p95_ms(row.ttft_p95_ms, row.tpot_p95_ms, workload.output_tokens.p95)


def slo_shares(row: CapacityRow, workload: Workload) -> dict[str, float]:
    """Each SLO the workload states → the share of it the row's P95 leaves unused [1]
    (negative where the P95 is over it: a measured row can be), in the order TTFT,
    per-token, end-to-end."""
    shares = {"TTFT": 1 - row.ttft_p95_ms / workload.slo.ttft_p95_ms}
    if workload.has_second_token:
        shares["per-token"] = 1 - row.tpot_p95_ms / workload.tpot_slo_ms
    e2e_ms = row_e2e_ms(row, workload)
    if e2e_ms is not None and workload.slo.e2e_p95_ms is not None:
        shares["end-to-end"] = 1 - e2e_ms / workload.slo.e2e_p95_ms
    return shares


def binding_text(row: CapacityRow, workload: Workload) -> str:
    """Which SLO limits the row's rate, in words: ``end-to-end`` (the tightest, within
    :data:`BINDING_SLACK` of its target); ``none (TTFT 23 % left)`` where no SLO is that
    close (an analytic rate limited by the KV cache or saturation, or a measured rate, which is
    the load test's); ``end-to-end BROKEN (+8 %)`` where the row's own P95 is over its SLO
    (no row the planner builds is: a measured one past an SLO is not used)."""
    shares = slo_shares(row, workload)
    broken = [f"{name} BROKEN (+{-share:.0%})" for name, share in shares.items()
              if share < -1e-9]
    if broken:
        return "; ".join(broken)
    name, share = min(shares.items(), key=lambda kv: kv[1])
    if share < BINDING_SLACK:
        return name
    return f"none ({name} {share:.0%} left)"
