"""Fidelity of fleetplan's step-time model against published serving measurements.

Every published figure (TTFT, time per output token, output throughput, a static batch's
end-to-end time) is predicted by the capacity model the planner uses, with the built-in
catalog's factors, and compared with what was measured; the error table goes into
docs/calibration.md ("Fidelity on published measurements"). Run from the repository root::

    .venv/bin/python benchmarks/fidelity.py [--perf ../shared/data/perf] [--write-docs]
        [--check] [--json out.json]

The figures:

* ``inputs/catalog/published_perf.csv`` — figures copied from public pages (NVIDIA NIM's
  benchmarking tables, vLLM's nightly benchmark), each with its source;
* Splitwise's measured Llama-2-70B and BLOOM-176B timings (``../shared/data/perf``), as TTFT
  (the prefill of a batch of prompts), per-token time (the decode step) and a static batch's
  output throughput ``batch × output ÷ (prefill + (output − 1) × step)`` computed from the two
  measured times of the same run;
* TensorRT-LLM's published maximum throughput (``../shared/data/perf``).

The built-in factors are fitted by ``fleetplan calibrate ../shared/data/perf --builtin`` with
whole (model, GPU) pairs held out (``solver.capacity.calibrate.BUILTIN_HELD_OUT_PAIRS``): a held-out
figure's model was never seen on that GPU by the fit. Each figure is predicted with its GPU's
silicon factors and its serving runtime's fixed costs (inputs/catalog/runtimes.yaml).
``--check`` exits 1 unless the targets of issue 17 hold on the held-out figures: median absolute
error ≤ 10 % for TTFT, per-token time and throughput separately on each of A100 and H100 and on one
other GPU (L40S, H200 or MI300X), and no quantity's median worse than 20 % on any GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.catalog import GpuType, LlmSpec  # noqa: E402
from models.common import Precision  # noqa: E402
from models.loader import load_catalog, load_runtimes  # noqa: E402
from models.runtime import RuntimeSpec, resolve_runtime  # noqa: E402
from solver.capacity.calibrate import (  # noqa: E402
    BUILTIN_HELD_OUT_PAIRS,
    batch_e2e_ms,
    batch_prefill_ms,
    first_token_ms,
    max_output_tokens_per_s,
)
from solver.capacity.perf import perf_model, runtime_efficiency  # noqa: E402
from solver.capacity.perfdata import (  # noqa: E402
    SPLITWISE_FILE,
    TRTLLM_FILE,
    Measurement,
    MeasurementKind,
    read_published_perf,
    read_splitwise,
    read_trtllm,
)
from solver.capacity.replica import closed_loop  # noqa: E402

DEFAULT_PERF_DIR = ROOT.parent / "shared" / "data" / "perf"
DOCS_FILE = ROOT / "docs" / "calibration.md"
BEGIN_MARK = "<!-- fidelity:begin (benchmarks/fidelity.py --write-docs) -->"
END_MARK = "<!-- fidelity:end -->"

#: The quantities the targets are on, then the static batch's end-to-end time.
QUANTITIES = ("ttft_ms", "tpot_ms", "output_tokens_per_s", "e2e_ms")
TARGETED = QUANTITIES[:3]
#: Median absolute error each targeted quantity must reach on held-out figures (issue 17) [1] ...
TARGET_MEDIAN = 0.10
#: ... on each of these GPUs ...
TARGET_GPUS = ("A100-80GB", "H100-SXM")
#: ... and on at least one of these; ...
OTHER_GPUS = ("L40S", "H200", "MI300X")
#: ... and no (GPU, quantity) median worse than this on any GPU.
CEILING_MEDIAN = 0.20

SPLITWISE_SOURCE = (f"Splitwise measurements (Mutinifni/splitwise-sim data/perf_model.csv, "
                    f"../shared/data/perf/{SPLITWISE_FILE})")
TRTLLM_SOURCE = (f"TensorRT-LLM perf-overview (../shared/data/perf/{TRTLLM_FILE})")

#: (model, GPU) pairs the built-in calibration never saw.
HELD_OUT_PAIRS = BUILTIN_HELD_OUT_PAIRS


@dataclass(frozen=True)
class Figure:
    """One published figure and the configuration it was measured on."""

    quantity: str
    """``ttft_ms``, ``tpot_ms``, ``output_tokens_per_s`` or ``e2e_ms``."""
    mode: str
    """``closed_loop`` (``concurrency`` clients), ``static_batch`` (``concurrency`` prompts
    prefilled together, then decoded together), ``first_step`` (a static batch whose first
    token comes from the decode step after the prefill) or ``max_throughput`` (unbounded
    rate)."""
    model: str
    gpu: str
    precision: str
    tp: int
    runtime: str
    input_tokens: int
    output_tokens: int
    concurrency: int
    value: float
    source: str

    @property
    def held_out(self) -> bool:
        """The figure's (model, GPU) pair is held out of the fit."""
        return (self.model, self.gpu) in HELD_OUT_PAIRS


def _figure(m: Measurement, quantity: str, mode: str, value: float, output: int,
            source: str) -> Figure:
    return Figure(quantity=quantity, mode=mode, model=str(m.model), gpu=m.gpu,
                  precision=m.precision.value, tp=m.tp, runtime=m.runtime,
                  input_tokens=m.input_tokens, output_tokens=output, concurrency=m.batch,
                  value=value, source=source)


#: Kinds of ``published_perf.csv`` measured on a static batch (``batch`` requests prefilled
#: together, then decoded together), and the quantity each is.
STATIC_KINDS: dict[MeasurementKind, str] = {
    MeasurementKind.prefill_ms: "ttft_ms",
    MeasurementKind.decode_step_ms: "tpot_ms",
    MeasurementKind.batch_output_tokens_per_s: "output_tokens_per_s",
    MeasurementKind.batch_e2e_ms: "e2e_ms",
    MeasurementKind.first_token_ms: "ttft_ms",
}


#: Kinds of ``published_perf.csv`` that time one kernel, not serving: calibration data only.
KERNEL_KINDS: frozenset[MeasurementKind] = frozenset({MeasurementKind.decode_attention_ms})


def published_figures() -> list[Figure]:
    """The serving figures of ``inputs/catalog/published_perf.csv``: static batches
    (:data:`STATIC_KINDS`) and closed loops (``ttft_ms``, ``tpot_ms``, ``output_tokens_per_s``);
    not the kernel timings (:data:`KERNEL_KINDS`)."""
    out = []
    for m in read_published_perf():
        if m.kind in KERNEL_KINDS:
            continue
        if m.kind in STATIC_KINDS:
            mode = ("first_step" if m.kind is MeasurementKind.first_token_ms
                    else "static_batch")
            out.append(_figure(m, STATIC_KINDS[m.kind], mode, m.value, m.output_tokens,
                               m.source))
        else:
            out.append(_figure(m, m.kind.value, "closed_loop", m.value, m.output_tokens,
                               m.source))
    return out


def splitwise_figures(perf_dir: Path) -> list[Figure]:
    """TTFT, per-token time and static-batch throughput from Splitwise's measured timings.

    TTFT: the prefill of ``batch`` prompts together (every prefill row). Per-token: the mean
    decode step (every decode row). Throughput: ``batch × output ÷ (prefill + (output − 1) ×
    step)`` of the runs with 128 output tokens, from the two times measured in the same run.
    """
    rows = read_splitwise(perf_dir / SPLITWISE_FILE)
    prefill = {(m.model, m.gpu, m.tp, m.input_tokens, m.batch): m.value
               for m in rows if m.kind is MeasurementKind.prefill_ms}
    out: list[Figure] = []
    for m in rows:
        if m.kind is MeasurementKind.prefill_ms:
            out.append(_figure(m, "ttft_ms", "static_batch", m.value, 1, SPLITWISE_SOURCE))
        elif m.kind is MeasurementKind.decode_step_ms:
            out.append(_figure(m, "tpot_ms", "static_batch", m.value, m.output_tokens,
                               SPLITWISE_SOURCE))
            ttft = prefill.get((m.model, m.gpu, m.tp, m.input_tokens, m.batch))
            if m.output_tokens == 128 and ttft is not None:
                seconds = (ttft + (m.output_tokens - 1) * m.value) / 1000.0
                out.append(_figure(m, "output_tokens_per_s", "static_batch",
                                   m.batch * m.output_tokens / seconds, m.output_tokens,
                                   SPLITWISE_SOURCE))
    return out


def trtllm_figures(perf_dir: Path) -> list[Figure]:
    """TensorRT-LLM's published maximum throughput, per replica [output tokens/s]."""
    return [_figure(m, "output_tokens_per_s", "max_throughput", m.value, m.output_tokens,
                    TRTLLM_SOURCE) for m in read_trtllm(perf_dir / TRTLLM_FILE)]


def all_figures(perf_dir: Path) -> list[Figure]:
    """Published figures, then the shared perf data's (those whose files exist)."""
    out = published_figures()
    if (perf_dir / SPLITWISE_FILE).exists():
        out += splitwise_figures(perf_dir)
    if (perf_dir / TRTLLM_FILE).exists():
        out += trtllm_figures(perf_dir)
    return out


# --- predictions ---------------------------------------------------------------------------


def predict(fig: Figure, gpu: GpuType, model: LlmSpec, runtime: RuntimeSpec | None) -> float:
    """The capacity model's value of ``fig`` with the GPU's factors and ``runtime``'s costs
    [its quantity's unit]."""
    perf = perf_model(model, gpu, Precision(fig.precision), fig.tp,
                      runtime_efficiency(gpu, runtime, fig.tp))
    if fig.mode == "max_throughput":
        return max_output_tokens_per_s(perf, fig.input_tokens, fig.output_tokens)
    if fig.mode == "first_step":
        return first_token_ms(perf, fig.concurrency, fig.input_tokens)
    if fig.mode == "closed_loop":
        loop = closed_loop(perf, fig.input_tokens, fig.output_tokens, fig.concurrency)
        return float(getattr(loop, fig.quantity))
    b = fig.concurrency
    if fig.quantity == "ttft_ms":
        return batch_prefill_ms(perf, b, fig.input_tokens)
    if fig.quantity == "tpot_ms":  # the mean KV of a decoding sequence
        return perf.decode_step_time_ms(b, round(b * (fig.input_tokens
                                                      + fig.output_tokens / 2)))
    e2e = batch_e2e_ms(perf, b, fig.input_tokens, fig.output_tokens)
    return e2e if fig.quantity == "e2e_ms" else b * fig.output_tokens / (e2e / 1000.0)


@dataclass(frozen=True)
class Outcome:
    """A figure, its prediction and the relative error (predicted − measured) ÷ measured."""

    figure: Figure
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.figure.value) / self.figure.value


def evaluate(figures: Iterable[Figure], gpus: dict[str, GpuType],
             models: dict[str, LlmSpec], runtimes: Sequence[RuntimeSpec]) -> list[Outcome]:
    """Predict every figure whose GPU and model the catalog knows."""
    out = []
    for fig in figures:
        gpu, model = gpus.get(fig.gpu), models.get(fig.model)
        if gpu is None or model is None:
            continue
        runtime = resolve_runtime(fig.runtime, runtimes)
        out.append(Outcome(fig, predict(fig, gpu, model, runtime)))
    return out


@dataclass(frozen=True)
class Cell:
    """Errors of one GPU and quantity (of one runtime, or of all: ``runtime == ""``)."""

    gpu: str
    quantity: str
    rows: int
    median_abs: float
    worst_abs: float
    median_signed: float
    runtime: str = ""


def summarize(outcomes: Sequence[Outcome], held_out: bool = True,
              by_runtime: bool = False) -> list[Cell]:
    """Median and worst absolute error per (GPU, quantity) — per runtime too with
    ``by_runtime`` — of the held-out (or training) rows."""
    cells: dict[tuple[str, str, str], list[float]] = {}
    for o in outcomes:
        f = o.figure
        if f.held_out == held_out:
            key = (f.gpu, f.runtime if by_runtime else "", f.quantity)
            cells.setdefault(key, []).append(o.error)
    return [
        Cell(gpu, q, len(errs), statistics.median(abs(e) for e in errs),
             max(abs(e) for e in errs), statistics.median(errs), runtime)
        for (gpu, runtime, q), errs in sorted(cells.items(), key=lambda kv: (
            kv[0][0], kv[0][1], QUANTITIES.index(kv[0][2])))
    ]


def targets_hold(cells: Sequence[Cell]) -> bool:
    """Issue 17's targets on held-out cells: TTFT, per-token time and throughput each measured and
    within :data:`TARGET_MEDIAN` on every GPU of :data:`TARGET_GPUS` and on one of
    :data:`OTHER_GPUS`; every cell of every GPU within :data:`CEILING_MEDIAN`."""
    median = {(c.gpu, c.quantity): c.median_abs for c in cells}

    def within(gpu: str) -> bool:
        return all(median.get((gpu, q), math.inf) <= TARGET_MEDIAN for q in TARGETED)

    return (all(m <= CEILING_MEDIAN for m in median.values())
            and all(within(g) for g in TARGET_GPUS) and any(within(g) for g in OTHER_GPUS))


# --- report --------------------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{100 * x:+.1f} %" if not math.isnan(x) else "—"


def _cell_rows(cells: Iterable[Cell], by_runtime: bool) -> list[str]:
    out = []
    for c in cells:
        runtime = f" {c.runtime} |" if by_runtime else ""
        out.append(f"| {c.gpu} |{runtime} {c.quantity} | {c.rows} | {100 * c.median_abs:.1f} % "
                   f"| {100 * c.worst_abs:.1f} % | {pct(c.median_signed)} |")
    return out


def markdown(outcomes: Sequence[Outcome], label: str) -> str:
    """The error tables (held out, per runtime, training) and every held-out row."""
    head = "| figures | median abs. error | worst | median signed |"
    rule = "|---:|---:|---:|---:|"
    lines = [f"Factors: {label}. Held-out (model, GPU) pairs: "
             + ", ".join(f"{m} on {g}" for m, g in sorted(HELD_OUT_PAIRS)) + ".", "",
             "**Held out** — median and worst absolute error per GPU and quantity:", "",
             f"| GPU | quantity {head}", f"|---|---{rule}",
             *_cell_rows(summarize(outcomes, True), False), "",
             "**Held out, per runtime** (splitwise-2023 is the 2023 research runtime Splitwise "
             "measured; trtllm and vllm are today's engines):", "",
             f"| GPU | runtime | quantity {head}", f"|---|---|---{rule}",
             *_cell_rows(summarize(outcomes, True, by_runtime=True), True), "",
             "**Training pairs** — median and worst absolute error per GPU and quantity:", "",
             f"| GPU | quantity {head}", f"|---|---{rule}",
             *_cell_rows(summarize(outcomes, False), False), ""]
    lines += ["**Held-out figures** (each against its prediction):", "",
              "| model | GPU | TP | prec. | runtime | mode | in | out | conc. | quantity "
              "| published | predicted | error |",
              "|---|---|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|"]
    for o in outcomes:
        f = o.figure
        if f.held_out:
            lines.append(
                f"| {f.model} | {f.gpu} | {f.tp} | {f.precision} | {f.runtime} | {f.mode} "
                f"| {f.input_tokens} | {f.output_tokens} | {f.concurrency} | {f.quantity} "
                f"| {f.value:,.2f} | {o.predicted:,.2f} | {pct(o.error)} |")
    return "\n".join(lines) + "\n"


def write_docs(text: str, path: Path = DOCS_FILE) -> None:
    """Replace the block between the fidelity markers of docs/calibration.md (atomically)."""
    doc = path.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN_MARK) + len(BEGIN_MARK), doc.index(END_MARK)
    new = doc[:start] + "\n" + text + doc[end:]
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--perf", type=Path, default=DEFAULT_PERF_DIR)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    gpu_list, model_list, _ = load_catalog()
    gpus = {g.name: g for g in gpu_list}
    models = {m.name: m for m in model_list}
    outcomes = evaluate(all_figures(args.perf), gpus, models, load_runtimes())
    text = markdown(outcomes, "the built-in catalog's (inputs/catalog/efficiency.yaml, silicon "
                    "per GPU; inputs/catalog/runtimes.yaml, fixed costs per runtime and GPU)")
    print(text)
    if args.write_docs:
        write_docs(text)
    if args.json:
        args.json.write_text(json.dumps(
            [asdict(o.figure) | {"predicted": o.predicted, "error": o.error} for o in outcomes],
            indent=1))
    if args.check and not targets_hold(summarize(outcomes, True)):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
