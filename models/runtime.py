"""Serving runtimes: the fixed costs of each engine generation on each GPU type.

A step of a serving engine costs its roofline (silicon: :class:`~models.catalog.EfficiencyFactors`
of the GPU) plus fixed costs that belong to the engine: a per-step cost (scheduling, sampling,
launching the step), a per-layer cost (kernel launches and the gaps between them; small where the
engine replays decode steps as CUDA graphs) and a per-sequence cost. They differ by engine
generation far more than by GPU: a 2023 research runtime spends 17–25 ms of a 70B decode step
outside the roofline, TensorRT-LLM and vLLM ≥ 0.6 a few ms (docs/calibration.md). A workload names
its runtime (``runtime: vllm``); the catalog entry it resolves to gives the costs of every GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field, model_validator

from models.common import Frozen
from models.errors import Problem, did_you_mean


class RuntimeCosts(Frozen):
    """Fixed costs of one runtime on one GPU type."""

    gpu: str = Field(min_length=1)
    """Catalog GPU name."""
    decode_step_overhead_ms: float = Field(ge=0)
    """Cost of every iteration whatever the model [ms]."""
    step_overhead_ms_per_layer: float = Field(ge=0)
    """Cost of every iteration per transformer layer [ms/layer]."""
    step_overhead_ms_per_seq: float = Field(ge=0)
    """Cost of every iteration per sequence in it [ms/sequence]."""
    allreduce_latency_us: float | None = Field(default=None, ge=0)
    """Latency of one of this runtime's all-reduce calls over 2 GPUs (× log2 of the GPUs in
    the ring) [µs]; ``None``: the GPU's (NCCL's, as profiled)."""
    fitted_on: str = Field(min_length=1)
    """Where these costs come from: the GPU they were fitted on (this GPU, or another of the
    same generation they are transferred from), as ``fleetplan calibrate`` wrote it."""


class RuntimeSpec(Frozen):
    """One serving runtime generation and its fixed costs per GPU type."""

    name: str = Field(min_length=1)
    """Catalog name (e.g. ``vllm-0.6``, ``trtllm``)."""
    matches: tuple[str, ...] = ()
    """Runtime names a workload may write for this entry, besides :attr:`name`: a workload's
    ``runtime`` matches when it equals one of them or continues one with ``-`` or ``.`` (so
    ``vllm`` matches ``vllm``, ``vllm-0.6.3`` and ``vllm-0.7``)."""
    description: str = ""
    cuda_graph_decode: bool = True
    """Decode steps are replayed as CUDA graphs (per-layer launch costs are small); selects
    the calibration's prior for the split of fixed costs between step and layer."""
    allreduce: Literal["nccl", "custom"] = "nccl"
    """How the runtime all-reduces tensor-parallel activations: NCCL, or a custom one-shot
    kernel on NVLink (vLLM from 0.3.1, TensorRT-LLM); where its rows cannot fix its all-reduce
    latency, the calibration holds it at that implementation's (docs/calibration.md,
    "All-reduce latency per runtime")."""
    custom_allreduce_pcie_max_tp: int | None = Field(default=None, ge=2)
    """With a custom all-reduce: the most GPUs its kernel serves on GPUs linked by PCIe
    (:attr:`models.catalog.GpuType.peer_link`); a larger replica all-reduces with NCCL
    (vLLM: 2). ``None``: the kernel serves every replica."""
    costs: tuple[RuntimeCosts, ...] = ()
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_entry_per_gpu(self) -> RuntimeSpec:
        gpus = [c.gpu for c in self.costs]
        twice = sorted({g for g in gpus if gpus.count(g) > 1})
        if twice:
            raise ValueError(f"costs list GPU(s) {', '.join(twice)} more than once")
        return self

    def names(self) -> tuple[str, ...]:
        """Every name that selects this entry exactly or as a prefix."""
        return (self.name, *self.matches)

    def uses_nccl(self, peer_link: str, tp: int) -> bool:
        """Whether a replica of ``tp`` GPUs linked by ``peer_link`` all-reduces with NCCL:
        always for an NCCL runtime; for a custom kernel, when the GPUs are linked by PCIe and
        the replica has more of them than :attr:`custom_allreduce_pcie_max_tp`."""
        if self.allreduce == "nccl":
            return True
        limit = self.custom_allreduce_pcie_max_tp
        return peer_link == "pcie" and limit is not None and tp > limit

    def costs_for(self, gpu: str) -> RuntimeCosts | None:
        """The costs of this runtime on ``gpu`` (``None`` when the entry has none)."""
        return next((c for c in self.costs if c.gpu == gpu), None)


def _continues(runtime: str, name: str) -> bool:
    return runtime == name or (runtime.startswith(name) and runtime[len(name)] in "-.")


def resolve_runtime(runtime: str, runtimes: Iterable[RuntimeSpec]) -> RuntimeSpec | None:
    """The catalog entry a workload's ``runtime`` selects: an exact name first, else the entry
    with the longest name or ``matches`` item that ``runtime`` continues; ``None`` when none."""
    best: tuple[int, RuntimeSpec] | None = None
    for spec in runtimes:
        for name in spec.names():
            if runtime == name:
                return spec
            if _continues(runtime, name) and (best is None or len(name) > best[0]):
                best = (len(name), spec)
    return None if best is None else best[1]


def unknown_runtime_problem(runtime: str, runtimes: Iterable[RuntimeSpec], file: str,
                            where: str) -> Problem | None:
    """The problem of a runtime the runtime catalog has no entry for (its fixed costs set every
    predicted rate; planned without them, the rate would rest on no calibration of any
    runtime), naming what the catalog has and the fix; ``None`` when it resolves."""
    specs = list(runtimes)
    if not specs or resolve_runtime(runtime, specs) is not None:
        return None
    names = [n for r in specs for n in r.names()]
    return Problem(file, where, f"unknown runtime `{runtime}`: the runtime catalog has no "
                   "fixed costs for it, and a predicted rate needs them",
                   did_you_mean(runtime, names) + "; plan on a runtime the calibration has "
                   "(docs/calibration.md lists them and the GPUs each was fitted on), or add "
                   f"`{runtime}` and its per-GPU costs in a catalog overlay (`runtimes:`, fitted "
                   "with `fleetplan calibrate` on your measurements)")

