"""Step time as the sum of profiled operator times: a reference to check the fitted model against.

Vidur (microsoft/vidur, MIT) profiled each operator of a transformer layer on a GPU — the
projections, MLP, norms, rotary embedding and residual add by tokens in the iteration; the
attention kernels by batch, KV length and prefill chunk; the tensor-parallel all-reduce by
message size — and predicts an iteration as the sum of its operators over the layers. This module
builds that prediction from the profiles copied into ``tests/data/perf/vidur/`` (its README
names the source commit), so a replay can run on "what the profiled operator timings imply" and
be compared with the same replay on fleetplan's fitted step time (benchmarks/vidur_replay.py,
docs/replay.md). Nothing in the planner uses it.

The composition follows Vidur's predictor with its default settings:

- per layer: the token operators at ``T`` = prefill tokens + decoding sequences (interpolated
  linearly between profiled token counts), plus decode attention, plus prefill attention, plus
  two all-reduces of ``T × hidden × 2`` bytes (each with a 0.02 ms launch cost) when TP > 1;
- times the layers; no CPU, sampling or output-head time (Vidur's default skips its CPU-overhead
  model, and its operator set has no output head);
- decode attention at the batch's mean KV length per sequence; prefill attention of several
  prompts at their summed cached context and the root of their summed squared chunks; each ×1.1
  when more than one sequence shares the kernel of a grouped-query model (Vidur's default
  batching overhead).

Where Vidur fits a regression to the rows, this module interpolates between them (``Table``):
decode attention by batch size and KV length per sequence, prefill attention by chunk and cached
context. Past the last profiled KV length (the conversation trace's longest requests exceed it)
each batch size's or chunk's time extends along the least-squares line of its points (the
kernel reads the KV once, so time is close to linear in it); past the largest profiled batch the
time grows in proportion to the batch, past the largest chunk with its square.

An attention profile of another head layout serves a model of the same head size: prefill
attention scales with the query heads per GPU (its work), decode attention is read at the KV
length scaled by the KV heads per GPU (its bytes).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from models.catalog import LlmSpec
from models.input_files import duplicate_columns

#: Token-dependent operators of one layer, as Vidur names them (``time_stats.<op>.median``).
TOKEN_OPERATORS = (
    "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
    "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
)
#: Vidur's default CPU cost of launching one NCCL all-reduce [ms].
NCCL_LAUNCH_MS = 0.02
#: Vidur's default extra attention time when several sequences of a GQA model share a kernel [1].
GQA_BATCHING_OVERHEAD = 0.1
#: Bytes of one activation element all-reduced between TP ranks (fp16/bf16) [bytes].
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class AttentionShape:
    """Head layout an attention profile was measured at."""

    q_heads: int
    kv_heads: int
    head_dim: int
    tp: int


class ProfileError(ValueError):
    """A profile file is missing a column, holds a bad value or does not fit the model."""


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror})") from exc
    twice = duplicate_columns(header, str(path))
    if twice is not None:  # DictReader kept the second column's cells, dropped the first's
        raise ProfileError(f"{path}: {twice.message}: {twice.fix}")
    return rows


def _number(path: Path, row: dict[str, str], column: str) -> float:
    try:
        value = float(row[column])
    except KeyError as exc:
        raise ProfileError(f"{path}: no column {column!r}") from exc
    except ValueError as exc:
        raise ProfileError(f"{path}: column {column!r} holds {row[column]!r}, not a number") \
            from exc
    if not math.isfinite(value) or value < 0:
        raise ProfileError(f"{path}: column {column!r} holds {value}, not a time or size >= 0")
    return value


def _mean_by_key(keys: list[float], values: list[float]) -> tuple[npt.NDArray[np.float64],
                                                                   npt.NDArray[np.float64]]:
    """Sorted distinct keys and the mean value at each (profiles repeat some points)."""
    sums: dict[float, list[float]] = {}
    for k, v in zip(keys, values, strict=True):
        sums.setdefault(k, []).append(v)
    ks = sorted(sums)
    return np.array(ks), np.array([sum(sums[k]) / len(sums[k]) for k in ks])


def _interp(x: float, xs: npt.NDArray[np.float64], ys: npt.NDArray[np.float64]) -> float:
    """Piecewise-linear through the points, extended linearly past the last one."""
    if x <= xs[-1] or len(xs) < 2:
        return float(np.interp(x, xs, ys))
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return float(ys[-1] + slope * (x - xs[-1]))


@dataclass(frozen=True)
class Table:
    """A kernel's time over two profiled axes: for each key (batch size or chunk), the time
    along the KV axis, interpolated piecewise-linearly and extended past the last profiled KV
    length along the least-squares line of that key's points; between keys, interpolated."""

    keys: npt.NDArray[np.float64]
    xs: tuple[npt.NDArray[np.float64], ...]
    ys: tuple[npt.NDArray[np.float64], ...]
    slopes: npt.NDArray[np.float64]

    @classmethod
    def of(cls, groups: dict[float, list[tuple[float, float]]]) -> Table:
        keys, xs, ys, slopes = [], [], [], []
        for key in sorted(groups):
            x, y = _mean_by_key([p[0] for p in groups[key]], [p[1] for p in groups[key]])
            if len(x) < 2:
                continue
            keys.append(key)
            xs.append(x)
            ys.append(y)
            slopes.append(float(np.polyfit(x, y, 1)[0]))
        return cls(np.array(keys), tuple(xs), tuple(ys), np.array(slopes))

    def _along(self, i: int, x: float) -> float:
        xs, ys = self.xs[i], self.ys[i]
        if x <= xs[-1]:
            return float(np.interp(x, xs, ys))
        return float(ys[-1] + max(self.slopes[i], 0.0) * (x - xs[-1]))

    def at(self, key: float, x: float) -> float:
        """Time at ``key`` (clamped to the profiled keys) and KV length ``x`` [ms]."""
        keys = self.keys
        key = min(max(key, keys[0]), keys[-1])
        j = int(np.searchsorted(keys, key))
        if keys[j] == key:
            return self._along(j, x)
        w = (key - keys[j - 1]) / (keys[j] - keys[j - 1])
        return (1 - w) * self._along(j - 1, x) + w * self._along(j, x)


@dataclass(frozen=True)
class OperatorSumModel:
    """Step time of one replica from profiled operator times (implements the replay's
    ``StepModel``)."""

    layers: int
    tp: int
    hidden_size: int
    gqa: bool
    kv_capacity_tokens: int
    """KV cache of the replica: taken from fleetplan's memory model so two replays differ only
    in step time [tokens]."""
    token_grid: npt.NDArray[np.float64]
    layer_token_ms: npt.NDArray[np.float64]
    """Sum of the token operators of one layer at each profiled token count [ms]."""
    allreduce_bytes: npt.NDArray[np.float64]
    allreduce_ms: npt.NDArray[np.float64]
    decode: Table
    """Decode attention of one layer by batch size and KV length per sequence (of the
    profiled head layout) [ms]."""
    prefill: Table
    """Prefill attention of one prompt's chunk in one layer by chunk and cached context [ms]."""
    prefill_scale: float
    """Query heads per GPU of the model ÷ those of the attention profile [1]."""
    decode_kv_scale: float
    """KV heads per GPU of the model ÷ those of the attention profile [1]."""

    def layer_ms(self, tokens: float) -> float:
        """Token operators of one layer at ``tokens`` tokens [ms]."""
        return _interp(tokens, self.token_grid, self.layer_token_ms)

    def allreduce_time_ms(self, tokens: float) -> float:
        """One all-reduce of the activations of ``tokens`` tokens, launch included [ms]."""
        size = tokens * self.hidden_size * ACTIVATION_BYTES
        return _interp(size, self.allreduce_bytes, self.allreduce_ms) + NCCL_LAUNCH_MS

    def decode_attention_ms(self, seqs: float, kv_per_seq: float) -> float:
        """Decode attention of one layer: ``seqs`` sequences of mean KV length ``kv_per_seq``."""
        if seqs <= 0:
            return 0.0
        kv = kv_per_seq * self.decode_kv_scale
        top = float(self.decode.keys[-1])
        t = self.decode.at(seqs, kv)
        if seqs > top:  # past the profiled batches: the kernel's work grows with the batch
            t *= seqs / top
        return t * (1 + GQA_BATCHING_OVERHEAD * (self.gqa and seqs > 1))

    def prefill_attention_ms(self, tokens: float, seqs: float, context: float) -> float:
        """Prefill attention of one layer: ``tokens`` new tokens in ``seqs`` equal chunks whose
        prompts hold ``context`` cached tokens between them."""
        if tokens <= 0:
            return 0.0
        n = max(seqs, 1.0)
        chunk = tokens / math.sqrt(n)  # root of the summed squared chunks, as Vidur aggregates
        t = self.prefill.at(chunk, context)
        top = float(self.prefill.keys[-1])
        if chunk > top:  # past the profiled chunks: work grows with the chunk's square
            t *= (chunk / top) ** 2
        return self.prefill_scale * t * (1 + GQA_BATCHING_OVERHEAD * (self.gqa and n > 1))

    def step_time_ms(
        self, prefill_tokens: int, decode_seqs: int, kv_tokens: int,
        prefill_seqs: int = 1, prefill_context_tokens: int = 0,
    ) -> float:
        """One iteration, as the replay's ``StepModel`` asks [ms]."""
        tokens = prefill_tokens + decode_seqs
        if tokens <= 0:
            return 0.0
        per_layer = self.layer_ms(tokens)
        if decode_seqs:
            per_layer += self.decode_attention_ms(decode_seqs, kv_tokens / decode_seqs)
        per_layer += self.prefill_attention_ms(prefill_tokens, prefill_seqs,
                                               prefill_context_tokens)
        if self.tp > 1:
            per_layer += 2 * self.allreduce_time_ms(tokens)
        return float(self.layers * per_layer)


def load_operator_sum(
    model: LlmSpec, tp: int, kv_capacity_tokens: int, *, mlp_csv: Path, attention_csv: Path,
    attention_shape: AttentionShape, allreduce_csv: Path | None = None,
) -> OperatorSumModel:
    """Build the operator-sum step time of ``model`` at TP ``tp`` from Vidur's profile files.

    ``mlp_csv``: rows of the model's layer operators at this TP (``num_tokens`` and
    ``time_stats.<op>.median``); ``attention_csv``: ``is_prefill``, ``batch_size``,
    ``prefill_chunk_size``, ``kv_cache_size`` and the prefill and decode medians, measured at
    ``attention_shape``; ``allreduce_csv``: ``size`` [bytes] and ``time_stats.all_reduce.median``
    of ``tp`` workers (needed when ``tp > 1``).

    Raises
    ------
    ProfileError
        A file is unreadable, lacks a column or a row, or does not fit the model.
    """
    if model.head_dim != attention_shape.head_dim:
        raise ProfileError(
            f"{attention_csv}: measured at head size {attention_shape.head_dim}, "
            f"{model.name} has {model.head_dim}; profile the model's own attention")
    if model.attention_heads % tp or model.kv_heads % tp:
        raise ProfileError(f"{model.name}: heads do not split over TP {tp}")

    mlp = [r for r in _rows(mlp_csv)
           if r.get("num_tensor_parallel_workers", str(tp)) == str(tp)]
    if not mlp:
        raise ProfileError(f"{mlp_csv}: no rows at TP {tp}")
    for column, want in (("n_embd", model.hidden_size), ("n_expanded_embd", model.ffn_size)):
        if column in mlp[0] and int(_number(mlp_csv, mlp[0], column)) != want:
            raise ProfileError(f"{mlp_csv}: {column} is {mlp[0][column]}, {model.name} has "
                               f"{want}; use the profile of this model's shape")
    tokens = [_number(mlp_csv, r, "num_tokens") for r in mlp]
    sums = [sum(_number(mlp_csv, r, f"time_stats.{op}.median") for op in TOKEN_OPERATORS)
            for r in mlp]
    token_grid, layer_token_ms = _mean_by_key(tokens, sums)

    decode: dict[float, list[tuple[float, float]]] = {}
    prefill: dict[float, list[tuple[float, float]]] = {}
    for r in _rows(attention_csv):
        kv = _number(attention_csv, r, "kv_cache_size")
        if r.get("is_prefill") == "True":
            chunk = _number(attention_csv, r, "prefill_chunk_size")
            t = _number(attention_csv, r, "time_stats.attn_prefill.median")
            prefill.setdefault(chunk, []).append((kv, t))
        else:
            batch = _number(attention_csv, r, "batch_size")
            t = _number(attention_csv, r, "time_stats.attn_decode.median")
            decode.setdefault(batch, []).append((kv, t))
    dec, pre = Table.of(decode), Table.of(prefill)
    if len(dec.keys) < 2 or len(pre.keys) < 2:
        raise ProfileError(f"{attention_csv}: needs decode rows at two batch sizes or more and "
                           "prefill rows at two chunks or more, each over two KV lengths")

    ar_bytes = ar_ms = np.array([0.0, 1.0])
    if tp > 1:
        if allreduce_csv is None:
            raise ProfileError(f"TP {tp} needs an all-reduce profile")
        rows = [r for r in _rows(allreduce_csv) if r.get("num_workers") == str(tp)]
        if not rows:
            raise ProfileError(f"{allreduce_csv}: no all-reduce rows of {tp} workers")
        ar_bytes, ar_ms = _mean_by_key(
            [_number(allreduce_csv, r, "size") for r in rows],
            [_number(allreduce_csv, r, "time_stats.all_reduce.median") for r in rows])

    shape = attention_shape
    return OperatorSumModel(
        layers=model.layers, tp=tp, hidden_size=model.hidden_size,
        gqa=model.attention_heads > model.kv_heads, kv_capacity_tokens=kv_capacity_tokens,
        token_grid=token_grid, layer_token_ms=layer_token_ms,
        allreduce_bytes=ar_bytes, allreduce_ms=ar_ms,
        decode=dec, prefill=pre,
        prefill_scale=(model.attention_heads / tp) / (shape.q_heads / shape.tp),
        decode_kv_scale=(model.kv_heads / tp) / (shape.kv_heads / shape.tp),
    )
