"""fleetplan sweep, its inputs: ``--vary`` specs, fields by path, the design of the variants."""

from __future__ import annotations

import re

import numpy as np
import pytest

from inputs import demo_scenario, scenarios_dir
from models.errors import InputError
from models.loader import load_scenario
from models.scenario import Scenario
from solver.studies.executors import SolveOptions
from solver.studies.scenario_paths import multiply, replace, scenario_document, set_path
from solver.studies.sweep import MAX_VARIANTS, Design, build_sweep
from solver.studies.sweep_spec import parse_vary

TINY = scenarios_dir() / "tiny.yaml"
OPTIONS = SolveOptions(time_limit_s=30)


@pytest.fixture(scope="module")
def tiny() -> Scenario:
    return load_scenario(TINY)


@pytest.fixture(scope="module")
def demo() -> Scenario:
    return load_scenario(demo_scenario())


def test_levels_are_yaml_values_or_multipliers() -> None:
    vary = parse_vary("a.b=20, true ,zone_loss,[L4, H100-SXM],×0.8,x1.2,*2,-5")
    assert [lv.value for lv in vary.levels] == [20, True, "zone_loss", ["L4", "H100-SXM"], 0.8,
                                               1.2, 2.0, -5]
    assert [lv.multiplier for lv in vary.levels] == [False] * 4 + [True] * 3 + [False]
    assert parse_vary("gpu=xeon").levels[0].value == "xeon"  # x + a word is a value
    assert vary.distribution is None


@pytest.mark.parametrize(("spec", "message"), [
    ("a.b", "expected KEY=V1,V2"),
    ("a.b=", "expected KEY=V1,V2"),
    ("a.b=×0", "is not positive"),
    ("a.b=x1.2.3", "is not a multiplier"),
    ("a.b=1,1", "given twice"),
    ("a.b=.inf", "not a finite number"),
    ("a.b=~unifrom(1,2)", "did you mean `uniform`"),
    ("a.b=~uniform(2,1)", "needs low < high"),
    ("a.b=~triangular(1,2)", "takes 3 finite numbers"),
    ("a.b=~normal(1,0)", "needs sd > 0"),
    ("a.b=~lognormal(-1,0.2)", "median > 0"),
    ("a.b=1,~uniform(1,2)", "a distribution is the key's only value"),
])
def test_bad_specs_are_refused_with_a_fix(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_vary(spec)


def test_distributions_draw_within_their_support() -> None:
    rng = np.random.default_rng(0)
    tri = parse_vary("k=×~triangular(0.8, 1, 1.3)").distribution
    assert tri is not None and tri.multiplier and tri.text == "×~triangular(0.8, 1, 1.3)"
    draws = [tri.draw(rng) for _ in range(2000)]
    assert min(draws) >= 0.8 and max(draws) <= 1.3
    assert np.mean(draws) == pytest.approx((0.8 + 1 + 1.3) / 3, abs=0.01)  # the mean of a
    # triangular distribution is (low + mode + high) / 3
    logu = parse_vary("k=~loguniform(1,100)").distribution
    assert logu is not None
    logs = np.log10([logu.draw(rng) for _ in range(4000)])
    assert np.mean(logs) == pytest.approx(1.0, abs=0.05)  # uniform in log10 over [0, 2]
    lognormal = parse_vary("k=~lognormal(2,0.5)").distribution
    assert lognormal is not None
    assert np.median([lognormal.draw(rng) for _ in range(4000)]) == pytest.approx(2, rel=0.05)


def test_a_scenario_survives_its_document(demo: Scenario) -> None:
    assert Scenario.model_validate(scenario_document(demo)) == demo


def test_paths_select_by_name_id_gpu_and_pattern(demo: Scenario) -> None:
    doc = scenario_document(demo)
    assert set_path(doc, "workloads.chat.arrival.peak_rps", replace(20.0), "s") == 1
    assert doc["workloads"][0]["arrival"]["peak_rps"] == 20.0
    spot_h100 = [z["id"] for z in doc["zones"] for o in z["offers"]
                 if o["gpu"] == "H100-SXM" and o["spot"] is not None]
    before = {z["id"]: o["spot"]["price_per_gpu_hour"] for z in doc["zones"]
              for o in z["offers"] if o["gpu"] == "H100-SXM" and o["spot"] is not None}
    changed = set_path(doc, "zones.*.offers.H100-SXM.spot.price_per_gpu_hour", multiply(0.8), "s")
    assert changed == len(spot_h100) > 1
    after = {z["id"]: o["spot"]["price_per_gpu_hour"] for z in doc["zones"]
             for o in z["offers"] if o["gpu"] == "H100-SXM" and o["spot"] is not None}
    assert after == {z: pytest.approx(p * 0.8) for z, p in before.items()}
    assert set_path(doc, "zones.use1-*.offers.H100-SXM.spot.stock_gpus", multiply(0.5), "s") >= 1
    east = [o["spot"]["stock_gpus"] for z in doc["zones"] if z["id"].startswith("use1-")
            for o in z["offers"] if o["gpu"] == "H100-SXM" and o["spot"] is not None]
    assert all(isinstance(n, int) for n in east)  # a count stays a whole number
    set_path(doc, "workloads.chat.arrival.hourly_shape", multiply(0.5), "s")
    assert doc["workloads"][0]["arrival"]["hourly_shape"][18] == 0.5  # 1.0 at 18:00, halved


@pytest.mark.parametrize(("path", "message"), [
    ("workloads.caht.arrival.peak_rps", "did you mean `chat`"),
    ("workloads.chat.arival.peak_rps", "did you mean `arrival`"),
    ("policy.share_nodes.x", "holds the value `true`, which has no `x`"),
    ("zones.*.offers.B999.spot.price_per_gpu_hour", "selects no value"),
    ("workloads.nightly-summaries.arrival.peak_rps", "holds nothing (null)"),
    ("workloads..name", "empty step"),
])
def test_wrong_paths_are_refused(demo: Scenario, path: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        set_path(scenario_document(demo), path, multiply(2.0), path)


def test_multiplying_text_or_null_names_the_place(demo: Scenario) -> None:
    doc = scenario_document(demo)
    held = re.escape('`workloads.chat.model` holds `"Llama-3.1-70B"`')
    with pytest.raises(InputError, match=held):
        set_path(doc, "workloads.chat.model", multiply(2.0), "s")
    # under a pattern, entries the change cannot take are passed over, the others changed
    # (the batch pool has no `arrival`: its rate is a daily volume)
    assert set_path(doc, "workloads.*.arrival.peak_rps", multiply(2.0), "s") == sum(
        w["arrival"] is not None for w in doc["workloads"]) == 3


def test_a_grid_in_order_and_a_zip(tiny: Scenario) -> None:
    varies = [parse_vary("workloads.chat.arrival.peak_rps=2,8"),
              parse_vary("zones.zone-a.offers.L4.on_demand.price_per_gpu_hour=×0.5,×2")]
    grid = build_sweep(tiny, varies, Design(), OPTIONS)
    assert [v.values for v in grid] == [
        (("workloads.chat.arrival.peak_rps", "2"), ("zones.zone-a.offers.L4.on_demand."
                                                    "price_per_gpu_hour", "×0.5")),
        (("workloads.chat.arrival.peak_rps", "2"), ("zones.zone-a.offers.L4.on_demand."
                                                    "price_per_gpu_hour", "×2")),
        (("workloads.chat.arrival.peak_rps", "8"), ("zones.zone-a.offers.L4.on_demand."
                                                    "price_per_gpu_hour", "×0.5")),
        (("workloads.chat.arrival.peak_rps", "8"), ("zones.zone-a.offers.L4.on_demand."
                                                    "price_per_gpu_hour", "×2")),
    ]
    last = grid[3].scenario
    assert last.workload("chat").arrival.peak_rps == 8  # type: ignore[union-attr]
    l4 = next(o for o in last.zone("zone-a").offers if o.gpu == "L4")
    assert l4.on_demand is not None and l4.on_demand.price_per_gpu_hour == 2.0  # 1.00 × 2
    zipped = build_sweep(tiny, varies, Design(zip_levels=True), OPTIONS)
    assert [v.label for v in zipped] == [grid[0].label, grid[3].label]
    assert [v.key for v in zipped] == [grid[0].key, grid[3].key]
    with pytest.raises(InputError, match="as many levels each"):
        build_sweep(tiny, [*varies, parse_vary("policy.hours_per_month=720,730,744")],
                    Design(zip_levels=True), OPTIONS)


def test_values_a_scenario_file_could_not_hold_are_refused(tiny: Scenario) -> None:
    with pytest.raises(InputError, match=r"variant `tiny workloads.chat.arrival.peak_rps=-1`"
                                         r".*workloads\[0\].arrival.peak_rps"):
        build_sweep(tiny, [parse_vary("workloads.chat.arrival.peak_rps=4,-1")], Design(),
                    OPTIONS)
    with pytest.raises(InputError, match="unknown GPU `H100`"):
        build_sweep(tiny, [parse_vary("workloads.chat.allowed_gpus=[L4],[H100]")], Design(),
                    OPTIONS)


def test_samples_are_reproducible_and_extend(tiny: Scenario) -> None:
    varies = [parse_vary("workloads.chat.arrival.peak_rps=~uniform(2,30)"),
              parse_vary("zones.*.offers.*.reserved.price_per_gpu_hour=×~normal(1,0.1)")]
    four = build_sweep(tiny, varies, Design(samples=4, seed=7), OPTIONS)
    six = build_sweep(tiny, varies, Design(samples=6, seed=7), OPTIONS)
    assert [v.key for v in six[:4]] == [v.key for v in four]  # sample i is the same draw
    other = build_sweep(tiny, varies, Design(samples=4, seed=8), OPTIONS)
    assert {v.key for v in other}.isdisjoint(v.key for v in four)
    rates = [float(v.values[0][1]) for v in six]
    assert all(2 <= r <= 30 for r in rates) and len(set(rates)) == 6
    assert [v.sample for v in four] == [0, 1, 2, 3]
    first = four[0]
    factor = float(first.values[1][1])
    h100 = next(o for o in first.scenario.zones[0].offers if o.gpu == "H100-SXM")
    assert h100.reserved is not None
    assert h100.reserved.price_per_gpu_hour == pytest.approx(2.40 * factor)
    assert first.scenario.workload("chat").arrival.peak_rps == rates[0]  # type: ignore[union-attr]


def test_samples_need_a_distribution_and_back(tiny: Scenario) -> None:
    with pytest.raises(InputError, match="a distribution needs --samples"):
        build_sweep(tiny, [parse_vary("workloads.chat.arrival.peak_rps=~uniform(2,30)")],
                    Design(), OPTIONS)
    with pytest.raises(InputError, match="nothing to sample"):
        build_sweep(tiny, [parse_vary("workloads.chat.arrival.peak_rps=2,3")],
                    Design(samples=3), OPTIONS)
    with pytest.raises(InputError, match="varied twice"):
        build_sweep(tiny, [parse_vary("policy.share_nodes=true"),
                           parse_vary("policy.share_nodes=false")], Design(), OPTIONS)
    too_many = [parse_vary(f"workloads.chat.input_tokens.{p}=" + ",".join(
        str(1000 + i) for i in range(25))) for p in ("p50", "p95", "p99")]
    with pytest.raises(InputError, match=f"at most {MAX_VARIANTS:,}"):
        build_sweep(tiny, too_many, Design(), OPTIONS)


def test_keys_follow_content_and_settings(tiny: Scenario) -> None:
    same = build_sweep(tiny, [parse_vary("zones.zone-a.offers.L4.on_demand.price_per_gpu_hour="
                                         "1,×1,×2")], Design(), OPTIONS)
    assert same[0].key == same[1].key != same[2].key  # 1.00 set, or 1.00 × 1: one plan
    for options in (SolveOptions(time_limit_s=31), SolveOptions(time_limit_s=30, threads=2),
                    SolveOptions(time_limit_s=30, gap=0.02)):
        again = build_sweep(tiny, [parse_vary("policy.share_nodes=true")], Design(), options)
        assert again[0].key != build_sweep(tiny, [parse_vary("policy.share_nodes=true")],
                                           Design(), OPTIONS)[0].key


def test_compare_shortcuts_mix_with_paths_in_order(tiny: Scenario) -> None:
    varies = [parse_vary("workloads.chat.arrival.peak_rps=10"), parse_vary("growth=1.5")]
    grown = build_sweep(tiny, varies, Design(), OPTIONS)[0].scenario
    assert grown.workload("chat").arrival.peak_rps == 15  # type: ignore[union-attr]
    reversed_order = build_sweep(tiny, varies[::-1], Design(), OPTIONS)[0].scenario
    assert reversed_order.workload("chat").arrival.peak_rps == 10  # type: ignore[union-attr]
    with pytest.raises(InputError, match="growth must be a positive number"):
        build_sweep(tiny, [parse_vary("growth=×2")], Design(), OPTIONS)


def test_a_drawn_factor_reads_as_a_factor(tiny: Scenario) -> None:
    """Was: ``×~lognormal(1,0.25)`` labelled variants ``peak_rps=1.09`` and wrote 1.09 in the
    key's column: read as 1.09 req/s, not × 1.09 of the scenario's rate."""
    from types import SimpleNamespace

    from solver.studies.sweep_results import SweepResult, results_table
    from solver.studies.tornado import swings

    key = "workloads.chat.arrival.peak_rps"
    varies = [parse_vary(f"{key}=×~lognormal(1,0.25)"), parse_vary("policy.share_nodes=true")]
    variants = build_sweep(tiny, varies, Design(samples=6, seed=3), OPTIONS)
    rate = tiny.workload("chat").arrival.peak_rps  # type: ignore[union-attr]
    for v in variants:
        factor = dict(v.values)[key]
        assert isinstance(factor, float)
        assert v.scenario.workload("chat").arrival.peak_rps == pytest.approx(rate * factor)  # type: ignore[union-attr]
        assert f" {key}=×{factor:.4g} " in v.label and "share_nodes=true" in v.label
    frame = results_table([SweepResult(v, None, None, 1) for v in variants], [key])
    assert [float(str(cell).removeprefix("×")) for cell in frame[key]] == [
        dict(v.values)[key] for v in variants]
    assert all(str(cell).startswith("×") for cell in frame[key])
    costed = [SimpleNamespace(variant=v, row=SimpleNamespace(cost_per_month=dict(v.values)[key]))
              for v in variants]  # the cost rises with the factor
    (bar,) = swings(costed, [key], [key])  # type: ignore[arg-type]
    assert bar.low_value.startswith("lowest third (≤ ×")
    assert bar.high_value.startswith("highest third (≥ ×")
