"""``fleetplan estimate``: memory, latency and throughput of one replica configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from models.catalog import GpuType, LlmSpec
from models.common import CapacitySource, Precision
from models.errors import InputError, Problem, did_you_mean
from models.loader import load_catalog
from models.measured import MeasuredCapacity
from models.policy import Policy
from models.scenario import Scenario
from solver.capacity import closed_loop, staleness
from solver.cli.common import echo_json, json_option, load
from solver.memory import (
    check_fit,
    kv_bytes_per_token,
    kv_precision,
    max_stable_sequences,
    memory_plan,
)
from solver.perf import perf_model

WHERE = "command line"


def _pick(name: str, known: dict[str, Any], option: str, what: str) -> Any:
    if name not in known:
        raise InputError([Problem(WHERE, option, f"unknown {what} `{name}`",
                                  did_you_mean(name, known))])
    return known[name]


def _measured(
    scenario: Scenario | None, spec: LlmSpec, gpu: GpuType, precision: Precision, tp: int,
    input_tokens: int, output_tokens: int,
) -> MeasuredCapacity | None:
    """A fresh measured row of this configuration on a workload of these P95 lengths."""
    if scenario is None:
        return None
    for row in sorted(scenario.measured, key=lambda r: r.measured_on, reverse=True):
        workload = scenario.workload(row.workload)
        if ((row.model, row.gpu, row.precision, row.tp) == (spec.name, gpu.name, precision, tp)
                and workload.input_tokens.p95 == input_tokens
                and workload.output_tokens.p95 == output_tokens
                and staleness(scenario, row) is None):
            return row
    return None


def estimate(
    spec: LlmSpec, gpu: GpuType, precision: Precision, tp: int, input_tokens: int,
    output_tokens: int, concurrency: int, policy: Policy, measured: MeasuredCapacity | None,
) -> dict[str, Any]:
    """Every figure of the estimate, flat (the ``--json`` object plus the memory breakdown)."""
    context = input_tokens + output_tokens
    reason = check_fit(spec, gpu, precision, tp, policy, context)
    if reason is not None:
        raise InputError([Problem(WHERE, "--tp", f"{spec.name} on {tp} × {gpu.name} at "
                                  f"{precision.value}: {reason}",
                                  "try a larger --tp, a smaller precision or another GPU")])
    plan = memory_plan(spec, gpu, precision, tp, policy.memory_margin_fraction)
    perf = perf_model(spec, gpu, precision, tp,
                      memory_margin_fraction=policy.memory_margin_fraction)
    seqs = max_stable_sequences(plan.kv_capacity_tokens, context)
    at = closed_loop(perf, input_tokens, output_tokens, concurrency)
    best = closed_loop(perf, input_tokens, output_tokens, seqs)
    out: dict[str, Any] = {
        "weights_gib": plan.weights_gib,
        "kv_bytes_per_token": kv_bytes_per_token(spec, kv_precision(precision)),
        "kv_capacity_tokens": plan.kv_capacity_tokens,
        "max_stable_sequences": seqs,
        "ttft_ms": at.ttft_ms,
        "tpot_ms": at.tpot_ms,
        "output_tokens_per_s": at.output_tokens_per_s,
        "max_output_tokens_per_s": best.output_tokens_per_s,
        "source": CapacitySource.analytic.value,
    }
    if measured is not None:
        out.update(max_stable_sequences=measured.max_stable_sequences,
                   ttft_ms=measured.ttft_p95_ms, tpot_ms=measured.decode_p95_ms_per_token,
                   output_tokens_per_s=measured.tested_peak_rps * output_tokens,
                   source=CapacitySource.measured.value)
    extra = {
        "memory_gib": plan.memory_gib, "runtime_overhead_gib": plan.runtime_overhead_gib,
        "margin_gib": plan.margin_gib, "kv_gib": plan.kv_gib,
        "kv_bytes_per_token_per_gpu": plan.kv_bytes_per_token_per_gpu,
        "kv_precision": kv_precision(precision).value,
        "prefill_ms": perf.prefill_time_ms(input_tokens),
        "max_concurrency_requests_per_s": best.requests_per_s,
        "requests_per_s": at.requests_per_s,
    }
    return {"figures": out, "extra": extra}


@click.command("estimate")
@click.option("--model", required=True, help="Model name from the catalog.")
@click.option("--gpu", required=True, help="GPU type name from the catalog.")
@click.option("--precision", required=True, type=click.Choice([p.value for p in Precision]),
              help="Weight precision.")
@click.option("--tp", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Tensor-parallel degree (GPUs per replica).")
@click.option("--input-tokens", required=True, type=click.IntRange(1),
              help="Prompt length [tokens].")
@click.option("--output-tokens", required=True, type=click.IntRange(1),
              help="Output length [tokens].")
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1),
              help="Requests in flight on the replica.")
@click.option("--scenario", type=click.Path(path_type=Path), default=None,
              help="Take the catalog, policy and measured rows from this scenario "
                   "(default: the built-in catalog).")
@json_option
def command(model: str, gpu: str, precision: str, tp: int, input_tokens: int,
            output_tokens: int, concurrency: int, scenario: Path | None, as_json: bool) -> None:
    """Memory, KV capacity, TTFT, time per output token and throughput of one replica."""
    sc = load(scenario) if scenario is not None else None
    if sc is not None:
        gpus, models, policy = sc.gpus, sc.models, sc.policy
    else:
        gpus, models, _ = load_catalog()
        policy = Policy()
    spec: LlmSpec = _pick(model, {m.name: m for m in models}, "--model", "model")
    gpu_type: GpuType = _pick(gpu, {g.name: g for g in gpus}, "--gpu", "GPU")
    prec = Precision(precision)
    measured = _measured(sc, spec, gpu_type, prec, tp, input_tokens, output_tokens)
    result = estimate(spec, gpu_type, prec, tp, input_tokens, output_tokens, concurrency,
                      policy, measured)
    fig, extra = result["figures"], result["extra"]
    if as_json:
        echo_json(fig)
        return
    _print(spec, gpu_type, prec, tp, input_tokens, output_tokens, concurrency, fig, extra)


def _print(spec: LlmSpec, gpu: GpuType, precision: Precision, tp: int, input_tokens: int,
           output_tokens: int, concurrency: int, fig: dict[str, Any],
           extra: dict[str, Any]) -> None:
    echo = click.echo
    echo(f"{spec.name} on {tp} × {gpu.name}, {precision.value} weights, "
         f"{extra['kv_precision']} KV cache — {input_tokens} in / {output_tokens} out "
         f"({fig['source']})")
    echo("")
    echo("memory per GPU               GiB")
    echo(f"  weights              {fig['weights_gib']:11.2f}")
    echo(f"  runtime overhead     {extra['runtime_overhead_gib']:11.2f}")
    echo(f"  safety margin        {extra['margin_gib']:11.2f}")
    echo(f"  KV cache             {extra['kv_gib']:11.2f}")
    echo(f"  total                {extra['memory_gib']:11.2f}")
    echo("")
    echo(f"KV bytes per token         {fig['kv_bytes_per_token']:12,.0f}  "
         f"({extra['kv_bytes_per_token_per_gpu']:,.0f} per GPU)")
    echo(f"KV capacity [tokens]       {fig['kv_capacity_tokens']:12,d}")
    echo(f"max stable sequences       {fig['max_stable_sequences']:12,d}  "
         f"at {input_tokens + output_tokens:,} tokens each")
    echo(f"prefill of one prompt [ms] {extra['prefill_ms']:12.1f}")
    echo("")
    label = "at the measured peak" if fig["source"] == "measured" else \
        f"at concurrency {concurrency}"
    echo(f"{label}:")
    echo(f"  TTFT [ms]                {fig['ttft_ms']:12.1f}")
    echo(f"  time per output token    {fig['tpot_ms']:12.2f} ms")
    echo(f"  output tokens/s          {fig['output_tokens_per_s']:12,.0f}")
    echo(f"max output tokens/s (no latency limit, {fig['max_stable_sequences']:,} sequences): "
         f"{fig['max_output_tokens_per_s']:,.0f}")
    if concurrency > fig["max_stable_sequences"]:
        echo(f"warning: concurrency {concurrency} exceeds the {fig['max_stable_sequences']} "
             "sequences the KV cache holds; the runtime would queue or preempt", err=True)
