"""The capacity contract: rows of the configurations a plan uses, and what expires them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import yaml
from procurement_fixtures import EVIL, make_plan, make_scenario, make_table

from models.catalog import EfficiencyFactors
from models.errors import InputError
from models.scenario import Scenario
from solver.outputs.contract import build_contract, check_contract, load_contract, write_contract


def _write(tmp_path: Path) -> Path:
    return write_contract(make_plan(), make_scenario(), make_table(), tmp_path / "contract.yaml")


def test_rows_are_the_used_configurations() -> None:
    contract = build_contract(make_plan(), make_scenario(), make_table())
    assert [(r.workload, r.gpu, r.tp) for r in contract.rows] == [("chat", "H100-SXM", 1),
                                                                   (EVIL, "H100-SXM", 1)]
    chat, evil = contract.rows
    assert chat.replicas_planned == 12  # 4 (z1) + 4 (z2) reserved + 4 on-demand in the day slice
    assert evil.replicas_planned == 4
    assert (chat.tested_peak_rps, evil.tested_peak_rps) == (2.0, 1.0)
    assert chat.fingerprint.measured_on is None
    assert evil.fingerprint.measured_on == dt.date(2026, 1, 10)
    assert evil.fingerprint.runtime == "vllm-0.6.3"
    assert chat.fingerprint.model_weights_digest == "sha256:aaa"
    assert contract.plan_fingerprint == "sha256:fingerprint"


def test_yaml_round_trip(tmp_path: Path) -> None:
    path = _write(tmp_path)
    assert load_contract(path) == build_contract(make_plan(), make_scenario(), make_table())
    assert EVIL in path.read_text()
    assert path.read_text().startswith("# Capacity contract written by fleetplan")


def test_unchanged_scenario_expires_nothing(tmp_path: Path) -> None:
    # as_of 2026-03-01 − measured 2026-01-10 = 50 days, inside the 180-day limit
    assert check_contract(_write(tmp_path), make_scenario()) == []


def _with_model(sc: Scenario, **update: object) -> Scenario:
    return sc.model_copy(update={"models": (sc.models[0].model_copy(update=update),)})


def test_new_weights_expire_every_row(tmp_path: Path) -> None:
    expired = check_contract(_write(tmp_path), _with_model(make_scenario(),
                                                           weights_digest="sha256:bbb"))
    assert [e.workload for e in expired] == ["chat", EVIL]
    assert expired[0].reasons == ("model weights digest changed from sha256:aaa to sha256:bbb",)


def test_runtime_upgrade_expires_the_measured_row(tmp_path: Path) -> None:
    sc = make_scenario()
    evil = sc.workload(EVIL).model_copy(update={"runtime": "vllm-0.7.0"})
    sc = sc.model_copy(update={"workloads": (sc.workloads[0], evil)})
    (expired,) = check_contract(_write(tmp_path), sc)
    assert expired.workload == EVIL
    assert expired.reasons == ("runtime changed from vllm-0.6.3 to vllm-0.7.0",
                               "the measured row it rests on is still in the scenario but no "
                               "longer used (`fleetplan validate` says why)")
    # the row itself removed: said as such
    gone = sc.model_copy(update={"measured": ()})
    (expired,) = check_contract(_write(tmp_path), gone)
    assert expired.reasons[-1] == "the measured row it rests on is no longer in the scenario"


def test_efficiency_change_expires_only_analytic_rows(tmp_path: Path) -> None:
    sc = make_scenario()
    h100 = sc.gpus[0].model_copy(update={"efficiency": EfficiencyFactors(compute_efficiency=0.6)})
    sc = sc.model_copy(update={"gpus": (h100, sc.gpus[1])})
    (expired,) = check_contract(_write(tmp_path), sc)
    assert expired.workload == "chat"
    assert expired.reasons == ("H100-SXM efficiency factor compute_efficiency changed from 0.55 "
                               "to 0.6",)


@pytest.mark.parametrize("field", list(EfficiencyFactors.model_fields))
def test_every_efficiency_factor_is_in_the_fingerprint(tmp_path: Path, field: str) -> None:
    path = _write(tmp_path)
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert all(set(r["fingerprint"]["efficiency"]) == set(EfficiencyFactors.model_fields)
               for r in raw["rows"])
    sc = make_scenario()
    old = getattr(sc.gpus[0].efficiency, field)
    changed = sc.gpus[0].efficiency.model_copy(update={field: old / 2 if old else 0.5})
    h100 = sc.gpus[0].model_copy(update={"efficiency": changed})
    (expired,) = check_contract(path, sc.model_copy(update={"gpus": (h100, sc.gpus[1])}))
    assert expired.workload == "chat"  # the analytic row; the measured one keeps its rate
    assert expired.reasons[0].startswith(f"H100-SXM efficiency factor {field} changed from ")


def test_old_measurement_expires(tmp_path: Path) -> None:
    sc = make_scenario()
    later = sc.model_copy(update={"policy": sc.policy.model_copy(update={"as_of": "2026-08-01"})})
    (expired,) = check_contract(_write(tmp_path), later)
    # 2026-01-10 → 2026-08-01: 21 + 28 + 31 + 30 + 31 + 30 + 31 + 1 = 203 days > 180
    assert expired.reasons == ("measured on 2026-01-10, 203 days before 2026-08-01: older than "
                               "the 180-day limit",)


def test_tighter_slo_and_removed_workload(tmp_path: Path) -> None:
    sc = make_scenario()
    chat = sc.workloads[0]
    tighter = chat.model_copy(update={"slo": chat.slo.model_copy(update={"ttft_p95_ms": 500.0})})
    expired = check_contract(_write(tmp_path), sc.model_copy(update={"workloads": (tighter,)}))
    assert [(e.workload, e.reasons) for e in expired] == [
        ("chat", ("SLO TTFT P95 [ms] changed from 1000.0 to 500.0",)),
        (EVIL, (f"workload `{EVIL}` is no longer in the scenario",)),
    ]


def test_bad_contract_file_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "contract.yaml"
    path.write_text("scenario: x\nmeasured_max_age_days: 0\nrows: []\n")
    with pytest.raises(InputError, match=r"measured_max_age_days"):
        check_contract(path, make_scenario())


def test_cli_check_contract(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from inputs import scenarios_dir
    from models.loader import load_scenario
    from solver.capacity.table import build_capacity_table
    from solver.cli import main
    from solver.solve.strategy import plan_scenario

    source = scenarios_dir() / "tiny.yaml"
    tiny = load_scenario(source)
    table = build_capacity_table(tiny)
    contract = write_contract(plan_scenario(tiny, table), tiny, table, tmp_path / "contract.yaml")
    runner = CliRunner()
    ok = runner.invoke(main, ["check", str(source), "--contract", str(contract)])
    assert ok.exit_code == 0, ok.output
    assert "every row still holds" in ok.output
    upgraded = tmp_path / "tiny.yaml"
    upgraded.write_text(source.read_text().replace("tenant: demo", "tenant: demo\n"
                                                   "    runtime: vllm-0.7.0"))
    expired = runner.invoke(main, ["check", str(upgraded), "--contract", str(contract), "--json"])
    assert expired.exit_code == 1, expired.output
    rows = json.loads(expired.stdout)["expired"]
    assert rows and all(r["workload"] == "chat" for r in rows)
    assert rows[0]["reasons"] == ["runtime changed from vllm to vllm-0.7.0"]
    neither = runner.invoke(main, ["check", str(source)])
    assert neither.exit_code == 2 and "--contract" in neither.output


def _with_vllm_costs(sc: Scenario, overhead_ms: float) -> Scenario:
    from models.runtime import RuntimeCosts, RuntimeSpec

    costs = RuntimeCosts(gpu="H100-SXM", decode_step_overhead_ms=overhead_ms,
                         step_overhead_ms_per_layer=0.1, step_overhead_ms_per_seq=0.01,
                         fitted_on="H200")
    vllm = RuntimeSpec(name="vllm", costs=(costs,), source="test")
    return sc.model_copy(update={"runtimes": (vllm,)})


def test_a_runtime_fixed_cost_change_expires_the_analytic_row(tmp_path: Path) -> None:
    # A new user's finding: lowering vLLM's per-step overhead on the GPU moved the analytic rate
    # by 10 %, and `check --contract` still said every row holds. The costs set the rate as
    # much as the efficiency factors do: they are in the fingerprint.
    sc = _with_vllm_costs(make_scenario(), 1.0)
    path = write_contract(make_plan(), sc, make_table(), tmp_path / "contract.yaml")
    assert check_contract(path, sc) == []
    (expired,) = check_contract(path, _with_vllm_costs(make_scenario(), 3.0))
    assert expired.workload == "chat"  # the analytic row; the measured one keeps its rate
    assert expired.reasons == ("vllm fixed cost decode_step_overhead_ms on H100-SXM changed "
                               "from 1.0 to 3.0",)
    (gone,) = check_contract(path, make_scenario())
    assert gone.reasons == ("vllm's fixed costs on H100-SXM are no longer in the runtime catalog",)
    # a contract that recorded no costs (written before, or none listed) is not expired by them
    assert check_contract(_write(tmp_path), sc) == []


def _with_burst(sc: Scenario, scv: float | None, followers: bool = False) -> Scenario:
    from models.workload import Burst, FollowerPoint

    def bursty(w: object) -> object:
        from models.workload import Workload

        assert isinstance(w, Workload)
        if w.name != "chat" or w.arrival is None:
            return w
        burst = None if scv is None else Burst(interarrival_scv=scv, followers=(
            FollowerPoint(window_gaps=1.0, followers_mean=1.3, followers_variance=2.5),
            FollowerPoint(window_gaps=10.0, followers_mean=13.2, followers_variance=122.8),
        ) if followers else None)
        return w.model_copy(update={"arrival": w.arrival.model_copy(update={"burst": burst})})

    return sc.model_copy(update={"workloads": tuple(bursty(w) for w in sc.workloads)})


def test_a_change_of_the_arrivals_burst_expires_the_analytic_row(tmp_path: Path) -> None:
    """An analytic row's rate is sized for the workload's arrivals: a new user's assistant
    linked to a trace (arrival.burst measured from it) had its TP4 rate at 10.18 req/s, 8.90
    as Poisson, and `check --contract` said every row holds whatever the burst became.
    The SCV and followers are in the fingerprint; a contract that recorded none (written
    before) is not expired by them."""
    poisson = make_scenario()
    path = write_contract(make_plan(), poisson, make_table(), tmp_path / "contract.yaml")
    assert check_contract(path, poisson) == []
    (expired,) = check_contract(path, _with_burst(poisson, 1.2))
    assert expired.workload == "chat"  # analytic; the measured row keeps its rate
    assert expired.reasons == ("arrival burst inter-arrival SCV changed from 1.0 to 1.2",)
    bursty = _with_burst(poisson, 1.2, followers=True)
    path = write_contract(make_plan(), bursty, make_table(), tmp_path / "bursty.yaml")
    assert check_contract(path, bursty) == []
    (expired,) = check_contract(path, _with_burst(poisson, 1.2))
    assert expired.reasons[0].startswith("arrival burst followers changed")
    old = yaml.safe_load(_write(tmp_path).read_text())
    for row in old["rows"]:
        del row["fingerprint"]["arrival_scv"], row["fingerprint"]["burst_followers"]
    before = tmp_path / "before.yaml"
    before.write_text(yaml.safe_dump(old))
    assert check_contract(before, _with_burst(poisson, 1.2)) == []
