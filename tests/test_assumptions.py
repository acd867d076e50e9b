"""Figures nobody gave are found, listed first, and said to be assumed in the resolved scenario."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inputs import demo_scenario, scenarios_dir
from models.errors import InputError
from models.loader import load_scenario
from models.offers import AssumedFigure, Offer
from models.scenario import Scenario
from solver.outputs.assumptions import assumed_figures, offer_assumes
from solver.outputs.plan_dir import resolved_scenario_yaml
from solver.solve.assemble import scenario_fingerprint


def test_the_demo_assumes_what_its_price_table_cannot_say() -> None:
    demo = load_scenario(demo_scenario())
    found = {a.figure: a for a in assumed_figures(demo)}
    assert list(found) == ["Reserved price", "Reserved commitment and lead time", "Stock",
                           "Spot interruption rate", "On-demand start-up time",
                           "Target utilization", "Arrivals"]
    # demo.yaml: reserved = on-demand × (1 − 0.4), stock 64/48/32, 0.05 per hour, 10 min
    assert found["Reserved price"].value == "on-demand × (1 − 40%)"
    assert found["Stock"].value == "reserved 64, on-demand 48, spot 32 GPUs per offer"
    assert found["Spot interruption rate"].value == "0.05 per hour"
    assert found["Target utilization"].value == "batch 90%; interactive 70%"
    assert found["Arrivals"].applies_to == "chat, code-completion, agent"  # not the batch pool
    offer = demo.zones[0].offers[0]
    assert offer_assumes(offer, AssumedFigure.reserved_price)
    assert offer.reserved_quotes[0].assumed


def test_tiny_gives_every_offer_figure_itself_but_its_lead_times() -> None:
    tiny = load_scenario(scenarios_dir() / "tiny.yaml")
    found = {a.figure: a for a in assumed_figures(tiny)}
    assert list(found) == ["Target utilization", "Arrivals", "Lead time"]
    # its two reserved quotes give no lead_time_weeks: 0 weeks, nobody's figure
    assert (found["Lead time"].value, found["Lead time"].applies_to) == (
        "0 weeks", "2 reserved quotes in 1 zone")


def test_a_quote_without_a_lead_time_is_assumed_and_warned_of_over_periods(
        tmp_path: Path) -> None:
    """A new user's reserved quote without ``lead_time_weeks`` was 0 weeks, shown as "0" in
    the workbook's Offers sheet and listed nowhere as assumed; over periods its orders serve
    at once. Listed, kept through scenario.resolved.yaml, and warned of with a horizon; the
    quotes that give one (quarterly.yaml's) are not."""
    from solver.outputs.summary import over_time

    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    quotes = doc["zones"][0]["offers"][0]["reserved"]  # use1-az1's H100-SXM: 12 and 36 months
    del quotes[0]["lead_time_weeks"]
    path = tmp_path / "quarterly.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    sc = load_scenario(path)

    def h100(scenario: Scenario) -> Offer:
        return next(o for o in scenario.zone("use1-az1").offers if o.gpu == "H100-SXM")

    quote = h100(sc).reserved_quotes
    assert [(q.lead_time_weeks, q.lead_time_assumed) for q in quote] == [(0, True), (8, False)]
    assert next(a for a in assumed_figures(sc) if a.figure == "Lead time").applies_to == (
        "1 reserved quote in 1 zone")
    _, warnings = over_time(sc)
    said = [w for w in warnings if "lead_time_weeks" in w]
    assert said == ["use1-az1: H100-SXM's 12-month reserved "
                    "quote gives no lead_time_weeks: 0 weeks assumed, so an order serves "
                    "from the period it is placed in — give the provider's lead time"]
    again = tmp_path / "resolved.yaml"
    again.write_text(resolved_scenario_yaml(sc), encoding="utf-8")
    read = load_scenario(again)  # 0 written out is still nobody's figure
    assert [q.lead_time_assumed for q in h100(read).reserved_quotes] == [
        True, False]
    assert scenario_fingerprint(read) == scenario_fingerprint(sc)
    assert not [w for w in over_time(load_scenario(scenarios_dir() / "quarterly.yaml"))[1]
                if "lead_time_weeks" in w]


def test_the_resolved_scenario_says_so_and_keeps_it(tmp_path: Path) -> None:
    demo = load_scenario(demo_scenario())
    text = resolved_scenario_yaml(demo)
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert head[0].startswith("# Assumed, not given")
    assert any(line.startswith("#   Reserved price: on-demand × (1 − 40%) (assumed;")
               for line in head)
    path = tmp_path / "scenario.resolved.yaml"
    path.write_text(text, encoding="utf-8")
    again = load_scenario(path)  # read back, each offer still knows what it assumed
    assert [o.assumed for z in again.zones for o in z.offers] == [
        o.assumed for z in demo.zones for o in z.offers]


def test_a_derived_price_names_itself_before_its_table() -> None:
    from models.common import PurchaseKind
    from solver.outputs.assumptions import price_source

    offer = load_scenario(demo_scenario()).zones[0].offers[0]
    reserved = price_source(offer, PurchaseKind.reserved)
    assert reserved is not None and reserved.startswith(
        "assumed: on-demand × (1 − 40%), on-demand from aws_gpu_prices.csv")
    assert price_source(offer, PurchaseKind.on_demand) == offer.price_source  # as published


def test_an_offer_assuming_a_figure_of_terms_it_does_not_sell_is_refused(tmp_path: Path) -> None:
    # A resolved scenario edited to drop its spot terms kept `assumed: [spot_interruption_rate]`;
    # the Assumptions section then listed the rate with no value and crashed (IndexError).
    text = (scenarios_dir() / "tiny.yaml").read_text()
    stale = tmp_path / "stale.yaml"
    stale.write_text(text.replace("price_source: hand-picked round price",
                                  "price_source: hand-picked round price\n"
                                  "        assumed: [spot_interruption_rate]", 1))
    with pytest.raises(InputError, match=r"offers\[0\]: assumed lists spot_interruption_rate, "
                                         r"but the offer of GPU L4 sells no spot"):
        load_scenario(stale)
