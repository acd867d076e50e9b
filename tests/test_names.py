"""Names people type: GPU spellings, instance and machine types, Hugging Face ids, zone names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from models.common import Precision
from models.errors import InputError
from models.loader import load_catalog, load_scenario
from models.names import INSTANCE_TYPES, precision_hint, resolve_gpu, resolve_model

GPUS, MODELS, _ = load_catalog()
GPU_NAMES = [g.name for g in GPUS]
CATALOG_MODELS = {m.name: m.aliases for m in MODELS}


@pytest.mark.parametrize(("typed", "gpu", "per_node"), [
    ("H100-SXM", "H100-SXM", None),
    ("h100", "H100-SXM", None),
    ("H100 SXM5", "H100-SXM", None),
    ("a100 80gb", "A100-80GB", None),
    ("p5.48xlarge", "H100-SXM", 8),
    ("p4d.24xlarge", "A100-40GB", 8),
    ("g6.2xlarge", "L4", 1),
    ("g6e.12xlarge", "L40S", 4),
    ("a3-highgpu-8g", "H100-SXM", 8),
    ("a2-ultragpu-4g", "A100-80GB", 4),
    ("g2-standard-48", "L4", 4),
    ("Standard_ND96isr_H100_v5", "H100-SXM", 8),
    ("ND96amsr_A100_v4", "A100-80GB", 8),
])
def test_gpu_names_and_instance_types_resolve(typed: str, gpu: str, per_node: int | None
                                              ) -> None:
    assert resolve_gpu(typed, GPU_NAMES) == (gpu, per_node, "")


def test_every_instance_type_names_a_catalog_gpu() -> None:
    assert {shape.gpu for shape in INSTANCE_TYPES.values()} <= set(GPU_NAMES)


def test_ambiguous_and_unknown_gpus_are_refused_with_candidates() -> None:
    assert resolve_gpu("A100", GPU_NAMES) == (
        None, None, "ambiguous: did you mean `A100-40GB` or `A100-80GB`?")
    found, _, why = resolve_gpu("H1O0", GPU_NAMES)
    assert found is None and "`H100-SXM`" in why
    # A known instance of a GPU the catalog lacks says so, rather than guessing another.
    found, _, why = resolve_gpu("p5.48xlarge", ["L4"])
    assert found is None and why == "it is a H100-SXM, which the catalog does not have: add it"


@pytest.mark.parametrize(("typed", "model", "precision"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B", None),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "Llama-3.1-70B", None),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "Llama-3.1-8B", Precision.fp8),
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "Llama-3.1-70B", Precision.fp8),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "Llama-3.1-70B", Precision.int4),
    ("meta-llama/Llama-2-70b-chat-hf", "Llama-2-70B", None),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4", "Qwen2.5-72B", Precision.int4),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B", None),
    ("deepseek-ai/DeepSeek-V3-0324", "DeepSeek-V3", None),
    ("/models/llama-3.1-8b-instruct", "Llama-3.1-8B", None),
    # the id vLLM results name it by: its stem `bloom` is no catalog name (declared alias)
    ("bigscience/bloom", "BLOOM-176B", None),
])
def test_hugging_face_ids_resolve_to_catalog_models(typed: str, model: str,
                                                    precision: Precision | None) -> None:
    assert resolve_model(typed, CATALOG_MODELS) == (model, "")
    assert precision_hint(typed) == precision


def test_a_different_model_is_not_taken_for_a_close_one() -> None:
    found, why = resolve_model("meta-llama/Llama-3.3-70B-Instruct", CATALOG_MODELS)
    assert found is None and why.startswith("did you mean")


def test_a_catalog_entry_declares_the_names_it_is_served_under(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"models": [
        {"name": "Llama-3.1-8B", "aliases": ["chat-prod"]}]}), encoding="utf-8")
    _, models, _ = load_catalog(overlays=[overlay])
    aliases = {m.name: m.aliases for m in models}
    assert resolve_model("chat-prod", aliases) == ("Llama-3.1-8B", "")


def scenario(tmp_path: Path, zone: dict[str, Any], workload: dict[str, Any]) -> Path:
    """A one-zone, one-workload scenario file (small token lengths, a 1 req/s peak)."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({
        "name": "typed", "zones": [zone],
        "workloads": [{"name": "chat", "arrival": {"peak_rps": 1},
                       "input_tokens": {"p50": 100, "p95": 200, "p99": 300},
                       "output_tokens": {"p50": 10, "p95": 20, "p99": 30},
                       "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50}, **workload}],
    }), encoding="utf-8")
    return path


def test_scenario_names_are_rewritten_to_catalog_names(tmp_path: Path) -> None:
    sc = load_scenario(scenario(
        tmp_path, {"id": "dc-1", "region": "r", "offers": [
            {"gpu": "p5.48xlarge", "on_demand": {"price_per_gpu_hour": 4, "stock_gpus": 16}}]},
        {"model": "meta-llama/Llama-3.1-8B-Instruct", "allowed_gpus": ["H100"]}))
    (offer,) = sc.zones[0].offers
    assert (offer.gpu, offer.instance_type, offer.gpus_per_node) == ("H100-SXM", "p5.48xlarge", 8)
    assert sc.workloads[0].model == "Llama-3.1-8B"
    assert sc.workloads[0].allowed_gpus == ("H100-SXM",)


L4_ZONE = {"id": "dc-1", "region": "r", "offers": [
    {"gpu": "L4", "on_demand": {"price_per_gpu_hour": 1, "stock_gpus": 16}}]}


def test_a_quantised_model_id_sets_the_workload_precision(tmp_path: Path) -> None:
    # an AWQ checkpoint is int4 weights: planning it as bf16 would size 4x the memory
    sc = load_scenario(scenario(tmp_path, L4_ZONE, {"model": "Qwen/Qwen2.5-7B-Instruct-AWQ"}))
    assert (sc.workloads[0].model, sc.workloads[0].precision) == ("Qwen2.5-7B", Precision.int4)
    stated = load_scenario(scenario(tmp_path, L4_ZONE, {
        "model": "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "precision": "fp8"}))
    assert stated.workloads[0].precision is Precision.fp8


def test_a_precision_the_model_id_contradicts_is_refused(tmp_path: Path) -> None:
    path = scenario(tmp_path, L4_ZONE, {"model": "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
                                        "precision": "bf16"})
    with pytest.raises(InputError) as info:
        load_scenario(path)
    (problem,) = info.value.problems
    assert (problem.file, problem.location) == (str(path), "workloads[0].precision")
    assert "fp8" in problem.message and "precision: fp8" in problem.fix


def test_an_aws_zone_name_without_a_mapping_is_refused(tmp_path: Path) -> None:
    path = scenario(tmp_path, {"id": "us-east-1a", "region": "us-east-1", "offers": [
        {"gpu": "L4", "on_demand": {"price_per_gpu_hour": 1, "stock_gpus": 16}}]},
        {"model": "Llama-3.1-8B"})
    with pytest.raises(InputError) as info:
        load_scenario(path)
    (problem,) = info.value.problems
    assert (problem.file, problem.location) == (str(path), "zones[0].id")
    assert "per-account aliases" in problem.fix and "zone_names" in problem.fix
