"""Fidelity of fleetplan's step-time model against published serving measurements.

Every published figure (TTFT, time per output token, output throughput) is predicted by the
capacity model the planner uses and compared with what was measured; the error table goes into
docs/calibration.md ("Fidelity on published measurements"). Run from the repository root::

    .venv/bin/python benchmarks/fidelity.py [--perf ../shared/data/perf] [--write-docs]
        [--check] [--json out.json]

The figures:

* ``benchmarks/data/published_figures.csv`` — figures copied from public pages (NVIDIA NIM's
  benchmarking tables ...), each with its source id (:data:`SOURCES`);
* Splitwise's measured Llama-2-70B and BLOOM-176B timings (``../shared/data/perf``), as TTFT
  (the prefill of a batch of prompts), per-token time (the decode step) and a static batch's
  output throughput ``batch × output ÷ (prefill + (output − 1) × step)`` computed from the two
  measured times of the same run;
* TensorRT-LLM's published maximum throughput (``../shared/data/perf``).

A figure is *held out* when its (model, GPU) pair is in :data:`HELD_OUT_PAIRS`: whole pairs are
held out, never single rows, so a held-out figure's model was not seen on that GPU by the fit.
Each figure is predicted with the factors of its GPU and of its serving runtime (``runtime``).
``--check`` exits 1 unless the targets of issue 17 hold on the held-out figures: median
absolute error ≤ 10 % per GPU and quantity, none above 20 %.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.catalog import EfficiencyFactors, GpuType, LlmSpec  # noqa: E402
from models.common import Precision  # noqa: E402
from models.loader import load_catalog  # noqa: E402
from solver.capacity.calibrate import calibrate, max_output_tokens_per_s  # noqa: E402
from solver.capacity.perf import ReplicaPerf, perf_model  # noqa: E402
from solver.capacity.perfdata import (  # noqa: E402
    SPLITWISE_FILE,
    TRTLLM_FILE,
    Measurement,
    MeasurementKind,
    read_shared_perf,
    read_splitwise,
    read_trtllm,
)
from solver.capacity.replica import closed_loop  # noqa: E402

FIGURES_FILE = ROOT / "benchmarks" / "data" / "published_figures.csv"
DEFAULT_PERF_DIR = ROOT.parent / "shared" / "data" / "perf"
DOCS_FILE = ROOT / "docs" / "calibration.md"
BEGIN_MARK = "<!-- fidelity:begin (benchmarks/fidelity.py --write-docs) -->"
END_MARK = "<!-- fidelity:end -->"

QUANTITIES = ("ttft_ms", "tpot_ms", "output_tokens_per_s")
#: Median absolute error each (GPU, quantity) must reach on held-out figures, and the bound no
#: (GPU, quantity) may exceed (issue 17) [1].
TARGET_MEDIAN = 0.10
WORST_MEDIAN = 0.20

#: Where each figure came from (the ``source`` id of a row).
SOURCES: dict[str, str] = {
    "nim-bench-1.8.0-llama-3.3-70b": (
        "NVIDIA NIM LLM benchmarking, Performance page (docs.nvidia.com/nim/benchmarking/llm/"
        "1.0.0/performance), Llama-3.3-70b-instruct NIM 1.8.0, 2 x H100 80G, fp8 TP2, AIPerf "
        "concurrency sweep; TTFT, ITL and output tokens/s as printed"),
    "splitwise": (
        "Mutinifni/splitwise-sim data/perf_model.csv (../shared/data/perf/"
        f"{SPLITWISE_FILE}): measured Llama-2-70B / BLOOM-176B on DGX A100 and DGX H100, medians"
        " of repeated runs"),
    "trtllm-perf-overview": (
        "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (../shared/data/perf/"
        f"{TRTLLM_FILE}): maximum throughput at unbounded request rate, FP8"),
}

#: Runtime of each file's rows in ../shared/data/perf.
SPLITWISE_RUNTIME = "splitwise-2023"
TRTLLM_RUNTIME = "trtllm"

#: (model, GPU) pairs held out of any fit: every figure of the pair is predicted, never fitted.
HELD_OUT_PAIRS: frozenset[tuple[str, str]] = frozenset({
    ("BLOOM-176B", "A100-80GB"),
    ("Llama-2-70B", "H100-SXM"),
    ("Llama-3.1-70B", "H100-SXM"),
    ("Llama-3.1-70B", "H200"),
})

#: BLOOM-176B (Splitwise's second model), for this benchmark only: bigscience/bloom config.json
#: (n_layer 70, hidden_size 14336, n_head 112, multi-head attention, 4 × hidden MLP, vocab
#: 250,880, ALiBi positions with 2,048 training context); 176.2 B parameters.
BLOOM = LlmSpec(
    name="BLOOM-176B", layers=70, hidden_size=14336, attention_heads=112, kv_heads=112,
    head_dim=128, ffn_size=57344, vocab_size=250880, total_params_b=176.2, active_params_b=176.2,
    max_context_tokens=2048,
    source="bigscience/bloom config.json (n_layer 70, hidden 14336, n_head 112, vocab 250880)")


@dataclass(frozen=True)
class Figure:
    """One published figure and the configuration it was measured on."""

    quantity: str
    """``ttft_ms``, ``tpot_ms`` or ``output_tokens_per_s``."""
    mode: str
    """``closed_loop`` (``concurrency`` clients), ``static_batch`` (``concurrency`` prompts
    prefilled together, then decoded together) or ``max_throughput`` (unbounded rate)."""
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
        """The figure's (model, GPU) pair is held out of any fit."""
        return (self.model, self.gpu) in HELD_OUT_PAIRS


def read_published(path: Path = FIGURES_FILE) -> list[Figure]:
    """The figures of ``benchmarks/data/published_figures.csv`` (``#`` lines are comments)."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    out = []
    for r in rows:
        if r["source"] not in SOURCES:
            raise ValueError(f"{path}: source {r['source']!r} is not in fidelity.SOURCES")
        out.append(Figure(
            quantity=r["quantity"], mode=r["mode"], model=r["model"], gpu=r["gpu"],
            precision=r["precision"], tp=int(r["tp"]), runtime=r["runtime"],
            input_tokens=int(r["input_tokens"]), output_tokens=int(r["output_tokens"]),
            concurrency=int(r["concurrency"]), value=float(r["value"]), source=r["source"]))
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

    def fig(m: Measurement, quantity: str, value: float, output: int) -> Figure:
        return Figure(quantity=quantity, mode="static_batch", model=str(m.model), gpu=m.gpu,
                      precision=m.precision.value, tp=m.tp, runtime=SPLITWISE_RUNTIME,
                      input_tokens=m.input_tokens, output_tokens=output, concurrency=m.batch,
                      value=value, source="splitwise")

    for m in rows:
        if m.kind is MeasurementKind.prefill_ms:
            out.append(fig(m, "ttft_ms", m.value, 1))
        elif m.kind is MeasurementKind.decode_step_ms:
            out.append(fig(m, "tpot_ms", m.value, m.output_tokens))
            ttft = prefill.get((m.model, m.gpu, m.tp, m.input_tokens, m.batch))
            if m.output_tokens == 128 and ttft is not None:
                seconds = (ttft + (m.output_tokens - 1) * m.value) / 1000.0
                out.append(fig(m, "output_tokens_per_s", m.batch * m.output_tokens / seconds,
                               m.output_tokens))
    return out


def trtllm_figures(perf_dir: Path) -> list[Figure]:
    """TensorRT-LLM's published maximum throughput, per replica [output tokens/s]."""
    return [
        Figure(quantity="output_tokens_per_s", mode="max_throughput", model=str(m.model),
               gpu=m.gpu, precision=m.precision.value, tp=m.tp, runtime=TRTLLM_RUNTIME,
               input_tokens=m.input_tokens, output_tokens=m.output_tokens, concurrency=0,
               value=m.value, source="trtllm-perf-overview")
        for m in read_trtllm(perf_dir / TRTLLM_FILE)
    ]


def all_figures(perf_dir: Path) -> list[Figure]:
    """Published figures, then the shared perf data's (those whose files exist)."""
    out = read_published()
    if (perf_dir / SPLITWISE_FILE).exists():
        out += splitwise_figures(perf_dir)
    if (perf_dir / TRTLLM_FILE).exists():
        out += trtllm_figures(perf_dir)
    return out


# --- predictions ---------------------------------------------------------------------------

#: The factors a figure is predicted with: (GPU, runtime) → factors.
FactorsFor = Callable[[GpuType, str], EfficiencyFactors]


def catalog_factors(gpu: GpuType, runtime: str) -> EfficiencyFactors:
    """The built-in catalog's factors of the GPU, whatever the runtime."""
    return gpu.efficiency


#: Runtime of a figure → the runtime family ``solver.capacity.calibrate`` fits.
CALIBRATE_RUNTIME = {SPLITWISE_RUNTIME: "Splitwise-2023", TRTLLM_RUNTIME: "TensorRT-LLM"}


def fitted_factors(perf_dir: Path, gpus: dict[str, GpuType], models: dict[str, LlmSpec]
                   ) -> FactorsFor:
    """Factors fitted by ``solver.capacity.calibrate`` on the shared measurements of the training
    pairs only (every row of a held-out (model, GPU) pair is left out; all-reduces have no model and
    are all used)."""
    rows = [m for m in read_shared_perf(perf_dir)
            if m.model is None or (m.model, m.gpu) not in HELD_OUT_PAIRS]
    fits = {f.gpu: f for f in calibrate(rows, gpus.values(), models.values(), 0.0).fits}

    def factors_for(gpu: GpuType, runtime: str) -> EfficiencyFactors:
        fit = fits.get(gpu.name)
        if fit is None:
            return gpu.efficiency
        return fit.factors_for(CALIBRATE_RUNTIME.get(runtime, runtime))

    return factors_for


def predict(fig: Figure, gpu: GpuType, model: LlmSpec, eff: EfficiencyFactors) -> float:
    """The capacity model's value of ``fig`` [its quantity's unit]."""
    perf: ReplicaPerf = perf_model(model, gpu, Precision(fig.precision), fig.tp, eff)
    if fig.mode == "max_throughput":
        return max_output_tokens_per_s(perf, fig.input_tokens, fig.output_tokens)
    if fig.mode == "closed_loop":
        loop = closed_loop(perf, fig.input_tokens, fig.output_tokens, fig.concurrency)
        return float(getattr(loop, fig.quantity))
    b = fig.concurrency
    prefill = float(perf.step_times_ms(b * fig.input_tokens, 0, 0, b))
    context = fig.input_tokens + fig.output_tokens / 2  # mean KV of a decoding sequence
    step = perf.decode_step_time_ms(b, round(b * context))
    if fig.quantity == "ttft_ms":
        return prefill
    if fig.quantity == "tpot_ms":
        return step
    return b * fig.output_tokens / ((prefill + (fig.output_tokens - 1) * step) / 1000.0)


@dataclass(frozen=True)
class Outcome:
    """A figure, its prediction and the relative error (predicted − measured) ÷ measured."""

    figure: Figure
    predicted: float

    @property
    def error(self) -> float:
        return (self.predicted - self.figure.value) / self.figure.value


def evaluate(figures: Iterable[Figure], factors_for: FactorsFor,
             gpus: dict[str, GpuType], models: dict[str, LlmSpec]) -> list[Outcome]:
    """Predict every figure whose GPU and model the catalog knows."""
    out = []
    for fig in figures:
        gpu, model = gpus.get(fig.gpu), models.get(fig.model)
        if gpu is None or model is None:
            continue
        out.append(Outcome(fig, predict(fig, gpu, model, factors_for(gpu, fig.runtime))))
    return out


@dataclass(frozen=True)
class Cell:
    """Errors of one GPU and quantity."""

    gpu: str
    quantity: str
    rows: int
    median_abs: float
    worst_abs: float
    median_signed: float


def summarize(outcomes: Sequence[Outcome], held_out: bool = True) -> list[Cell]:
    """Median and worst absolute error per (GPU, quantity) of the held-out (or training) rows."""
    cells: dict[tuple[str, str], list[float]] = {}
    for o in outcomes:
        if o.figure.held_out == held_out:
            cells.setdefault((o.figure.gpu, o.figure.quantity), []).append(o.error)
    return [
        Cell(gpu, q, len(errs), statistics.median(abs(e) for e in errs),
             max(abs(e) for e in errs), statistics.median(errs))
        for (gpu, q), errs in sorted(cells.items(), key=lambda kv: (
            kv[0][0], QUANTITIES.index(kv[0][1])))
    ]


def targets_hold(cells: Sequence[Cell]) -> bool:
    """Every held-out (GPU, quantity) within :data:`WORST_MEDIAN`, and each quantity of each
    GPU within :data:`TARGET_MEDIAN`."""
    return all(c.median_abs <= TARGET_MEDIAN for c in cells)


# --- report --------------------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{100 * x:+.1f} %" if not math.isnan(x) else "—"


def markdown(outcomes: Sequence[Outcome], label: str) -> str:
    """The error tables (held out, then training) and every held-out row."""
    lines = [f"Factors: {label}. Held-out (model, GPU) pairs: "
             + ", ".join(f"{m} on {g}" for m, g in sorted(HELD_OUT_PAIRS)) + ".", ""]
    for title, held in (("Held out", True), ("Training pairs", False)):
        lines += [f"**{title}** — median and worst absolute error per GPU and quantity:", "",
                  "| GPU | quantity | figures | median abs. error | worst | median signed |",
                  "|---|---|---:|---:|---:|---:|"]
        for c in summarize(outcomes, held):
            lines.append(f"| {c.gpu} | {c.quantity} | {c.rows} | {100 * c.median_abs:.1f} % "
                         f"| {100 * c.worst_abs:.1f} % | {pct(c.median_signed)} |")
        lines.append("")
    lines += ["**Held-out figures** (each against its prediction):", "",
              "| model | GPU | TP | prec. | runtime | mode | in | out | conc. | quantity "
              "| published | predicted | error | source |",
              "|---|---|---:|---|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for o in outcomes:
        f = o.figure
        if f.held_out:
            lines.append(
                f"| {f.model} | {f.gpu} | {f.tp} | {f.precision} | {f.runtime} | {f.mode} "
                f"| {f.input_tokens} | {f.output_tokens} | {f.concurrency} | {f.quantity} "
                f"| {f.value:,.2f} | {o.predicted:,.2f} | {pct(o.error)} | {f.source} |")
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--perf", type=Path, default=DEFAULT_PERF_DIR)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--fit", action="store_true",
                        help="also refit the factors on the training pairs and report that fit")
    args = parser.parse_args(argv)
    gpu_list, model_list, _ = load_catalog()
    gpus = {g.name: g for g in gpu_list}
    models = {m.name: m for m in model_list} | {BLOOM.name: BLOOM}
    figures = all_figures(args.perf)
    catalog = evaluate(figures, catalog_factors, gpus, models)
    text = "### With the built-in factors (what plans use)\n\n" + markdown(
        catalog, "the built-in catalog's (inputs/catalog/efficiency.yaml), one set per GPU "
        "whatever the runtime")
    outcomes = catalog
    if args.fit:
        refit = evaluate(figures, fitted_factors(args.perf, gpus, models), gpus, models)
        text += "\n### Refitted per runtime on the training pairs only\n\n" + markdown(
            refit, "`solver.capacity.calibrate` on the shared measurements of the training "
            "pairs, each figure predicted with its runtime's fixed costs")
        outcomes = refit
    print(text)
    if args.write_docs:
        write_docs(text)
    if args.json:
        args.json.write_text(json.dumps(
            [asdict(o.figure) | {"predicted": o.predicted, "error": o.error} for o in outcomes],
            indent=1))
    cells = summarize(outcomes, True)
    if args.check and not targets_hold(cells):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
