"""``fleetplan profile``: turn a request trace, or vLLM's Prometheus metrics, into a workload
profile and a pasteable block."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from solver.cli.common import echo_json, given_file, json_option
from solver.cli.show import Col, table_lines
from solver.outputs.labels import plural
from solver.replay.profile import TraceProfile, profile_trace, workload_fields
from solver.replay.prometheus import profile_prometheus, read_prometheus
from solver.replay.traces import TraceFormat, read_trace

#: Above the block: where it goes in a scenario, what it lacks, and how far its lines indent
#: (a block pasted flush under `workloads:` was not a list item, and did not load).
PASTE_HINT = "\n".join([
    "# workload block: one item of `workloads:`; give it a name, a model and an SLO, and indent",
    "# its lines to line up under `name:` (here 4 spaces):",
    "# workloads:",
    "#   - name: chat",
    "#     model: Llama-3.1-8B",
    "#     slo: {ttft_p95_ms: 1000, tpot_p95_ms: 50}",
    "#     arrival: …  (the lines below, each indented 4 spaces)",
])


@click.command("profile")
@click.argument("trace", type=click.Path(path_type=Path), required=False)
@click.option("--format", "fmt", type=click.Choice([f.value for f in TraceFormat]),
              default=None, help="Trace format (default: detected from the file).")
@click.option("--prometheus", type=click.Path(path_type=Path), default=None,
              callback=given_file(),
              help="Profile a Prometheus export of vLLM's metrics (range-query JSON or CSV) "
                   "instead of a trace.")
@json_option
def command(trace: Path | None, fmt: str | None, prometheus: Path | None, as_json: bool) -> None:
    """Profile TRACE: arrival rates, token-length percentiles, prefix reuse, daily shape.

    With --prometheus FILE the same figures come from vLLM's metrics: request counters,
    the prompt and generation token histograms (histogram_quantile), prefix-cache hits.
    Prints a workload block to paste into a scenario as one item of `workloads:` (add name,
    model and slo, and indent it under `name:`).
    """
    if (trace is None) == (prometheus is None):
        raise click.UsageError("give a TRACE, or --prometheus FILE (not both)")
    notes: list[str] = []
    if prometheus is not None:
        prof, notes = profile_prometheus(read_prometheus(prometheus), str(prometheus))
    else:
        assert trace is not None
        prof = profile_trace(read_trace(trace, TraceFormat(fmt) if fmt else None))
    if as_json:
        echo_json({**prof.as_json(), **({"notes": notes} if prometheus is not None else {})})
        return
    click.echo(render(prof, metrics=prometheus is not None, notes=notes))


#: What the block assumes where the prefix reuse is unknown.
NO_REUSE_SAID = ("; the block leaves prefix_cache_hit_rate out, so none is assumed: give your "
                 "cache's hit rate if you know it")


def render(prof: TraceProfile, metrics: bool = False, notes: list[str] | None = None) -> str:
    """Readable summary followed by the YAML workload block (``metrics``: from Prometheus)."""
    minutes = prof.duration_s / 60
    what = "metrics" if metrics else "trace"
    reuse_line = ("prefix-cache hit rate (vLLM's hits ÷ queries)" if metrics else
                  "share of 512-token prefix blocks seen before")
    # unknown, not zero: "none in trace" read as no reuse measured (the block leaves the
    # field out, and the schema's 0 applies)
    none = ("unknown: the export has no prefix-cache counters" if metrics else
            "unknown: the trace has no prefix block ids") + NO_REUSE_SAID
    reuse = none if prof.prefix_reuse is None else f"{prof.prefix_reuse:.1%}"
    lines = [
        f"{what} {prof.source}: {plural(prof.requests, 'request')} over {minutes:,.1f} min",
        f"  arrival rate: mean {prof.mean_rps:,.2f} req/s, P95 minute "
        f"{prof.p95_minute_rps:,.2f}, peak minute {prof.peak_minute_rps:,.2f}",
    ]
    tokens = "Tokens (histogram_quantile of vLLM's token histograms)" if metrics else "Tokens"
    block = workload_fields(prof)  # the table shows the block's whole tokens (rounded up)
    lines += table_lines([tokens, *(Col(t, right=True) for t in ("Mean", "P50", "P95", "P99"))],
                         [(name, f"{block[f'{name}_tokens']['mean']:,.1f}",
                           *(f"{block[f'{name}_tokens'][p]:,}" for p in ("p50", "p95", "p99")))
                          for name, s in (("input", prof.input_tokens),
                                          ("output", prof.output_tokens))])
    lines.append(f"  prefix reuse ({reuse_line}): {reuse}")
    lines += burst_lines(prof)
    if prof.hourly_shape is None:
        lines.append(f"  hourly shape: the {what} spans under a day: give arrival.hourly_shape "
                     "yourself (default: flat)")
    lines += [f"  note: {n}" for n in notes or []]
    warning = prof.peak_warning(what)
    if warning is not None:
        lines.append(f"  warning: {warning}")
    batched = prof.batching_warning(what)
    if batched is not None:
        lines.append(f"  warning: {batched}")
    lines += [
        "",
        PASTE_HINT,
        *([f"# warning: arrival.peak_rps is a floor, not a peak ({what} too short; above)"]
          if warning is not None else []),
        *([f"# warning: arrival.burst measures the {what}'s recorded batches, not its "
           "traffic (above)"] if batched is not None else []),
        yaml.safe_dump(block, sort_keys=False, default_flow_style=None).rstrip(),
    ]
    return "\n".join(lines)


def burst_lines(prof: TraceProfile) -> list[str]:
    """The burstiness figures, or why there are none (a metrics export: Poisson assumed)."""
    b = prof.burstiness
    if b is None:
        return ["  burstiness: no arrival times in the export: the capacity model assumes "
                "Poisson arrivals (give arrival.burst from a trace)"]

    def ratio(w: int) -> str:
        r = b.peak_ratio.get(w)
        return "—" if r is None else f"{r:.2f}×"

    scv = "—" if b.interarrival_scv is None else f"{b.interarrival_scv:.2f}"
    lines = [f"  burstiness: busiest 1 s {ratio(1)}, 10 s {ratio(10)}, 60 s {ratio(60)} the mean "
             f"of their hour; inter-arrival SCV {scv} (Poisson: 1)"]
    if b.followers:
        one = next((f for f in b.followers if f[0] == 1.0), b.followers[0])
        last = b.followers[-1]
        lines.append(
            f"  followers (arrival.burst.followers): within {one[0]:g} mean "
            f"gap{'' if one[0] == 1 else 's'} at the peak minute's rate an arrival is followed "
            f"by {one[1]:,.2f} others on average (Poisson: {one[0]:g}), within {last[0]:g} by "
            f"{last[1]:,.1f} (variance {last[2]:,.0f}); the capacity model deals such bursts "
            f"out over the replicas")
    return lines
