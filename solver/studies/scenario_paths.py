"""Scenario fields by path: ``workloads.chat.arrival.peak_rps``, ``policy.share_nodes``.

A path walks a scenario as its file spells it: keys as written; a list is entered by an entry's
``name``, ``id`` or ``gpu`` (``zones.use1-az1.offers.H100-SXM``) or by its index (``3``); ``*``
and shell patterns (``use1-*``) select every entry or key that matches. A sweep changes a dump
of the resolved scenario (:func:`scenario_document`) and validates the result again as a
scenario, so a value a scenario file could not hold is refused as the file would be.

Where a pattern selected entries, those the rest of the path does not reach are passed over
(``zones.*.offers.H100-SXM`` changes the zones that sell H100-SXM); a path must reach at least
one value, and a path without a pattern must reach exactly what it names.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from typing import Any

from models.errors import InputError, Problem, did_you_mean
from models.scenario import Scenario

#: Keys that name an entry of a list, in the order they are looked for.
ENTRY_KEYS = ("name", "id", "gpu")

Change = Callable[[Any], Any]
"""The new value from the current one; raises :class:`NoValue` where there is nothing to change."""


class NoValue(ValueError):
    """The value at a path cannot take the change (e.g. a multiplier of ``null``)."""


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """The resolved scenario as a file spells it (JSON types, keys as written)."""
    doc: dict[str, Any] = scenario.model_dump(mode="json", by_alias=True)
    return doc


def entry_name(entry: Any) -> str | None:
    """The name a list entry is selected by, if it has one."""
    if isinstance(entry, dict):
        for key in ENTRY_KEYS:
            if isinstance(entry.get(key), str):
                return str(entry[key])
    return None


def _is_pattern(segment: str) -> bool:
    return any(ch in segment for ch in "*?[")


def _children(node: Any, segment: str) -> list[tuple[Any, str]] | None:
    """(key or index, location) of the children ``segment`` selects, ``None`` if ``node`` has
    no children."""
    if isinstance(node, dict):
        keys = list(node)
        if _is_pattern(segment):
            return [(k, str(k)) for k in keys if fnmatch.fnmatchcase(str(k), segment)]
        return [(segment, segment)] if segment in node else []
    if isinstance(node, list):
        names = [entry_name(e) for e in node]
        if segment.isdigit() and int(segment) < len(node) and all(n is None for n in names):
            return [(int(segment), segment)]
        if _is_pattern(segment):
            return [(i, n) for i, n in enumerate(names)
                    if n is not None and fnmatch.fnmatchcase(n, segment)]
        return [(i, n) for i, n in enumerate(names) if n == segment]
    return None


def _options(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [str(k) for k in node]
    if isinstance(node, list):
        names = [n for n in (entry_name(e) for e in node) if n is not None]
        return names or [str(i) for i in range(len(node))]
    return []


def _walk(node: Any, segments: list[str], change: Change, where: str, wild: bool,
          spec: str) -> int:
    """Apply ``change`` under ``node``; the number of values changed."""
    segment, rest = segments[0], segments[1:]
    wild = wild or _is_pattern(segment)
    children = _children(node, segment)
    if children is None or not children:
        if wild:
            return 0
        if children is None:
            held = "nothing (null)" if node is None else f"the value `{json.dumps(node)}`"
            raise InputError([Problem("--vary", spec, f"`{where}` holds {held}, which has no "
                                      f"`{segment}`", "vary a field the scenario sets")])
        raise InputError([Problem("--vary", spec, f"`{where or 'the scenario'}` has no "
                                  f"`{segment}`", did_you_mean(segment, _options(node)))])
    changed = 0
    for key, name in children:
        here = f"{where}.{name}" if where else name
        if rest:
            changed += _walk(node[key], rest, change, here, wild, spec)
            continue
        try:
            node[key] = change(node[key])
        except NoValue as exc:
            if not wild:
                raise InputError([Problem("--vary", spec, f"`{here}` {exc}",
                                          "vary a field the scenario sets")]) from None
            continue
        changed += 1
    return changed


def set_path(doc: dict[str, Any], path: str, change: Change, spec: str) -> int:
    """Change, in place, every value of ``doc`` that ``path`` selects; how many were changed.

    An InputError (naming ``spec``, the ``--vary`` it came from) where the path selects
    nothing, or names a field the scenario does not have.
    """
    segments = path.split(".")
    if any(not s for s in segments):
        raise InputError([Problem("--vary", spec, f"`{path}` has an empty step",
                                  "separate fields with single dots")])
    changed = _walk(doc, segments, change, "", False, spec)
    if changed == 0:
        raise InputError([Problem("--vary", spec, f"`{path}` selects no value of the scenario",
                                  "check the names after each pattern")])
    return changed


def _whole(value: float) -> int:
    """Nearest whole number, halves up (a multiplier on a count)."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def _scaled(current: Any, factor: float) -> Any:
    if isinstance(current, bool) or current is None or isinstance(current, str | dict):
        shown = "nothing (null)" if current is None else f"`{json.dumps(current)}`"
        raise NoValue(f"holds {shown}, which a multiplier cannot scale")
    if isinstance(current, list):
        return [_scaled(v, factor) for v in current]
    if isinstance(current, int):
        return _whole(current * factor)
    return float(current) * factor


def multiply(factor: float) -> Change:
    """The current value × ``factor``: a number, or each number of a list; a whole number stays
    whole (rounded half up)."""
    return lambda current: _scaled(current, factor)


def replace(value: Any, *, drawn: bool = False) -> Change:
    """The value given; a ``drawn`` (sampled) number put where a whole number was is rounded."""
    def apply(current: Any) -> Any:
        if drawn and isinstance(current, int) and not isinstance(current, bool):
            return _whole(float(value))
        return value
    return apply
