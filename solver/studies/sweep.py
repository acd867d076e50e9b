"""A sweep: the variants of one scenario that ``--vary`` options describe, each with its key.

Levels combine as a grid (every combination, the default) or zipped (the i-th level of every key
together); distributions add Monte Carlo samples: each combination of levels is planned with
``samples`` draws of every distribution. Sample ``i`` draws from its own generator seeded with
``(seed, i)``, so a sample is the same whatever the number of samples asked for, and raising
``--samples`` extends a study instead of replacing it.

Changes are applied in the order of the ``--vary`` options; a field path changes a dump of the
scenario (:mod:`.scenario_paths`), a ``compare`` shortcut (``growth``…) the scenario itself.
Every variant is validated as a scenario file would be before anything is planned.

A variant's key is a content hash of what decides its plan (the scenario as planned and the
solve settings, threads included), so a finished variant is found again by ``--resume``
whatever its position or label, and two variants that are the same plan are planned once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from models.errors import InputError, Problem
from models.loader import checked, non_finite_problems, validate_as
from models.scenario import Scenario
from solver.solve.assemble import scenario_fingerprint
from solver.studies.compare import VARIATIONS, apply_variation
from solver.studies.executors import SolveOptions
from solver.studies.scenario_paths import multiply, replace, scenario_document, set_path
from solver.studies.sweep_spec import Level, Vary

#: More variants than this is a study to split (or to sample): refused before any work.
MAX_VARIANTS = 10_000


@dataclass(frozen=True)
class Design:
    """How the ``--vary`` options combine."""

    zip_levels: bool = False
    """Zip the levels (the i-th of every key together) instead of taking every combination."""
    samples: int | None = None
    """Monte Carlo draws per combination of levels (needs a distribution)."""
    seed: int = 0


@dataclass(frozen=True)
class SweepVariant:
    """One scenario of a sweep."""

    index: int
    """Position in the sweep (0-based): the results table's order."""
    label: str
    """``demo workloads.chat.arrival.peak_rps=20 spot=false``."""
    values: tuple[tuple[str, str | float], ...]
    """(key, value) per ``--vary``: a level as written (``×0.8``), or the number drawn (for
    ``×~…``, the factor drawn)."""
    sample: int | None
    """Monte Carlo sample number, ``None`` without samples."""
    scenario: Scenario
    key: str
    """Content hash of the scenario and solve settings (16 hex digits)."""
    factors: frozenset[str] = frozenset()
    """Keys whose drawn number is a factor (``×~lognormal(1,0.25)``), not the field's value."""

    def shown(self, key: str) -> str | float:
        """The value of ``key`` as people read it: a drawn factor as ``×1.094…`` (a bare 1.09
        read as 1.09 req/s), anything else as it is."""
        value = dict(self.values)[key]
        return f"×{value!r}" if key in self.factors and isinstance(value, float) else value


def fleetplan_version() -> str:
    """The installed fleetplan's version (part of every key: a new planner plans anew)."""
    try:
        return version("fleetplan")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "source"


def variant_key(scenario: Scenario, options: SolveOptions) -> str:
    """Content hash of what decides a plan: the scenario (without its file paths), the solver,
    its limits (over periods without ``--time-limit``: the work limits' safety stop too) and
    threads, and fleetplan's version."""
    content: dict[str, Any] = {
        "scenario": scenario_fingerprint(scenario), "solver": options.solver,
        "time_limit_s": float(options.time_limit_s), "gap": float(options.gap),
        "threads": int(options.threads), "fleetplan": fleetplan_version()}
    if scenario.multi_period and not options.time_limit_given:
        # planned to its work limits, the clock a safety stop: not the plan of a limit given
        content["horizon_limits_s"] = list(options.horizon_limits())
    text = json.dumps(content, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _check_design(varies: Sequence[Vary], design: Design) -> None:
    problems = []
    keys = [v.key for v in varies]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            problems.append(Problem("--vary", key, "the key is varied twice",
                                    "give each key once, with all its values"))
    drawn = [v for v in varies if v.distribution is not None]
    if drawn and design.samples is None:
        problems.append(Problem("--vary", drawn[0].spec, "a distribution needs --samples",
                                "add --samples N (and --seed S to draw other samples)"))
    if design.samples is not None and not drawn:
        problems.append(Problem("--samples", str(design.samples), "nothing to sample",
                                "declare a distribution, e.g. --vary 'KEY=~uniform(10,40)'"))
    if design.zip_levels:
        lengths = {v.key: len(v.levels) for v in varies if v.distribution is None}
        if len(set(lengths.values())) > 1:
            problems.append(Problem("--zip", ", ".join(f"{k}: {n}" for k, n in lengths.items()),
                                    "zipped keys need as many levels each",
                                    "give every key the same number of values, or use --grid"))
    if problems:
        raise InputError(problems)


def combinations(varies: Sequence[Vary], design: Design) -> list[tuple[Level, ...]]:
    """The combinations of levels (keys with a distribution left out), in the sweep's order."""
    listed = [v.levels for v in varies if v.distribution is None]
    if not listed:
        return [()]
    if design.zip_levels:
        return list(zip(*listed, strict=True))
    count = math.prod(len(levels) for levels in listed)
    if count > MAX_VARIANTS:
        raise InputError([Problem("--vary", " × ".join(str(len(x)) for x in listed),
                                  f"the grid has {count:,} combinations (at most "
                                  f"{MAX_VARIANTS:,})", "vary fewer keys, use --zip, or "
                                  "declare distributions and sample them")])
    return list(itertools.product(*listed))


def _apply(base: Scenario, changes: Sequence[tuple[Vary, Level | float]],
           label: str) -> Scenario:
    """``base`` with each change (a level, or a drawn number) applied in order."""
    where = f"sweep variant `{label}`"

    def validated(doc: dict[str, Any]) -> Scenario:
        infinite = non_finite_problems(doc, where)
        if infinite:
            raise InputError(infinite)
        return checked(validate_as(Scenario, doc, where), where)

    state: Scenario | dict[str, Any] = base
    for vary, change in changes:
        text = change.text if isinstance(change, Level) else repr(change)
        if vary.key in VARIATIONS:  # a compare shortcut changes the scenario itself
            scenario = state if isinstance(state, Scenario) else validated(state)
            state = apply_variation(scenario, vary.key, text)
            continue
        doc = state if isinstance(state, dict) else scenario_document(state)
        if isinstance(change, Level):
            fn = multiply(change.value) if change.multiplier else replace(change.value)
        elif vary.distribution is not None and vary.distribution.multiplier:
            fn = multiply(change)
        else:
            fn = replace(change, drawn=True)
        set_path(doc, vary.key, fn, f"{vary.key}={text}")
        state = doc
    if isinstance(state, Scenario):
        return state
    return _with_windows(base, validated(state))


def _with_windows(base: Scenario, variant: Scenario) -> Scenario:
    """``variant`` (rebuilt from a document, which never holds the replayed window a loaded
    scenario's traces carry) with its traces' windows cut again where ``base``'s carried one,
    so a traced workload's TTFT is sized on the window as ``plan`` sizes it (the cut at the
    variant's own peak)."""
    if not any(w.arrival is not None and w.arrival.trace is not None
               and w.arrival.trace.window is not None for w in base.workloads):
        return variant
    from solver.replay.plan_replay import with_replay_windows  # numpy: only where a trace is
    return with_replay_windows(variant)


def _shown(value: str | float, factor: bool) -> str:
    return value if isinstance(value, str) else f"{'×' if factor else ''}{value:.4g}"


def build_sweep(base: Scenario, varies: Sequence[Vary], design: Design,
                options: SolveOptions) -> list[SweepVariant]:
    """Every variant of the sweep, validated, in order: combinations × samples."""
    _check_design(varies, design)
    combos = combinations(varies, design)
    samples: Sequence[int | None] = (range(design.samples) if design.samples is not None
                                     else [None])
    if len(combos) * len(samples) > MAX_VARIANTS:
        raise InputError([Problem("--samples", str(design.samples),
                                  f"{len(combos):,} combinations × {len(samples):,} samples is "
                                  f"more than {MAX_VARIANTS:,} variants",
                                  "sample fewer, or vary fewer levels")])
    factors = frozenset(v.key for v in varies
                        if v.distribution is not None and v.distribution.multiplier)
    out: list[SweepVariant] = []
    for combo in combos:
        for sample in samples:
            rng = np.random.default_rng([design.seed, sample]) if sample is not None else None
            levels = iter(combo)
            changes: list[tuple[Vary, Level | float]] = []
            for vary in varies:
                if vary.distribution is None:
                    changes.append((vary, next(levels)))
                else:
                    assert rng is not None
                    changes.append((vary, vary.distribution.draw(rng)))
            values = tuple((v.key, c.text if isinstance(c, Level) else c) for v, c in changes)
            label = " ".join([base.name, *(f"{k}={_shown(t, k in factors)}" for k, t in values),
                              *([f"sample={sample}"] if sample is not None else [])])
            scenario = _apply(base, changes, label)
            out.append(SweepVariant(len(out), label, values, sample, scenario,
                                    variant_key(scenario, options), factors))
    return out
