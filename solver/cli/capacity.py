"""``fleetplan capacity``: every candidate configuration of each workload, sorted by cost."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import click

from models.capacity import CapacityRow, CapacityTable
from models.common import CLOUD_KINDS
from models.scenario import Scenario
from solver.capacity.measured import stale_measurements
from solver.capacity.table import build_capacity_table
from solver.cli.common import echo_json, json_option, load, scenario_argument


def _grid(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Right-aligned text table (first column left-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _money(value: float | None) -> str:
    return "-" if value is None or math.isinf(value) else f"{value:.3f}"


def _cells(row: CapacityRow) -> list[str]:
    cost = row.cost_per_million_tokens
    return [
        f"{row.gpu} ×{row.tp}", row.precision.value, row.source.value,
        f"{row.slo_rps:.2f}", f"{row.input_tokens_per_s:,.0f}", f"{row.output_tokens_per_s:,.0f}",
        f"{row.max_stable_sequences:,d}", f"{row.ttft_p95_ms:.0f}", f"{row.tpot_p95_ms:.1f}",
        f"{row.headroom:.0%}",
        *(_money(cost.get(kind)) for kind in CLOUD_KINDS),
    ]


HEADERS = ("config", "prec", "source", "req/s", "in tok/s", "out tok/s", "seqs", "TTFT95 ms",
           "TPOT95 ms", "headroom", *(f"$/Mtok {k.value}" for k in CLOUD_KINDS))


def render(scenario: Scenario, table: CapacityTable, explain: bool) -> list[str]:
    """The readable report: one table per workload, then (``explain``) rejections and notes."""
    out: list[str] = []
    for workload in scenario.workloads:
        rows = table.for_workload(workload.name)
        out.append(f"{workload.name}: {workload.model} {workload.precision.value} on "
                   f"{workload.runtime}, SLO TTFT {workload.slo.ttft_p95_ms:g} ms / TPOT "
                   f"{workload.slo.tpot_p95_ms:g} ms (P95), {len(rows)} candidates")
        if rows:
            out.extend("  " + line for line in _grid(HEADERS, [_cells(r) for r in rows]))
        else:
            out.append("  no configuration can serve this workload")
        if explain:
            for row in rows:
                out.append(f"  {row.gpu} ×{row.tp}: {row.note}")
            for rej in (r for r in table.rejected if r.workload == workload.name):
                out.append(f"  rejected {rej.gpu} ×{rej.tp}: {rej.reason}")
        out.append("")
    return out


@click.command("capacity")
@scenario_argument()
@json_option
@click.option("--explain", is_flag=True, help="Also list rejected configurations and why.")
def command(scenario: Path | None, as_json: bool, explain: bool) -> None:
    """What one replica of each configuration carries under each workload's SLO.

    SCENARIO defaults to the built-in demo. Candidates are sorted by their cheapest cost per
    million tokens.
    """
    sc = load(scenario)
    table = build_capacity_table(sc)
    warnings = stale_measurements(sc)
    if as_json:
        echo_json({
            "scenario": sc.name,
            "rows": [r.model_dump(mode="json") for r in table.rows],
            "rejected": [r.model_dump(mode="json") for r in table.rejected],
            "warnings": warnings,
        })
        return
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    for line in render(sc, table, explain):
        click.echo(line)
