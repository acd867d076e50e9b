"""vLLM's serving benchmark results: ``benchmark_serving.py`` and ``vllm bench serve``.

Read as saved by ``--save-result`` (one JSON object per run), ``--append-result`` (one object per
line, a sweep in one file) and ``vllm bench sweep serve`` (``summary.json``: a list of run
objects, each with the swept parameters and ``run_number``). Fields read (vLLM's own names):

- ``request_throughput`` [1/s], ``completed``, ``failed`` (``vllm bench serve``; older
  ``benchmark_serving.py`` results count failures as ``num_prompts − completed``);
- load: ``request_rate`` (a number, or ``"inf"``) and ``max_concurrency`` (a number or null);
- latencies [ms]: ``p95_ttft_ms`` and ``p95_tpot_ms`` (saved with ``--metric-percentiles``
  including 95); without them the per-request samples of ``--save-detailed`` (``ttfts`` [s],
  ``itls`` [s], ``output_lens``, ``errors``); without those ``p99_ttft_ms``/``p99_tpot_ms``, the
  default percentile, taken as an upper bound of the P95 and said so. TPOT is vLLM's time per
  output token excluding the first: the SLO's per-token figure.
- kept with the point, where saved: ``median_ttft_ms``, ``median_tpot_ms``, ``median_e2el_ms``
  and ``p95_e2el_ms`` (or the same of the per-request samples);
- ``mean_e2el_ms`` (with ``e2el`` among ``--percentile-metrics``), else mean TTFT + mean TPOT ×
  (mean output tokens − 1), for Little's law; ``max_concurrent_requests`` (newer vLLM: the peak
  in flight);
- token lengths: ``input_lens``/``output_lens`` per request (``--save-detailed``) give the
  mean, median and P95, else ``total_input_tokens``/``total_output_tokens`` ÷ ``completed``
  the mean alone;
- ``date`` (``%Y%m%d-%H%M%S``), ``model_id``, ``backend`` (``vllm``, ``sglang``, ``tgi``, … name
  the engine; ``openai``/``openai-chat`` do not), and a version from ``--metadata``
  (``vllm_version=…``, ``engine_version=…`` or ``version=…``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from models.errors import InputError, Problem
from solver.capacity.bench.points import (
    MS_PER_S,
    BenchPoint,
    Lengths,
    LoadKind,
    PercentileBasis,
    number,
    p50_of,
    p95_of,
    parse_date,
)

#: ``backend`` values that name the engine serving the test.
ENGINE_BACKENDS = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "lmdeploy": "lmdeploy",
                   "tensorrt-llm": "tensorrt-llm", "scalellm": "scalellm",
                   "deepspeed-mii": "deepspeed-mii"}
VERSION_KEYS = ("vllm_version", "engine_version", "version")
TOOL_NEW = "vLLM bench serve (vLLM >= 0.9)"
TOOL_OLD = "vLLM benchmark_serving.py (vLLM 0.6-0.8)"


def is_vllm_run(doc: Any) -> bool:
    """A vLLM serving benchmark result: a run object with vLLM's throughput and model keys."""
    return (isinstance(doc, dict) and isinstance(doc.get("request_throughput"), int | float)
            and "model_id" in doc)


def vllm_points(docs: Sequence[Any], file: str, label: str) -> list[BenchPoint]:
    """One point per run object; ``label`` names each run's place (``runs``, ``line``)."""
    points = []
    for i, doc in enumerate(docs):
        where = f"line {i + 1}" if label == "line" else f"{label}[{i}]" if label else ""
        if not is_vllm_run(doc):
            raise InputError([Problem(file, where or "", "not a vLLM benchmark run object",
                                      "give the runs as `vllm bench serve --save-result` wrote "
                                      "them")])
        points.append(vllm_point(doc, file, where))
    return points


def _load(doc: Mapping[str, Any], file: str, where: str) -> tuple[LoadKind, float]:
    rate = doc.get("request_rate", "inf")
    cap = doc.get("max_concurrency")
    if isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate):
        return LoadKind.rate, float(number(doc, "request_rate", file, where) or 0.0)
    if rate not in ("inf", "Infinity", None) and not (isinstance(rate, float) and math.isinf(rate)):
        raise InputError([Problem(file, f"{where}.request_rate" if where else "request_rate",
                                  f"`{rate!r}` is not a request rate",
                                  "give the file as vLLM wrote it (a number or \"inf\")")])
    if cap is not None:
        return LoadKind.concurrency, float(number(doc, "max_concurrency", file, where,
                                                  minimum=1) or 1.0)
    return LoadKind.unbounded, math.inf


def _samples(doc: Mapping[str, Any]) -> tuple[list[float], list[float], list[float]] | None:
    """(TTFT ms, TPOT ms, end-to-end ms) of each successful request, from ``--save-detailed``
    arrays; ``None`` when the file has none."""
    ttfts, itls, outs = doc.get("ttfts"), doc.get("itls"), doc.get("output_lens")
    if not (isinstance(ttfts, list) and isinstance(itls, list) and isinstance(outs, list)
            and len(ttfts) == len(itls) == len(outs) and ttfts):
        return None
    errors = doc.get("errors")
    ok = [not (isinstance(errors, list) and i < len(errors) and errors[i]) for i in
          range(len(ttfts))]
    ttft_ms, tpot_ms, e2e_ms = [], [], []
    for i, (t, gaps, n) in enumerate(zip(ttfts, itls, outs, strict=True)):
        if not ok[i] or not isinstance(t, int | float) or not isinstance(gaps, list):
            continue
        if not all(isinstance(g, int | float) for g in gaps) or not isinstance(n, int):
            return None
        latency_s = t + sum(gaps)
        ttft_ms.append(t * MS_PER_S)
        e2e_ms.append(latency_s * MS_PER_S)
        if n > 1:
            tpot_ms.append((latency_s - t) / (n - 1) * MS_PER_S)  # [s] ÷ tokens after the first
    if not ttft_ms or not tpot_ms:
        return None
    return ttft_ms, tpot_ms, e2e_ms


def _latencies(doc: Mapping[str, Any], file: str, where: str
               ) -> tuple[float, float, PercentileBasis, float | None]:
    """(TTFT P95, TPOT P95, basis, mean end-to-end or None) [ms]."""
    if "p95_ttft_ms" in doc and "p95_tpot_ms" in doc:
        ttft = number(doc, "p95_ttft_ms", file, where) or 0.0
        tpot = number(doc, "p95_tpot_ms", file, where) or 0.0
        return ttft, tpot, PercentileBasis.p95, number(doc, "mean_e2el_ms", file, where,
                                                       required=False)
    samples = _samples(doc)
    if samples is not None:
        ttft_ms, tpot_ms, e2e_ms = samples
        return p95_of(ttft_ms), p95_of(tpot_ms), PercentileBasis.samples, sum(e2e_ms) / len(
            e2e_ms)
    if "p99_ttft_ms" in doc and "p99_tpot_ms" in doc:
        ttft = number(doc, "p99_ttft_ms", file, where) or 0.0
        tpot = number(doc, "p99_tpot_ms", file, where) or 0.0
        return ttft, tpot, PercentileBasis.p99_bound, number(doc, "mean_e2el_ms", file, where,
                                                             required=False)
    raise InputError([Problem(file, where, "no P95 (or P99) of TTFT and TPOT in the run",
                              "re-run with --percentile-metrics ttft,tpot,itl,e2el "
                              "--metric-percentiles 95,99")])


def _medians(doc: Mapping[str, Any], file: str, where: str, basis: PercentileBasis
             ) -> dict[str, float | None]:
    """The point's median TTFT and TPOT and its end-to-end median and P95 [ms]: vLLM's
    ``median_ttft_ms``, ``median_tpot_ms``, ``median_e2el_ms`` and ``p95_e2el_ms``, or, where
    the P95s came from the per-request samples, the same of the samples (``None``: neither)."""
    if basis is PercentileBasis.samples:
        samples = _samples(doc)
        assert samples is not None
        ttft_ms, tpot_ms, e2e_ms = samples
        return {"ttft_p50_ms": p50_of(ttft_ms), "tpot_p50_ms": p50_of(tpot_ms),
                "e2e_p50_ms": p50_of(e2e_ms), "e2e_p95_ms": p95_of(e2e_ms)}
    return {"ttft_p50_ms": number(doc, "median_ttft_ms", file, where, required=False),
            "tpot_p50_ms": number(doc, "median_tpot_ms", file, where, required=False),
            "e2e_p50_ms": number(doc, "median_e2el_ms", file, where, required=False),
            "e2e_p95_ms": number(doc, "p95_e2el_ms", file, where, required=False)}


def _engine(doc: Mapping[str, Any]) -> str | None:
    backend = str(doc.get("backend") or doc.get("endpoint_type") or "").lower()
    engine = ENGINE_BACKENDS.get(backend)
    version = next((str(doc[k]) for k in VERSION_KEYS if isinstance(doc.get(k), str | int | float)
                    and str(doc[k]).strip()), None)
    if engine is None:
        return None
    return f"{engine}-{version.removeprefix('v')}" if version else engine


def vllm_point(doc: Mapping[str, Any], file: str, where: str) -> BenchPoint:
    """One vLLM run object as a :class:`BenchPoint` (fields in the module docstring)."""
    throughput = number(doc, "request_throughput", file, where) or 0.0
    completed = int(number(doc, "completed", file, where) or 0)
    failed_count = number(doc, "failed", file, where, required=False)
    prompts = number(doc, "num_prompts", file, where, required=False)
    failed = (int(failed_count) if failed_count is not None else
              max(0, int(prompts) - completed) if prompts is not None else 0)
    kind, load = _load(doc, file, where)
    ttft, tpot, basis, mean_e2e = _latencies(doc, file, where)
    notes = []
    if mean_e2e is None and completed:
        mean_ttft = number(doc, "mean_ttft_ms", file, where, required=False)
        mean_tpot = number(doc, "mean_tpot_ms", file, where, required=False)
        out_tokens = number(doc, "total_output_tokens", file, where, required=False)
        if mean_ttft is not None and mean_tpot is not None and out_tokens is not None:
            mean_out = out_tokens / completed  # [tokens/request]
            mean_e2e = mean_ttft + mean_tpot * max(mean_out - 1.0, 0.0)
            notes.append("mean end-to-end latency = mean TTFT + mean TPOT × (mean output − 1)")
    sequences, seq_basis = None, ""
    if kind is LoadKind.concurrency:
        sequences, seq_basis = load, "the run's --max-concurrency"
    elif isinstance(doc.get("max_concurrent_requests"), int | float):
        sequences = number(doc, "max_concurrent_requests", file, where)
        seq_basis = "the peak in flight vLLM observed"
    new = "failed" in doc or "endpoint_type" in doc
    input_tokens, output_tokens = _lengths(doc, completed, file, where)
    return BenchPoint(
        file=file, where=where, tool=TOOL_NEW if new else TOOL_OLD, load_kind=kind, load=load,
        throughput_rps=throughput, ttft_p95_ms=ttft, tpot_p95_ms=tpot, basis=basis,
        completed=completed, failed=failed, mean_e2e_ms=mean_e2e, sequences=sequences,
        sequences_basis=seq_basis,
        measured_on=parse_date(str(doc.get("date", "")), ("%Y%m%d-%H%M%S", "%Y-%m-%d")),
        engine=_engine(doc), model=str(doc["model_id"]) if doc.get("model_id") else None,
        notes=tuple(notes), input_tokens=input_tokens, output_tokens=output_tokens,
        **_medians(doc, file, where, basis))


def _lengths(doc: Mapping[str, Any], completed: int, file: str, where: str
             ) -> tuple[Lengths | None, Lengths | None]:
    """(prompt, output) lengths of the successful requests: mean, median and P95 of the
    per-request ``input_lens``/``output_lens`` (``--save-detailed``, and every result of
    ``benchmark_serving.py``), else the mean ``total_input_tokens`` ÷ ``completed`` (the
    totals count successful requests); ``None`` where neither is in the file."""
    errors = doc.get("errors")
    out: list[Lengths | None] = []
    for direction in ("input", "output"):
        lens = doc.get(f"{direction}_lens")
        if isinstance(lens, list) and lens and all(
                isinstance(n, int) and not isinstance(n, bool) for n in lens):
            ok = [n for i, n in enumerate(lens) if not (
                isinstance(errors, list) and i < len(errors) and errors[i])]
            if ok:
                out.append(Lengths.of_samples(ok))
                continue
        total = number(doc, f"total_{direction}_tokens", file, where, required=False)
        out.append(Lengths(mean=total / completed) if total and completed else None)
    return out[0], out[1]
