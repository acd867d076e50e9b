"""Load a scenario file into a resolved, consistent :class:`~models.scenario.Scenario`.

Two tiers, at the boundary only: shape (pydantic: types, bounds, unknown keys), then
consistency (every reference resolves, names are unique). Every problem found is reported at
once in one :class:`~models.errors.InputError`, each with its file, its path inside the file and
a fix. After this module the solver trusts its inputs.
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import math
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from inputs import catalog_dir
from models.canonical import (
    canonical_measured,
    canonical_workloads,
    canonical_zones,
    model_aliases,
    named_zones,
)
from models.catalog import GpuType, LlmSpec
from models.documents import read_document
from models.errors import (
    ADD_GPU,
    ADD_MODEL,
    InputError,
    Problem,
    did_you_mean,
    format_location,
    or_add,
)
from models.input_files import (
    PUBLIC_TRACES,
    check_file,
    duplicate_columns,
    long_row,
    missing_trace_fix,
)
from models.limits import FIXES, MAX_LIST_ENTRIES, MAX_TABLE_ROWS, RANGES, range_fix
from models.measured import MeasuredCapacity
from models.names import read_zone_names
from models.offers import ONE_QUOTE, QUOTE_LIST, Offer, Zone
from models.planning_checks import (
    OfferPaths,
    horizon_problems,
    offer_where,
    resolve_inventory,
)
from models.runtime import RuntimeSpec, unknown_runtime_problem
from models.scenario import Scenario, ScenarioFile
from models.text import csv_uncell
from models.units import renamed_unit_fix, unit_value_fix
from models.workload import Workload

T = TypeVar("T", bound=BaseModel)

#: Built-in catalog layers, in order; ``efficiency.yaml`` holds the calibrated efficiency factors
#: (written by ``fleetplan calibrate`` from the shared measurements) and overrides ``gpus.yaml``.
BUILTIN_CATALOG_FILES = ("gpus.yaml", "models.yaml", "efficiency.yaml", "runtimes.yaml")
#: Layers that a catalog without them still loads (written by ``fleetplan calibrate``).
OPTIONAL_CATALOG_FILES = ("efficiency.yaml", "runtimes.yaml")

#: Error types of a value outside its field's range (the fix then gives the range and why).
RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


#: A mapping or a list where the schema wants the other shape (pydantic's "Input should be a
#: valid dictionary" / "a valid tuple" says neither what shape nor what goes in it).
MAPPING_ERRORS = ("dict_type", "model_type", "model_attributes_type")
LIST_ERRORS = ("list_type", "tuple_type")
MAPPING_FIX = "give a mapping: `key: value` lines indented below it, or `{key: value, …}`"
LIST_FIX = "give a list: one `- ` item per line indented below it, or `[a, b, …]`"
#: Keys of the mapping a fix names at most.
SHOWN_KEYS = 8
#: The shape of fields people first write in another one, as an example to copy.
SHAPE_EXAMPLES = {
    "stock_gpus": "give GPUs per purchase kind: `stock_gpus: {reserved: 64, on_demand: 64, "
                  "spot: 32}` (docs/prices.md)",
    "zones": "give a list of zones, each `- {id: use1-az1, region: us-east-1, offers: [{gpu: "
             "H100-SXM, on_demand: {price_per_gpu_hour: 4.0, stock_gpus: 16}}]}` "
             "(docs/prices.md, \"Zones written by hand\")",
    "workloads": "give a list of workloads, each starting `- name: …` (README, \"Scenarios\")",
}


def _fix_for(error_type: str, msg: str, field: str = "") -> str:
    if error_type in RANGE_ERRORS and field in RANGES:
        return range_fix(field)
    if error_type in FIXES:
        return FIXES[error_type]
    fixes = {
        "extra_forbidden": "remove this key or check its spelling",
        "missing": "add this field",
        "greater_than": "use a positive value",
        "greater_than_equal": "use a larger value",
        "less_than": "use a smaller value",
        "less_than_equal": "use a smaller value",
        "enum": "use one of the allowed values",
        "literal_error": "use one of the allowed values",
        "too_short": "give at least one entry",
        "too_long": "give fewer entries",
        "string_too_short": "give a non-empty value",
        "int_from_float": "give a whole number",
        "int_parsing_size": "give a smaller number",
        "finite_number": "give a finite number",
    }
    if error_type in fixes:
        return fixes[error_type]
    if error_type.startswith("date"):
        return "write the date as YYYY-MM-DD"
    if error_type in MAPPING_ERRORS:
        return SHAPE_EXAMPLES.get(field, MAPPING_FIX)
    if error_type in LIST_ERRORS:
        return SHAPE_EXAMPLES.get(field, LIST_FIX)
    if error_type.endswith("_parsing") or error_type.endswith("_type"):
        return "give a value of the expected type"
    if error_type == "value_error":
        return next((fix for text, fix in VALUE_ERROR_FIXES if text in msg), "")
    return ""


#: Fixes for the schema's own consistency checks, found by a phrase of their message.
VALUE_ERROR_FIXES = (
    ("percentiles must rise", "order them so that p50 <= p95 <= p99"),
    ("growth multipliers must be > 0", "give each period's demand as a multiple of the stated "
     "one: 1 unchanged, 1.2 a 20 % rise, 0.9 a 10 % fall (never 0 or below)"),
    ("needs 24 values", "give one share per hour of the day, hours 0 to 23"),
    ("must lie in [0, 1]", "give each hour's demand as a share of the peak, 0 to 1"),
    ("window hours must lie", "use hours 0 to 23"),
    ("lists an hour twice", "list each hour once"),
    ("exactly one of arrival", "keep either `arrival` (peak rate) or `batch` (daily volume)"),
    ("needs class: batch", "add `class: batch` or give `arrival` instead"),
    ("at least one of reserved", "add a `reserved`, `on_demand` or `spot` section"),
    ("has two offers for GPU", "merge them into one offer per GPU type"),
    ("time_blocks must cover", "list each hour 0..23 in exactly one block"),
    ("time_blocks names", "give each block its own name"),
    ("fp8_tflops is not given", "add `fp8_tflops` or remove fp8 from `precisions`"),
    ("active_params_b exceeds", "active parameters are at most the total"),
    ("multiple of kv_heads", "check the head counts against the model's config"),
    ("slo.tpot_p95_ms is required", "add `tpot_p95_ms` to the workload's `slo`: its per-token "
     "P95 limit [ms]"),
    ("listed in period order", "list the migrations by `from_period`, one per period"),
    ("a batch workload adds", "give a batch workload's events `add_daily_requests`, an "
     "arrival's `add_peak_rps`"),
)


def field_path(loc: Sequence[str | int]) -> tuple[str | int, ...]:
    """A pydantic error location as the input's own path: the names pydantic gives validator
    functions and the branches of a shape-tagged union are not keys of the input."""
    return tuple(p for p in loc if not str(p).startswith("function-")
                 and p not in (ONE_QUOTE, QUOTE_LIST))


def _shapes(annotation: Any) -> list[Any]:
    """``annotation`` without ``Annotated`` and ``Optional``; a union as its members."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shapes(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [s for arg in get_args(annotation) for s in _shapes(arg)]
    return [annotation]


def known_keys(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The keys the input may hold at ``loc`` (a pydantic error location: the parent of an
    unknown key), read off the schema's fields, aliases as written; empty where the walk loses
    the way. A union of shapes is followed into each."""
    shapes: list[Any] = [model]
    for part in loc:
        named = [s for s in shapes if isinstance(s, type) and s.__name__ == part]
        if named:  # pydantic names the union member it tried
            shapes = named
            continue
        found: list[Any] = []
        for shape in shapes:
            origin, args = get_origin(shape), get_args(shape)
            if isinstance(shape, type) and issubclass(shape, BaseModel) and isinstance(part, str):
                field = next((f for n, f in shape.model_fields.items()
                              if part in (n, f.alias)), None)
                if field is not None:
                    found += _shapes(field.annotation)
            elif origin in (tuple, list) and isinstance(part, int) and args:
                found += _shapes(args[0])
            elif origin is dict and isinstance(part, str) and len(args) == 2:
                found += _shapes(args[1])
        shapes = found
    return sorted({f.alias or n for s in shapes if isinstance(s, type) and issubclass(s, BaseModel)
                   for n, f in s.model_fields.items()})


def _choice_fix(value: Any, expected: str) -> str:
    """The allowed value a misspelt choice stands for (``zoneloss``, ``on-demand``,
    ``Reserve``), case, ``-`` and spaces aside; empty when none is close. ``expected`` is
    pydantic's list of the allowed values, each quoted (``'none', 'n_plus_1' or 'zone_loss'``)."""
    allowed = re.findall(r"'([^']*)'", expected)
    if not isinstance(value, str) or not allowed:
        return ""
    typed = re.sub(r"[\s-]+", "_", value.strip()).lower()
    close = difflib.get_close_matches(typed, allowed, n=2, cutoff=0.75)
    return "did you mean " + " or ".join(f"`{c}`" for c in close) + "?" if close else ""


def _unknown_key_fix(key: str, known: Sequence[str]) -> str:
    """The fix for an unknown key: the closest keys that schema has, where one is close."""
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    if not close:
        return "remove this key or check its spelling"
    return "did you mean " + " or ".join(f"`{c}`" for c in close) + "? (else remove this key)"


def _parent(data: Any, loc: Sequence[str | int]) -> Mapping[str, Any] | None:
    """The mapping holding the key at ``loc`` in ``data`` (``None`` where there is none)."""
    for part in loc[:-1]:
        if isinstance(part, str) and isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(part, int) and isinstance(data, list | tuple) and part < len(data):
            data = data[part]
        else:
            return None
    return data if isinstance(data, Mapping) else None


def node_price_fix(value: object, line: Mapping[str, Any] | None) -> str | None:
    """For ``price_per_node_hour`` (a node's price where the field is per GPU): the price per
    GPU, divided by the node size where the line gives it (``gpus_per_node``, or an
    ``instance_type`` of known size); ``None`` without the line."""
    if line is None:
        return None
    from models.names import instance_shape

    size = line.get("gpus_per_node")
    how = "gpus_per_node"
    if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
        shape = (instance_shape(line["instance_type"])
                 if isinstance(line.get("instance_type"), str) else None)
        size, how = (None, "") if shape is None else (shape.gpus_per_node,
                                                      f"a {line['instance_type']}")
    if size is None or isinstance(value, bool) or not isinstance(value, int | float):
        return ("the field is `price_per_gpu_hour`, per GPU: divide the node's price by its "
                "GPUs per node and write `price_per_gpu_hour: <that>`")
    per_gpu = value / size
    return (f"the field is `price_per_gpu_hour`, per GPU: write `price_per_gpu_hour: "
            f"{per_gpu:.4g}` ({value:g} per node-hour ÷ {size} GPUs per node, {how})")


def growth_by_workload_fix(value: object, data: Any) -> str:
    """For a top-level ``growth`` (``fleetplan forecast --out`` writes one, workload by
    workload, to be moved): where each list goes, ``workloads[i].growth``. A new user pasted
    the file whole and was told "remove this key or check its spelling"."""
    names = [w.get("name") for w in data.get("workloads", [])
             if isinstance(w, Mapping)] if isinstance(data, Mapping) else []
    where = []
    if isinstance(value, Mapping):
        where = [f"`{name}`'s to workloads[{names.index(name)}].growth" if name in names
                 else f"`{name}`'s to its workload (none is named so)" for name in value]
    moves = f" ({'; '.join(where)})" if where else ""
    return ("growth is per workload: move each list under its workload, as `growth: [...]` "
            f"beside its arrival{moves}, and remove this key")


def problems_from_validation(
    exc: ValidationError, file: str, prefix: Sequence[str | int] = (),
    model: type[BaseModel] | None = None, data: Any = None,
) -> list[Problem]:
    """Turn a pydantic ValidationError into located problems with a fix each (an unknown key
    of ``model`` gets the closest known keys; ``price_per_node_hour`` on a line of ``data``,
    the price per GPU, divided by the line's node size)."""
    out: list[tuple[tuple[str | int, ...] | None, Problem]] = []  # (missing field, problem)
    errors = exc.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    missing = {field_path(e["loc"]) for e in errors if e["type"] == "missing"}
    renamed: set[tuple[str | int, ...]] = set()  # missing fields an unknown key stands for
    for err in errors:
        own = tuple(err["loc"])
        if err["type"] == "too_short" and any(o[: len(own)] == own and o != own for o in locs):
            continue  # a list is short only because an entry of it failed: report the entry
        loc = [*prefix, *field_path(err["loc"])]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key `{loc[-1]}`"
        elif err["type"] == "finite_number":  # as non_finite_problems says it
            msg = f"`{err['input']}` is not a finite number"
        elif err["type"] in LIST_ERRORS:  # the schema's tuples are YAML's lists
            msg = msg.replace("a valid tuple", "a list").replace("a valid list", "a list")
        elif err["type"] in MAPPING_ERRORS:  # not "a valid dictionary or instance of Slo"
            msg = "Input should be a mapping"
        field = next((str(p) for p in reversed(loc) if isinstance(p, str)), "")
        fix = _fix_for(err["type"], msg, field)
        if err["type"].endswith(("_parsing", "_type")):
            fix = unit_value_fix(field, err.get("input")) or fix
        if err["type"] in ("enum", "literal_error"):
            fix = _choice_fix(err.get("input"), err.get("ctx", {}).get("expected", "")) or fix
        if err["type"] in MAPPING_ERRORS and field not in SHAPE_EXAMPLES and model is not None:
            keys = known_keys(model, field_path(err["loc"]))
            if keys:
                shown = ", ".join(f"`{k}`" for k in keys[:SHOWN_KEYS])
                fix = (f"{MAPPING_FIX}; its keys: {shown}"
                       + (f" and {len(keys) - SHOWN_KEYS} more" if len(keys) > SHOWN_KEYS
                          else ""))
        if err["type"] == "extra_forbidden" and model is not None:
            parent = field_path(err["loc"])[:-1]
            known = known_keys(model, parent)
            meant = renamed_unit_fix(str(loc[-1]), err.get("input"), known)
            if meant is None:
                fix = _unknown_key_fix(str(loc[-1]), known)
                close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
                meant = (close[0], fix) if close else None
            else:
                fix = meant[1]
            if loc[-1] == "price_per_node_hour" and "price_per_gpu_hour" in known:
                fix = node_price_fix(err.get("input"), _parent(data, err["loc"])) or fix
            if field_path(err["loc"]) == ("growth",) and "workloads" in known:
                fix = growth_by_workload_fix(err.get("input"), data)
            if meant is not None and (*parent, meant[0]) in missing:
                renamed.add((*parent, meant[0]))  # one problem, not this and "Field required"
                if not fix.startswith("the field is"):
                    fix = (f"did you mean `{meant[0]}`? It is required and missing: rename this "
                           "key")
        out.append((field_path(err["loc"]) if err["type"] == "missing" else None,
                    Problem(file, format_location(loc), msg, fix)))
    return [p for lacking, p in out if lacking is None or lacking not in renamed]


def validate_as(
    model: type[T], data: Any, file: str, prefix: Sequence[str | int] = ()
) -> T:
    """Validate data as ``model``, raising a located InputError."""
    if data is None:
        data = {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(problems_from_validation(exc, file, prefix, model, data)) from None


#: Magnitude from which HiGHS reads a number as infinite (its ``infinite_bound``); no input of a
#: scenario or catalog comes near it, and beyond it the MIP interface fails.
SOLVER_INFINITY = 1e20


def non_finite_problems(
    doc: Any, file: str, prefix: Sequence[str | int] = ()
) -> list[Problem]:
    """Every infinite, NaN or solver-infinite (>= 10^20) number in a parsed document (YAML reads
    ``.inf`` and ``1e400`` as infinity), located: pydantic's bounds let them through, and the
    solver cannot use them."""
    if isinstance(doc, float) and not math.isfinite(doc):
        return [Problem(file, format_location(prefix), f"`{doc}` is not a finite number",
                        "give a finite number")]
    if isinstance(doc, int | float) and not isinstance(doc, bool) and (
            abs(doc) >= SOLVER_INFINITY):
        shown = f"{doc:.3g}" if isinstance(doc, float) else f"a {len(str(abs(doc)))}-digit number"
        return [Problem(file, format_location(prefix), f"`{shown}` is too large: the solver "
                        "reads 10^20 and beyond as infinite", "give a number below 10^20")]
    if isinstance(doc, Mapping):
        return [p for k, v in doc.items() for p in non_finite_problems(v, file, (*prefix, k))]
    if isinstance(doc, list | tuple):
        return [p for i, v in enumerate(doc) for p in non_finite_problems(v, file, (*prefix, i))]
    return []


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_entries(
    base: dict[str, dict[str, Any]],
    entries: Iterable[Any],
    file: str,
    where: str,
    problems: list[Problem],
    origins: dict[str, dict[str, str]] | None = None,
) -> None:
    """Override catalog entries field by field by name, or add new ones.

    ``origins`` records, per entry, the file that last set each key (``""``: the file that added
    the entry), so a bad merged value can be reported where it was written.
    """
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or "name" not in entry:
            problems.append(
                Problem(file, f"{where}[{i}]", "entry without a `name`", "give the entry's name")
            )
            continue
        name = str(entry["name"])
        base[name] = _deep_merge(base.get(name, {}), entry)
        if origins is not None:
            origins.setdefault(name, {"": file}).update({str(k): file for k in entry})


def _attributed(found: list[Problem], entry: str, origins: Mapping[str, str],
                scenario_file: str) -> list[Problem]:
    """Problems of one merged catalog entry (located at ``entry``, e.g. ``catalog.gpus.L4``),
    each moved to the layer file that set its field (else the one that added the entry): an
    overlay's bad value is reported in the overlay, not in the scenario that names it."""
    out = []
    for p in found:
        rest = p.location[len(entry):].lstrip(".")
        key = rest.split(".")[0].split("[")[0]
        file = origins.get(key, origins.get("", p.file))
        if file in (scenario_file, p.file):
            out.append(p)
            continue
        where = entry.removeprefix("catalog.")
        out.append(Problem(file, f"{where}.{rest}" if rest else where, p.message, p.fix))
    return out


def _catalog_list(doc: Any, key: str, file: str, problems: list[Problem]) -> list[Any]:
    if doc is None:
        return []
    if not isinstance(doc, Mapping):
        problems.append(Problem(file, "", "expected a mapping with `gpus:` and `models:`",
                                "write the overlay as `gpus: [...]` and/or `models: [...]`"))
        return []
    unknown = set(doc) - {"gpus", "models", "runtimes", "source", "description"}
    for k in sorted(unknown):
        problems.append(Problem(file, str(k), f"unknown key `{k}`",
                                "a catalog has `gpus`, `models` and `runtimes`"))
    value = doc.get(key, [])
    if not isinstance(value, list):
        problems.append(Problem(file, key, "expected a list", f"write `{key}:` as a list"))
        return []
    if len(value) > MAX_LIST_ENTRIES:
        problems.append(Problem(file, key, f"{len(value):,} entries; at most "
                                f"{MAX_LIST_ENTRIES:,} are read", "split the catalog"))
        return []
    return value


def catalog_layers(builtin: bool, overlays: Sequence[Path]) -> list[tuple[Path, Any]]:
    """The catalog files in the order they are layered: built-in ones, then ``overlays``."""
    layers: list[tuple[Path, Any]] = []
    if builtin:
        for name in BUILTIN_CATALOG_FILES:
            path = catalog_dir() / name
            if path.exists() or name not in OPTIONAL_CATALOG_FILES:
                layers.append((path, read_document(path)))
    return layers + [(path, read_document(path)) for path in overlays]


def _costs_by_gpu(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A runtime entry with its ``costs`` list keyed by GPU, so layers merge them per GPU."""
    costs = entry.get("costs")
    if not isinstance(costs, list) or not all(isinstance(c, Mapping) and "gpu" in c
                                              for c in costs):
        return dict(entry)  # left as written: validation reports it
    return {**entry, "costs": {str(c["gpu"]): c for c in costs}}


def load_runtimes(
    builtin: bool = True,
    overlays: Sequence[Path] = (),
    runtime_entries: Sequence[Mapping[str, Any]] = (),
    scenario_file: str = "",
    layers: Sequence[tuple[Path, Any]] | None = None,
) -> tuple[RuntimeSpec, ...]:
    """Runtime catalog entries: built-in, then overlays, then the scenario's own; later wins per
    field, and a runtime's ``costs`` merge per GPU (an overlay may add or replace one GPU's).
    ``layers``: the catalog files already read (:func:`catalog_layers`), else they are read."""
    problems: list[Problem] = []
    merged: dict[str, dict[str, Any]] = {}
    origins: dict[str, dict[str, str]] = {}
    for path, doc in catalog_layers(builtin, overlays) if layers is None else layers:
        entries = [_costs_by_gpu(e) if isinstance(e, Mapping) else e
                   for e in _catalog_list(doc, "runtimes", str(path), problems)]
        _merge_entries(merged, entries, str(path), "runtimes", problems, origins)
    _merge_entries(merged, [_costs_by_gpu(e) for e in runtime_entries], scenario_file,
                   "catalog.runtimes", problems, origins)
    merged = {name: {**raw, "costs": list(raw["costs"].values())}
              if isinstance(raw.get("costs"), Mapping) else raw for name, raw in merged.items()}
    out = _validated_entries(RuntimeSpec, merged, "runtimes", origins, scenario_file, problems)
    if problems:
        raise InputError(list(dict.fromkeys(problems)))
    return tuple(out)


def _validated_entries(
    model: type[T], merged: Mapping[str, Mapping[str, Any]], kind: str,
    origins: Mapping[str, Mapping[str, str]], scenario_file: str, problems: list[Problem],
) -> list[T]:
    """Merged catalog entries of one kind (``gpus``, ``models``, ``runtimes``) validated; each
    problem is attributed to the layer that set the offending field."""
    where = "catalog." if scenario_file else ""
    out: list[T] = []
    for name, raw in merged.items():
        try:
            out.append(model.model_validate(raw))
        except ValidationError as exc:
            found = problems_from_validation(exc, scenario_file or "catalog",
                                             (f"{where}{kind}", name), model)
            problems.extend(_attributed(found, f"{where}{kind}.{name}", origins[name],
                                        scenario_file))
    return out


def load_catalog(
    builtin: bool = True,
    overlays: Sequence[Path] = (),
    gpu_entries: Sequence[Mapping[str, Any]] = (),
    model_entries: Sequence[Mapping[str, Any]] = (),
    scenario_file: str = "",
    layers: Sequence[tuple[Path, Any]] | None = None,
) -> tuple[tuple[GpuType, ...], tuple[LlmSpec, ...], tuple[str, ...]]:
    """Built-in catalog, then overlays, then the scenario's own entries; later wins per field.
    ``layers``: the catalog files already read (:func:`catalog_layers`), else they are read."""
    problems: list[Problem] = []
    gpus: dict[str, dict[str, Any]] = {}
    models: dict[str, dict[str, Any]] = {}
    gpu_origins: dict[str, dict[str, str]] = {}
    model_origins: dict[str, dict[str, str]] = {}
    sources: list[str] = []
    for path, doc in catalog_layers(builtin, overlays) if layers is None else layers:
        sources.append(str(path))
        problems += non_finite_problems(doc, str(path))
        _merge_entries(gpus, _catalog_list(doc, "gpus", str(path), problems), str(path), "gpus",
                       problems, gpu_origins)
        _merge_entries(models, _catalog_list(doc, "models", str(path), problems), str(path),
                       "models", problems, model_origins)
    _merge_entries(gpus, gpu_entries, scenario_file, "catalog.gpus", problems, gpu_origins)
    _merge_entries(models, model_entries, scenario_file, "catalog.models", problems,
                   model_origins)
    gpu_objs = _validated_entries(GpuType, gpus, "gpus", gpu_origins, scenario_file, problems)
    model_objs = _validated_entries(LlmSpec, models, "models", model_origins, scenario_file,
                                    problems)
    if problems:
        raise InputError(list(dict.fromkeys(problems)))  # a layer's own faults show up per key
    return tuple(gpu_objs), tuple(model_objs), tuple(sources)


def _resolve_path(base: Path, ref: str) -> Path:
    if ref.startswith("builtin:"):
        return catalog_dir() / "prices" / f"{ref.removeprefix('builtin:')}_gpu_prices.csv"
    path = Path(ref)
    return path if path.is_absolute() else (base.parent / path)


def load_measured_csv(path: Path, label: str | None = None) -> tuple[MeasuredCapacity, ...]:
    """Measured capacity rows from a configuration-matrix CSV (one row per tested config), each
    with its ``origin``: the file as ``label`` names it (default: the path) and its line."""
    if not path.exists():
        raise InputError([Problem(str(path), "", "file not found", "check `measured_csv`")])
    check_file(path, "CSV table")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # Excel writes a BOM
            reader = csv.DictReader(fh)
            rows, lines = [], []
            for row in reader:
                rows.append(row)
                lines.append(reader.line_num)  # the row's last line (a quoted cell may span)
            columns = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc}",
                                  "save it as a UTF-8 CSV file")]) from None
    twice = duplicate_columns(columns, str(path))
    if twice is not None:  # DictReader kept the second column's cells, dropped the first's
        raise InputError([twice])
    required = [n for n, f in MeasuredCapacity.model_fields.items() if f.is_required()]
    missing = [c for c in required if c not in columns]
    if missing:
        raise InputError(
            [Problem(str(path), "header", f"missing columns: {', '.join(missing)}",
                     f"the header needs: {', '.join(MeasuredCapacity.model_fields)}")]
        )
    if len(rows) > MAX_TABLE_ROWS:
        raise InputError([Problem(str(path), "", f"{len(rows):,} rows; at most "
                                  f"{MAX_TABLE_ROWS:,} are read", "split the table")])
    if "origin" in columns:
        raise InputError([Problem(str(path), "header", "`origin` is not a column",
                                  "remove it: fleetplan records the file and line of each row")])
    long = [long_row(len(columns) + len(row[None]), len(columns), str(path), f"row {n}")
            for n, row in enumerate(rows, start=2) if row.get(None)]
    if long:  # its cells past the header were dropped, the rest read a column early
        raise InputError(long)
    out, problems = validate_rows(
        MeasuredCapacity, ({k: (csv_uncell(v) if v else None) for k, v in row.items() if k}
                           for row in rows), str(path), "row")
    if problems:
        raise InputError(problems)
    name = label or str(path)
    return tuple(r.model_copy(update={"origin": f"{name} line {line}"})
                 for r, line in zip(out, lines, strict=True))


def validate_rows(
    model: type[T], rows: Iterable[Mapping[str, Any]], file: str, label: str
) -> tuple[list[T], list[Problem]]:
    """Each row of a table (numbered from 2, under its header) validated as ``model``; every
    problem located at ``<label> <n>``, non-finite numbers included."""
    out: list[T] = []
    problems: list[Problem] = []
    for n, row in enumerate(rows, start=2):
        try:
            obj = model.model_validate(row)
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, file, (f"{label} {n}",), model))
            continue
        problems.extend(non_finite_problems(obj.model_dump(), file, (f"{label} {n}",)))
        out.append(obj)
    return out, problems


def _check_unique(names: Sequence[str], file: str, where: str, problems: list[Problem]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            problems.append(Problem(file, f"{where}[{i}].name", f"duplicate name `{name}`",
                                    "give each entry its own name"))
        seen.add(name)


def duplicate_zone_ids(zone_ids: Sequence[str], file: str) -> list[Problem]:
    """A zone id given twice, at each repeat (a zone's offers all go under one entry)."""
    return [Problem(file, f"zones[{i}].id", f"duplicate zone id `{zone_id}`",
                    "give each zone its own id and list all its offers under it")
            for i, zone_id in enumerate(zone_ids) if zone_id in zone_ids[:i]]


def check_references(scenario: Scenario, file: str,
                     offer_paths: OfferPaths | None = None) -> list[Problem]:
    """Consistency tier: every name a scenario uses resolves, names are unique (an offer located
    in the user's file by ``offer_paths``, :func:`models.planning_checks.offer_where`)."""
    problems: list[Problem] = []
    gpu_names = [g.name for g in scenario.gpus]
    model_names = [m.name for m in scenario.models]
    zone_ids = [z.id for z in scenario.zones]
    wl_names = [w.name for w in scenario.workloads]
    _check_unique(wl_names, file, "workloads", problems)
    _check_unique(gpu_names, file, "gpus", problems)
    _check_unique(model_names, file, "models", problems)
    problems += duplicate_zone_ids(zone_ids, file)
    if not scenario.zones or not any(z.offers for z in scenario.zones):
        problems.append(Problem(file, "zones", "no zone offers any GPU",
                                "add zones with offers or a `price_tables` entry"))
    for zi, zone in enumerate(scenario.zones):
        for oi, offer in enumerate(zone.offers):
            if offer.gpu not in gpu_names:
                where = offer_where(scenario, zi, oi, offer_paths)
                problems.append(Problem(file, f"{where}.gpu",
                                        f"unknown GPU `{offer.gpu}`",
                                        or_add(did_you_mean(offer.gpu, gpu_names), ADD_GPU)))
    for wi, wl in enumerate(scenario.workloads):
        if wl.model not in model_names:
            problems.append(Problem(file, f"workloads[{wi}].model", f"unknown model `{wl.model}`",
                                    or_add(did_you_mean(wl.model, model_names), ADD_MODEL)))
        else:
            spec = scenario.model(wl.model)
            longest = wl.input_tokens.p99 + wl.output_tokens.p99
            if longest > spec.max_context_tokens:
                problems.append(Problem(
                    file, f"workloads[{wi}].input_tokens.p99",
                    f"P99 context {longest} tokens exceeds {spec.name}'s maximum "
                    f"{spec.max_context_tokens}",
                    "lower the percentiles or pick a longer-context model; fleetplan never "
                    "truncates context"))
        unknown = unknown_runtime_problem(wl.runtime, scenario.runtimes, file,
                                          f"workloads[{wi}].runtime")
        problems += [] if unknown is None else [unknown]
        if wl.allowed_gpus == ():
            problems.append(Problem(file, f"workloads[{wi}].allowed_gpus",
                                    "empty list: no GPU type may run this workload",
                                    "list at least one GPU type, or remove the key to allow all"))
        for gi, gpu in enumerate(wl.allowed_gpus or ()):
            if gpu not in gpu_names:
                problems.append(Problem(file, f"workloads[{wi}].allowed_gpus[{gi}]",
                                        f"unknown GPU `{gpu}`",
                                        or_add(did_you_mean(gpu, gpu_names), ADD_GPU)))
    if scenario.policy.as_of is not None:
        try:
            dt.date.fromisoformat(scenario.policy.as_of)
        except ValueError:
            problems.append(Problem(file, "policy.as_of",
                                    f"`{scenario.policy.as_of}` is not a date",
                                    "write the date as YYYY-MM-DD"))
    for mi, row in enumerate(scenario.measured):
        row_file, row_where = measured_row_where(row, mi, file)
        for field, value, known in (("workload", row.workload, wl_names),
                                    ("gpu", row.gpu, gpu_names),
                                    ("model", row.model, model_names)):
            if value not in known:
                problems.append(Problem(row_file, f"{row_where}.{field}",
                                        f"unknown {field} `{value}`", did_you_mean(value, known)))
    return problems


def measured_row_where(row: MeasuredCapacity, index: int, file: str) -> tuple[str, str]:
    """The file and place of a measured row: its CSV's line where it was read from one (the
    file as the scenario names it, found beside the scenario), else ``measured[i]`` of
    ``file``. A CSV row's unknown name was reported at ``measured[i]`` of the scenario, which
    has no such entry."""
    found = re.fullmatch(r"(?P<csv>.+) line (?P<line>\d+)", row.origin or "")
    if found is None:
        return file, f"measured[{index}]"
    csv_file = found["csv"]
    beside = Path(file).parent / csv_file
    if not Path(csv_file).is_absolute() and beside.is_file():
        csv_file = str(beside)
    return csv_file, f"row {found['line']}"


def _merge_zones(imported: Sequence[Zone], explicit: Sequence[Zone]) -> tuple[Zone, ...]:
    """Explicit zones win; their offers replace imported offers of the same GPU."""
    by_id: dict[str, Zone] = {z.id: z for z in imported}
    for zone in explicit:
        if zone.id in by_id:
            offers: dict[str, Offer] = {o.gpu: o for o in by_id[zone.id].offers}
            offers.update({o.gpu: o for o in zone.offers})
            by_id[zone.id] = Zone(id=zone.id, region=zone.region, offers=tuple(offers.values()))
        else:
            by_id[zone.id] = zone
    return tuple(by_id.values())


def linked_traces(workloads: tuple[Workload, ...], path: Path, problems: list[Problem]
                  ) -> tuple[Workload, ...]:
    """Workloads with their ``arrival.trace`` paths made absolute (relative to the scenario
    file); a trace not found is a problem naming the workload."""
    out = []
    for i, wl in enumerate(workloads):
        link = wl.arrival.trace if wl.arrival is not None else None
        if link is None or wl.arrival is None:
            out.append(wl)
            continue
        trace_path = _resolve_path(path, link.path)
        if trace_path.is_dir():  # said "not found" of a path that exists, as profile once did
            problems.append(Problem(str(path), f"workloads[{i}].arrival.trace.path",
                                    f"{trace_path} is a directory, not a request trace file",
                                    "name the trace file in it (relative to the scenario file)"))
        elif not trace_path.is_file():
            problems.append(Problem(str(path), f"workloads[{i}].arrival.trace.path",
                                    f"trace file {trace_path} not found",
                                    missing_trace_fix(trace_path)
                                    if trace_path.name in PUBLIC_TRACES else
                                    "check the path (relative to the scenario file)"))
        arrival = wl.arrival.model_copy(update={"trace": link.model_copy(
            update={"path": str(trace_path)})})
        out.append(wl.model_copy(update={"arrival": arrival}))
    return tuple(out)


def resolve(raw: ScenarioFile, path: Path, measured_optional: bool = False) -> Scenario:
    """Resolve a validated scenario file: catalog, overlays, price tables, measured rows, and
    the names people type (models/canonical.py). With ``measured_optional`` a ``measured_csv``
    not written yet is read as empty (``fleetplan import-bench`` is about to write it)."""
    file = str(path)
    overlays = [_resolve_path(path, o) for o in raw.catalog.overlays]
    not_found = [Problem(file, f"catalog.overlays[{i}]", f"catalog overlay {p} not found",
                         "check the path (relative to the scenario file)")
                 for i, p in enumerate(overlays) if not p.exists()]
    if not_found:
        raise InputError(not_found)
    layers = catalog_layers(raw.catalog.builtin, overlays)  # read once: GPUs, models, runtimes
    gpus, models, sources = load_catalog(
        gpu_entries=raw.catalog.gpus,
        model_entries=raw.catalog.models,
        scenario_file=file,
        layers=layers,
    )
    runtimes = load_runtimes(runtime_entries=raw.catalog.runtimes, scenario_file=file,
                             layers=layers)
    all_sources = [file, *sources]
    zone_map = None
    if raw.zone_names is not None:
        map_path = _resolve_path(path, raw.zone_names)
        if not map_path.exists():
            raise InputError([Problem(file, "zone_names", f"zone mapping {map_path} not found",
                                      "check the path (relative to the scenario file)")])
        zone_map = read_zone_names(map_path)
        all_sources.append(str(map_path))
    imported: list[Zone] = []
    offer_paths: dict[tuple[str, str], str] = {}
    if raw.price_tables:
        # here, not at the top: the price-table readers (~0.02 s of CPU to import) serve only
        # the scenarios that name price tables, and every command's start-up loads a scenario
        from models.prices import zones_from_price_table

        for ti, table in enumerate(raw.price_tables):
            table_path = _resolve_path(path, table.path)
            zones = zones_from_price_table(table_path, table, gpus, file, ti, zone_map)
            imported.extend(zones)
            offer_paths.update({(z.id, o.gpu): f"price_tables[{ti}] ({o.gpu} in {z.id})"
                                for z in zones for o in z.offers})
            all_sources.append(str(table_path))
    # each row says where it was read (a row of scenario.resolved.yaml keeps its first origin)
    measured = tuple(r if r.origin else r.model_copy(update={"origin": f"{path.name} "
                                                             f"measured[{i}]"})
                     for i, r in enumerate(raw.measured))
    if raw.measured_csv is not None:
        csv_path = _resolve_path(path, raw.measured_csv)
        if csv_path.exists() or not measured_optional:
            measured = (*measured, *load_measured_csv(csv_path, raw.measured_csv))
            all_sources.append(str(csv_path))
    gpu_names = [g.name for g in gpus]
    aliases = model_aliases(models)
    explicit, problems = canonical_zones(raw.zones, gpu_names, zone_map, file)
    workloads, workload_problems = canonical_workloads(raw.workloads, gpu_names, aliases, file)
    problems += workload_problems
    # the file's own offers at the file's own indices (the merged zones put imported ones first)
    offer_paths.update({(z.id, o.gpu): f"zones[{zi}].offers[{oi}]"
                        for zi, z in enumerate(explicit) for oi, o in enumerate(z.offers)})
    scenario = Scenario(
        name=raw.name,
        description=raw.description,
        gpus=gpus,
        models=models,
        zones=named_zones(_merge_zones(imported, explicit), zone_map),
        workloads=linked_traces(workloads, path, problems),
        measured=canonical_measured(measured, gpu_names, aliases),
        policy=raw.policy,
        runtimes=runtimes,
        sources=tuple(all_sources),
        horizon=raw.horizon,
        demand_scenarios=raw.demand_scenarios,
    )
    # the file's inventory lines as written (common names, instance types), not validated as a
    # Scenario's: `checked` resolves them and locates each problem in the file
    scenario = scenario.model_copy(update={"inventory": raw.inventory})
    # the file's own zones: merging with imported ones keeps one entry per id
    problems += duplicate_zone_ids([z.id for z in explicit], file)
    return checked(scenario, file, problems, offer_paths)


def checked(scenario: Scenario, file: str, problems: Sequence[Problem] = (),
            offer_paths: OfferPaths | None = None) -> Scenario:
    """The consistency tier: references resolve, the horizon fits, the inventory is named; the
    scenario with its inventory lines resolved (GPU and node size on each), else an InputError
    listing every problem (with ``problems`` found before), each offer's located in the user's
    file by ``offer_paths``."""
    found = [*problems, *check_references(scenario, file, offer_paths)]
    if found:  # names that do not resolve: the checks below would report them again
        raise InputError(found)
    inventory, found = resolve_inventory(scenario, file)
    found += horizon_problems(scenario, file, offer_paths)
    if found:
        raise InputError(found)
    return scenario.model_copy(update={"inventory": inventory}) if inventory else scenario


def _other_document(doc: Mapping[str, Any]) -> str:
    """What another fleetplan file passed where a scenario belongs is, by its keys (else "")."""
    if "allocations" in doc and "scenario" in doc:
        return f"a plan.json (of scenario `{doc['scenario']}`)"
    if "rows" in doc and "plan_fingerprint" in doc:
        return f"a contract.yaml (of scenario `{doc.get('scenario')}`)"
    if "nodes" in doc:
        return "an inventory of nodes"
    return ""


def load_scenario(path: str | Path, measured_optional: bool = False) -> Scenario:
    """Read, validate and resolve a scenario file (YAML, JSON, or a registered format)."""
    path = Path(path)
    doc = read_document(path)
    if not isinstance(doc, Mapping):
        raise InputError([Problem(str(path), "", "expected a mapping at the top level",
                                  "start the file with `name:` and `workloads:`")])
    other = _other_document(doc)
    if other and "workloads" not in doc:
        raise InputError([Problem(str(path), "", f"this is {other}, not a scenario",
                                  "name the scenario file here (a plan.json or an inventory "
                                  "goes after --fleet, a contract after --contract)")])
    infinite = non_finite_problems(doc, str(path))
    if infinite:
        raise InputError(infinite)
    if is_resolved_record(doc):
        return load_resolved_record(doc, path)
    raw = validate_as(ScenarioFile, doc, str(path))
    return resolve(raw, path, measured_optional)


def is_resolved_record(doc: Mapping[str, Any]) -> bool:
    """A resolved scenario as ``fleetplan plan`` records it (``scenario.resolved.yaml``): every
    GPU and model spelled out, no catalog to resolve."""
    return "gpus" in doc and "models" in doc and "catalog" not in doc


def load_resolved_record(doc: Mapping[str, Any], path: Path) -> Scenario:
    """A resolved scenario read back as it was planned: the catalog entries and offers it
    records, not today's built-in catalog (which may have changed since), checked as a scenario
    file is. The record's own path is added in front of the sources it lists."""
    file = str(path)
    scenario = validate_as(Scenario, doc, file)
    problems = []
    if not scenario.workloads:
        problems.append(Problem(file, "workloads", "no workload to plan",
                                "list at least one workload"))
    scenario = checked(scenario, file, problems)
    return scenario.model_copy(update={"sources": (file, *scenario.sources)})
