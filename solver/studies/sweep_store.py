"""A sweep's directory: one record per finished variant, written atomically as it lands.

``variants/<key>.json`` holds a finished variant: its label and values, the plan as ``plan.json``
holds it, and the worker's wall time. A record is written whole or not at all (temporary file
and rename), so a sweep killed at any moment leaves only whole records, and ``--resume`` plans
only the variants whose key has no record. ``study.json`` names the study (its options and
every variant's key) and is written before the first plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.plan import Plan
from solver.outputs.atomic import write_atomic
from solver.studies.sweep import SweepVariant

VARIANTS_DIR = "variants"
STUDY_FILE = "study.json"
#: Keys whose values are wall-clock times: left out where results are compared.
TIMING_KEYS = frozenset({"seconds"})


@dataclass(frozen=True)
class Record:
    """A finished variant as its record holds it."""

    key: str
    plan: Plan
    seconds: float
    """Worker wall time of the variant's plan [s]."""
    attempts: int


def record_json(variant: SweepVariant, plan: Plan, seconds: float, attempts: int) -> str:
    """The record of a finished variant (JSON text)."""
    return json.dumps({
        "key": variant.key, "label": variant.label,
        "values": [[k, v] for k, v in variant.values], "sample": variant.sample,
        "seconds": seconds, "attempts": attempts, "plan": plan.model_dump(mode="json"),
    }, indent=1)


def without_timings(data: Any) -> Any:
    """``data`` with every wall-clock time removed: what must match, bit for bit, whichever
    executor made it."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data


class SweepStore:
    """Records of a sweep's finished variants under one directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.variants = directory / VARIANTS_DIR

    def path(self, key: str) -> Path:
        """Where the record of ``key`` lives."""
        return self.variants / f"{key}.json"

    def finished(self) -> set[str]:
        """Keys with a record (temporary files of an interrupted write are not records)."""
        if not self.variants.is_dir():
            return set()
        return {p.stem for p in self.variants.glob("*.json") if not p.name.startswith(".")}

    def write(self, variant: SweepVariant, plan: Plan, seconds: float, attempts: int) -> None:
        """Record a finished variant, atomically."""
        write_atomic(self.path(variant.key), record_json(variant, plan, seconds, attempts))

    def read(self, key: str) -> Record | None:
        """The record of ``key``; ``None`` where it cannot be read back (it is planned again)."""
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
            return Record(key, Plan.model_validate(data["plan"]), float(data["seconds"]),
                          int(data["attempts"]))
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            return None

    def write_study(self, study: dict[str, Any]) -> None:
        """``study.json``: what the sweep is (written before the first plan)."""
        write_atomic(self.directory / STUDY_FILE, json.dumps(study, indent=1))
