"""Scenario loading: every category of bad input becomes located problems with a fix, never a
traceback; good input resolves against the catalog, price tables and measured rows."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.errors import InputError, Problem, did_you_mean
from models.loader import load_scenario
from models.scenario import Scenario


def base_doc() -> dict[str, Any]:
    """A small valid scenario: one zone, one interactive workload."""
    return {
        "name": "t",
        "zones": [{
            "id": "zone-a",
            "region": "region-1",
            "offers": [
                {"gpu": "L4", "on_demand": {"price_per_gpu_hour": 1.0, "stock_gpus": 8}},
                {"gpu": "H100-SXM",
                 "reserved": {"price_per_gpu_hour": 2.4, "stock_gpus": 8},
                 "spot": {"price_per_gpu_hour": 1.5, "stock_gpus": 8}},
            ],
        }],
        "workloads": [{
            "name": "chat",
            "model": "Llama-3.1-8B",
            "arrival": {"peak_rps": 4},
            "input_tokens": {"p50": 1000, "p95": 1500, "p99": 2000},
            "output_tokens": {"p50": 200, "p95": 300, "p99": 400},
            "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
            "allowed_gpus": ["L4", "H100-SXM"],
        }],
    }


def write(tmp: Path, doc: Any, name: str = "s.yaml") -> Path:
    path = tmp / name
    if name.endswith(".json"):
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def problems_of(path: Path) -> tuple[Problem, ...]:
    with pytest.raises(InputError) as info:
        load_scenario(path)
    return info.value.problems


def only(problems: tuple[Problem, ...], location: str) -> Problem:
    """The one problem at ``location``; every problem names its file and says what to do."""
    assert all(p.file and p.message and p.fix for p in problems), problems
    hits = [p for p in problems if p.location == location]
    assert len(hits) == 1, f"expected one problem at {location}, got {problems}"
    return hits[0]


# --- a good scenario ---------------------------------------------------------------------------

def test_good_scenario_resolves_catalog_and_zones(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, base_doc()))
    assert isinstance(sc, Scenario)
    assert sc.workload("chat").model == "Llama-3.1-8B"
    assert sc.gpu("H100-SXM").memory_gib == pytest.approx(79.65)
    assert [o.gpu for o in sc.zone("zone-a").offers] == ["L4", "H100-SXM"]
    assert str(tmp_path / "s.yaml") == sc.sources[0]


def test_json_scenario_loads_like_yaml(tmp_path: Path) -> None:
    from_yaml = load_scenario(write(tmp_path, base_doc()))
    from_json = load_scenario(write(tmp_path, base_doc(), "s.json"))
    assert from_json.workloads == from_yaml.workloads
    assert from_json.zones == from_yaml.zones


def test_scenario_catalog_entries_override_field_by_field_and_add(tmp_path: Path) -> None:
    doc = base_doc()
    doc["catalog"] = {
        "gpus": [{"name": "L4", "bf16_tflops": 100}],
        "models": [{"name": "Tiny-1B", "layers": 4, "hidden_size": 512, "attention_heads": 8,
                    "kv_heads": 8, "head_dim": 64, "ffn_size": 2048, "vocab_size": 1000,
                    "total_params_b": 0.02, "active_params_b": 0.02,
                    "max_context_tokens": 4096, "source": "test"}],
    }
    sc = load_scenario(write(tmp_path, doc))
    assert sc.gpu("L4").bf16_tflops == 100
    assert sc.gpu("L4").memory_gib == pytest.approx(22.49)  # untouched fields kept
    assert sc.model("Tiny-1B").layers == 4


# --- syntax, files -----------------------------------------------------------------------------

def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: t\nworkloads:\n  - name: [chat\n    model: x\n", encoding="utf-8")
    (problem,) = problems_of(path)
    assert problem.file == str(path)
    assert problem.location.startswith("line ")
    assert "invalid YAML" in problem.message
    assert problem.fix == "fix the syntax there"


@pytest.mark.parametrize("text", ["name: t\nworkloads:\n\t- name: w\n",
                                  "name: t\nworkloads:\n  - name: w\n\t  model: x\n"])
def test_a_line_indented_by_a_tab_says_so(tmp_path: Path, text: str) -> None:
    """PyYAML's "found character that cannot start any token" for a tab-indented line did not
    say the character is a tab (a new user's editor put one in)."""
    path = tmp_path / "tabs.yaml"
    path.write_text(text, encoding="utf-8")
    (problem,) = problems_of(path)
    assert "invalid YAML" in problem.message
    assert problem.fix.startswith("YAML indents with spaces, never tabs")


def test_a_key_given_twice_is_an_error_not_silently_dropped(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    text = yaml.safe_dump(base_doc(), sort_keys=False)
    path.write_text(text + "workloads: []\n", encoding="utf-8")  # a second `workloads:` key
    (problem,) = problems_of(path)
    assert problem.location == f"line {text.count(chr(10)) + 1}, column 1"
    assert "key `workloads` appears twice" in problem.message


def test_yaml_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    doc = base_doc()
    text = yaml.safe_dump(doc, sort_keys=False).replace(
        "workloads:", "common: &slo {ttft_p95_ms: 1000, tpot_p95_ms: 50}\nworkloads:", 1)
    text = text.replace("  slo:\n    ttft_p95_ms: 1000\n    tpot_p95_ms: 50\n",
                        "  slo:\n    <<: *slo\n    tpot_p95_ms: 40\n")
    assert "<<: *slo" in text
    path = tmp_path / "anchors.yaml"
    path.write_text(text, encoding="utf-8")
    problems = problems_of(path)  # `common` is not a scenario key, and only that is wrong
    assert [p.location for p in problems] == ["common"]


def test_json_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"name": "t",\n "workloads": [}\n', encoding="utf-8")
    (problem,) = problems_of(path)
    # The stray `}` is on line 2, column 16 ('{' at col 1, ... '[' at col 15).
    assert problem.location == "line 2, column 16"
    assert "invalid JSON" in problem.message


def test_missing_scenario_file(tmp_path: Path) -> None:
    (problem,) = problems_of(tmp_path / "nope.yaml")
    assert problem.message == "file not found"
    assert problem.fix == "check the path"


def test_missing_measured_csv_is_located(tmp_path: Path) -> None:
    doc = base_doc()
    doc["measured_csv"] = "rows.csv"
    (problem,) = problems_of(write(tmp_path, doc))
    assert problem.file == str(tmp_path / "rows.csv")
    assert problem.message == "file not found"


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    (problem,) = problems_of(write(tmp_path, ["not", "a", "mapping"]))
    assert "mapping" in problem.message
    assert "name:" in problem.fix


# --- shape tier --------------------------------------------------------------------------------

def test_unknown_key_is_named_with_its_path(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["slo"]["ttft_ms"] = 900
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].slo.ttft_ms")
    assert problem.message == "unknown key `ttft_ms`"
    assert problem.fix == "did you mean `ttft_p95_ms`? (else remove this key)"


def test_unknown_key_suggests_the_keys_its_place_holds(tmp_path: Path) -> None:
    """qa3: `peak_rsp` got "remove this key or check its spelling" beside "peak_rps: Field
    required"; the keys of the schema at that place are suggested, at any depth."""
    doc = base_doc()
    arrival = doc["workloads"][0]["arrival"]
    arrival["peak_rsp"] = arrival.pop("peak_rps")
    doc["workloads"][0]["clas"] = "interactive"
    doc["zones"][0]["offers"][0]["on_demnd"] = {}
    doc["colour"] = "red"
    problems = problems_of(write(tmp_path, doc))
    assert only(problems, "workloads[0].arrival.peak_rsp").fix == (
        "did you mean `peak_rps`? It is required and missing: rename this key")
    # one problem for one slip: not also "peak_rps: Field required — add this field"
    assert not [p for p in problems if p.location == "workloads[0].arrival.peak_rps"]
    assert only(problems, "workloads[0].clas").fix.startswith("did you mean `class`")
    assert only(problems, "zones[0].offers[0].on_demnd").fix.startswith(
        "did you mean `on_demand`")
    assert only(problems, "colour").fix == "remove this key or check its spelling"


def test_a_misspelt_choice_suggests_the_allowed_value_meant(tmp_path: Path) -> None:
    """`survivability: zoneloss` and an inventory's `purchase: on-demand` (as the docs' prose
    writes it) got "use one of the allowed values" and no word of which (a new user's
    finding); a value close to none keeps that fix."""
    doc = base_doc()
    doc["workloads"][0]["survivability"] = "zoneloss"
    doc["workloads"][0]["class"] = "Interactive"
    doc["workloads"][0]["precision"] = "half"
    problems = problems_of(write(tmp_path, doc))
    assert only(problems, "workloads[0].survivability").fix == "did you mean `zone_loss`?"
    assert only(problems, "workloads[0].class").fix == "did you mean `interactive`?"
    assert only(problems, "workloads[0].precision").fix == "use one of the allowed values"
    doc = base_doc()
    doc["zones"][0]["offers"][1]["owned"] = None
    doc["inventory"] = [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1, "purchase": "Reserve"}]
    assert only(problems_of(write(tmp_path, doc)), "inventory[0].purchase").fix == (
        "did you mean `reserved`?")


def test_wrong_type(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["arrival"]["peak_rps"] = "fast"
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].arrival.peak_rps")
    # peak_rps is named in a unit (requests per second, since the rates joined models.units)
    assert problem.fix == ("give a plain number of requests per second (the unit is the field "
                           "name's `_rps`)")


def test_a_mapping_or_list_in_the_wrong_shape_says_which_shape_and_what_goes_in(
        tmp_path: Path) -> None:
    """Was "Input should be a valid tuple — give a value of the expected type" for zones
    written as a mapping of zone ids (a new user's first try: no page showed a zone's
    shape), and the same words for a price table's stock_gpus given as one number."""
    doc = base_doc()
    doc["zones"] = {"zone-a": doc["zones"][0]}
    doc["price_tables"] = [{"path": "builtin:aws", "stock_gpus": 64}]
    doc["workloads"][0]["slo"] = 1000
    doc["workloads"][0]["allowed_gpus"] = "L4"
    problems = problems_of(write(tmp_path, doc))
    zones = only(problems, "zones")
    assert zones.message == "Input should be a list"
    assert zones.fix.startswith("give a list of zones, each `- {id: use1-az1, region:")
    assert "Zones written by hand" in zones.fix
    stock = only(problems, "price_tables[0].stock_gpus")
    assert stock.message == "Input should be a mapping"
    assert "`stock_gpus: {reserved: 64, on_demand: 64, spot: 32}`" in stock.fix
    slo = only(problems, "workloads[0].slo")  # a sub-model: its keys, from the schema
    assert slo.fix.endswith("its keys: `e2e_p95_ms`, `tpot_p95_ms`, `ttft_p95_ms`")
    assert only(problems, "workloads[0].allowed_gpus").fix.startswith("give a list: one `- `")


def test_missing_field(tmp_path: Path) -> None:
    doc = base_doc()
    del doc["workloads"][0]["slo"]
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].slo")
    assert problem.fix == "add this field"


@pytest.mark.parametrize("value", [0, -3.5])
def test_zero_or_negative_rate(tmp_path: Path, value: float) -> None:
    doc = base_doc()
    doc["workloads"][0]["arrival"]["peak_rps"] = value
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].arrival.peak_rps")
    assert "greater than or equal to 0.001" in problem.message
    assert problem.fix.startswith("give 0.001 ≤ peak_rps ≤ 10^6 req/s (")


def test_zero_daily_volume(tmp_path: Path) -> None:
    doc = base_doc()
    wl = doc["workloads"][0]
    del wl["arrival"]
    wl["class"] = "batch"
    wl["batch"] = {"daily_requests": 0, "window_hours": [1, 2]}
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].batch.daily_requests")
    assert problem.fix.startswith("give 1 ≤ daily_requests ≤ 10^11 requests/day (")


def test_negative_price(tmp_path: Path) -> None:
    doc = base_doc()
    doc["zones"][0]["offers"][0]["on_demand"]["price_per_gpu_hour"] = -1
    only(problems_of(write(tmp_path, doc)), "zones[0].offers[0].on_demand.price_per_gpu_hour")


def test_percentiles_must_rise(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["input_tokens"] = {"p50": 2000, "p95": 1500, "p99": 3000}
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].input_tokens")
    assert "percentiles must rise" in problem.message
    assert "p50 2000 <= p95 1500" in problem.message
    assert problem.fix == "order them so that p50 <= p95 <= p99"


@pytest.mark.parametrize(("field", "value", "location"), [
    ("prefix_cache_hit_rate", 1.5, "workloads[0].prefix_cache_hit_rate"),
    ("prefix_cache_hit_rate", -0.1, "workloads[0].prefix_cache_hit_rate"),
    ("target_utilization", 1.2, "workloads[0].target_utilization"),
])
def test_shares_outside_unit_interval(
    tmp_path: Path, field: str, value: float, location: str
) -> None:
    doc = base_doc()
    doc["workloads"][0][field] = value
    problem = only(problems_of(write(tmp_path, doc)), location)
    assert problem.fix.startswith(("give 0 ≤ prefix_cache_hit_rate < 1 (",
                                   "give 0.05 ≤ target_utilization ≤ 1 ("))


def test_hourly_shape_share_above_one(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["arrival"]["hourly_shape"] = [1.2] + [0.5] * 23
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].arrival.hourly_shape")
    assert "[0, 1]" in problem.message
    assert problem.fix == "give each hour's demand as a share of the peak, 0 to 1"


def test_arrival_and_batch_together(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["batch"] = {"daily_requests": 10, "window_hours": [1]}
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0]")
    assert problem.fix == "keep either `arrival` (peak rate) or `batch` (daily volume)"


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["arrival"]["peak_rps"] = -1
    doc["workloads"][0]["slo"]["tpot_p95_ms"] = 0
    doc["zones"][0]["offers"][0]["on_demand"]["stock_gpus"] = -2
    locations = {p.location for p in problems_of(write(tmp_path, doc))}
    assert {"workloads[0].arrival.peak_rps", "workloads[0].slo.tpot_p95_ms",
            "zones[0].offers[0].on_demand.stock_gpus"} <= locations


# --- consistency tier --------------------------------------------------------------------------

def test_unknown_model_suggests_the_close_name(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["model"] = "Llama-3.1-8C"
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].model")
    assert problem.message == "unknown model `Llama-3.1-8C`"
    assert "`Llama-3.1-8B`" in problem.fix
    assert problem.fix.startswith("did you mean")


def test_unknown_gpu_in_allowed_list_and_offer(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["allowed_gpus"] = ["L4", "H10O"]
    doc["zones"][0]["offers"][0]["gpu"] = "L40"
    problems = problems_of(write(tmp_path, doc))
    allowed = only(problems, "workloads[0].allowed_gpus[1]")
    assert "`H100-SXM`" in allowed.fix
    offer = only(problems, "zones[0].offers[0].gpu")
    assert "`L40S`" in offer.fix


def test_a_name_the_catalog_lacks_says_how_to_add_it(tmp_path: Path) -> None:
    """A new user's `A800` offer got "did you mean `H200` or `B200` or `A10G`?" and nothing
    else: a GPU type or model the built-in catalog lacks is added in the scenario, and the fix
    says where — in the offer, the allowed list and the model alike; and the fix it names
    works: the same offer with the GPU type under `catalog: {gpus: [...]}` loads."""
    doc = base_doc()
    doc["workloads"][0]["model"] = "Llama-4-Scout"
    doc["workloads"][0]["allowed_gpus"] = ["A800"]
    doc["zones"][0]["offers"][0]["gpu"] = "A800"
    problems = problems_of(write(tmp_path, doc))
    for where in ("zones[0].offers[0].gpu", "workloads[0].allowed_gpus[0]"):
        fix = only(problems, where).fix
        assert "under the scenario's `catalog: {gpus: [...]}`" in fix, fix
        assert fix.startswith("did you mean")  # the closest names still come first
    assert "under the scenario's `catalog: {models: [...]}`" in only(
        problems, "workloads[0].model").fix
    doc["workloads"][0]["model"] = base_doc()["workloads"][0]["model"]
    doc["catalog"] = {"gpus": [{"name": "A800", "memory_gib": 80.0,
                                "hbm_bandwidth_gb_per_s": 2039, "bf16_tflops": 312,
                                "link_bandwidth_gb_per_s": 200, "gpus_per_node": 8,
                                "source": "vendor sheet"}]}
    assert load_scenario(write(tmp_path, doc)).gpu("A800").memory_gib == 80.0


def test_unknown_zone_in_price_table(tmp_path: Path) -> None:
    doc = base_doc()
    doc["price_tables"] = [{"path": "builtin:aws", "zones": ["use1az1"], "gpus": ["L4"]}]
    problem = only(problems_of(write(tmp_path, doc)), "price_tables[0].zones[0]")
    assert problem.message == "zone `use1az1` is not in aws_gpu_prices.csv"
    assert problem.fix.startswith("did you mean")
    assert "`use1-az1`" in problem.fix


def test_unknown_measured_references(tmp_path: Path) -> None:
    doc = base_doc()
    doc["measured"] = [{
        "model": "Llama-3.1-8B", "gpu": "H100-SMX", "runtime": "vllm", "precision": "bf16",
        "tp": 1, "workload": "chatt", "max_stable_sequences": 64, "tested_peak_rps": 10,
        "ttft_p95_ms": 500, "decode_p95_ms_per_token": 20, "measured_on": "2026-10-01",
    }]
    problems = problems_of(write(tmp_path, doc))
    assert "`H100-SXM`" in only(problems, "measured[0].gpu").fix
    assert "`chat`" in only(problems, "measured[0].workload").fix


def test_duplicate_workload_names(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"].append(copy.deepcopy(doc["workloads"][0]))
    problem = only(problems_of(write(tmp_path, doc)), "workloads[1].name")
    assert problem.message == "duplicate name `chat`"


def test_duplicate_zone_ids_are_not_merged_silently(tmp_path: Path) -> None:
    doc = base_doc()
    doc["zones"].append(copy.deepcopy(doc["zones"][0]))
    problem = only(problems_of(write(tmp_path, doc)), "zones[1].id")
    assert problem.message == "duplicate zone id `zone-a`"


def test_empty_allowed_gpus(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["allowed_gpus"] = []
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].allowed_gpus")
    assert "no GPU type" in problem.message


def test_context_longer_than_the_model_allows(tmp_path: Path) -> None:
    doc = base_doc()
    doc["workloads"][0]["model"] = "Llama-2-7B"  # 4,096-token context
    doc["workloads"][0]["input_tokens"] = {"p50": 1000, "p95": 3000, "p99": 3900}
    problem = only(problems_of(write(tmp_path, doc)), "workloads[0].input_tokens.p99")
    assert "4300 tokens exceeds Llama-2-7B's maximum 4096" in problem.message  # 3,900 + 400


def test_as_of_must_be_an_iso_date(tmp_path: Path) -> None:
    doc = base_doc()
    doc["policy"] = {"as_of": "yesterday"}
    problem = only(problems_of(write(tmp_path, doc)), "policy.as_of")
    assert "YYYY-MM-DD" in problem.fix


def test_bad_catalog_override_is_located_in_the_scenario(tmp_path: Path) -> None:
    doc = base_doc()
    doc["catalog"] = {"gpus": [{"name": "L4", "memory_gib": -1}]}
    path = write(tmp_path, doc)
    problem = only(problems_of(path), "catalog.gpus.L4.memory_gib")
    assert problem.file == str(path)


# --- measured rows from a CSV ------------------------------------------------------------------

MEASURED_HEADER = ("model,model_digest,gpu,runtime,precision,tp,workload,max_stable_sequences,"
                   "tested_peak_rps,ttft_p95_ms,decode_p95_ms_per_token,measured_on\n")


def test_measured_csv_rows_join_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text(
        MEASURED_HEADER + "Llama-3.1-8B,,H100-SXM,vllm,bf16,1,chat,64,10.5,500,20,2026-10-01\n",
        encoding="utf-8")
    doc = base_doc()
    doc["measured_csv"] = "rows.csv"
    sc = load_scenario(write(tmp_path, doc))
    (row,) = sc.measured
    assert (row.gpu, row.tp, row.tested_peak_rps, row.model_digest) == ("H100-SXM", 1, 10.5, None)


def test_measured_csv_bad_row_is_located_by_row(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text(
        MEASURED_HEADER + "Llama-3.1-8B,,H100-SXM,vllm,bf16,0,chat,64,10.5,500,20,2026-10-01\n",
        encoding="utf-8")
    doc = base_doc()
    doc["measured_csv"] = "rows.csv"
    problem = only(problems_of(write(tmp_path, doc)), "row 2.tp")
    assert problem.file == str(tmp_path / "rows.csv")


def test_measured_csv_missing_columns(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("model,gpu\nLlama-3.1-8B,L4\n", encoding="utf-8")
    doc = base_doc()
    doc["measured_csv"] = "rows.csv"
    (problem,) = problems_of(write(tmp_path, doc))
    assert problem.location == "header"
    assert "runtime" in problem.message and "tested_peak_rps" in problem.message


def test_measured_csv_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_bytes(b"model,gpu\n\xff\xfe\x00bad\n")
    doc = base_doc()
    doc["measured_csv"] = "rows.csv"
    (problem,) = problems_of(write(tmp_path, doc))
    assert "cannot read" in problem.message


# --- property: mutated scenarios give a Scenario or an InputError, nothing else -----------------

def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _mutate(doc: Any, path: tuple[Any, ...], how: str, junk: Any) -> Any:
    doc = copy.deepcopy(doc)
    parent, key = _parent(doc, path), path[-1]
    value = parent[key]
    if how == "drop":
        del parent[key]
    elif how == "retype":
        parent[key] = junk
    elif how == "negate" and isinstance(value, int | float) and not isinstance(value, bool):
        parent[key] = -value
    elif how == "zero" and isinstance(value, int | float):
        parent[key] = 0
    elif how == "rename" and isinstance(value, str):
        parent[key] = value + "x"
    elif how == "rename_key" and isinstance(parent, dict):
        parent[str(key) + "_"] = parent.pop(key)
    else:
        parent[key] = junk
    return doc


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.lists(st.integers(-3, 30), max_size=30), st.dictionaries(st.text(max_size=4),
                                                                st.integers(), max_size=2),
)
HOW = st.sampled_from(["drop", "retype", "negate", "zero", "rename", "rename_key"])


def _demo_like() -> dict[str, Any]:
    doc = base_doc()
    doc["workloads"].append({
        "name": "nightly", "model": "Qwen2.5-7B", "class": "batch", "precision": "int4",
        "batch": {"daily_requests": 1000, "window_hours": [0, 1, 2]},
        "input_tokens": {"p50": 100, "p95": 200, "p99": 300, "mean": 120},
        "output_tokens": {"p50": 10, "p95": 20, "p99": 30},
        "slo": {"ttft_p95_ms": 10000, "tpot_p95_ms": 100}, "survivability": "n_plus_1",
    })
    doc["price_tables"] = [{"path": "builtin:aws", "zones": ["use1-az1"], "gpus": ["L4"],
                            "stock_gpus": {"reserved": 4, "on_demand": 8, "spot": 2}}]
    doc["policy"] = {"hours_per_month": 730, "as_of": "2026-11-01",
                     "time_blocks": [{"name": "all", "hours": list(range(24))}]}
    doc["measured"] = [{
        "model": "Llama-3.1-8B", "gpu": "L4", "runtime": "vllm", "precision": "bf16", "tp": 1,
        "workload": "chat", "max_stable_sequences": 16, "tested_peak_rps": 2,
        "ttft_p95_ms": 800, "decode_p95_ms_per_token": 40, "measured_on": "2026-10-01"}]
    return doc


BASE = _demo_like()
BASE_PATHS = _paths(BASE)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mutations=st.lists(st.tuples(st.sampled_from(BASE_PATHS), HOW, JUNK), min_size=1, max_size=3),
    as_json=st.booleans(),
)
def test_mutated_scenarios_load_or_fail_cleanly(
    mutations: list[tuple[tuple[Any, ...], str, Any]], as_json: bool
) -> None:
    doc: Any = BASE
    for path, how, junk in mutations:
        try:
            parent = _parent(doc, path)
            parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or retyped this path
        if not isinstance(parent, dict | list):
            continue  # retyped into a string: nothing to mutate inside it
        doc = _mutate(doc, path, how, junk)
    with tempfile.TemporaryDirectory() as tmp:
        name = "s.json" if as_json else "s.yaml"
        file = Path(tmp) / name
        text = json.dumps(doc) if as_json else yaml.safe_dump(doc)
        file.write_text(text, encoding="utf-8")
        try:
            scenario = load_scenario(file)
        except InputError as exc:
            assert exc.problems
            for problem in exc.problems:
                assert problem.file and problem.message and problem.fix, problem
        else:
            assert isinstance(scenario, Scenario)


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=200))
def test_arbitrary_text_loads_or_fails_cleanly(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_scenario(path)
        except InputError as exc:
            assert exc.problems


def test_a_suggestion_for_an_unknown_name_never_lists_nothing() -> None:
    assert did_you_mean("H100", ["H100-SXM", "L4"]) == "did you mean `H100-SXM`?"
    assert did_you_mean("zz", ["L4", "A10G"]) == "known names: A10G, L4"
    # nothing known: "known names:" followed by nothing was printed
    assert did_you_mean("L4", []) == "none are defined: add one, or remove the reference"
