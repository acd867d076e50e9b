"""The example scenarios in inputs/scenarios/: all valid, and each says what it claims to."""

from __future__ import annotations

from pathlib import Path

import pytest

from inputs import catalog_dir, demo_scenario, inputs_dir, scenarios_dir
from models.common import Precision, PurchaseKind, Survivability, WorkloadClass
from models.loader import load_scenario
from models.scenario import Scenario
from solver.outputs.summary import summarize

SCENARIOS = sorted(scenarios_dir().glob("*.yaml"))


def test_package_data_is_found() -> None:
    assert (inputs_dir() / "catalog" / "gpus.yaml").is_file()
    assert (catalog_dir() / "models.yaml").is_file()
    assert (catalog_dir() / "prices" / "aws_gpu_prices.csv").is_file()
    assert demo_scenario() == scenarios_dir() / "demo.yaml"
    assert demo_scenario().is_file()
    assert {p.name for p in SCENARIOS} >= {"demo.yaml", "tiny.yaml", "doc_qa.yaml",
                                           "twenty_rps.yaml"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_example_scenario_validates(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_workload_has_somewhere_to_run(path: Path) -> None:
    # Each allowed GPU type runs the workload's precision, and one of them is offered in a zone.
    scenario = load_scenario(path)
    offered = {o.gpu for z in scenario.zones for o in z.offers}
    for wl in scenario.workloads:
        allowed = wl.allowed_gpus or tuple(g.name for g in scenario.gpus)
        assert all(wl.precision in scenario.gpu(g).precisions for g in allowed), wl.name
        assert offered & set(allowed), wl.name


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_example_cites_its_sources_in_a_comment(path: Path) -> None:
    head = path.read_text(encoding="utf-8").split("\nname:")[0]
    assert head.startswith("#") and len(head.splitlines()) >= 3


@pytest.fixture(scope="module")
def demo() -> Scenario:
    return load_scenario(demo_scenario())


def test_demo_spans_two_regions_five_zones(demo: Scenario) -> None:
    by_region: dict[str, list[str]] = {}
    for zone in demo.zones:
        by_region.setdefault(zone.region, []).append(zone.id)
    assert {r: len(z) for r, z in by_region.items()} == {"us-east-1": 3, "us-west-2": 2}
    for zone in demo.zones:  # priced from the built-in AWS table
        assert all(o.price_source and "aws_gpu_prices.csv" in o.price_source for o in zone.offers)
        assert {"H100-SXM", "L4", "L40S"} <= {o.gpu for o in zone.offers}


def test_demo_has_the_four_pools_it_describes(demo: Scenario) -> None:
    assert len(demo.workloads) == 4
    classes = [w.workload_class for w in demo.workloads]
    assert classes.count(WorkloadClass.batch) == 1
    chat, code = demo.workload("chat"), demo.workload("code-completion")
    assert "70B" in chat.model and "8B" in code.model
    assert demo.workload("agent").input_tokens.p99 > 32_000  # long context
    nightly = demo.workload("nightly-summaries")
    assert nightly.batch is not None and nightly.arrival is None
    assert {w.survivability for w in demo.workloads} >= {Survivability.zone_loss,
                                                         Survivability.n_plus_1}
    for wl in demo.workloads:
        assert wl.allowed_gpus is not None and 2 <= len(wl.allowed_gpus) <= 4
        assert wl.tenant != "default"


def test_demo_interactive_pools_have_a_daily_shape(demo: Scenario) -> None:
    for wl in demo.workloads:
        if wl.arrival is not None:
            assert min(wl.arrival.hourly_shape) < 0.5 < max(wl.arrival.hourly_shape) == 1.0


def test_tiny_hand_figures() -> None:
    tiny = load_scenario(scenarios_dir() / "tiny.yaml")
    (zone,) = tiny.zones
    l4 = next(o for o in zone.offers if o.gpu == "L4")
    assert l4.on_demand is not None and l4.reserved is not None
    assert (l4.gpus_per_node, l4.on_demand.price_per_gpu_hour,
            l4.reserved.price_per_gpu_hour) == (1, 1.0, 0.6)
    # 4 req/s × (1,000 + 200) tokens = 4,800 tokens/s
    (wl,) = summarize(tiny).workloads
    assert (wl.peak_input_tokens_per_s, wl.peak_output_tokens_per_s) == (4000, 800)


def test_doc_qa_models_the_inputs_as_stated() -> None:
    sc = load_scenario(scenarios_dir() / "doc_qa.yaml")
    (wl,) = sc.workloads
    assert wl.arrival is not None
    # 10,000 users × 5 % = 500 online × 1 request/min ÷ 60 s = 8.33 req/s
    assert wl.arrival.peak_rps == pytest.approx(10_000 * 0.05 / 60, rel=1e-4)
    # Little's law at 5 s per request: ≈ 42 in flight (the walk-through's 5,000/h gives ≈ 7)
    assert round(wl.arrival.peak_rps * 5) == 42
    assert (wl.input_tokens.p95, wl.output_tokens.p95) == (2048, 1024)
    assert sc.model(wl.model).total_params_b == pytest.approx(7, abs=0.5)
    assert wl.survivability is Survivability.n_plus_1
    text = (scenarios_dir() / "doc_qa.yaml").read_text(encoding="utf-8")
    assert "30,000 req/h" in text and "5,000 req/h" in text and "2 GPUs" in text


def test_twenty_rps_uses_its_measured_row() -> None:
    sc = load_scenario(scenarios_dir() / "twenty_rps.yaml")
    (wl,) = sc.workloads
    assert wl.arrival is not None and wl.arrival.peak_rps == 20
    assert (wl.input_tokens.p95, wl.output_tokens.p95) == (1500, 300)
    assert wl.utilization == 0.7  # 30 % headroom
    assert wl.allowed_gpus == ("H100-SXM",)
    assert wl.survivability is Survivability.n_plus_1
    (row,) = sc.measured  # from twenty_rps_measured.csv
    assert (row.gpu, row.precision, row.tp, row.max_stable_sequences, row.tested_peak_rps) == (
        "H100-SXM", Precision.fp8, 2, 72, 18)
    assert (row.workload, row.model, row.runtime) == (wl.name, wl.model, wl.runtime)
    assert any(s.endswith("twenty_rps_measured.csv") for s in sc.sources)


def test_spot_is_offered_in_the_demo_but_not_everywhere(demo: Scenario) -> None:
    kinds = {(z.id, o.gpu): {k for k in PurchaseKind if o.terms(k) is not None}
             for z in demo.zones for o in z.offers}
    assert PurchaseKind.spot not in kinds[("usw2-az2", "L4")]  # no spot price in the table
    assert PurchaseKind.spot in kinds[("use1-az1", "L4")]


def test_package_data_globs_cover_every_input_file() -> None:
    # A wheel ships only what [tool.setuptools.package-data] names: every catalog and scenario
    # file must match one of its globs, so a non-editable install finds them too.
    import tomllib

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["inputs"]
    shipped = {p for pattern in patterns for p in inputs_dir().glob(pattern) if p.is_file()}
    files = {p for sub in ("catalog", "scenarios") for p in (inputs_dir() / sub).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    assert files, "no input files found"
    assert files <= shipped, sorted(str(p) for p in files - shipped)
