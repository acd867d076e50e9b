"""Units read from field names: every efficiency factor has one, spelled as the docstrings say."""

from __future__ import annotations

import pytest

from models.catalog import EfficiencyFactors
from solver.outputs.units import field_header, field_label, field_unit


@pytest.mark.parametrize(("name", "header"), [
    ("compute_efficiency", "Compute efficiency [1]"),
    ("decode_step_overhead_ms", "Decode step overhead [ms]"),
    ("step_overhead_ms_per_layer", "Step overhead per layer [ms/layer]"),
    ("step_overhead_ms_per_seq", "Step overhead per sequence [ms/sequence]"),
    ("allreduce_latency_us", "All-reduce latency [µs]"),
    ("runtime_overhead_gib", "Runtime overhead [GiB]"),
    ("runtime_overhead_fraction", "Runtime overhead fraction [1]"),
    # the Assumptions sheet read "Kv bandwidth efficiency [1]"
    ("kv_bandwidth_efficiency", "KV bandwidth efficiency [1]"),
])
def test_headers(name: str, header: str) -> None:
    assert field_header(name) == header


def test_every_efficiency_factor_has_a_unit() -> None:
    # a new factor whose name carries no unit fails here, before it reaches a workbook
    units = {name: field_unit(name) for name in EfficiencyFactors.model_fields}
    assert units["step_overhead_ms_per_seq"] == "ms/sequence"
    assert len({field_label(name) for name in units}) == len(units)  # no two labels collide


def test_a_name_without_a_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="carries no unit"):
        field_unit("peak_rps_guess")


@pytest.mark.parametrize(("value", "digits", "grouped", "text"), [
    (4560.4, 3, True, "4,560"),  # `check` wrote "short 4.56e+03 rps"
    (297600.0, 4, True, "297,600"),  # the diagnosis wrote "2.98e+05 requests/day"
    (1953.2, 3, False, "1953"),  # an option value to type back: `--rate-scale 1953`
    (999.6, 3, True, "1,000"),  # rounded up to 1,000, not "1e+03"
    (99.96, 3, True, "100"),
    (36.2249, 4, True, "36.22"),
    (5.92, 3, True, "5.92"),
    (0.0, 3, True, "0"),
])
def test_amounts_read_as_numbers_not_exponents(value: float, digits: int, grouped: bool,
                                              text: str) -> None:
    from models.units import amount_text

    assert amount_text(value, digits, grouped) == text
