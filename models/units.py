"""Units in field names, for the fixes of bad input: a key written in another unit than the
schema's (``ttft_p95_s: 1`` where the field is ``ttft_p95_ms``), and a value written with its
unit (``ttft_p95_ms: 1 s``, ``peak_rps: 480 rpm``). Every unit fleetplan's fields are named in
is the last part of the name (STYLE.md: units in names); the fix gives the value converted to
the field's unit.
"""

from __future__ import annotations

import re

#: A unit suffix → (dimension, size in the dimension's base unit: seconds, bytes, watts,
#: requests per second).
UNITS: dict[str, tuple[str, float]] = {
    "us": ("time", 1e-6), "ms": ("time", 1e-3), "s": ("time", 1.0), "sec": ("time", 1.0),
    "secs": ("time", 1.0), "seconds": ("time", 1.0), "min": ("time", 60.0),
    "mins": ("time", 60.0), "minutes": ("time", 60.0), "h": ("time", 3600.0),
    "hr": ("time", 3600.0), "hrs": ("time", 3600.0), "hours": ("time", 3600.0),
    "days": ("time", 86400.0), "weeks": ("time", 604800.0),
    "b": ("memory", 1.0), "kb": ("memory", 1e3), "mb": ("memory", 1e6), "gb": ("memory", 1e9),
    "tb": ("memory", 1e12), "kib": ("memory", 2.0**10), "mib": ("memory", 2.0**20),
    "gib": ("memory", 2.0**30), "tib": ("memory", 2.0**40),
    "w": ("power", 1.0), "kw": ("power", 1e3),
    # request rates, in requests per second (``peak_rpm: 480`` where the field is ``peak_rps``)
    "rps": ("rate", 1.0), "qps": ("rate", 1.0), "rpm": ("rate", 1 / 60), "qpm": ("rate", 1 / 60),
    "rph": ("rate", 1 / 3600), "rpd": ("rate", 1 / 86400),
}

#: How a unit reads in a fix ("milliseconds" says more than ``ms`` to whoever wrote seconds).
UNIT_WORDS = {"ms": "milliseconds", "s": "seconds", "us": "microseconds", "min": "minutes",
              "h": "hours", "gib": "GiB (2^30 bytes)", "gb": "GB (10^9 bytes)",
              "mib": "MiB (2^20 bytes)", "w": "watts", "kw": "kilowatts",
              "rps": "requests per second"}

#: Fields whose last part is a unit only by accident (``active_params_b``: billions).
NOT_UNITS = ("_params_b",)

_VALUE = re.compile(r"^\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ]+)\s*$")


def unit_of(field: str) -> str | None:
    """The unit suffix of a field name (``ttft_p95_ms`` → ``ms``), ``None`` without one."""
    if "_" not in field or field.endswith(NOT_UNITS) or "_per_" in field:
        return None  # a rate's unit (``_gb_per_s``) is not its last part
    unit = field.rsplit("_", 1)[1].lower()
    return unit if unit in UNITS else None


def _words(unit: str) -> str:
    return UNIT_WORDS.get(unit, unit)


def amount_text(value: float, digits: int = 3, grouped: bool = True) -> str:
    """A quantity as a person reads it: ``digits`` significant digits below
    ``10 ** (digits - 1)``, a whole number at or above, with thousands separators where
    ``grouped`` (off for a value to type back as an option). ``:.3g`` wrote a fleet's figures
    as ``4.56e+03 rps`` and ``2.98e+05 requests/day``."""
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}" if grouped else f"{value:.0f}"
    return f"{value:.{digits}g}"


def _number(value: float) -> str:
    """A converted value as a person writes it: 1000, 0.5, 74.51."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _convert(value: object, unit: str, to: str) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) * UNITS[unit][1] / UNITS[to][1]


def renamed_unit_fix(key: str, value: object, known: list[str]) -> tuple[str, str] | None:
    """For an unknown key that is a known field in another unit of the same kind
    (``ttft_p95_s`` beside ``ttft_p95_ms``): the field meant and the fix, with the value
    converted where it is a number; else ``None``."""
    if "_" not in key:
        return None
    stem, unit = key.rsplit("_", 1)
    unit = unit.lower()
    if unit not in UNITS:
        return None
    for field in known:
        to = unit_of(field)
        if (to is None or to == unit or field.rsplit("_", 1)[0] != stem
                or UNITS[to][0] != UNITS[unit][0]):
            continue
        converted = _convert(value, unit, to)
        if converted is None:
            return field, (f"the field is `{field}`, in {_words(to)}: rename the key and give "
                           f"the value in {_words(to)}")
        return field, (f"the field is `{field}`, in {_words(to)}: write `{field}: "
                       f"{_number(converted)}` ({value:g} {unit})")
    return None


def unit_value_fix(field: str, value: object) -> str | None:
    """For a value a number field could not read, in a field named with a unit: the value as a
    plain number in that unit where it was written with a unit of the same kind (``1 s`` in
    ``ttft_p95_ms``: ``1000``), else what to give; ``None`` for a field without a unit."""
    to = unit_of(field)
    if to is None:
        # a rate or a price (`peak_rps: 12 rps`, `price_per_gpu_hour: 3.1 USD`): no
        # conversion, but the number to keep
        match = _VALUE.match(value) if isinstance(value, str) and "_" in field else None
        if match is None:
            return None
        number = match.group(1).replace(",", "").replace("_", "")
        return (f"give a plain number, the unit is in the field's name: "
                f"`{field}: {_number(float(number))}`")
    plain = f"give a plain number of {_words(to)} (the unit is the field name's `_{to}`)"
    match = _VALUE.match(value) if isinstance(value, str) else None
    if match is None:
        return plain
    unit = match.group(2).lower().replace("µ", "u")
    if unit not in UNITS or UNITS[unit][0] != UNITS[to][0]:
        return plain
    number = float(match.group(1).replace(",", "").replace("_", ""))
    converted = _convert(number, unit, to)
    assert converted is not None
    return f"{plain}: `{field}: {_number(converted)}`"


def renamed_column_fix(column: str, known: list[str]) -> tuple[str, str] | None:
    """For a CSV column that is a known column in another unit of the same kind (``peak_rpm``
    beside ``peak_rps``): the column meant and the fix, every value scaled; else ``None``."""
    found = renamed_unit_fix(column, None, known)
    if found is None:
        return None
    field = found[0]
    unit, to = column.rsplit("_", 1)[1].lower(), unit_of(field)
    assert to is not None
    factor = UNITS[unit][1] / UNITS[to][1]
    scale = (f"multiply every value by {_number(factor)}" if factor >= 1
             else f"divide every value by {_number(1 / factor)}")
    return field, (f"the column is `{field}`, in {_words(to)}: rename `{column}` to `{field}` "
                   f"and {scale} ({unit} to {to})")
