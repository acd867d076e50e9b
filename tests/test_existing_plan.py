"""``plan --existing``: a re-plan keeps the orders an earlier plan placed, says which in the
terminal, report.md and plan.json, and refuses a plan made for a later day than its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from solver.cli import main


def _quarters(tmp_path: Path, name: str, start: str) -> Path:
    """tiny.yaml over four quarters from ``start``, flat demand, 4 weeks of lead time: the
    H100 reservation (2.40 against 4.00 USD/GPU-h on demand) pays from the second quarter."""
    doc: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    doc["name"] = name
    doc["horizon"] = {"start": start, "period_months": 3, "count": 4}
    doc["workloads"][0]["growth"] = [1, 1, 1, 1]
    for offer in doc["zones"][0]["offers"]:
        offer["reserved"]["lead_time_weeks"] = 4
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_replan_says_which_orders_it_kept_and_refuses_a_later_plan(tmp_path: Path) -> None:
    """A new user passed the next quarter's plan.json to the first quarter's scenario: it was
    taken with no word, and no output said which earlier orders were kept."""
    q1, q2 = _quarters(tmp_path, "tq", "2027-01-01"), _quarters(tmp_path, "tq_q2", "2027-04-01")
    first = CliRunner().invoke(main, ["plan", str(q1), "--out", str(tmp_path / "o1")])
    assert first.exit_code == 0, first.output
    assert ("order 1 H100-SXM (1 node) in zone-a by 2027-03-04: reserved 12 months"
            in first.output)
    earlier = tmp_path / "o1" / "plan.json"
    again = CliRunner().invoke(main, ["plan", str(q2), "--existing", str(earlier),
                                      "--out", str(tmp_path / "o2")])
    assert again.exit_code == 0, again.output
    kept = (f"kept from {earlier} of 2027-01-01 (scenario `tq`), placed and held:\n"
            "  1 H100-SXM (1 node) in zone-a, due 2027-03-04: reserved 12 months, upfront none, "
            "2.400 USD/GPU-h; serving 2027-04-01")
    assert kept in again.output
    # the stock of the offer it came from is sold again on top of it unless lowered (a new
    # user's re-plan ordered 5 + 2 more of an 8-node stock the first quarter took 7 of)
    assert ("  these are held on top of each offer's stock_gpus, which limits only what this "
            "plan adds: lower an offer's stock by what its seller has already delivered or "
            "committed of it") in again.output.splitlines()
    report = (tmp_path / "o2" / "report.md").read_text()
    assert f"- kept from {earlier} of 2027-01-01 (scenario `tq`), placed and held:" in report
    assert "  - 1 H100-SXM (1 node) in zone-a, due 2027-03-04" in report
    # the reservation held reads as the order did, "to" the day after its last (the first
    # quarter said "serving 2027-04-01 to 2028-04-01", the re-plan "ends 2028-03-31")
    assert "serving 2027-04-01 to 2028-04-01" in first.output
    assert "1 node held (inventory): reservation to 2028-04-01" in report
    assert "ends 2028-03-31" not in report
    assert 'a date after "to" is the day after the last' in again.output
    record = json.loads((tmp_path / "o2" / "plan.json").read_text())["replanned_from"]
    assert (record["file"], record["scenario"], record["plan_date"]) == (
        str(earlier), "tq", "2027-01-01")
    assert [(o["gpu"], o["nodes"], o["order_by"]) for o in record["kept"]] == [
        ("H100-SXM", 1, "2027-03-04")]
    # the reservation is held: nothing is ordered again
    assert json.loads((tmp_path / "o2" / "plan.json").read_text())["orders"] == []
    # the second quarter's plan is no earlier plan of the first quarter
    later = tmp_path / "o2" / "plan.json"
    wrong = CliRunner().invoke(main, ["plan", str(q1), "--existing", str(later),
                                      "--out", str(tmp_path / "o3")])
    assert wrong.exit_code == 2
    assert ("horizon.plan_date: this plan (of `tq_q2`) was made for 2027-04-01, after this "
            "scenario's plan date 2027-01-01: it is not an earlier plan") in wrong.output
    assert not (tmp_path / "o3").exists()


def test_a_replan_before_an_order_now_is_due_names_it_as_not_kept(tmp_path: Path) -> None:
    """fresh-s24 F5: the first quarter's plan said "order now … by 2027-03-11"; the re-plan of
    2027-03-05 kept nothing ("no order … was due before this plan's date") and ordered the same
    nodes again, with no word of those a buyer who acted on "order now" had placed. They are
    named, with what to do if placed, in the terminal and plan.json."""
    q1, q2 = _quarters(tmp_path, "tq", "2027-01-01"), _quarters(tmp_path, "tq_q2", "2027-04-01")
    doc = yaml.safe_load(q2.read_text())
    doc.setdefault("policy", {})["as_of"] = "2027-02-20"  # before the order's 2027-03-04
    q2.write_text(yaml.safe_dump(doc))
    first = CliRunner().invoke(main, ["plan", str(q1), "--out", str(tmp_path / "o1")])
    assert first.exit_code == 0, first.output
    assert "order 1 H100-SXM (1 node) in zone-a by 2027-03-04" in first.output
    earlier = tmp_path / "o1" / "plan.json"
    again = CliRunner().invoke(main, ["plan", str(q2), "--existing", str(earlier),
                                      "--out", str(tmp_path / "o2")])
    assert again.exit_code == 0, again.output
    lines = again.output.splitlines()
    at = lines.index("not kept, not yet due on this plan's date (the earlier plan's \"order "
                     "now\"; decided again below — any you have placed, add to the scenario's "
                     "inventory with available_from, its serving date, or this plan orders it "
                     "again):")
    assert lines[at + 1] == ("  1 H100-SXM (1 node) in zone-a, due 2027-03-04: reserved 12 "
                             "months, upfront none, 2.400 USD/GPU-h; serving 2027-04-01")
    record = json.loads((tmp_path / "o2" / "plan.json").read_text())["replanned_from"]
    assert record["kept"] == []
    assert [(o["gpu"], o["nodes"], o["order_by"]) for o in record["not_yet_due"]] == [
        ("H100-SXM", 1, "2027-03-04")]


def test_the_workbook_of_a_replan_lists_the_orders_it_kept(tmp_path: Path) -> None:
    """A new user's Q2 re-plan: the terminal and report.md said "kept from out/q1/plan.json
    … placed and held: 16 L40S …", but plan.xlsx, what procurement reads, had no word of the
    kept orders (its Schedule listed only new ones)."""
    import datetime as dt

    import openpyxl

    q1, q2 = _quarters(tmp_path, "tq", "2027-01-01"), _quarters(tmp_path, "tq_q2", "2027-04-01")
    first = CliRunner().invoke(main, ["plan", str(q1), "--out", str(tmp_path / "o1")])
    assert first.exit_code == 0, first.output
    earlier = tmp_path / "o1" / "plan.json"
    again = CliRunner().invoke(main, ["plan", str(q2), "--existing", str(earlier),
                                      "--out", str(tmp_path / "o2")])
    assert again.exit_code == 0, again.output
    rows = [[c.value for c in r] for r in
            openpyxl.load_workbook(tmp_path / "o2" / "plan.xlsx")["Schedule"].iter_rows()]
    title = next(i for i, r in enumerate(rows) if str(r[0]).startswith("Kept from"))
    assert rows[title][0] == (f"Kept from {earlier} of 2027-01-01 (scenario tq): placed "
                              "earlier, held in this plan")
    kept = rows[title + 2]
    assert kept[:12] == ["all (placed)", "zone-a", "H100-SXM", "Reserved", None, 1, 1,
                         dt.datetime(2027, 3, 4), dt.datetime(2027, 4, 1),
                         dt.datetime(2028, 4, 1), 12, "no upfront"]
    assert kept[12] == 2.4
    assert rows[title + 1][15] == "Paid in its horizon [USD]"
    # and among the inventory held, the day it ends and where it comes from
    held = next(i for i, r in enumerate(rows) if r[0] == "Held (inventory): nodes the plan "
                "starts from")
    assert rows[held + 2][:11] == ["zone-a", "H100-SXM", "Reserved", None, 1, 1,
                                   dt.datetime(2027, 4, 1), dt.datetime(2028, 4, 1), 2.4,
                                   "stated", f"kept from {earlier}"]
    # its price came from the earlier plan, not from an inventory line of the user's
    purchase = openpyxl.load_workbook(tmp_path / "o2" / "plan.xlsx")["Purchase plan"]
    heads = [c.value for c in purchase[1]]
    (source,) = [r[heads.index("Price source")] for r in purchase.iter_rows(values_only=True)
                 if r[2] == "Reserved"]
    assert source == f"held reservation: 2.400 USD/GPU-h as ordered by the earlier plan ({earlier})"


def test_an_inventory_given_as_the_earlier_plan_says_where_it_goes(tmp_path: Path) -> None:
    """Was 22 problems "nodes[0].slice: Field required — add this field" (a plan's fields) for
    a new user's inventory of held nodes passed to --existing: one problem says it is an
    inventory, what --existing takes, and where held nodes go."""
    q1 = _quarters(tmp_path, "q1", "2027-01-01")
    held = tmp_path / "held.yaml"
    held.write_text(yaml.safe_dump({"nodes": [{"zone": "zone-a", "gpu": "H100", "nodes": 2}]}))
    res = CliRunner().invoke(main, ["plan", str(q1), "--existing", str(held),
                                    "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert "Field required" not in res.output
    assert f"{held}: not a plan.json (no `status`, no `allocations`): an inventory" in res.output
    assert "nodes you already hold go in the scenario's `inventory`" in res.output
    assert not (tmp_path / "o").exists()


def test_plan_prints_the_warnings_validate_gives(tmp_path: Path) -> None:
    """An inventory line held through no whole period counts for nothing: validate warned, but
    plan, which README's first command runs alone, said nothing. It prints validate's
    warnings before planning (not validate's SLO ones: its diagnosis names those)."""
    q1 = _quarters(tmp_path, "q1", "2027-01-01")
    doc = yaml.safe_load(q1.read_text())
    doc["inventory"] = [{"zone": "zone-a", "gpu": "H100-SXM", "gpus_per_node": 1, "nodes": 1,
                         "purchase": "reserved", "price_per_gpu_hour": 2.4,
                         "ends": "2026-06-30"}]
    q1.write_text(yaml.safe_dump(doc))
    checked = CliRunner().invoke(main, ["validate", str(q1)])
    assert checked.exit_code == 0, checked.output
    said = [x for x in checked.stderr.splitlines() if "counts for nothing" in x]
    assert len(said) == 1
    planned = CliRunner().invoke(main, ["plan", str(q1), "--out", str(tmp_path / "o")])
    assert planned.exit_code == 0, planned.output
    assert said[0] in planned.stderr


def test_an_inventory_without_a_horizon_says_it_is_planned_from_today(tmp_path: Path) -> None:
    """With an inventory and no horizon the plan is one month from the day it is run, so the
    same scenario gave other dates on another day, and nothing said so (a new user's
    finding); `policy.as_of` pins the day, and the note goes."""
    import datetime as dt

    from tests.plan_fixtures import h100_scenario_yaml

    doc = yaml.safe_load(h100_scenario_yaml("held"))
    doc["inventory"] = [{"zone": "zone-a", "gpu": "H100-SXM", "gpus_per_node": 1, "nodes": 1,
                         "purchase": "reserved", "price_per_gpu_hour": 0.8,
                         "ends": "2099-12-31"}]
    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump(doc))
    today = dt.date.today().isoformat()
    planned = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "a")])
    assert planned.exit_code == 0, planned.output
    assert (f"note: no `horizon`: planned over one month from today ({today}), so the same "
            f"scenario planned on another day gives other dates — give `policy.as_of: "
            f"{today}`") in planned.stderr
    doc["policy"]["as_of"] = "2027-01-01"
    path.write_text(yaml.safe_dump(doc))
    pinned = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "b")])
    assert pinned.exit_code == 0, pinned.output
    assert "no `horizon`" not in pinned.stderr
    assert "horizon 2027-01-01 to 2027-02-01 (1 period of 1 month" in pinned.stdout
    # plan.json, report.md and the workbook keep where the start came from (they did not say
    # it was the day of planning: the note above was on stderr alone)
    import openpyxl

    from solver.outputs.labels import FROM_TODAY

    def start_from(out: str) -> tuple[str, str, str]:
        plan = json.loads((tmp_path / out / "plan.json").read_text())
        report = (tmp_path / out / "report.md").read_text().splitlines()[2]
        ws = openpyxl.load_workbook(tmp_path / out / "plan.xlsx")["Summary"]
        note = next(r[2] for r in ws.iter_rows(values_only=True) if r[0] == "Horizon start")
        return plan["horizon"]["start_from"], report, note

    found, report, note = start_from("a")
    assert found == "today"
    assert f"the horizon starts {today} ({FROM_TODAY})." in report
    assert note.endswith(f"; {FROM_TODAY}")
    found, report, note = start_from("b")
    assert found == "as_of"
    assert FROM_TODAY not in report and FROM_TODAY not in note
