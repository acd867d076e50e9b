"""``fleetplan profile``: turn a request trace, or vLLM's Prometheus metrics, into a workload
profile and a pasteable block."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from models.catalog import LlmSpec
from models.errors import InputError, Problem, did_you_mean
from models.loader import load_catalog
from models.names import resolve_model
from solver.cli.common import echo_json, given_file, json_option
from solver.cli.show import Col, table_lines
from solver.outputs.labels import plural
from solver.replay.profile import (
    OverContext,
    TraceProfile,
    over_context,
    profile_trace,
    workload_fields,
)
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
@click.option("--model", default=None,
              help="Count the trace's requests longer than this model's context (a catalog "
                   "name or a Hugging Face id): they will be rejected, never truncated.")
@json_option
def command(trace: Path | None, fmt: str | None, prometheus: Path | None, model: str | None,
            as_json: bool) -> None:
    """Profile TRACE: arrival rates, token-length percentiles, prefix reuse, daily shape.

    With --prometheus FILE the same figures come from vLLM's metrics: request counters,
    the prompt and generation token histograms (histogram_quantile), prefix-cache hits.
    Prints a workload block to paste into a scenario as one item of `workloads:` (add name,
    model and slo, and indent it under `name:`).
    """
    if (trace is None) == (prometheus is None):
        raise click.UsageError("give a TRACE, or --prometheus FILE (not both)")
    notes: list[str] = []
    over: OverContext | None = None
    if prometheus is not None:
        if model is not None:
            raise click.UsageError("--model counts a trace's requests; a metrics export has "
                                   "no per-request lengths (give a TRACE)")
        prof, notes = profile_prometheus(read_prometheus(prometheus), str(prometheus))
    else:
        assert trace is not None
        read = read_trace(trace, TraceFormat(fmt) if fmt else None)
        prof = profile_trace(read)
        if model is not None:
            spec = catalog_model(model)
            over = over_context(read, spec.name, spec.max_context_tokens)
    if as_json:
        echo_json({**prof.as_json(), **({"notes": notes} if prometheus is not None else {}),
                   **({"over_context": over.as_dict()} if over is not None else {})})
        return
    click.echo(render(prof, metrics=prometheus is not None, notes=notes, over=over))


def catalog_model(model: str) -> LlmSpec:
    """The built-in catalog's model named ``model`` (a catalog name, an alias or a Hugging
    Face id, as a scenario names it), or the located error with the closest names."""
    _, models, _ = load_catalog()
    name, _ = resolve_model(model, {m.name: m.aliases for m in models})
    known = {m.name: m for m in models}
    if (name or model) not in known:
        raise InputError([Problem("fleetplan profile", "--model", f"unknown model `{model}`",
                                  did_you_mean(model, known))])
    return known[name or model]


#: What the block assumes where the prefix reuse is unknown.
NO_REUSE_SAID = ("; the block leaves prefix_cache_hit_rate out, so none is assumed: give your "
                 "cache's hit rate if you know it")


def render(prof: TraceProfile, metrics: bool = False, notes: list[str] | None = None,
           over: OverContext | None = None) -> str:
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
    too_long = None if over is None else over.warning(block["input_tokens"]["p99"])
    if over is not None:
        lines.append(f"  warning: {too_long}" if too_long is not None else
                     f"  context: every request fits {over.model}'s {over.context_tokens:,} "
                     f"tokens (the longest {over.longest_tokens:,}, input + output)")
    lines += [
        "",
        PASTE_HINT,
        *([f"# warning: arrival.peak_rps is a floor, not a peak ({what} too short; above)"]
          if warning is not None else []),
        *([f"# warning: arrival.burst measures the {what}'s recorded batches, not its "
           "traffic (above)"] if batched is not None else []),
        *([f"# warning: {plural(over.requests, 'request')} ({over.share_text}) "
           f"{'is' if over.requests == 1 else 'are'} longer than {over.model}'s context: "
           "rejected, not planned (above)"]
          if over is not None and too_long is not None else []),
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
