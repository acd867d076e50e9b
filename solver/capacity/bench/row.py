"""A load-test sweep's SLO-holding point as a measured capacity row, with what it stands on.

The row's configuration comes from the command (GPU, TP, workload) and, where the command does
not say, from the files: the model (``model_id``, ``backend_model``, ``model_names``) resolved to
the catalog, the precision its quantisation suffix states, the engine and version (vLLM's
``backend`` and ``--metadata``), the date of the earliest run. What neither says comes from the
scenario's workload where one is given (and is said so), else the row is refused — except the
precision, assumed ``bf16`` with a note. Sequences in flight are rounded up to whole sequences.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from models.common import Precision
from models.errors import InputError, Problem
from models.measured import MeasuredCapacity, MeasuredPoint
from models.names import precision_hint, resolve_model
from models.workload import Workload
from solver.capacity.bench.points import BenchPoint, LoadKind
from solver.capacity.bench.slo import SloHolding


@dataclass(frozen=True)
class RowSpec:
    """What the command states about the configuration tested (``None``: not stated)."""

    gpu: str
    tp: int
    workload: str
    model: str | None = None
    runtime: str | None = None
    precision: Precision | None = None
    measured_on: dt.date | None = None


def _one(values: Sequence[str | None], what: str, points: Sequence[BenchPoint], option: str
         ) -> str | None:
    """The one value the files agree on (``None`` when none says); differing → refused."""
    found = sorted({v for v in values if v})
    if len(found) > 1:
        raise InputError([Problem(points[0].file, "", f"the files name different {what}s: "
                                  f"{', '.join(found)}", f"import one configuration at a time, "
                                  f"or give {option}")])
    return found[0] if found else None


def measured_row(points: Sequence[BenchPoint], holding: SloHolding, spec: RowSpec,
                 models: Mapping[str, Sequence[str]], workload: Workload | None,
                 file_date: dt.date | None = None) -> tuple[MeasuredCapacity, list[str]]:
    """The measured row of a sweep and notes on every value not stated by the command."""
    notes: list[str] = []
    file = points[0].file
    typed = spec.model or _one([p.model for p in points], "model", points, "--model")
    if typed is None and workload is not None:
        typed = workload.model
        notes.append(f"model from workload {workload.name}: the files do not name it")
    if typed is None:
        raise InputError([Problem(file, "", "the files do not name the model tested",
                                  "give --model (or --scenario with --workload)")])
    model, why = resolve_model(typed, models)
    if model is None:
        raise InputError([Problem(file, "model", f"`{typed}` is not a catalog model", why
                                  + "; give --model with a catalog name, or add the model "
                                  "(with `aliases:`) in a catalog overlay")])
    precision = spec.precision or precision_hint(typed)
    if precision is None and workload is not None:
        precision = workload.precision
        notes.append(f"precision {precision.value} from workload {workload.name}: the files do "
                     "not say")
    if precision is None:
        precision = Precision.bf16
        notes.append("precision assumed bf16: neither the files nor the command say (give "
                     "--precision)")
    runtime = spec.runtime or _one([p.engine for p in points], "engine", points, "--runtime")
    if runtime is None and workload is not None:
        runtime = workload.runtime
        notes.append(f"runtime {runtime} from workload {workload.name}: the files do not name "
                     "the engine")
    if runtime is None:
        raise InputError([Problem(file, "", "the files do not say which engine served the test",
                                  "give --runtime (e.g. vllm-0.6.3, as the workload's runtime)")])
    dates = [p.measured_on for p in points if p.measured_on is not None]
    measured_on = spec.measured_on or (min(dates) if dates else file_date)
    if measured_on is None:
        raise InputError([Problem(file, "", "the files do not say when the test ran",
                                  "give --measured-on YYYY-MM-DD")])
    if spec.measured_on is None and not dates:
        notes.append(f"measured on {measured_on}: the file's modification date (the file "
                     "records none)")
    if holding.sequences is None:
        raise InputError([Problem(file, "", "the files show neither the sequences in flight nor "
                                  "the mean latency", "give the files as the tool wrote them")])
    row = MeasuredCapacity(
        model=model, gpu=spec.gpu, runtime=runtime, precision=precision, tp=spec.tp,
        workload=spec.workload, max_stable_sequences=max(1, math.ceil(holding.sequences - 1e-9)),
        tested_peak_rps=holding.rate_rps, ttft_p95_ms=holding.ttft_p95_ms,
        decode_p95_ms_per_token=holding.tpot_p95_ms, measured_on=measured_on,
        source=source_text(points, holding), points=sweep_points(holding),
        **tested_lengths(holding.below))
    if len(row.points) > 1:
        notes.append(f"the row keeps the sweep's {len(row.points)} tested loads (`points`): "
                     "`check` reads a replica's latencies at its load off them")
    if not (row.tested_lengths("input") and row.tested_lengths("output")):
        notes.append("token lengths: the files do not record the prompt and output lengths "
                     "tested, so a plan cannot tell whether the workload's still match them "
                     "(vLLM: --save-detailed, or the totals vLLM saves by default)")
    return row, notes


def sweep_points(holding: SloHolding) -> tuple[MeasuredPoint, ...]:
    """Every tested load of the sweep as the row keeps it, in the order the SLO-holding rate
    was looked for in (by load, repeats merged): what ``check`` interpolates between."""
    out = []
    for v in holding.verdicts:
        p = v.point
        out.append(MeasuredPoint(
            offered_rps=p.load if p.load_kind is LoadKind.rate else None,
            concurrency=p.load if p.load_kind is LoadKind.concurrency else None,
            achieved_rps=p.throughput_rps, ttft_p50_ms=p.ttft_p50_ms, ttft_p95_ms=p.ttft_p95_ms,
            tpot_p50_ms=p.tpot_p50_ms, tpot_p95_ms=p.tpot_p95_ms, e2e_mean_ms=p.mean_e2e_ms,
            e2e_p50_ms=p.e2e_p50_ms, e2e_p95_ms=p.e2e_p95_ms))
    return tuple(out)


def tested_lengths(point: BenchPoint) -> dict[str, float]:
    """The row's ``input_tokens_*``/``output_tokens_*`` fields from the load its rate rests on
    (the last that held), those the file records [tokens]."""
    out: dict[str, float] = {}
    for direction, lengths in (("input", point.input_tokens), ("output", point.output_tokens)):
        if lengths is None:
            continue
        for stat in ("mean", "p50", "p95"):
            value = getattr(lengths, stat)
            if value is not None and value > 0:
                out[f"{direction}_tokens_{stat}"] = round(value, 1)
    return out


def source_text(points: Sequence[BenchPoint], holding: SloHolding) -> str:
    """One line naming the tool, the files and how the rate was found."""
    tools = sorted({p.tool for p in points})
    files = sorted({p.file.rsplit("/", 1)[-1] for p in points})
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    if holding.above is None:
        how = "held at every tested load (a lower bound)"
    elif holding.interpolated:
        how = (f"interpolated between {holding.below.throughput_rps:.4g} and "
               f"{holding.above.throughput_rps:.4g} req/s")
    else:
        how = f"the last load that held ({holding.below.throughput_rps:.4g} req/s)"
    return f"fleetplan import-bench: {'; '.join(tools)} ({shown}); {how}"
