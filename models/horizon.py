"""Planning over time: the horizon of periods, uncertain demand, and the fleet already held.

A scenario without a ``horizon`` plans one peak day, as it always has. With one, it plans
``count`` periods of ``period_months`` from ``start``: each period has its own peak day (the
workloads' ``growth``, ``events`` and ``migrations``), reserved and owned capacity is bought by
orders that bind for their term, and ``demand_scenarios`` (each a growth path, with a
probability) share the orders that must be placed before the next re-plan.
"""

from __future__ import annotations

import calendar
import datetime as dt
from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from models.common import Frozen, PurchaseKind, kind_as_purchase
from models.limits import Name, Real, Whole, bounded

#: Probabilities of the demand scenarios must sum to 1 within this [1].
PROBABILITY_TOLERANCE = 1e-6


class CommitmentCost(StrEnum):
    """What a reserved order costs the plan when its term runs past the horizon's end."""

    whole_term = "whole_term"
    """The whole commitment (a term is never cancelled): a long term must pay for itself
    inside the horizon."""
    inside_horizon = "inside_horizon"
    """Only the months of the term inside the horizon (the rest is assumed to be used)."""


def add_months(day: dt.date, months: int) -> dt.date:
    """The same day ``months`` later (the month's last day where it is shorter)."""
    total = day.month - 1 + months
    year, month = day.year + total // 12, total % 12 + 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


class Horizon(Frozen):
    """Planning periods: ``count`` periods of ``period_months`` months from ``start``."""

    start: dt.date
    """First day of the first period; orders are planned from this date, or from
    ``policy.as_of`` where given (before the start too: a buyer orders ahead of it)."""
    period_months: Whole = Field(3, ge=1, le=12)
    count: Whole = Field(ge=1, le=40)
    replan_months: Whole | None = bounded("replan_months", None)
    """Months until the plan is made again (default ``period_months``): orders due before then
    are the same in every demand scenario."""
    commitments: CommitmentCost = CommitmentCost.whole_term

    def period_start(self, period: int) -> dt.date:
        """First day of a period (``count`` gives the day after the horizon)."""
        return add_months(self.start, period * self.period_months)

    @property
    def end(self) -> dt.date:
        """The day after the last period."""
        return self.period_start(self.count)

    @property
    def replan_interval_months(self) -> int:
        """Months until the next re-plan."""
        return self.replan_months or self.period_months


class DemandScenario(Frozen):
    """One path demand may take: a growth multiplier per period, with a probability.

    ``growth`` multiplies each workload's own growth: one list for every workload, or a list
    per workload name (the others: 1). Omitted: the workloads' own growth (a ``base`` case).
    """

    name: Name
    probability: Real = bounded("probability")
    growth: tuple[Real, ...] | dict[str, tuple[Real, ...]] = ()

    @field_validator("growth")
    @classmethod
    def _positive(
        cls, growth: tuple[float, ...] | dict[str, tuple[float, ...]]
    ) -> tuple[float, ...] | dict[str, tuple[float, ...]]:
        lists = growth.items() if isinstance(growth, dict) else [("", growth)]
        bad = [f"{name}[{i}] is {g:g}" for name, path in lists for i, g in enumerate(path)
               if g <= 0]
        if bad:
            raise ValueError("growth multipliers must be > 0 (one per planning period): "
                             + ", ".join(bad))
        return growth

    def multiplier(self, workload: str, period: int) -> float:
        """Factor on a workload's demand in a period [1]."""
        path = self.growth.get(workload, ()) if isinstance(self.growth, dict) else self.growth
        return path[period] if period < len(path) else 1.0


class InventoryKind(StrEnum):
    """How capacity already held was bought."""

    owned = "owned"
    """Hardware bought: capital already spent, running cost (power, hosting) only."""
    reserved = "reserved"
    """A reservation already committed, until its ``ends`` date."""

    @property
    def pool_kind(self) -> PurchaseKind:
        """The purchase kind of its node pool."""
        return PurchaseKind(self.value)


class HeldNodes(Frozen):
    """Nodes already held in one zone: owned, or reserved until a date (brownfield).

    Named by GPU type (and node size) or by the provider's instance type.
    """

    zone: Name
    gpu: Name | None = None
    instance_type: Name | None = None
    """Provider's node type (e.g. ``p5.48xlarge``): GPU and node size from the scenario's
    offers, else the built-in price table."""
    gpus_per_node: Whole | None = bounded("gpus_per_node", None)
    nodes: Whole = bounded("nodes")
    purchase: InventoryKind = InventoryKind.owned
    """How the nodes were bought, named as in a ``check --fleet`` inventory and plan.json;
    ``kind`` (this field's first name) is read as ``purchase``."""
    ends: dt.date | None = None
    """Last day held: the end of a reservation (required), or an owned node's retirement."""
    available_from: dt.date | None = None
    """First day in service, for nodes ordered but not yet delivered (default: held now)."""
    price_per_gpu_hour: Real | None = bounded("price_per_gpu_hour", None)
    """A reservation's price (default: the zone's reserved quote for the GPU) [currency/(GPU·h)];
    committed, reported, never changed by the plan."""
    running_cost_per_node_month: Real | None = bounded("running_cost_per_node_month", None)
    """Owned: power and hosting per node (default: from the zone's ``owned`` terms)
    [currency/(node·month)]."""

    @model_validator(mode="before")
    @classmethod
    def _kind_is_purchase(cls, data: object) -> object:
        return kind_as_purchase(data)

    @field_validator("nodes")
    @classmethod
    def _some_nodes(cls, nodes: int) -> int:
        # a line of no nodes holds and prices nothing: it passed silently (a count left at 0
        # in a template, or a line meant to be removed)
        if nodes == 0:
            raise ValueError("`nodes: 0` holds no node: give the number of nodes held (1 or "
                             "more), or remove the line")
        return nodes

    @model_validator(mode="after")
    def _named_once(self) -> HeldNodes:
        if self.gpu is None and self.instance_type is None:
            raise ValueError("name the nodes by `gpu` or by `instance_type`")
        if self.purchase is InventoryKind.reserved and self.ends is None:
            raise ValueError("a reservation needs its end date (`ends`)")
        if self.purchase is InventoryKind.reserved and self.running_cost_per_node_month is not None:
            raise ValueError("running_cost_per_node_month is for owned nodes; a reservation "
                             "states price_per_gpu_hour")
        if self.purchase is InventoryKind.owned and self.price_per_gpu_hour is not None:
            raise ValueError("price_per_gpu_hour is for reservations; owned nodes state "
                             "running_cost_per_node_month")
        if self.ends is not None and self.available_from is not None and (
                self.ends < self.available_from):
            raise ValueError("`ends` is before `available_from`")
        return self

    def held_through(self, first: dt.date, after_last: dt.date) -> bool:
        """Held on every day from ``first`` up to (not including) ``after_last``."""
        starts_ok = self.available_from is None or self.available_from <= first
        ends_ok = self.ends is None or self.ends >= after_last - dt.timedelta(days=1)
        return starts_ok and ends_ok

    def months_held_in_part(self, first: dt.date, after_last: dt.date, months: float) -> float:
        """Months of the period ``first`` to ``after_last`` (``months`` long) held in part only
        (a reservation ending inside it): paid, though the plan counts it in no such period;
        0 when held through the whole period or not at all [months]."""
        if self.held_through(first, after_last):
            return 0.0
        start = first if self.available_from is None else max(first, self.available_from)
        after = after_last if self.ends is None else min(after_last,
                                                         self.ends + dt.timedelta(days=1))
        days = (after - start).days
        return months * days / (after_last - first).days if days > 0 else 0.0

    def reserved_cost_per_month(self, price_per_gpu_hour: float, hours_per_month: float
                                ) -> float:
        """What these nodes cost a month held at a reserved price [currency/month]: the one
        formula the planner's held cost and the outputs' assumed-price lines both read."""
        assert self.gpus_per_node is not None, "inventory lines are resolved by the loader"
        return (price_per_gpu_hour  # [currency/(GPU·h)]
                * self.gpus_per_node * self.nodes  # [GPUs]
                * hours_per_month)  # [h/month]


def probabilities_sum_to_one(scenarios: tuple[DemandScenario, ...]) -> bool:
    """Probabilities of the demand scenarios add up to 1 (within the tolerance)."""
    return abs(sum(s.probability for s in scenarios) - 1.0) <= PROBABILITY_TOLERANCE
