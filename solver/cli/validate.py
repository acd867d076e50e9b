"""``fleetplan validate``: load a scenario and say what is in it, or everything wrong with it.

Parse → validate → summarize (:func:`solver.outputs.summary.summarize`) → print. A bad scenario
raises
:class:`~models.errors.InputError`, which the command group prints as a list of located problems
with exit code 2.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import click

from models.common import PurchaseKind
from models.scenario import Scenario
from solver.cli.common import echo_json, json_option, load, scenario_argument
from solver.cli.lead_times import with_lead_times
from solver.cli.show import Col, table_lines
from solver.outputs.labels import config_label, label, plural
from solver.outputs.summary import ScenarioSummary, ZoneSummary, summarize


def _gpus_text(allowed: tuple[str, ...] | None) -> str:
    return "all" if allowed is None else ", ".join(allowed)


def _offers_text(zone: ZoneSummary) -> str:
    """``A10G (4), L4 (4): reserved, on-demand, spot; H200 (8): reserved``: GPU types with
    their node size, grouped by the purchase kinds sold; kinds stated with stock 0 after them,
    ``H100-SXM (8): reserved (spot: stock 0, not offered)``, or ``none (…)`` where no kind
    has stock."""
    groups: dict[tuple[tuple[PurchaseKind, ...], tuple[PurchaseKind, ...]], list[str]] = {}
    for gpu, offer in zone.offers.items():
        groups.setdefault((offer.kinds, offer.no_stock), []).append(
            f"{gpu} ({offer.gpus_per_node})")

    def kinds_text(kinds: tuple[PurchaseKind, ...], no_stock: tuple[PurchaseKind, ...]) -> str:
        sold = ", ".join(label(k).lower() for k in kinds) or "none"
        if not no_stock:
            return sold
        return (f"{sold} ({', '.join(label(k).lower() for k in no_stock)}: stock 0, "
                "not offered)")

    return "; ".join(", ".join(gpus) + ": " + kinds_text(*kinds)
                     for kinds, gpus in groups.items())


def render(summary: ScenarioSummary) -> list[str]:
    """The summary as lines of text for people (one screen for a scenario of a few pools)."""
    lines = [f"scenario {summary.name}: valid"]
    if summary.description:
        lines.extend(textwrap.wrap(summary.description, 98, initial_indent="  ",
                                   subsequent_indent="  "))
    lines.append("")
    lines.append(f"workloads ({len(summary.workloads)})")
    lines += table_lines(
        ["Name", "Model", "Precision", "Class", "Tenant", Col("Peak [req/s]", right=True),
         Col("Peak input + output [tokens/s]", right=True), "Survives", "GPUs"],
        [(w.name, w.model, label(w.precision), label(w.workload_class), w.tenant,
          f"{w.peak_rps:,.2f}",
          f"{w.peak_input_tokens_per_s:,.0f} + {w.peak_output_tokens_per_s:,.0f}",
          label(w.survivability), _gpus_text(w.allowed_gpus))
         for w in summary.workloads])
    lines.append(f"  peak demand, all pools: {summary.peak_tokens_per_s:,.0f} tokens/s "
                 "(sum of each pool's peak)")
    lines.append("")
    zone_count = sum(len(z) for z in summary.regions.values())
    lines.append(f"zones ({zone_count} in {plural(len(summary.regions), 'region')})")
    lines += table_lines(
        ["Region", "Zone", "GPU types on offer (GPUs per node): purchase kinds sold"],
        [(region if i == 0 else "", f"{zone.id} ({zone.name})" if zone.name else zone.id,
          _offers_text(zone))
         for region, zones in summary.regions.items() for i, zone in enumerate(zones)])
    lines.append("")
    lines.append(f"GPU types on offer ({len(summary.gpus)} of {summary.catalog_gpu_count} in the "
                 f"catalog; {plural(summary.catalog_model_count, 'model')})")
    lines += table_lines(
        ["GPU", Col("Memory [GiB]", right=True), Col("GPUs per node", right=True),
         "Precisions", Col("Zones", right=True),
         Col(f"Cheapest on-demand [{summary.currency}/GPU-hour]", right=True)],
        [(g.name, f"{g.memory_gib:,.2f}", ", ".join(map(str, g.gpus_per_node)),
          ", ".join(label(p) for p in g.precisions), g.zones,
          "not sold" if g.cheapest_on_demand_per_gpu_hour is None
          else f"{g.cheapest_on_demand_per_gpu_hour:,.2f}")
         for g in summary.gpus])
    if summary.over_time:
        lines.append("")
        lines.append("planning over time")
        lines += [f"  {line}" for line in summary.over_time]
    if summary.measured:
        lines.append("")
        lines.append(f"measured rows ({len(summary.measured)})")
        for m in summary.measured:
            lines.append(f"  {m.workload}: {m.model} on "
                         f"{config_label(m.gpu, m.tp, m.precision)}: "
                         f"{m.max_stable_sequences} sequences, {m.tested_peak_rps:g} req/s "
                         f"(measured {m.measured_on})"
                         + ("" if m.used else " — not used (the warning above says why)"))
    return lines


def warnings_of(summary: ScenarioSummary, slo: bool = True) -> list[str]:
    """What a well-formed scenario should still be told, as ``note: …`` and ``warning: …``
    lines: a burst block measured from a linked trace (a note); measured rows the capacity
    model will not use; inventory and order quotes that count for nothing; an SLO no
    configuration meets (``slo``: `plan` names those in its diagnosis instead); a trace without
    its burst block that gives none, or that records its arrivals in batches; a node's price
    written per GPU."""
    return [*(f"note: {n}" for n in summary.trace_notes),
            *(f"warning: {w}" for w in (
                *summary.measured_warnings, *summary.inventory_warnings,
                *summary.growth_warnings,
                *(summary.slo_warnings if slo else ()), *summary.fit_warnings,
                *summary.stock_warnings,
                *summary.trace_warnings,
                *summary.price_warnings))]


def summary_of(scenario: Scenario) -> ScenarioSummary:
    """The scenario's summary with what outputs cannot compute: orders too late for a period
    (the program's date rule), linked traces no burst block can be measured from (the
    replay's profile), and those holding requests longer than the model's context."""
    summary = with_lead_times(summarize(scenario), scenario)
    if not any(w.arrival is not None and w.arrival.trace is not None
               for w in scenario.workloads):
        return summary
    # numpy: only where a trace is
    from solver.replay.plan_replay import linked_context_warnings
    from solver.replay.trace_burst import batched_trace_warnings, trace_burst_warnings

    return summary.model_copy(update={"trace_warnings": (
        *trace_burst_warnings(scenario), *batched_trace_warnings(scenario),
        *linked_context_warnings(scenario))})


def scenario_warnings(scenario: Scenario, slo: bool = True) -> list[str]:
    """:func:`warnings_of` the scenario's summary (`plan` prints them before it plans: a user
    who runs plan alone, as README's first command does, saw none of them)."""
    return warnings_of(summary_of(scenario), slo)


@click.command("validate")
@scenario_argument()
@json_option
def command(scenario: Path | None, as_json: bool) -> None:
    """Check SCENARIO (default: the built-in demo) and print a one-screen summary.

    Exit 0 when valid; exit 2 with every problem (file, place in it, fix) when not.
    """
    sc = load(scenario)
    summary = summary_of(sc)
    for line in warnings_of(summary):
        click.echo(line, err=True)
    if as_json:
        echo_json({"valid": True, **summary.model_dump(mode="json")})
        return
    click.echo("\n".join(render(summary)))
