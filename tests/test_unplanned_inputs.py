"""Inputs a new user gave that fleetplan used without a word, now named by `validate` and
`plan`: a zone whose offers hold no stock (s21 F2). (s21 F1, a stated `slo.e2e_p95_ms` that
nothing planned, is planned and checked since: tests/test_e2e_slo.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from solver.cli import main


def _zones(stock_c: int) -> list[dict[str, object]]:
    def zone(name: str, stock: int) -> dict[str, object]:
        return {"id": name, "region": "r1", "offers": [{
            "gpu": "H100", "reserved": {"price_per_gpu_hour": 6.0, "stock_gpus": stock,
                                        "commitment_months": 12},
            "on_demand": {"price_per_gpu_hour": 10.0, "stock_gpus": stock}}]}
    return [zone("z-a", 64), zone("z-b", 64), zone("z-c", stock_c)]


def test_validate_warns_of_a_zone_that_sells_nothing(tmp_path: Path) -> None:
    """s21 F2: a zone whose every offer has stock 0 was listed as selling reserved and
    on-demand, with no warning."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    data["workloads"][0]["survivability"] = "zone_loss"
    data["workloads"][0]["allowed_gpus"] = ["H100-SXM"]
    warned = []
    for stock_c in (0, 8):
        path = tmp_path / f"zones_{stock_c}.yaml"
        path.write_text(yaml.safe_dump({**data, "zones": _zones(stock_c)}))
        result = CliRunner().invoke(main, ["validate", str(path), "--json"])
        assert result.exit_code == 0, result.output
        warned.append(json.loads(result.stdout).get("stock_warnings"))
    assert warned[0] == [
        "zone z-c: every offer (H100-SXM) has stock_gpus 0 in every purchase kind, so no GPU "
        "can be bought there: the plan leaves the zone empty, and a workload that survives a "
        "zone's loss is spread over the other zones only — give the stock the provider can "
        "supply"]
    assert warned[1] is None


def test_a_small_share_cut_off_by_a_failure_is_not_printed_as_none() -> None:
    """s21 F5: a zone loss over 943,738 replayed requests cut off 446 (0.047 %), printed
    "(0.0% of 943,738)"."""
    import numpy as np

    from solver.cli.slo_verdict import cut_off_line
    from solver.replay.engine import ReplayResult, Status

    def result(cut: int, total: int) -> ReplayResult:
        status = np.full(total, Status.completed, np.int8)
        status[:cut] = Status.failed
        nan = np.full(total, np.nan)
        return ReplayResult(arrival_s=np.arange(total, dtype=np.float64),
                            output_tokens=np.ones(total, np.int64), status=status,
                            ttft_ms=nan, e2e_ms=nan, tpot_ms=nan,
                            queue_depth_max=np.zeros(1, np.int64), kv_use=np.zeros(1),
                            requeued=0)

    assert (cut_off_line(result(446, 943_738)) or "").startswith(
        "446 requests (0.047% of 943,738) streaming on a lost replica were cut off")
    assert (cut_off_line(result(1, 240)) or "").startswith("1 request (0.4% of 240)")
    assert cut_off_line(result(0, 240)) is None


def test_a_single_kind_at_stock_0_is_warned_and_not_listed_as_sold(tmp_path: Path) -> None:
    """s21 F2, left then: z-c's reserved H100 with stock and its on-demand at stock 0 (a way
    to switch a kind off, or a quote CSV's blank read as 0) was listed as selling on-demand,
    with no warning; and the zone of none with stock was listed as selling both kinds."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    data["workloads"][0]["allowed_gpus"] = ["H100-SXM"]
    zones = _zones(8)
    zones[2]["offers"][0]["on_demand"]["stock_gpus"] = 0  # type: ignore[index]
    path = tmp_path / "one_kind_0.yaml"
    path.write_text(yaml.safe_dump({**data, "zones": zones}))
    result = CliRunner().invoke(main, ["validate", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["stock_warnings"] == [
        "zone z-c: H100-SXM on-demand has stock_gpus 0, so it is not offered: the plan buys "
        "none there — give the stock the provider can supply, or leave the kind out to say the "
        "zone does not sell it"]
    shown = CliRunner().invoke(main, ["validate", str(path)])
    assert "z-c   H100-SXM (8): reserved (on-demand: stock 0, not offered)" in shown.stdout
    assert "z-a   H100-SXM (8): reserved, on-demand\n" in shown.stdout
    zones = _zones(0)
    path.write_text(yaml.safe_dump({**data, "zones": zones}))
    shown = CliRunner().invoke(main, ["validate", str(path)])
    assert "z-c   H100-SXM (8): none (reserved, on-demand: stock 0, not offered)" in shown.stdout
