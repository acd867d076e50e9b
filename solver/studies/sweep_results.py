"""A sweep's results table: one row per variant, its varied values, then what its plan says.

The same table goes to ``sweep.csv``, the *Sweep* sheet of ``sweep.xlsx`` and ``--json``. Rows
are in the sweep's order whatever order the plans finished in; a variant that failed (after its
retry) has a row too, with status ``failed`` and the error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from models.plan import Plan
from models.text import csv_cell
from solver.studies.compare import ComparisonRow, gpu_types, plan_row
from solver.studies.sweep import SweepVariant

FAILED = "failed"


@dataclass(frozen=True)
class SweepResult:
    """A variant and how it ended."""

    variant: SweepVariant
    plan: Plan | None
    """``None`` where the variant failed."""
    seconds: float | None
    """Worker wall time of its plan [s]."""
    attempts: int
    error: str | None = None
    resumed: bool = False
    """Read back from an earlier run's record, not planned in this one."""

    @property
    def row(self) -> ComparisonRow | None:
        """The plan's side-by-side figures."""
        return None if self.plan is None else plan_row(self.variant.label, self.plan)

    @property
    def status(self) -> str:
        """The solver status, or ``failed``."""
        return FAILED if self.plan is None else self.plan.status.value


def results_table(results: Sequence[SweepResult], keys: Sequence[str]) -> pd.DataFrame:
    """One row per variant: index, label, key, the value of each varied key, sample, status,
    cost per month and per million tokens, gap, survivability, its margin, reserved share,
    committed share (reserved + owned),
    GPUs by type and in all, plan seconds, attempts, error, and what cannot be met (an
    infeasible plan's diagnosis, as the comparison workbook gives it)."""
    rows_of = [r.row for r in results]
    types = gpu_types([row for row in rows_of if row is not None])
    records: list[dict[str, Any]] = []
    for result, row in zip(results, rows_of, strict=True):
        variant = result.variant
        record: dict[str, Any] = {"variant": variant.index + 1, "label": variant.label,
                                  "key": variant.key}
        record.update({key: variant.shown(key) for key, _ in variant.values})
        record["sample"] = variant.sample
        record["status"] = result.status
        record["currency"] = result.plan.cost.currency if result.plan is not None else None
        record["cost_per_month"] = row.cost_per_month if row else None
        record["cost_per_million_tokens"] = row.per_million_tokens if row else None
        record["gap"] = row.gap if row else None
        record["survivability"] = row.survivability if row else None
        record["survivability_margin"] = row.survivability_margin if row else None
        record["reserved_share"] = row.reserved_share if row else None
        record["committed_share"] = row.committed_share if row else None
        for gpu in types:
            record[f"gpus_{gpu}"] = row.gpus_by_type.get(gpu, 0) if row else None
        record["gpus_total"] = sum(row.gpus_by_type.values()) if row else None
        record["plan_seconds"] = result.seconds
        record["attempts"] = result.attempts
        record["error"] = result.error
        record["diagnosis"] = ("; ".join(d.message for d in result.plan.diagnosis) or None
                               if result.plan is not None else None)
        records.append(record)
    columns = ["variant", "label", "key", *keys, "sample", "status", "currency",
               "cost_per_month", "cost_per_million_tokens", "gap", "survivability",
               "survivability_margin", "reserved_share", "committed_share",
               *(f"gpus_{g}" for g in types),
               "gpus_total", "plan_seconds", "attempts", "error", "diagnosis"]
    frame = pd.DataFrame.from_records(records, columns=columns)
    if all(r.variant.sample is None for r in results):
        frame = frame.drop(columns="sample")
    return frame


def results_csv(frame: pd.DataFrame) -> str:
    """``sweep.csv``: the table, text cells made inert, numbers at full precision."""
    return str(frame.map(csv_cell).to_csv(index=False, lineterminator="\n"))
