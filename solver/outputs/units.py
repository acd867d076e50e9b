"""Units of schema fields, read from their names (the house style puts the unit in the name).

Places that show a whole schema object (the workbook's Assumptions sheet, ``fleetplan
calibrate``'s table) iterate its fields and label each with :func:`field_header`, so a field
added to the schema shows up without a code change; a name whose unit is not recognised raises,
so no figure is shown without its unit.
"""

from __future__ import annotations

__all__ = ["field_header", "field_label", "field_unit"]

#: Name endings and the unit they mean, tried in order ("1": a dimensionless share).
UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_efficiency", "1"),
    ("_fraction", "1"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_gib", "GiB"),
)

#: Abbreviations in names spelled out for people.
WORDS: dict[str, str] = {"seq": "sequence", "allreduce": "all-reduce", "nccl": "NCCL",
                         "kv": "KV"}


def _split(name: str) -> tuple[list[str], str, str]:
    """Words of the quantity, its unit and the ``_per_`` denominator ("" if none)."""
    base, _, per = name.partition("_per_")
    for suffix, unit in UNIT_SUFFIXES:
        if base.endswith(suffix):
            words = base.split("_") if unit == "1" else base[: -len(suffix)].split("_")
            return [WORDS.get(w, w) for w in words], unit, WORDS.get(per, per)
    raise ValueError(f"field {name!r} carries no unit fleetplan recognises "
                     f"(name endings: {', '.join(s for s, _ in UNIT_SUFFIXES)})")


def field_unit(name: str) -> str:
    """Unit of a field: ``step_overhead_ms_per_layer`` → ``ms/layer``; ``1`` for a share."""
    _, unit, per = _split(name)
    return f"{unit}/{per}" if per else unit


def field_label(name: str) -> str:
    """The quantity in words: ``step_overhead_ms_per_seq`` → ``step overhead per sequence``."""
    words, _, per = _split(name)
    return " ".join(words + (["per", per] if per else []))


def field_header(name: str) -> str:
    """A table header with its unit: ``allreduce_latency_us`` → ``All-reduce latency [µs]``."""
    label = field_label(name)
    return f"{label[:1].upper()}{label[1:]} [{field_unit(name)}]"
