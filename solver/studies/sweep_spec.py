"""What a sweep varies: each ``--vary KEY=…`` read into levels or a distribution.

``KEY`` is a scenario field by path (``workloads.chat.arrival.peak_rps``; :mod:`.scenario_paths`)
or one of ``compare``'s shortcuts (``growth``, ``survivability``, ``spot``, ``drop_gpu``). What
follows ``=`` is either

- **levels**, separated by commas outside brackets: a value as YAML reads it (``20``, ``true``,
  ``zone_loss``, ``[H100-SXM, L40S]``) or a multiplier of the value the scenario holds
  (``×0.8``, ``x0.8`` or ``*0.8``); or
- **one distribution** to draw Monte Carlo samples from (``--samples N``): ``~uniform(lo,hi)``,
  ``~loguniform(lo,hi)``, ``~triangular(lo,mode,hi)``, ``~normal(mean,sd)``,
  ``~lognormal(median,sigma)``; written after ``×`` (``×~lognormal(1,0.15)``) it draws a
  multiplier.

Everything is checked here, before any plan: a wrong spec is an :class:`InputError` naming the
``--vary`` and the fix. docs/sweep.md describes the syntax for users.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from models.errors import InputError, Problem, did_you_mean

#: Prefixes of a multiplier: ``×0.8``, ``x0.8``, ``*0.8``.
MULTIPLIER_PREFIXES = ("×", "x", "X", "*")


@dataclass(frozen=True)
class Family:
    """A distribution family: its parameters, the rule they obey, an example."""

    params: tuple[str, ...]
    rule: str
    holds: Callable[[tuple[float, ...]], bool]
    example: str


FAMILIES: dict[str, Family] = {
    "uniform": Family(("low", "high"), "low < high", lambda p: p[0] < p[1], "10, 40"),
    "loguniform": Family(("low", "high"), "0 < low < high", lambda p: 0 < p[0] < p[1],
                         "1, 100"),
    "triangular": Family(("low", "mode", "high"), "low <= mode <= high, low < high",
                         lambda p: p[0] <= p[1] <= p[2] and p[0] < p[2], "0.8, 1, 1.3"),
    "normal": Family(("mean", "sd"), "sd > 0", lambda p: p[1] > 0, "20, 4"),
    "lognormal": Family(("median", "sigma"), "median > 0, sigma > 0",
                        lambda p: p[0] > 0 and p[1] > 0, "1, 0.15"),
}
_DISTRIBUTION = re.compile(r"^~\s*([A-Za-z_]+)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class Level:
    """One value a key takes: a value to set, or a factor on the value the scenario holds."""

    text: str
    """As written (``×0.8``, ``20``): the variant's label and the results table show it."""
    value: Any
    """The value (YAML-typed), or the factor when ``multiplier``."""
    multiplier: bool = False


@dataclass(frozen=True)
class Distribution:
    """A declared distribution, drawn once per Monte Carlo sample."""

    name: str
    params: tuple[float, ...]
    multiplier: bool
    text: str

    def draw(self, rng: np.random.Generator) -> float:
        """One draw; the parameters were checked when the spec was read."""
        p = self.params
        if self.name == "uniform":
            return float(rng.uniform(p[0], p[1]))
        if self.name == "loguniform":
            return float(math.exp(rng.uniform(math.log(p[0]), math.log(p[1]))))
        if self.name == "triangular":
            return float(rng.triangular(p[0], p[1], p[2]))
        if self.name == "normal":
            return float(rng.normal(p[0], p[1]))
        return float(p[0] * math.exp(p[1] * rng.standard_normal()))  # lognormal


@dataclass(frozen=True)
class Vary:
    """One ``--vary``: a key and its levels, or its distribution."""

    spec: str
    """The option as given, for messages."""
    key: str
    levels: tuple[Level, ...] = ()
    distribution: Distribution | None = None


def _problem(spec: str, what: str, fix: str) -> InputError:
    return InputError([Problem("--vary", spec, what, fix)])


def split_top_level(text: str) -> list[str]:
    """``a,[b,c],~f(1,2)`` → ``a``, ``[b,c]``, ``~f(1,2)``: commas inside brackets stay."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return parts


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _multiplier(text: str) -> float | None:
    """The factor of ``×0.8`` / ``x0.8`` / ``*0.8``, else ``None`` (``xeon`` is a value)."""
    for prefix in MULTIPLIER_PREFIXES:
        if text.startswith(prefix):
            return _number(text[len(prefix):].strip())
    return None


def _distribution(spec: str, text: str, multiplier: bool) -> Distribution:
    match = _DISTRIBUTION.match(text)
    if match is None:
        raise _problem(spec, f"`{text}` is not a distribution",
                       "write one as ~uniform(10,40), ~triangular(0.8,1,1.3), ~normal(20,4)…")
    name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
    if name not in FAMILIES:
        raise _problem(spec, f"unknown distribution `{name}`", did_you_mean(name, FAMILIES))
    family = FAMILIES[name]
    params = [_number(a) for a in args]
    if len(args) != len(family.params) or any(p is None for p in params):
        raise _problem(spec, f"{name} takes {len(family.params)} finite numbers: "
                       f"{name}({', '.join(family.params)})", f"e.g. ~{name}({family.example})")
    p = tuple(float(x) for x in params if x is not None)
    if not family.holds(p):
        raise _problem(spec, f"~{name}({', '.join(f'{x:g}' for x in p)}) needs {family.rule}",
                       f"e.g. ~{name}({family.example})")
    return Distribution(name, p, multiplier, text=("×" if multiplier else "") + text)


def _level(spec: str, text: str) -> Level:
    factor = _multiplier(text)
    if factor is not None:
        if factor <= 0:
            raise _problem(spec, f"multiplier `{text}` is not positive",
                           "give a factor above 0, e.g. ×0.8")
        return Level(text, factor, multiplier=True)
    if text[:1] in MULTIPLIER_PREFIXES and _number(text[1:]) is None and text[1:2].isdigit():
        raise _problem(spec, f"`{text}` is not a multiplier", "write a factor as ×0.8 or x0.8")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        raise _problem(spec, f"`{text}` is not a value YAML reads",
                       "quote nothing; write lists as [a, b]") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise _problem(spec, f"`{text}` is not a finite number", "give a finite number")
    return Level(text, value)


def parse_vary(spec: str) -> Vary:
    """``KEY=V1,V2…`` or ``KEY=~dist(…)`` read and checked (the key's path is checked later,
    against the scenario)."""
    key, sep, values = spec.partition("=")
    key = key.strip()
    items = [v for v in split_top_level(values) if v]
    if not sep or not key or not items:
        raise _problem(spec, "expected KEY=V1,V2,… or KEY=~distribution(…)",
                       "e.g. --vary workloads.chat.arrival.peak_rps=10,20,40")
    drawn = [i for i in items if i.lstrip("×xX*").lstrip().startswith("~")]
    if drawn:
        if len(items) != 1:
            raise _problem(spec, "a distribution is the key's only value",
                           "give levels or one distribution, not both")
        text = items[0]
        multiplier = text[:1] in MULTIPLIER_PREFIXES
        body = text[1:].strip() if multiplier else text
        return Vary(spec, key, distribution=_distribution(spec, body, multiplier))
    levels = tuple(_level(spec, i) for i in items)
    if len({lv.text for lv in levels}) != len(levels):
        raise _problem(spec, "a value is given twice", "give each value once")
    return Vary(spec, key, levels=levels)
