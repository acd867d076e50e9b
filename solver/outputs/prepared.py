"""The date a plan's documents are prepared on: shown in them, and the time stamped into them.

The scenario's ``policy.as_of`` when it names one (the plan is made for that day); else the
date of ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention: seconds since 1970, UTC)
when the environment sets it; else today. A date, not a time: the same inputs give the same
files all day (docs/outputs.md, "Deterministic outputs").
"""

from __future__ import annotations

import datetime as dt
import os

__all__ = ["prepared_on"]


def _date(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:  # the loader reports a bad date
        return None


def prepared_on(*as_of: str | None, today: dt.date | None = None) -> dt.date:
    """The latest of the ISO dates ``as_of``; else ``SOURCE_DATE_EPOCH``'s date; else
    ``today`` (default: the current date)."""
    dates = [d for d in map(_date, as_of) if d is not None]
    if dates:
        return max(dates)
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).date()
    return today if today is not None else dt.date.today()
