"""Planning policy: the business rules every plan of a scenario obeys."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field, field_validator

from models.common import Frozen, OmitDefaults, PurchaseKind, runs_all_day
from models.limits import LimitedList, Name, Real, Whole, bounded
from models.workload import HOURS_PER_DAY


class TimeBlock(Frozen):
    """A group of hours of the peak day planned as one slice (demand = its busiest hour)."""

    name: Name
    hours: tuple[Whole, ...] = Field(min_length=1)


def hourly_blocks() -> tuple[TimeBlock, ...]:
    """The default: 24 one-hour slices named ``h00`` … ``h23``."""
    return tuple(TimeBlock(name=f"h{h:02d}", hours=(h,)) for h in range(HOURS_PER_DAY))


class Policy(OmitDefaults):
    """Rules of the plan: time base, failure headroom, money, and how old a measurement may be."""

    omit_when_default = ("time_zone", "measured_length_tolerance")

    hours_per_month: Real = bounded("hours_per_month", 730.0)
    """Hours in the month the costs are per [h]; at most 31 × 24 = 744."""
    failure_utilization: Real = bounded("failure_utilization", 1.0)
    """After a failure a replica may run at up to this share of its SLO-holding rate [1]."""
    monthly_budget: Real | None = bounded("monthly_budget", None)
    """Cap on the monthly cost [currency/month]."""
    currency: Name = "USD"
    memory_margin_fraction: Real = bounded("memory_margin_fraction", 0.05)
    """Share of GPU memory kept free as a safety margin, beyond runtime overhead [1]."""
    measured_max_age_days: Whole = bounded("measured_max_age_days", 180)
    """A measured capacity row older than this is stale and not used [days]."""
    measured_length_tolerance: Real = bounded("measured_length_tolerance", 0.2)
    """A measured row whose test's P50 or P95 token lengths (input or output) differ from the
    workload's by more than this share of the workload's is stale and not used [1]
    (docs/capacity-model.md, "Lengths a row was measured at")."""
    as_of: Name | None = None
    """Date (ISO) the plan is made for; measured-row ages count to it, and over a horizon
    orders are planned from it, before the horizon's start too. Default: today (over a
    horizon: its start)."""
    share_nodes: bool = True
    """Let replicas of different workloads share a node (the cheapest packing). ``false`` gives
    each workload dedicated node pools: isolation, at the cost of rounding each pool up to whole
    nodes; the program then decomposes per workload and solves fastest (docs/program.md)."""
    time_blocks: Annotated[tuple[TimeBlock, ...], LimitedList] = Field(
        default_factory=hourly_blocks)
    """Slices of the peak day; each hour in exactly one block."""
    time_zone: Name = "UTC"
    """IANA time zone of the hours of the day (hourly shapes, batch windows, time blocks); the
    outputs label their hour axes with it."""

    @field_validator("as_of", mode="before")
    @classmethod
    def _date_as_written(cls, value: object) -> object:
        """``as_of: 2027-02-01`` unquoted, as validate's warning and horizon.start write a
        date, is a date to YAML, not a string: kept as its ISO text."""
        return value.isoformat() if isinstance(value, dt.date) else value

    @field_validator("time_blocks")
    @classmethod
    def _partition(cls, blocks: tuple[TimeBlock, ...]) -> tuple[TimeBlock, ...]:
        hours = sorted(h for b in blocks for h in b.hours)
        if hours != list(range(HOURS_PER_DAY)):
            raise ValueError("time_blocks must cover each hour 0..23 exactly once")
        names = [b.name for b in blocks]
        if len(set(names)) != len(names):
            raise ValueError("time_blocks names must be unique")
        return blocks

    def as_of_date(self, today: dt.date | None = None) -> dt.date:
        """The date the plan is made for: ``as_of``, else ``today`` (default: the current date).

        Measured-row and contract ages count to it.
        """
        if self.as_of is not None:
            return dt.date.fromisoformat(self.as_of)
        return today if today is not None else dt.date.today()

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone `{name}`: give an IANA name such as UTC, "
                             "America/New_York or Europe/Berlin") from None
        return name

    def paid_hours_per_month(self, purchase: PurchaseKind, block: str | None) -> float:
        """Hours a month a GPU bought as ``purchase`` is paid for [h/month]: every hour when
        committed (reserved, owned) or running all day (``block`` ``None``), else its time
        block's share."""
        if runs_all_day(purchase) or block is None:
            return self.hours_per_month
        hours = next(len(b.hours) for b in self.time_blocks if b.name == block)
        return hours * self.hours_per_month / HOURS_PER_DAY  # [h/day] × [day/month]
