"""Measured inference performance as one tidy table, for calibrating the performance model.

Two ways in. :func:`read_shared_perf` reads the public measurements in ``../shared/data/perf/``
(Splitwise prefill and decode timings, Vidur NCCL all-reduce and GEMM timings, TensorRT-LLM maximum
throughput) and renames their models and GPUs to catalog names. :func:`read_measurements_csv` reads
a user's ``MEASUREMENTS.csv`` with the same columns (docs/calibration.md). Both return
:class:`Measurement` rows; :func:`to_frame` makes them a pandas table, one row per measurement.

Repeated runs of one configuration are reduced to their median, so a configuration is one row and a
held-out split cannot leak its repeats into the training share.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import Field, model_validator

from inputs import catalog_dir
from models.common import Frozen, Precision
from models.errors import InputError, Problem
from models.input_files import check_file, duplicate_columns
from models.limits import MAX_TABLE_ROWS
from models.loader import validate_rows
from models.text import csv_cell, csv_uncell
from solver.capacity.bench.formats import foreign_json


class MeasurementKind(StrEnum):
    """What a measurement measures; the name carries its unit."""

    prefill_ms = "prefill_ms"
    """Time to prefill ``batch`` prompts of ``input_tokens`` each, together [ms]."""
    decode_step_ms = "decode_step_ms"
    """Time of one decode step of ``batch`` sequences holding ``context_tokens`` each [ms]."""
    allreduce_ms = "allreduce_ms"
    """Time of one all-reduce of ``size_bytes`` over ``tp`` GPUs of one node [ms]."""
    gemm_ms = "gemm_ms"
    """Time of one transformer layer's linear projections (QKV, O, MLP up and down) for
    ``input_tokens`` tokens, split over ``tp`` GPUs [ms]."""
    max_output_tokens_per_s = "max_output_tokens_per_s"
    """Output tokens/s of one replica with no latency limit, requests of ``input_tokens`` in and
    ``output_tokens`` out [tokens/s]."""
    ttft_ms = "ttft_ms"
    """Mean time to first token of one replica kept at ``batch`` requests in flight (each client
    sends its next request when the last ends), requests of ``input_tokens`` in and
    ``output_tokens`` out [ms]."""
    tpot_ms = "tpot_ms"
    """Mean time per output token after the first (inter-token latency) at the same closed loop
    [ms]."""
    output_tokens_per_s = "output_tokens_per_s"
    """Output tokens/s of the replica at the same closed loop [tokens/s]."""
    batch_e2e_ms = "batch_e2e_ms"
    """``batch`` requests served together from start to their last token: one prefill of all the
    prompts, then ``output_tokens − 1`` decode steps [ms]."""
    batch_output_tokens_per_s = "batch_output_tokens_per_s"
    """Output tokens/s of one replica serving ``batch`` requests together (a static batch):
    ``batch × output_tokens ÷`` the batch's end-to-end time [tokens/s]."""
    decode_attention_ms = "decode_attention_ms"
    """One layer's decode attention kernel on one of ``tp`` GPUs for ``batch`` sequences
    holding ``context_tokens`` each: the KV-cache read, a profiled kernel time [ms]."""
    first_token_ms = "first_token_ms"
    """Time to the first output token of ``batch`` requests started together, on a runtime that
    emits that token from a decode step after the prompt's pass (LMDeploy TurboMind 0.1's
    "first token latency"): the prefill of the prompts, then one decode step [ms]."""


class Measurement(Frozen):
    """One measured figure with the configuration it was measured on."""

    kind: MeasurementKind
    model: str | None = None
    """Catalog model name; empty only for ``allreduce_ms``."""
    gpu: str = Field(min_length=1)
    """Catalog GPU name."""
    precision: Precision = Precision.bf16
    tp: int = Field(1, ge=1)
    """Tensor-parallel degree (all-reduce: number of GPUs) [GPUs]."""
    batch: int = Field(1, ge=1)
    """Sequences processed together [sequences]."""
    input_tokens: int = Field(0, ge=0)
    """Prompt tokens per sequence (``gemm_ms``: tokens in the pass) [tokens]."""
    output_tokens: int = Field(0, ge=0)
    """Generated tokens per sequence [tokens]."""
    context_tokens: float = Field(0.0, ge=0)
    """Mean tokens in each sequence's KV cache during the measured decode steps [tokens]."""
    size_bytes: float = Field(0.0, ge=0)
    """All-reduce message size [bytes]."""
    value: float = Field(gt=0)
    """The measured figure, in the unit its kind names."""
    source: str = ""
    """Where the figure came from (file, and the rows reduced into it)."""
    runtime: str = ""
    """Serving runtime the figure was measured on, as a runtime catalog name (``trtllm``,
    ``vllm``, ``splitwise-2023``); empty: the unnamed runtime of a user's own measurements."""

    @model_validator(mode="after")
    def _inputs_for_kind(self) -> Measurement:
        kind = self.kind
        if kind is not MeasurementKind.allreduce_ms and not self.model:
            raise ValueError(f"a {kind} measurement needs `model`")
        needs: dict[MeasurementKind, tuple[str, ...]] = {
            MeasurementKind.prefill_ms: ("input_tokens",),
            MeasurementKind.decode_step_ms: ("context_tokens",),
            MeasurementKind.allreduce_ms: ("size_bytes",),
            MeasurementKind.gemm_ms: ("input_tokens",),
            MeasurementKind.max_output_tokens_per_s: ("input_tokens", "output_tokens"),
            MeasurementKind.ttft_ms: ("input_tokens", "output_tokens"),
            MeasurementKind.tpot_ms: ("input_tokens", "output_tokens"),
            MeasurementKind.output_tokens_per_s: ("input_tokens", "output_tokens"),
            MeasurementKind.batch_e2e_ms: ("input_tokens", "output_tokens"),
            MeasurementKind.batch_output_tokens_per_s: ("input_tokens", "output_tokens"),
            MeasurementKind.first_token_ms: ("input_tokens",),
            MeasurementKind.decode_attention_ms: ("context_tokens",),
        }
        missing = [f for f in needs[kind] if not getattr(self, f)]
        if missing:
            raise ValueError(f"a {kind} measurement needs {', '.join(missing)} > 0")
        if kind is MeasurementKind.allreduce_ms and self.tp < 2:
            raise ValueError("an all-reduce measurement needs tp >= 2 GPUs")
        return self


#: Columns of the tidy table and of ``MEASUREMENTS.csv``, in order.
COLUMNS: tuple[str, ...] = tuple(Measurement.model_fields)

#: Splitwise / Vidur hardware names → catalog GPU names (both measured on 8-GPU DGX/HGX boards).
GPU_NAMES: dict[str, str] = {
    "a100-80gb": "A100-80GB",
    "h100-80gb": "H100-SXM",
    "a100": "A100-80GB",
    "h100": "H100-SXM",
}

#: Model names in the shared files → catalog names. Llama-3.3-70B has Llama-3.1-70B's architecture
#: (TensorRT-LLM's perf-overview says so), so it is sized as that catalog entry.
MODEL_NAMES: dict[str, str] = {
    "llama2-70b": "Llama-2-70B",
    "bloom-176b": "BLOOM-176B",
    "Llama-3.1-8B": "Llama-3.1-8B",
    "Llama-3.3-70B": "Llama-3.1-70B",
}

SPLITWISE_FILE = "splitwise_sim_perf_model.csv"
TRTLLM_FILE = "trtllm_max_throughput.csv"
ALLREDUCE_FILES = {"A100-80GB": "vidur/a100_dgx_all_reduce.csv",
                   "H100-SXM": "vidur/h100_dgx_all_reduce.csv"}
GEMM_FILE = "vidur/h100_Llama-2-70b-hf_mlp.csv"

#: Runtime catalog names of the runtimes the shared files were measured on: Splitwise's 2023
#: research runtime (vLLM-like, no CUDA graphs) and TensorRT-LLM.
SPLITWISE_RUNTIME = "splitwise-2023"
TRTLLM_RUNTIME = "trtllm"

#: Vidur per-layer operators that are the layer's linear projections (GEMMs).
GEMM_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")

#: All-reduce message sizes kept from Vidur's sweep: every 8th size (≈ 125 of 994 per worker
#: count), enough to pin a latency + bandwidth line without 3,000 near-duplicate rows.
ALLREDUCE_EVERY = 8


def _median_rows(frame: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    grouped = frame.groupby(keys, sort=True)[value]
    out = grouped.median().rename("value").to_frame()
    out["repeats"] = grouped.size()
    return out.reset_index()


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def read_splitwise(path: Path) -> list[Measurement]:
    """Prefill and decode-step rows of Splitwise's measured performance model (Llama-2, BLOOM).

    ``prompt_time`` is the prefill of ``batch_size`` prompts of ``prompt_size`` tokens [ms];
    ``token_time`` the mean decode step at ``batch_size`` while ``token_size`` tokens are generated,
    so the mean context is ``prompt_size + token_size / 2`` [tokens]. The ``h100-80gb-pcap``
    (power-capped, derived) rows are skipped. Two Llama-2-70B TP2 prefill rows at batch 64 are
    dropped: their prompt time falls eightfold from batch 32 while the work doubles (A100: 6,633 →
    794 ms; H100: 2,398 → 361 ms), which a complete prefill cannot do — the runs did not prefill the
    whole batch (at TP2 its KV cache is at the memory limit).
    """
    raw = pd.read_csv(path)
    raw = raw[raw["hardware"].isin(GPU_NAMES)]
    raw = raw.assign(gpu=raw["hardware"].map(GPU_NAMES), model=raw["model"].map(MODEL_NAMES))
    out: list[Measurement] = []
    pre = _median_rows(raw, ["model", "gpu", "tensor_parallel", "prompt_size", "batch_size"],
                       "prompt_time")
    for r in _records(pre):
        if int(r["tensor_parallel"]) == 2 and int(r["batch_size"]) == 64:
            continue  # incomplete runs, see the docstring
        out.append(Measurement(
            kind=MeasurementKind.prefill_ms, model=str(r["model"]), gpu=str(r["gpu"]),
            tp=int(r["tensor_parallel"]), batch=int(r["batch_size"]),
            input_tokens=int(r["prompt_size"]), value=float(r["value"]),
            source=f"{SPLITWISE_FILE} prompt_time (median of {r['repeats']})",
            runtime=SPLITWISE_RUNTIME))
    dec = _median_rows(raw, ["model", "gpu", "tensor_parallel", "prompt_size", "batch_size",
                             "token_size"], "token_time")
    for r in _records(dec):
        out.append(Measurement(
            kind=MeasurementKind.decode_step_ms, model=str(r["model"]), gpu=str(r["gpu"]),
            tp=int(r["tensor_parallel"]), batch=int(r["batch_size"]),
            input_tokens=int(r["prompt_size"]), output_tokens=int(r["token_size"]),
            context_tokens=float(r["prompt_size"]) + float(r["token_size"]) / 2,
            value=float(r["value"]),
            source=f"{SPLITWISE_FILE} token_time (median of {r['repeats']})",
            runtime=SPLITWISE_RUNTIME))
    return out


def read_vidur_allreduce(path: Path, gpu: str, every: int = ALLREDUCE_EVERY) -> list[Measurement]:
    """NCCL all-reduce times within one node (``devices_per_node == num_workers``).

    Vidur's ``size`` column is bytes (its profiler writes ``size * 2`` for FP16 elements); the time
    is the median of its runs [ms]. Only every ``every``-th size of the sweep is kept.
    """
    raw = pd.read_csv(path)
    raw = raw[(raw["collective"] == "all_reduce") & (raw["devices_per_node"] == raw["num_workers"])]
    out: list[Measurement] = []
    for workers, group in raw.groupby("num_workers", sort=True):
        group = group.sort_values("size").iloc[::every]
        for size, ms in zip(group["size"], group["time_stats.all_reduce.median"], strict=True):
            out.append(Measurement(
                kind=MeasurementKind.allreduce_ms, gpu=gpu, tp=int(str(workers)),
                size_bytes=float(size), value=float(ms),
                source=f"{path.parent.name}/{path.name} time_stats.all_reduce.median"))
    return out


def read_vidur_gemm(
    path: Path, gpu: str = "H100-SXM", model: str = "Llama-2-70B"
) -> list[Measurement]:
    """One layer's linear projections (QKV, O, MLP up, MLP down) of Llama-2-70B on H100 [ms].

    The sum of the four operators' median times per (tokens, TP); repeated profiles of the same
    token count are reduced to their median.
    """
    raw = pd.read_csv(path)
    cols = [f"time_stats.{op}.median" for op in GEMM_OPS]
    raw = raw.assign(gemm_ms=raw[cols].sum(axis=1))
    agg = _median_rows(raw, ["num_tensor_parallel_workers", "num_tokens"], "gemm_ms")
    return [
        Measurement(kind=MeasurementKind.gemm_ms, model=model, gpu=gpu,
                    tp=int(r["num_tensor_parallel_workers"]), input_tokens=int(r["num_tokens"]),
                    value=float(r["value"]),
                    source=f"{path.parent.name}/{path.name} sum of {'+'.join(GEMM_OPS)} medians")
        for r in _records(agg)
    ]


def read_trtllm(path: Path) -> list[Measurement]:
    """TensorRT-LLM published maximum throughput, per replica [output tokens/s].

    The file gives total output tokens/s over ``num_gpus``; one replica uses ``tp`` GPUs, so the
    per-replica figure is the total × tp ÷ num_gpus (every row has num_gpus = tp).
    """
    raw = pd.read_csv(path)
    return [
        Measurement(kind=MeasurementKind.max_output_tokens_per_s,
                    model=MODEL_NAMES.get(str(r["model"]), str(r["model"])), gpu=str(r["gpu"]),
                    precision=Precision(str(r["precision"])), tp=int(r["tp"]),
                    input_tokens=int(r["input_tokens"]), output_tokens=int(r["output_tokens"]),
                    value=float(r["output_tokens_per_s_total"]) * int(r["tp"]) / int(r["num_gpus"]),
                    source=f"{TRTLLM_FILE} ({r['model']})", runtime=TRTLLM_RUNTIME)
        for r in _records(raw)
    ]


#: Published serving figures the built-in calibration adds to ../shared/data/perf: a
#: MEASUREMENTS.csv in inputs/catalog, each row with its source (docs/calibration.md).
PUBLISHED_FILE = "published_perf.csv"


def read_published_perf() -> list[Measurement]:
    """The published figures of ``inputs/catalog/published_perf.csv``."""
    return read_measurements_csv(catalog_dir() / PUBLISHED_FILE)


def read_shared_perf(perf_dir: Path) -> list[Measurement]:
    """Every measurement in a copy of ``../shared/data/perf/`` (files that are absent are skipped).

    Raises
    ------
    InputError
        When ``perf_dir`` is not a directory or holds none of the known files.
    """
    if not perf_dir.is_dir():
        raise InputError([Problem(str(perf_dir), "", "not a directory",
                                  "name the shared perf directory (../shared/data/perf)")])
    out: list[Measurement] = []
    found = 0
    if (perf_dir / SPLITWISE_FILE).exists():
        out += read_splitwise(perf_dir / SPLITWISE_FILE)
        found += 1
    for gpu, name in ALLREDUCE_FILES.items():
        if (perf_dir / name).exists():
            out += read_vidur_allreduce(perf_dir / name, gpu)
            found += 1
    if (perf_dir / GEMM_FILE).exists():
        out += read_vidur_gemm(perf_dir / GEMM_FILE)
        found += 1
    if (perf_dir / TRTLLM_FILE).exists():
        out += read_trtllm(perf_dir / TRTLLM_FILE)
        found += 1
    if not found:
        known = ", ".join([SPLITWISE_FILE, *ALLREDUCE_FILES.values(), GEMM_FILE, TRTLLM_FILE])
        raise InputError([Problem(str(perf_dir), "", "holds none of the known perf files",
                                  f"expected some of: {known}")])
    return out


def read_measurements_csv(path: Path) -> list[Measurement]:
    """A user's ``MEASUREMENTS.csv``: the tidy table's columns, one measurement a row.

    ``kind``, ``gpu`` and ``value`` are required; other columns may be absent or blank (defaults as
    in :class:`Measurement`). Every bad row is reported at once, located by its line number.
    """
    check_file(path, "CSV table")
    with path.open("rb") as fh:
        head = fh.read(4096).decode("utf-8-sig", errors="replace")
    foreign = foreign_json(path, head, "a measurements CSV")
    if foreign is not None:
        raise foreign
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # Excel writes a BOM
            reader = csv.DictReader(fh)
            rows = list(itertools.islice(reader, MAX_TABLE_ROWS + 1))  # no more in memory
            header = list(reader.fieldnames or [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError([Problem(str(path), "", f"cannot read as CSV: {exc}", "")]) from None
    if len(rows) > MAX_TABLE_ROWS:
        raise InputError([Problem(str(path), "", f"more than {MAX_TABLE_ROWS:,} rows; at most "
                                  f"{MAX_TABLE_ROWS:,} are read", "split the table")])
    twice = duplicate_columns(header, str(path))
    if twice is not None:  # DictReader kept the second column's cells, dropped the first's
        raise InputError([twice])
    problems: list[Problem] = []
    missing = [c for c in ("kind", "gpu", "value") if c not in header]
    unknown = [c for c in header if c and c not in COLUMNS]
    if missing:
        problems.append(Problem(str(path), "header", f"missing columns: {', '.join(missing)}",
                                f"the columns are: {', '.join(COLUMNS)}"))
    if unknown:
        problems.append(Problem(str(path), "header", f"unknown columns: {', '.join(unknown)}",
                                f"the columns are: {', '.join(COLUMNS)}"))
    if problems:
        raise InputError(problems)
    out, bad = validate_rows(
        Measurement, ({k: csv_uncell(v.strip()) for k, v in row.items()
                       if k and v is not None and v.strip()}
                      for row in rows), str(path), "line")
    problems += bad
    if not out and not problems:
        problems.append(Problem(str(path), "", "no measurements", "add one row per measurement"))
    if problems:
        raise InputError(problems)
    return out


def to_frame(measurements: Iterable[Measurement]) -> pd.DataFrame:
    """The tidy table: one row per measurement, columns :data:`COLUMNS`."""
    rows = [m.model_dump(mode="json") for m in measurements]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def to_csv_text(measurements: Sequence[Measurement]) -> str:
    """The measurements as ``MEASUREMENTS.csv`` text (what :func:`read_measurements_csv` reads):
    text made inert, numbers at their full binary value (not :func:`csv_cell`'s 15 digits), so
    a fit from the file is the fit from the measurements, bit for bit."""
    return str(to_frame(measurements).map(lambda v: csv_cell(v) if isinstance(v, str) else v)
               .to_csv(index=False, lineterminator="\n"))
