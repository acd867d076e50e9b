"""``fleetplan estimate``: memory, latency and throughput of one replica configuration."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from models.catalog import EfficiencyFactors, GpuType, LlmSpec
from models.common import CapacitySource, Precision
from models.errors import InputError, Problem, did_you_mean
from models.loader import load_catalog, load_runtimes
from models.measured import MeasuredCapacity
from models.names import resolve_gpu, resolve_model
from models.policy import Policy
from models.runtime import resolve_runtime
from models.scenario import Scenario
from solver.capacity.measured import staleness
from solver.capacity.memory import (
    MemoryPlan,
    fit_problem,
    kv_bytes_per_token,
    kv_precision,
    max_stable_sequences,
    memory_plan,
)
from solver.capacity.perf import perf_model, runtime_efficiency
from solver.capacity.replica import closed_loop
from solver.capacity.table import borrowed_note, costs_fitted_elsewhere
from solver.cli.common import echo_json, given_file, json_option, load
from solver.cli.show import Col, table_lines
from solver.outputs.labels import config_label, label

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


@dataclass(frozen=True)
class Estimate:
    """Every figure ``fleetplan estimate`` shows; :meth:`contract` is the ``--json`` object."""

    plan: MemoryPlan
    kv_bytes_per_token: float
    max_stable_sequences: int
    prefill_ms: float
    ttft_ms: float
    tpot_ms: float
    output_tokens_per_s: float
    max_output_tokens_per_s: float
    source: CapacitySource
    running_sequences: int
    """Sequences decoding at once: the concurrency, capped at the max stable sequences (the
    rest queue for a slot) [sequences]."""
    queue_wait_ms: float
    """Mean wait of a request for a slot, part of ``ttft_ms`` (0 when all fit) [ms]."""
    costs_fitted_on: str | None = None
    """The other GPU whose measurements fitted the runtime's fixed costs the analytic figures
    take (:func:`~solver.capacity.table.borrowed_costs`, as ``capacity`` and ``plan`` say);
    ``None`` where they are the GPU's own, the runtime lists none, or the figures measured."""

    def contract(self) -> dict[str, Any]:
        """The flat ``--json`` object, keys in the documented order."""
        return {
            "weights_gib": self.plan.weights_gib,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_capacity_tokens": self.plan.kv_capacity_tokens,
            "max_stable_sequences": self.max_stable_sequences,
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "output_tokens_per_s": self.output_tokens_per_s,
            "max_output_tokens_per_s": self.max_output_tokens_per_s,
            "source": self.source.value,
            "running_sequences": self.running_sequences,
            "queue_wait_ms": self.queue_wait_ms,
            "costs_fitted_on": self.costs_fitted_on,
        }


def estimate(
    spec: LlmSpec, gpu: GpuType, precision: Precision, tp: int, input_tokens: int,
    output_tokens: int, concurrency: int, policy: Policy, measured: MeasuredCapacity | None,
    efficiency: EfficiencyFactors | None = None, catalog: Sequence[GpuType] = (),
) -> Estimate:
    """Memory and closed-loop performance of one replica (measured figures where given), with
    ``efficiency`` (default: the GPU's own; a runtime's:
    :func:`solver.capacity.perf.runtime_efficiency`); ``catalog``: the GPUs a fix may name
    when the configuration does not fit."""
    context = input_tokens + output_tokens
    if context > spec.max_context_tokens:  # as the scenario loader checks a workload's P99
        raise InputError([Problem(WHERE, "--input-tokens", f"{input_tokens} + {output_tokens} "
                                  f"tokens exceed {spec.name}'s maximum context of "
                                  f"{spec.max_context_tokens}",
                                  "lower --input-tokens/--output-tokens, or pick a "
                                  "longer-context --model")])
    problem = fit_problem(spec, gpu, precision, tp, policy, context, catalog)
    if problem is not None:
        raise InputError([Problem(WHERE, "--tp", f"{spec.name} on {tp} × {gpu.name} at "
                                  f"{precision.value}: {problem.cause}", problem.fix)])
    plan = memory_plan(spec, gpu, precision, tp, policy.memory_margin_fraction)
    perf = perf_model(spec, gpu, precision, tp, efficiency,
                      memory_margin_fraction=policy.memory_margin_fraction)
    seqs = max_stable_sequences(plan.kv_capacity_tokens, context)
    # no more than the KV cache holds run at once; the other clients wait for a slot, and by
    # Little's law over all C clients (C = X × (wait + TTFT + O × TPOT), with the running N
    # giving N = X × (TTFT + O × TPOT)) each waits (C − N) ÷ X
    running = min(concurrency, seqs)
    at = closed_loop(perf, input_tokens, output_tokens, running)
    best = closed_loop(perf, input_tokens, output_tokens, seqs)
    wait_ms = (concurrency - running) * 1000.0 / at.requests_per_s if concurrency > running else 0.0
    result = Estimate(
        plan=plan, kv_bytes_per_token=kv_bytes_per_token(spec, kv_precision(precision)),
        max_stable_sequences=seqs, prefill_ms=perf.prefill_time_ms(input_tokens),
        ttft_ms=at.ttft_ms + wait_ms, tpot_ms=at.tpot_ms,
        output_tokens_per_s=at.output_tokens_per_s,
        max_output_tokens_per_s=best.output_tokens_per_s, source=CapacitySource.analytic,
        running_sequences=running, queue_wait_ms=wait_ms,
    )
    if measured is None:
        return result
    return replace(result, max_stable_sequences=measured.max_stable_sequences,
                   ttft_ms=measured.ttft_p95_ms, tpot_ms=measured.decode_p95_ms_per_token,
                   output_tokens_per_s=measured.tested_peak_rps * output_tokens,
                   source=CapacitySource.measured,
                   running_sequences=measured.max_stable_sequences, queue_wait_ms=0.0,
                   costs_fitted_on=None)


@click.command("estimate")
@click.option("--model", required=True,
              help="Model: a catalog name or a Hugging Face id "
                   "(meta-llama/Llama-3.1-8B-Instruct).")
@click.option("--gpu", required=True,
              help="GPU: a catalog name, a common name (H100) or an instance type "
                   "(p5.48xlarge).")
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
@click.option("--runtime", default="vllm", show_default=True,
              help="Serving runtime whose fixed costs the step times take (a runtime catalog "
                   "name, e.g. vllm, trtllm).")
@click.option("--scenario", type=click.Path(path_type=Path), default=None, callback=given_file(),
              help="Take the catalog, policy and measured rows from this scenario "
                   "(default: the built-in catalog).")
@json_option
def command(model: str, gpu: str, precision: str, tp: int, input_tokens: int,
            output_tokens: int, concurrency: int, runtime: str, scenario: Path | None,
            as_json: bool) -> None:
    """Memory, KV capacity, TTFT, time per output token and throughput of one replica."""
    sc = load(scenario) if scenario is not None else None
    if sc is not None:
        gpus, models, policy, runtimes = sc.gpus, sc.models, sc.policy, sc.runtimes
    else:
        gpus, models, _ = load_catalog()
        policy, runtimes = Policy(), load_runtimes()
    spec_rt = resolve_runtime(runtime, runtimes)
    if spec_rt is None and runtimes:
        raise InputError([Problem(WHERE, "--runtime", f"unknown runtime `{runtime}`",
                                  did_you_mean(runtime, [n for r in runtimes
                                                         for n in r.names()]))])
    # the names people type (H100, p5.48xlarge, meta-llama/Llama-3.1-8B-Instruct), as a
    # scenario and import-bench take them
    model_name, _ = resolve_model(model, {m.name: m.aliases for m in models})
    gpu_name, _, _ = resolve_gpu(gpu, [g.name for g in gpus])
    spec: LlmSpec = _pick(model_name or model, {m.name: m for m in models}, "--model", "model")
    gpu_type: GpuType = _pick(gpu_name or gpu, {g.name: g for g in gpus}, "--gpu", "GPU")
    prec = Precision(precision)
    measured = _measured(sc, spec, gpu_type, prec, tp, input_tokens, output_tokens)
    result = estimate(spec, gpu_type, prec, tp, input_tokens, output_tokens, concurrency,
                      policy, measured, runtime_efficiency(gpu_type, spec_rt, tp), gpus)
    if result.source is CapacitySource.analytic:
        result = replace(result, costs_fitted_on=costs_fitted_elsewhere(spec_rt, gpu_type.name))
    if as_json:
        echo_json(result.contract())
        return
    _print(spec, gpu_type, prec, tp, input_tokens, output_tokens, concurrency, result,
           runtime if spec_rt is None else spec_rt.name)


def _print(spec: LlmSpec, gpu: GpuType, precision: Precision, tp: int, input_tokens: int,
           output_tokens: int, concurrency: int, est: Estimate, runtime: str) -> None:
    echo = click.echo
    plan = est.plan
    echo(f"{spec.name} on {config_label(gpu.name, tp)}, {label(precision)} weights, "
         f"{label(kv_precision(precision))} KV cache — {input_tokens:,} in / {output_tokens:,} "
         f"out ({label(est.source).lower()})")
    if est.costs_fitted_on is not None:
        echo(f"{runtime}'s {borrowed_note(gpu.name, est.costs_fitted_on)} "
             "(docs/calibration.md); a measured row of yours (--scenario) overrides it")
    echo("")
    memory = [("Weights", plan.weights_gib), ("Runtime overhead", plan.runtime_overhead_gib),
              ("Safety margin", plan.margin_gib), ("KV cache", plan.kv_gib),
              ("Total", plan.memory_gib)]
    for line in table_lines(["Memory per GPU", Col("[GiB]", right=True)],
                            [(name, f"{gib:,.2f}") for name, gib in memory], indent=0):
        echo(line)
    echo("")
    measured = est.source is CapacitySource.measured
    queued = concurrency - est.running_sequences
    at = ("at the measured peak (P95)" if measured
          else f"at concurrency {concurrency} (means)" if queued <= 0
          else f"at concurrency {concurrency} ({est.running_sequences:,} running, {queued:,} "
               "queued; means)")
    ttft_note = (at if measured or queued <= 0
                 else f"{at}, {est.queue_wait_ms:,.1f} of it waiting for a slot")
    figures: list[tuple[str, str, str]] = [
        ("KV bytes per token", f"{est.kv_bytes_per_token:,.0f}",
         f"{plan.kv_bytes_per_token_per_gpu:,.0f} per GPU"),
        ("KV capacity [tokens]", f"{plan.kv_capacity_tokens:,d}", ""),
        ("Max stable sequences", f"{est.max_stable_sequences:,d}",
         f"at {input_tokens + output_tokens:,} tokens each"),
        ("Prefill of one prompt [ms]", f"{est.prefill_ms:,.1f}", ""),
        ("TTFT [ms]", f"{est.ttft_ms:,.1f}", ttft_note),
        ("Time per output token [ms]", f"{est.tpot_ms:,.2f}", at),
        ("Output tokens/s", f"{est.output_tokens_per_s:,.0f}", at),
        ("Max output tokens/s", f"{est.max_output_tokens_per_s:,.0f}",
         f"no latency limit, {est.max_stable_sequences:,} sequences"),
    ]
    for line in table_lines(["Figure", Col("Value", right=True), "Note"], figures, indent=0):
        echo(line)
    if not measured and queued > 0:
        echo(f"warning: concurrency {concurrency} exceeds the {est.max_stable_sequences} "
             f"sequences the KV cache holds; {queued:,} requests queue for a slot (their wait "
             "is in the TTFT) and throughput stays at the maximum", err=True)
