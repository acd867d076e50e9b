"""Words people read for the schema's enum values, configurations and failures.

Outputs for people (report, workbook, charts, terminal tables) show these labels; ``plan.json``,
``contract.yaml`` and ``--json`` keep the enum values, which are the interface. One place, so a
purchase kind reads the same in every file.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import TYPE_CHECKING

from models.common import (
    CapacitySource,
    Precision,
    PurchaseKind,
    SolveStatus,
    Survivability,
    Upfront,
    WorkloadClass,
)

if TYPE_CHECKING:  # validate labels a scenario without importing the plan's models
    from models.plan import Plan, SolverReport
    from models.workload import Workload

__all__ = ["FROM_TODAY", "NO_SECOND_TOKEN", "OBJECTIVE_AS_MINIMISED", "RERUN_NOTE", "TO_EXCLUSIVE",
           "WORK_LIMIT_HELP", "WORK_LIMIT_NOTE", "WORK_LIMIT_SHORT", "config_label", "day_after",
           "diagnosis_title", "failure_label", "label", "margin_label", "plural", "slo_text",
           "status_label"]

_LABELS: tuple[tuple[Enum, str], ...] = (
    (PurchaseKind.reserved, "Reserved"),
    (PurchaseKind.on_demand, "On-demand"),
    (PurchaseKind.spot, "Spot"),
    (PurchaseKind.owned, "Owned"),
    (WorkloadClass.interactive, "Interactive"),
    (WorkloadClass.batch, "Batch"),
    (Survivability.none, "None"),
    (Survivability.n_plus_1, "N+1 (a node)"),
    (Survivability.zone_loss, "Zone loss"),
    (CapacitySource.analytic, "Predicted"),
    (CapacitySource.measured, "Measured"),
    (Precision.bf16, "BF16"),
    (Precision.fp8, "FP8"),
    (Precision.int8, "INT8"),
    (Precision.int4, "INT4"),
    (Upfront.none, "no upfront"),
    (Upfront.partial, "partial upfront"),
    (Upfront.all, "all upfront"),
)
#: :data:`_LABELS` by enum type and value: the schema's enums are string enums, equal (and
#: hashed alike) where their values are, so a mapping keyed by the members alone took
#: ``Upfront.none`` for ``Survivability.none`` ("None": the Schedule sheet's Upfront column
#: read as an empty cell).
_BY_TYPE: dict[tuple[type, str], str] = {(type(k), k.value): v for k, v in _LABELS}

#: What a plan stopped at its time limit cannot promise (terminal and report.md say it): the
#: search's progress in a given time depends on the machine and its load.
RERUN_NOTE = ("this plan is as far as the search got in that time on this machine under its "
              "load, so a re-run of the same input can give a different plan (each within the "
              "gap it states)")


#: What a plan over periods stopped by its search limit (branch-and-bound nodes, not seconds)
#: promises: docs/program.md, "Same input, same plan over periods".
WORK_LIMIT_NOTE = ("its search is limited in work (branch-and-bound nodes), not in seconds, so "
                   "a re-run of the same input gives this plan again, on any machine load")


#: What narrows the gap of such a plan, and what does not: its stages stop at node limits
#: fixed in the code, so more seconds give the same plan (docs/program.md, "Same input, same
#: plan over periods").
WORK_LIMIT_HELP = ("a longer --time-limit gives this same plan: the search's work limit is "
                   "fixed, and the time limit only adds a safety stop (and more time for "
                   "blocks too large to solve whole, a plan that then says time_limit); a "
                   "smaller program is searched further in the same work: fewer periods or "
                   "demand scenarios, or dedicated pools (policy.share_nodes: false), which "
                   "cost more (docs/program.md, \"Same input, same plan over periods\")")


#: The figure a plan over periods is the cheapest by, named as the Summary sheet and the
#: comparison workbook both name it (:func:`solver.outputs.figures.objective_cost`).
OBJECTIVE_AS_MINIMISED = ("Objective over the horizon, as the plan minimised it (orders as the "
                          "program charges them, owned hardware amortised; held inventory left "
                          "out)")


#: The one convention of dates on screen: a span runs from its first day "to" the day after
#: its last (as the horizon, its periods and an order's term end), said once per output.
TO_EXCLUSIVE = "a date after \"to\" is the day after the last"

#: Beside a horizon start taken from the day of planning (``HorizonStart.today``; plan.json
#: ``horizon.start_from``).
FROM_TODAY = ("the day it was planned: the scenario gives no `horizon` and no `policy.as_of`, "
              "so planned on another day its dates differ (give `policy.as_of` to fix them)")


def day_after(day: dt.date) -> dt.date:
    """The end of a span written "to" (:data:`TO_EXCLUSIVE`) whose last day is ``day``: an
    inventory line's ``ends`` (its last day held) shown as orders and periods end."""
    return day + dt.timedelta(days=1)


#: :data:`WORK_LIMIT_HELP` in a clause, where the status lines above say it in full.
WORK_LIMIT_SHORT = ("a longer --time-limit gives this same plan, a smaller program (fewer "
                    "periods or demand scenarios, or dedicated pools) is searched further "
                    "(docs/program.md, \"Same input, same plan over periods\")")


def label(value: Enum | str | None) -> str:
    """The label of an enum value (its words, not its identifier); other values as text.

    A value without a label of its own reads as its identifier with ``_`` as spaces and the
    first letter capitalised (``time_limit`` → ``Time limit``).
    """
    if value is None:
        return ""
    if isinstance(value, Enum) and (type(value), value.value) in _BY_TYPE:
        return _BY_TYPE[(type(value), value.value)]
    text = str(value.value if isinstance(value, Enum) else value)
    if isinstance(value, Enum):
        text = text.replace("_", " ")
        return text[:1].upper() + text[1:]
    return text


def status_label(status: SolveStatus, solver: SolverReport) -> str:
    """The solve's outcome as people read it. ``optimal`` means proven within the requested
    gap, not proven cheapest: beside "gap 1.00%" the bare word reads as a contradiction, so a
    gap that shows (0.01 % or more) is said: ``Proven within 1.00% of the cheapest``; a solver
    that reports no gap (CBC) stopped at the requested one."""
    if status is SolveStatus.optimal:
        from models.plan import proves_cheapest  # here: validate imports labels, not the plan

        if solver.gap is None:
            return "Proven within the requested gap of the cheapest"
        if not proves_cheapest(status, solver):
            return f"Proven within {solver.gap:.2%} of the cheapest"
        return "Optimal"
    # a fallback fleet (no stage found one) is said wherever the status is: the report's and
    # workbook's status line too, not only the terminal's note — stopped by the clock or the user
    fallback = ", fallback fleet" if solver.fallback else ""
    if status is SolveStatus.time_limit:
        return "Stopped at the time limit" + fallback
    if status is SolveStatus.interrupted:
        return label(status) + fallback
    return label(status)


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 workload``, ``2 workloads`` (``words``: an irregular plural)."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def config_label(gpu: str, tp: int, precision: Precision | None = None) -> str:
    """A replica configuration as people read it: ``H100-SXM TP2 (2 GPUs)``.

    The tensor-parallel degree is the number of GPUs one replica spans; ``H100-SXM ×2`` read as
    two replicas, so the count is spelled out. ``precision`` adds the weight format in front of
    the parenthesis: ``H100-SXM FP8 TP2 (2 GPUs)``.
    """
    prec = f" {label(precision)}" if precision is not None else ""
    return f"{gpu}{prec} TP{tp} ({plural(tp, 'GPU')})"


def margin_label(fraction: float) -> str:
    """A survivability margin, signed: whole percent, one decimal under 1 % (a zone loss leaving
    code-completion 0.134 of 27.5 req/s short read "fails -0%" beside "holds +0%", as if a
    margin of 0 both failed and held; the demo's tightest chat margin read "+0%")."""
    return f"{fraction:+.{1 if abs(fraction) < 0.01 else 0}%}"


def failure_label(failure: str) -> str:
    """A failure id of the survivability rows in words: ``zone:use1-az1`` → ``Zone use1-az1
    lost``; ``node:use1-az1/H100-SXM/spot`` → ``One H100-SXM spot node in use1-az1 lost``;
    ``none`` → ``No failure``."""
    kind, _, where = failure.partition(":")
    if kind == "none" and not where:
        return "No failure"
    if kind == "zone":
        return f"Zone {where} lost"
    if kind == "region":
        return f"Region {where} lost"
    if kind == "node":
        zone, _, rest = where.partition("/")
        gpu, _, kind = rest.partition("/")
        bought = f" {label(PurchaseKind(kind)).lower()}" if kind in set(PurchaseKind) else ""
        return f"One {gpu}{bought} node in {zone} lost" if gpu else f"One node in {zone} lost"
    return failure


PARTLY_HELD_RULE = ("a period counts only nodes held through the whole of it: its fleet "
                    "must hold on each of its days, those after the reservation ends too")
"""Why a held reservation ending inside a period carries no load there, not pro rata
(``validate``'s inventory line, the workbook's Summary)."""


def diagnosis_title(plan: Plan) -> str:
    """The heading of a plan's diagnosis in the report and the workbook: an infeasible
    scenario's, or (a budget no fleet was found within in time: solver.solve.budget) why no
    fleet was found, which is not proven infeasible."""
    if plan.status is SolveStatus.infeasible:
        return "Why the scenario is infeasible"
    return "Why no fleet was found"


#: Where a workload's outputs are one token (an embedding, a reranker): no per-token time,
#: so no per-token SLO is planned (``Workload.tpot_slo_ms``).
NO_SECOND_TOKEN = "no per-token SLO (one-token outputs)"


def slo_text(workload: Workload, e2e: str = "") -> str:
    """``SLO TTFT 1000 ms / TPOT 50 ms (P95)``; where the outputs have no second token
    ``SLO TTFT 200 ms (P95), no per-token SLO (one-token outputs)``; ``e2e`` (the end-to-end
    target's words, `` / end-to-end …``) before the ``(P95)``."""
    ttft = f"SLO TTFT {workload.slo.ttft_p95_ms:g} ms"
    if not workload.has_second_token:
        return f"{ttft}{e2e} (P95), {NO_SECOND_TOKEN}"
    return f"{ttft} / TPOT {workload.tpot_slo_ms:g} ms{e2e} (P95)"
