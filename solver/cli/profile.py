"""``fleetplan profile``: turn a request trace into a workload profile and a pasteable block."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from solver.cli.common import echo_json, json_option
from solver.replay.profile import TraceProfile, profile_trace, workload_fields
from solver.replay.traces import TraceFormat, read_trace


@click.command("profile")
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice([f.value for f in TraceFormat]),
              default=None, help="Trace format (default: detected from the file).")
@json_option
def command(trace: Path, fmt: str | None, as_json: bool) -> None:
    """Profile TRACE: arrival rates, token-length percentiles, prefix reuse, daily shape.

    Prints a workload block to paste into a scenario (add name, model and slo).
    """
    prof = profile_trace(read_trace(trace, TraceFormat(fmt) if fmt else None))
    if as_json:
        echo_json(prof.as_json())
        return
    click.echo(render(prof))


def render(prof: TraceProfile) -> str:
    """Readable summary followed by the YAML workload block."""
    minutes = prof.duration_s / 60
    reuse = "none in trace" if prof.prefix_reuse is None else f"{prof.prefix_reuse:.1%}"
    lines = [
        f"trace {prof.source}: {prof.requests:,} requests over {minutes:,.1f} min",
        f"  arrival rate     mean {prof.mean_rps:.2f} req/s, P95 minute "
        f"{prof.p95_minute_rps:.2f}, peak minute {prof.peak_minute_rps:.2f}",
        "                       mean      P50      P95      P99",
    ]
    for label, s in (("input tokens ", prof.input_tokens), ("output tokens", prof.output_tokens)):
        lines.append(f"  {label}  {s.mean:9,.0f}{s.p50:9,.0f}{s.p95:9,.0f}{s.p99:9,.0f}")
    lines.append(f"  prefix reuse     {reuse} (share of 512-token prefix blocks seen before)")
    if prof.hourly_shape is None:
        lines.append("  hourly shape     trace spans under a day: give arrival.hourly_shape "
                     "yourself (default: flat)")
    lines += [
        "",
        "# workload block: add name, model and slo, then paste it under `workloads:`",
        yaml.safe_dump(workload_fields(prof), sort_keys=False, default_flow_style=None).rstrip(),
    ]
    return "\n".join(lines)
