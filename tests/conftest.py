"""Test-wide settings."""

from __future__ import annotations

import os

import pytest

from solver.cli.lead_times import TODAY_ENV


def pytest_configure(config: pytest.Config) -> None:
    """Pin "today" for the warning of a horizon that starts in the past (validate, plan): the
    examples' horizons start 2027-01-01, after the day the tests were written, and their
    tests expect no such warning whenever they run. Inherited by CLI subprocesses."""
    os.environ.setdefault(TODAY_ENV, "2026-12-03")
