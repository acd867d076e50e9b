"""``fleetplan capacity``: every candidate configuration of each workload, sorted by cost."""

from __future__ import annotations

import math
from pathlib import Path

import click

from models.capacity import CapacityRow, CapacitySource, CapacityTable
from models.common import CLOUD_KINDS
from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.measured import stale_measurements
from solver.capacity.queueing import arrivals_label
from solver.capacity.table import borrowed_costs, borrowed_note, build_capacity_table
from solver.cli.common import echo_json, json_option, load, scenario_argument
from solver.cli.show import Col, table_lines
from solver.outputs.labels import config_label, label, slo_text
from solver.outputs.slo_binding import binding_text, row_e2e_ms


def _money(value: float | None) -> str | None:
    return None if value is None or math.isinf(value) else f"{value:,.3f}"


def _e2e_slo_text(workload: Workload) -> str:
    """`` / end-to-end 20,000 ms of a 500-token answer`` where the workload states
    ``slo.e2e_p95_ms``, else nothing."""
    e2e_ms = workload.slo.e2e_p95_ms
    if e2e_ms is None:
        return ""
    return f" / end-to-end {e2e_ms:,g} ms of a {workload.output_tokens.p95:,}-token answer"


def _cells(row: CapacityRow, decodes: bool) -> list[object]:
    """A row's cells; ``decodes`` False (outputs of one token): no per-token P95 ("—")."""
    cost = row.cost_per_million_tokens
    return [
        config_label(row.gpu, row.tp), label(row.precision), label(row.source),
        f"{row.slo_rps:,.2f}", f"{row.input_tokens_per_s:,.0f}", f"{row.output_tokens_per_s:,.0f}",
        f"{row.max_stable_sequences:,d}", f"{row.ttft_p95_ms:,.0f}",
        f"{row.tpot_p95_ms:,.1f}" if decodes else "—",
        f"{row.headroom:.0%}",
        *(_money(cost.get(kind)) for kind in CLOUD_KINDS),
    ]


def e2e_cells(row: CapacityRow, workload: Workload) -> list[object]:
    """A row's end-to-end P95 of a P95 answer and the SLO that binds its rate, the two cells a
    workload stating ``slo.e2e_p95_ms`` adds (:func:`e2e_headers`); none for one that states
    none."""
    e2e_ms = row_e2e_ms(row, workload)
    if e2e_ms is None:
        return []
    return [f"{e2e_ms:,.0f}", binding_text(row, workload)]


def e2e_headers(workload: Workload) -> list[Col | str]:
    """The columns of :func:`e2e_cells`."""
    if workload.slo.e2e_p95_ms is None:
        return []
    return [Col("End-to-end P95 [ms]", right=True), "Binding SLO"]


def headers(currency: str) -> list[Col | str]:
    """Columns of a workload's candidate table."""
    return ["Configuration", "Precision", "Capacity", Col("SLO rate [req/s]", right=True),
            Col("Input [tokens/s]", right=True), Col("Output [tokens/s]", right=True),
            Col("Sequences", right=True), Col("TTFT P95 [ms]", right=True),
            Col("Per-token P95 [ms]", right=True), Col("Latency slack at SLO rate", right=True),
            *(Col(f"{label(k)} [{currency}/Mtok]", right=True) for k in CLOUD_KINDS)]


def unplaceable_lines(scenario: Scenario, rows: tuple[CapacityRow, ...]) -> list[str]:
    """A line per GPU whose candidates of some TP no node the zones sell (or hold) holds: the
    table lists every allowed GPU at the catalog's TP degrees, the plan only those a node of
    the scenario holds (a zone selling 1-GPU nodes runs TP1 alone)."""
    wide: dict[str, list[int]] = {}
    for row in rows:
        sizes = scenario.node_sizes(row.gpu)
        if sizes and row.tp > max(sizes):
            wide.setdefault(row.gpu, []).append(row.tp)
    return [f"  not placeable: {gpu} {', '.join(f'TP{t}' for t in sorted(tps))} (the zones sell "
            f"{gpu} in {' or '.join(f'{n}-GPU' for n in scenario.node_sizes(gpu))} nodes)"
            for gpu, tps in wide.items()]


def borrowed_lines(scenario: Scenario, runtime: str, rows: tuple[CapacityRow, ...]
                   ) -> list[str]:
    """A line per analytic GPU whose ``runtime`` costs were fitted on another GPU: its rows
    rest on no measurement of its own (:func:`~solver.capacity.table.borrowed_costs`)."""
    lines: list[str] = []
    for gpu in dict.fromkeys(r.gpu for r in rows if r.source is CapacitySource.analytic):
        fitted_on = borrowed_costs(scenario, runtime, gpu)
        if fitted_on is not None:
            lines.append(f"  {gpu}: {runtime}'s {borrowed_note(gpu, fitted_on)} "
                         "(docs/calibration.md); a measured row of yours overrides it")
    return lines


def render(scenario: Scenario, table: CapacityTable, explain: bool) -> list[str]:
    """The readable report: one table per workload, then (``explain``) rejections and notes.

    Only the GPU types a zone sells or the inventory holds, the ones a plan can place: a
    workload without ``allowed_gpus`` on a builtin catalog listed B200, MI300X, L4 … priced
    "—" beside the few sold (s21 F5), noise on a large scenario; they are named in one line
    (``--json`` keeps their rows)."""
    out: list[str] = []
    sold = set(scenario.gpus_sold_or_held())
    for workload in scenario.workloads:
        every = table.for_workload(workload.name)
        rows = tuple(r for r in every if r.gpu in sold)
        unsold = list(dict.fromkeys(r.gpu for r in every if r.gpu not in sold))
        burst = workload.arrival.burst if workload.arrival is not None else None
        scv = None if burst is None else burst.interarrival_scv
        arrivals = arrivals_label(scv, burst is not None and burst.followers is not None,
                                  None if burst is None else burst.measured_from)
        out.append(f"{workload.name}: {workload.model} {label(workload.precision)} on "
                   f"{workload.runtime}, {slo_text(workload, _e2e_slo_text(workload))}, arrivals "
                   f"{arrivals}, "
                   f"{len(rows)} candidates")
        if rows:
            out += table_lines([*headers(scenario.policy.currency), *e2e_headers(workload)],
                               [[*_cells(r, workload.has_second_token), *e2e_cells(r, workload)]
                                for r in rows])
            out += unplaceable_lines(scenario, rows)
            out += borrowed_lines(scenario, workload.runtime, rows)
        else:
            out.append("  no configuration can serve this workload"
                       + (" on a GPU type a zone sells" if unsold else ""))
        if unsold:
            out.append(f"  left out, sold in no zone: {', '.join(unsold)} "
                       f"({len(every) - len(rows)} candidates; `--json` lists them)")
        if explain:
            for row in rows:
                out.append(f"  {config_label(row.gpu, row.tp)}: {row.note}")
            for rej in (r for r in table.rejected
                        if r.workload == workload.name and r.gpu in sold):
                out.append(f"  rejected {config_label(rej.gpu, rej.tp)}: {rej.reason}")
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
