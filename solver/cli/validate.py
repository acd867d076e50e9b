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
from solver.cli.common import echo_json, json_option, load, scenario_argument
from solver.outputs.summary import ScenarioSummary, summarize

_LETTER = {PurchaseKind.reserved: "r", PurchaseKind.on_demand: "o", PurchaseKind.spot: "s",
           PurchaseKind.owned: "w"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _kind_letters(kinds: tuple[PurchaseKind, ...]) -> str:
    return "/".join(_LETTER[k] for k in kinds)


def _gpus_text(allowed: tuple[str, ...] | None) -> str:
    return "all" if allowed is None else ", ".join(allowed)


def render(summary: ScenarioSummary) -> list[str]:
    """The summary as lines of text for people (one screen for a scenario of a few pools)."""
    lines = [f"scenario {summary.name}: valid"]
    if summary.description:
        lines.extend(textwrap.wrap(summary.description, 98, initial_indent="  ",
                                   subsequent_indent="  "))
    lines.append("")
    lines.append(f"workloads ({len(summary.workloads)})")
    rows = [("name", "model", "prec", "class", "tenant", "peak rps", "peak tok/s in+out",
             "survive", "GPUs")]
    rows += [(w.name, w.model, w.precision.value, w.workload_class.value, w.tenant,
              f"{w.peak_rps:.2f}",
              f"{w.peak_input_tokens_per_s:,.0f}+{w.peak_output_tokens_per_s:,.0f}",
              w.survivability.value, _gpus_text(w.allowed_gpus))
             for w in summary.workloads]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {5, 6}  # numbers align right
    for row in rows:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                 for i, c in enumerate(row)]
        lines.append("  " + " ".join(cells).rstrip())
    lines.append(f"  peak demand, all pools: {summary.peak_tokens_per_s:,.0f} tokens/s "
                 "(sum of each pool's peak)")
    lines.append("")
    zone_count = sum(len(z) for z in summary.regions.values())
    lines.append(f"zones ({zone_count} in {_plural(len(summary.regions), 'region')}; "
                 "GPU ×GPUs per node, r/o/s = reserved/on-demand/spot sold)")
    for region, zones in summary.regions.items():
        for i, zone in enumerate(zones):
            offers = "  ".join(f"{g} ×{o.gpus_per_node} {_kind_letters(o.kinds)}"
                               for g, o in zone.offers.items())
            label = f"{zone.id} ({zone.name})" if zone.name else zone.id
            lines.append(f"  {region if i == 0 else '':<16} {label:<12} {offers}")
    lines.append("")
    lines.append(f"GPU types on offer ({len(summary.gpus)} of {summary.catalog_gpu_count} in the "
                 f"catalog; {summary.catalog_model_count} models)")
    for g in summary.gpus:
        price = ("no on-demand" if g.cheapest_on_demand_per_gpu_hour is None else
                 f"on-demand from {g.cheapest_on_demand_per_gpu_hour:,.2f} "
                 f"{summary.currency}/GPU-h")
        lines.append(f"  {g.name:<10} {g.memory_gib:>7.2f} GiB  {g.gpus_per_node}/node  "
                     f"{','.join(p.value for p in g.precisions):<18} {g.zones} zones  {price}")
    if summary.measured:
        lines.append("")
        lines.append(f"measured rows ({len(summary.measured)})")
        for m in summary.measured:
            lines.append(f"  {m.workload}: {m.model} on {m.gpu} {m.precision.value} TP{m.tp}: "
                         f"{m.max_stable_sequences} sequences, {m.tested_peak_rps:g} req/s "
                         f"(measured {m.measured_on})")
    return lines


@click.command("validate")
@scenario_argument()
@json_option
def command(scenario: Path | None, as_json: bool) -> None:
    """Check SCENARIO (default: the built-in demo) and print a one-screen summary.

    Exit 0 when valid; exit 2 with every problem (file, place in it, fix) when not.
    """
    summary = summarize(load(scenario))
    for warning in summary.measured_warnings:  # measured rows the capacity model will not use
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json({"valid": True, **summary.model_dump(mode="json")})
        return
    click.echo("\n".join(render(summary)))
