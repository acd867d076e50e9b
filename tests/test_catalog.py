"""The built-in catalog matches the public figures it cites (copies in tests/data/catalog/)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from models.catalog import GpuType, LlmSpec
from models.common import Precision
from models.loader import load_catalog
from solver.capacity.memory import kv_bytes_per_token

DATA = Path(__file__).resolve().parent / "data" / "catalog"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

GPUS, MODELS, _SOURCES = load_catalog()
GPU = {g.name: g for g in GPUS}
MODEL = {m.name: m for m in MODELS}

#: model_configs.csv row names → catalog names.
MODEL_ROWS = {
    "Llama-3.1-8B": "Llama-3.1-8B",
    "Llama-3.1-70B": "Llama-3.1-70B",
    "Llama-3.1-405B": "Llama-3.1-405B",
    "Qwen2.5-7B(-Instruct)": "Qwen2.5-7B",
    "Qwen2.5-72B(-Instruct)": "Qwen2.5-72B",
    "Mixtral-8x7B-v0.1": "Mixtral-8x7B",
    "DeepSeek-V3 (671B)": "DeepSeek-V3",
}

#: gpu_specs.csv row names → catalog names.
GPU_ROWS = {
    "A10G (AWS g5)": "A10G",
    "L4": "L4",
    "L40S": "L40S",
    "A100 40GB SXM": "A100-40GB",
    "A100 80GB SXM": "A100-80GB",
    "H100 SXM5 80GB": "H100-SXM",
    "H100 PCIe 80GB": "H100-PCIe",
    "H200 SXM 141GB": "H200",
    "B200 (HGX/DGX) 180GB": "B200",
    "MI300X": "MI300X",
}


def rows(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


MODEL_CONFIGS = {MODEL_ROWS[r["model"]]: r for r in rows("model_configs.csv")}
GPU_SPECS = {GPU_ROWS[r["gpu"]]: r for r in rows("gpu_specs.csv") if r["gpu"] in GPU_ROWS}


def test_catalog_has_exactly_the_named_entries_each_with_a_source() -> None:
    assert list(GPU) == ["A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100-SXM",
                         "H100-PCIe", "H200", "B200", "MI300X"]
    assert list(MODEL) == ["Llama-2-7B", "Llama-2-70B", "BLOOM-176B", "Llama-3.1-8B",
                           "Llama-3.1-70B",
                           "Llama-3.1-405B", "Qwen2.5-7B", "Qwen2.5-72B", "Mixtral-8x7B",
                           "DeepSeek-V3", "GPT-J-6B", "Mistral-7B", "Falcon-180B"]
    entries: list[GpuType | LlmSpec] = [*GPUS, *MODELS]
    assert all(len(e.source) > 20 for e in entries)


# --- models ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(MODEL_CONFIGS))
def test_kv_bytes_per_token_match_the_shared_figures(name: str) -> None:
    expected = int(MODEL_CONFIGS[name]["kv_cache_bytes_per_token_bf16_derived"])
    assert kv_bytes_per_token(MODEL[name], Precision.bf16) == expected


def test_deepseek_kv_is_the_mla_latent() -> None:
    # 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 bytes = 70,272 bytes/token
    assert MODEL["DeepSeek-V3"].kv_latent_dim == 576
    assert kv_bytes_per_token(MODEL["DeepSeek-V3"], Precision.bf16) == 61 * 576 * 2 == 70272


@pytest.mark.parametrize("name", sorted(MODEL_CONFIGS))
def test_parameter_counts_match_the_shared_figures(name: str) -> None:
    row, spec = MODEL_CONFIGS[name], MODEL[name]
    assert spec.total_params_b == float(row["params_total_B_derived"])
    assert spec.active_params_b == float(row["params_active_B_derived"])


@pytest.mark.parametrize("name", sorted(MODEL_CONFIGS))
def test_architecture_matches_the_shared_configs(name: str) -> None:
    row, spec = MODEL_CONFIGS[name], MODEL[name]
    assert spec.layers == int(row["num_hidden_layers"])
    assert spec.hidden_size == int(row["hidden_size"])
    assert spec.attention_heads == int(row["num_attention_heads"])
    assert spec.kv_heads == int(row["num_key_value_heads"])
    assert spec.ffn_size == int(row["intermediate_size"])
    assert spec.vocab_size == int(row["vocab_size"])
    assert spec.max_context_tokens == int(row["max_position_embeddings"])


def dense_params_b(spec: LlmSpec, mlp_matrices: int = 3) -> float:
    """Llama-style dense parameter count, independent of the catalog's stated total [10^9];
    ``mlp_matrices`` 2 for an ungated MLP (GPT-J, Falcon: up, down)."""
    kv_width = spec.kv_heads * spec.head_dim
    attention = 2 * spec.hidden_size**2 + 2 * spec.hidden_size * kv_width  # q, o; k, v
    mlp = mlp_matrices * spec.hidden_size * spec.ffn_size  # gate, up, down
    embeddings = 2 * spec.vocab_size * spec.hidden_size  # untied input and output
    return (spec.layers * (attention + mlp) + embeddings) / 1e9


@pytest.mark.parametrize(("name", "readme_b"), [
    ("Llama-2-7B", 6.7), ("Llama-2-70B", 69.0), ("Llama-3.1-8B", 8.0), ("Llama-3.1-70B", 70.6),
    ("Llama-3.1-405B", 405.9), ("Qwen2.5-7B", 7.6), ("Qwen2.5-72B", 72.7), ("Mistral-7B", 7.24),
])
def test_dense_parameter_count_follows_from_the_architecture(name: str, readme_b: float) -> None:
    # Llama-2-7B: 32 × (2·4096² + 2·4096·4096 + 3·4096·11008) + 2·32000·4096 = 6.738e9
    spec = MODEL[name]
    assert dense_params_b(spec) == pytest.approx(spec.total_params_b, rel=0.005)
    assert spec.total_params_b == pytest.approx(readme_b, rel=0.01)


@pytest.mark.parametrize(("name", "stated_b"), [("GPT-J-6B", 6.05), ("Falcon-180B", 180.0)])
def test_ungated_parameter_count_follows_from_the_architecture(name: str, stated_b: float) -> None:
    # TensorRT-LLM 0.9's configs of GPT-J 6B and Falcon-180B: GELU MLP of two matrices, 4 × hidden
    spec = MODEL[name]
    assert spec.ffn_size == 4 * spec.hidden_size
    assert spec.attention_heads * spec.head_dim == spec.hidden_size
    assert dense_params_b(spec, mlp_matrices=2) == pytest.approx(spec.total_params_b, rel=0.005)
    assert spec.total_params_b == pytest.approx(stated_b, rel=0.01)


def test_llama2_figures_follow_the_shared_readme() -> None:
    # ../shared/data/README.md: Llama-2-7B 32 layers, hidden 4096, 32 heads, 32 KV heads,
    # vocab 32,000; Llama-2-70B 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28,672.
    small, large = MODEL["Llama-2-7B"], MODEL["Llama-2-70B"]
    assert (small.layers, small.hidden_size, small.attention_heads, small.kv_heads,
            small.vocab_size) == (32, 4096, 32, 32, 32000)
    assert (large.layers, large.hidden_size, large.attention_heads, large.kv_heads,
            large.ffn_size, large.vocab_size) == (80, 8192, 64, 8, 28672, 32000)
    # 2 × 32 layers × 32 heads × 128 × 2 bytes = 524,288 bytes/token (no GQA)
    assert kv_bytes_per_token(small, Precision.bf16) == 524288


def test_moe_models_activate_fewer_parameters_than_they_hold() -> None:
    assert MODEL["Mixtral-8x7B"].active_params_b < MODEL["Mixtral-8x7B"].total_params_b / 3
    assert MODEL["DeepSeek-V3"].active_params_b < MODEL["DeepSeek-V3"].total_params_b / 10


# --- GPUs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GPU_SPECS))
def test_gpu_figures_match_the_datasheet_table(name: str) -> None:
    row, gpu = GPU_SPECS[name], GPU[name]
    assert gpu.hbm_bandwidth_gb_per_s == pytest.approx(float(row["mem_bw_TBps"]) * 1000)
    if row["bf16_fp16_dense_tflops"]:  # blank for the A10G: an estimate instead
        assert gpu.bf16_tflops == float(row["bf16_fp16_dense_tflops"])
    if row["fp8_dense_tflops"]:
        assert gpu.fp8_tflops == float(row["fp8_dense_tflops"])
    else:
        assert gpu.fp8_tflops is None
        assert Precision.fp8 not in gpu.precisions


@pytest.mark.parametrize("name", sorted(GPU_SPECS))
def test_memory_is_driver_visible_gib_a_little_under_the_datasheet(name: str) -> None:
    # Datasheet "GB" are binary sizes; the driver keeps a little, GDDR6 ECC takes 1/16.
    datasheet = float(GPU_SPECS[name]["memory_gb"])
    assert datasheet * 15 / 16 - 0.01 <= GPU[name].memory_gib <= datasheet


@pytest.mark.parametrize("name", sorted(n for n, r in GPU_SPECS.items()
                                        if r["interconnect_GBps_bidir_per_gpu"]))
def test_nvlink_bandwidth_is_per_direction(name: str) -> None:
    bidirectional = float(GPU_SPECS[name]["interconnect_GBps_bidir_per_gpu"])
    if name == "H100-PCIe":  # the bridge joins pairs only: a 4-GPU ring runs at PCIe Gen5 speed
        assert GPU[name].link_bandwidth_gb_per_s == 64
    else:
        assert GPU[name].link_bandwidth_gb_per_s == bidirectional / 2


def test_node_sizes_and_precisions() -> None:
    assert {n for n, g in GPU.items() if g.gpus_per_node == 8} == {
        "A100-40GB", "A100-80GB", "H100-SXM", "H200", "B200", "MI300X"}
    assert {n for n, g in GPU.items() if g.gpus_per_node == 4} == {
        "A10G", "L4", "L40S", "H100-PCIe"}
    for ampere in ("A10G", "A100-40GB", "A100-80GB"):
        assert Precision.fp8 not in GPU[ampere].precisions
        assert {Precision.bf16, Precision.int8, Precision.int4} <= set(GPU[ampere].precisions)
    for name in ("L4", "L40S", "H100-SXM", "H100-PCIe", "H200", "B200", "MI300X"):
        assert Precision.fp8 in GPU[name].precisions


def test_a10g_compute_is_the_documented_estimate() -> None:
    assert GPU["A10G"].bf16_tflops == 70
    assert "ESTIMATE" in GPU["A10G"].source


def test_efficiency_is_left_at_schema_defaults_in_gpus_yaml() -> None:
    from inputs import catalog_dir
    from models.loader import read_document

    doc = read_document(catalog_dir() / "gpus.yaml")
    assert all("efficiency" not in entry for entry in doc["gpus"])


@pytest.mark.parametrize("name", ["model_configs.csv", "gpu_specs.csv"])
def test_test_copies_equal_the_shared_files(name: str) -> None:
    shared = SHARED / ("models" if name == "model_configs.csv" else "specs") / name
    if not shared.exists():
        pytest.skip("../shared/data is not present")
    assert (DATA / name).read_bytes() == shared.read_bytes()


def test_builtin_price_table_is_the_shared_skypilot_subset() -> None:
    from inputs import catalog_dir

    shared = SHARED / "catalog" / "skypilot_aws_gpu_subset.csv"
    if not shared.exists():
        pytest.skip("../shared/data is not present")
    assert (catalog_dir() / "prices" / "aws_gpu_prices.csv").read_bytes() == shared.read_bytes()
